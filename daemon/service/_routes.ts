/**
 * The daemon's route table: every endpoint of both dialects, declared once with its request
 * schemas, its answers per status (errors in the dialect of the path) and its handler. The HTTP
 * layer routes, validates and documents from it (`GET /openapi.json`).
 *
 * | method | path                   | dialect |
 * | ------ | ---------------------- | ------- |
 * | GET    | `/`                    | Ollama  |
 * | GET    | `/api/version`         | Ollama  |
 * | GET    | `/api/tags`            | Ollama  |
 * | GET    | `/api/ps`              | Ollama  |
 * | POST   | `/api/show`            | Ollama  |
 * | POST   | `/api/chat`            | Ollama  |
 * | POST   | `/api/generate`        | Ollama  |
 * | POST   | `/api/embed`           | Ollama  |
 * | POST   | `/api/embeddings`      | Ollama  |
 * | POST   | `/api/pull`            | Ollama  |
 * | POST   | `/v1/chat/completions` | OpenAI  |
 * | POST   | `/v1/responses`        | OpenAI  |
 * | POST   | `/v1/completions`      | OpenAI  |
 * | POST   | `/v1/embeddings`       | OpenAI  |
 * | GET    | `/v1/models`           | OpenAI  |
 * | GET    | `/v1/models/{model}`   | OpenAI  |
 * | GET    | `/v1/gateways`         | OpenAI  |
 * | GET    | `/v1/verdicts`         | OpenAI  |
 *
 * @module
 */

import {
  defineRoute,
  json,
  type MediaSpec,
  type ResponseSpec,
  type Route,
  z,
} from "../../http/mod.ts";
import { ollamaCall } from "../ollama/ollama_request.ts";
import { serveOllamaChat, serveOllamaLoad } from "../ollama/ollama_reply.ts";
import {
  serveOllamaPs,
  serveOllamaPull,
  serveOllamaShow,
  serveOllamaTags,
  serveOllamaVersion,
} from "../ollama/ollama_models.ts";
import {
  openAIChatCall,
  serveOpenAIChat,
  serveOpenAIModel,
  serveOpenAIModels,
} from "../openai/openai.ts";
import {
  serveOllamaEmbed,
  serveOllamaEmbeddings,
  serveOpenAIEmbeddings,
} from "../surface/embeddings.ts";
import {
  MAX_EMBEDDING_INPUTS,
  OLLAMA_EMBED,
  OLLAMA_EMBED_REQUEST,
  OLLAMA_EMBEDDINGS,
  OLLAMA_EMBEDDINGS_REQUEST,
  OPENAI_EMBEDDINGS,
  OPENAI_EMBEDDINGS_REQUEST,
} from "../surface/embeddings_schemas.ts";
import { responsesCall, serveResponses } from "../openai/responses.ts";
import { completionsCall, serveCompletions } from "../openai/completions.ts";
import {
  COMPLETION,
  COMPLETION_CHUNK,
  COMPLETIONS_REQUEST,
} from "../openai/_completions_schemas.ts";
import { RESPONSE, RESPONSE_EVENT, RESPONSES_REQUEST } from "../openai/_responses_schemas.ts";
import { type GatewayLister, serveGateways, serveVerdicts } from "./transparency.ts";
import type { Dialect } from "../core/http_error.ts";
import type { VerdictLog } from "../trust/verdict_log.ts";
import type { SurfaceContext } from "../surface/context.ts";
import {
  OLLAMA_CHAT_LINE,
  OLLAMA_CHAT_REQUEST,
  OLLAMA_GENERATE_LINE,
  OLLAMA_GENERATE_REQUEST,
  OLLAMA_PS,
  OLLAMA_PULL,
  OLLAMA_PULL_REQUEST,
  OLLAMA_SHOW,
  OLLAMA_SHOW_REQUEST,
  OLLAMA_TAGS,
  OLLAMA_VERSION,
  type OllamaChatBody,
  type OllamaGenerateBody,
} from "../ollama/_ollama_schemas.ts";
import {
  CHAT_COMPLETION,
  CHAT_COMPLETION_CHUNK,
  GATEWAYS,
  MODEL_ENTRY,
  MODEL_LIST,
  MODEL_PATH,
  OPENAI_CHAT_REQUEST,
  VERDICTS,
  verdictsQuery,
} from "../openai/_openai_schemas.ts";
import {
  errorResponses,
  errorSchema,
  OLLAMA_ERROR,
  OPENAI_ERROR,
  type OperationKind,
  SERVED_HEADERS,
} from "../surface/schemas.ts";

/** What the route table is built from. */
export interface RouteTableOptions {
  /** The surfaces' shared dependencies and limits. */
  readonly context: SurfaceContext;
  /** The `X.Y.Z` version `/api/version` serves. */
  readonly version: string;
  /** The known gateways, for `GET /v1/gateways`. */
  readonly gateways: GatewayLister;
  /** The verdict log, for `GET /v1/verdicts`. */
  readonly verdicts: VerdictLog;
}

const LIVENESS = "Ollama is running";

/**
 * The body of an answer given whole (`application/json`, `whole`) or streamed: the stream's
 * media type, what it is, and the schema of each of its events or lines.
 */
function wholeOrStreamed(
  whole: z.ZodType,
  stream: { type: "text/event-stream" | "application/x-ndjson"; text: string; item: z.ZodType },
): Record<string, MediaSpec> {
  return {
    "application/json": { schema: whole },
    [stream.type]: {
      schema: z.string().openapi({ description: stream.text }),
      itemSchema: stream.item,
    },
  };
}

/** Server-Sent Events of OpenAI's kind: `data: <JSON>` events, the last `data: [DONE]`. */
const SSE_DONE = "`data: <JSON>` events; the last one is `data: [DONE]`.";
/** Ollama's streams: NDJSON. */
const NDJSON_LINES = "One JSON object per line.";

/** One JSON answer and the error answers of an operation. */
function answers(
  dialect: Dialect,
  kind: OperationKind,
  ok: ResponseSpec,
  extra: Record<number, string> = {},
): Record<number, ResponseSpec> {
  const content = json(errorSchema(dialect));
  return {
    200: ok,
    ...errorResponses(dialect, kind),
    ...Object.fromEntries(
      Object.entries(extra).map(([status, description]) => [status, { description, content }]),
    ),
  };
}

function ollamaChatRoute(context: SurfaceContext, endpoint: "chat" | "generate"): Route {
  const chat = endpoint === "chat";
  const lineSchema = chat ? OLLAMA_CHAT_LINE : OLLAMA_GENERATE_LINE;
  return defineRoute({
    method: "post",
    path: `/api/${endpoint}`,
    summary: chat ? "Chat (Ollama)" : "Generate (Ollama)",
    description:
      "Streams NDJSON by default (`stream` defaults to true): pieces with `done: false`, then " +
      "one line with `done: true`, `done_reason` and the counters. `stream: false` answers one " +
      "object shaped like the last line with the whole content. An error after the stream " +
      'started is one `{"error": …}` line. An empty ' +
      (chat ? "`messages` array" : "`prompt`") +
      " loads (`done_reason: load`; with `keep_alive: 0`, `unload`) without calling the network.",
    tags: ["ollama"],
    body: {
      schema: (chat ? OLLAMA_CHAT_REQUEST : OLLAMA_GENERATE_REQUEST) as z.ZodType<
        OllamaChatBody | OllamaGenerateBody
      >,
    },
    responses: answers("ollama", "chat", {
      description: "The reply, whole or streamed. Loads and unloads have no served-by headers.",
      content: wholeOrStreamed(lineSchema, {
        type: "application/x-ndjson",
        text: NDJSON_LINES,
        item: z.union([lineSchema, OLLAMA_ERROR]),
      }),
    }),
    handler: (c, { body }) => {
      const parsed = ollamaCall(endpoint, body);
      return parsed.kind === "load"
        ? serveOllamaLoad(context, parsed.call)
        : serveOllamaChat(context, { call: parsed.call, request: c.req.raw });
    },
  });
}

function ollamaRoutes(options: RouteTableOptions): Route[] {
  const { context } = options;
  return [
    defineRoute({
      method: "get",
      path: "/",
      summary: "Liveness, as Ollama answers it",
      tags: ["ollama"],
      responses: answers("ollama", "local", {
        description: "The daemon is running.",
        content: { "text/plain": { schema: z.literal(LIVENESS) } },
      }),
      handler: () =>
        new Response(LIVENESS, { headers: { "content-type": "text/plain; charset=utf-8" } }),
    }),
    defineRoute({
      method: "get",
      path: "/api/version",
      summary: "The daemon's version",
      tags: ["ollama"],
      responses: answers("ollama", "local", {
        description: "Plain dotted integers.",
        content: json(OLLAMA_VERSION),
      }),
      handler: () => serveOllamaVersion(options.version),
    }),
    defineRoute({
      method: "get",
      path: "/api/tags",
      summary: "Models of the network",
      tags: ["ollama"],
      responses: answers("ollama", "list", {
        description: "Every model, listed with `:latest`.",
        content: json(OLLAMA_TAGS),
      }),
      handler: (c) => serveOllamaTags(context, c.req.raw),
    }),
    defineRoute({
      method: "get",
      path: "/api/ps",
      summary: "Loaded models (none: nothing runs locally)",
      tags: ["ollama"],
      responses: answers("ollama", "local", { description: "None.", content: json(OLLAMA_PS) }),
      handler: () => serveOllamaPs(),
    }),
    defineRoute({
      method: "post",
      path: "/api/show",
      summary: "One model's details",
      tags: ["ollama"],
      body: { schema: OLLAMA_SHOW_REQUEST },
      responses: answers("ollama", "post", {
        description: "The model.",
        content: json(OLLAMA_SHOW),
      }),
      handler: (c, { body }) => serveOllamaShow(context, { body, request: c.req.raw }),
    }),
    ollamaChatRoute(context, "chat"),
    ollamaChatRoute(context, "generate"),
    defineRoute({
      method: "post",
      path: "/api/embed",
      summary: "Embeddings (Ollama)",
      description: EMBED_DESCRIPTION,
      tags: ["ollama"],
      body: { schema: OLLAMA_EMBED_REQUEST },
      responses: answers("ollama", "chat", {
        description: "One vector per input, in order.",
        headers: SERVED_HEADERS,
        content: json(OLLAMA_EMBED),
      }),
      handler: (c, { body }) => serveOllamaEmbed(context, { body, request: c.req.raw }),
    }),
    defineRoute({
      method: "post",
      path: "/api/embeddings",
      summary: "One embedding (Ollama's older endpoint)",
      description: EMBED_DESCRIPTION,
      tags: ["ollama"],
      body: { schema: OLLAMA_EMBEDDINGS_REQUEST },
      responses: answers("ollama", "chat", {
        description: "The prompt's vector.",
        headers: SERVED_HEADERS,
        content: json(OLLAMA_EMBEDDINGS),
      }),
      handler: (c, { body }) => serveOllamaEmbeddings(context, { body, request: c.req.raw }),
    }),
    defineRoute({
      method: "post",
      path: "/api/pull",
      summary: "Pull a model (nothing to download: success at once)",
      description: "A model the network offers needs no download: the answer is " +
        '`{"status":"success"}` at once, as one NDJSON line unless `stream: false`.',
      tags: ["ollama"],
      body: { schema: OLLAMA_PULL_REQUEST },
      responses: answers("ollama", "post", {
        description: "Pulled.",
        content: wholeOrStreamed(OLLAMA_PULL, {
          type: "application/x-ndjson",
          text: NDJSON_LINES,
          item: OLLAMA_PULL,
        }),
      }),
      handler: (c, { body }) => serveOllamaPull(context, { body, request: c.req.raw }),
    }),
  ];
}

const EMBED_DESCRIPTION =
  "Sealed to a provider like a chat (same tiers, trust and failover). The model must be an " +
  "embedding model (a chat model: 400); `dimensions` other than the model's own length needs " +
  `its \`dimensions\` capability. At most ${MAX_EMBEDDING_INPUTS} inputs per request.`;

function openaiRoutes(options: RouteTableOptions): Route[] {
  const { context } = options;
  return [
    defineRoute({
      method: "post",
      path: "/v1/chat/completions",
      summary: "Chat completion (OpenAI)",
      description:
        "One `chat.completion`, or with `stream: true` Server-Sent Events: `data:` chunks " +
        "(`chat.completion.chunk`; with `stream_options.include_usage` a last chunk with " +
        "`choices: []` and `usage`), then `data: [DONE]`. An error after the stream started " +
        'is one `data: {"error": …}` event and the stream ends without `[DONE]`.',
      tags: ["openai"],
      body: { schema: OPENAI_CHAT_REQUEST },
      responses: answers("openai", "chat", {
        description: "The reply, whole or streamed.",
        headers: SERVED_HEADERS,
        content: wholeOrStreamed(CHAT_COMPLETION, {
          type: "text/event-stream",
          text: SSE_DONE,
          item: z.union([CHAT_COMPLETION_CHUNK, OPENAI_ERROR]),
        }),
      }),
      handler: (c, { body }) =>
        serveOpenAIChat(context, { call: openAIChatCall(body), request: c.req.raw }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/responses",
      summary: "Response (the OpenAI Responses API, mapped onto chat)",
      description:
        "`input` (a string or message, `function_call` and `function_call_output` items), " +
        "`instructions`, `max_output_tokens`, `temperature`, `top_p`, function `tools`, " +
        "`tool_choice` and `text.format` become one chat completion. The daemon keeps no " +
        "conversation state: `previous_response_id` and `store: true` are refused (400). With " +
        "`stream: true`, Server-Sent Events: `response.created`, `response.in_progress`, per " +
        "output item `response.output_item.added`, its deltas and `response.output_item.done`, " +
        "then `response.completed` (`response.incomplete` when cut by the token limit); an " +
        "error after the start is one `error` event.",
      tags: ["openai"],
      body: { schema: RESPONSES_REQUEST },
      responses: answers("openai", "chat", {
        description: "The response, whole or streamed.",
        headers: SERVED_HEADERS,
        content: wholeOrStreamed(RESPONSE, {
          type: "text/event-stream",
          text: "`event:` and `data:` pairs.",
          item: RESPONSE_EVENT,
        }),
      }),
      handler: (c, { body }) =>
        serveResponses(context, { call: responsesCall(body), request: c.req.raw }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/completions",
      summary: "Completion (legacy prompt completions, mapped onto chat)",
      description:
        "The `prompt` becomes one user message. One `text_completion`, or with `stream: true` " +
        "SSE `text_completion` chunks then `data: [DONE]` (with `stream_options.include_usage`, " +
        "a last chunk with `choices: []` and `usage`). One prompt and one choice: several " +
        "prompts, `n` or `best_of` above 1, `echo: true`, `suffix`, `logprobs`, " +
        "`top_logprobs` and `tools` are refused (400). No default `max_tokens`: without it " +
        "the provider decides.",
      tags: ["openai"],
      body: { schema: COMPLETIONS_REQUEST },
      responses: answers("openai", "chat", {
        description: "The completion, whole or streamed.",
        headers: SERVED_HEADERS,
        content: wholeOrStreamed(COMPLETION, {
          type: "text/event-stream",
          text: SSE_DONE,
          item: z.union([COMPLETION_CHUNK, OPENAI_ERROR]),
        }),
      }),
      handler: (c, { body }) =>
        serveCompletions(context, { call: completionsCall(body), request: c.req.raw }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/embeddings",
      summary: "Embeddings (OpenAI)",
      description: EMBED_DESCRIPTION +
        " Vectors are floats, or with `encoding_format: base64` little-endian float32 bytes.",
      tags: ["openai"],
      body: { schema: OPENAI_EMBEDDINGS_REQUEST },
      responses: answers("openai", "chat", {
        description: "One vector per input, in order, with usage.",
        headers: SERVED_HEADERS,
        content: json(OPENAI_EMBEDDINGS),
      }),
      handler: (c, { body }) => serveOpenAIEmbeddings(context, { body, request: c.req.raw }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/models",
      summary: "Models of the network",
      tags: ["openai"],
      responses: answers("openai", "list", {
        description: "Every model.",
        content: json(MODEL_LIST),
      }),
      handler: (c) => serveOpenAIModels(context, c.req.raw),
    }),
    defineRoute({
      method: "get",
      path: "/v1/models/{model:.+}",
      summary: "One model",
      tags: ["openai"],
      params: MODEL_PATH,
      responses: answers("openai", "list", {
        description: "The model.",
        content: json(MODEL_ENTRY),
      }, {
        400: "`invalid_request_error`: a malformed model id.",
        404: "`model_not_found`: the network offers no such model in that tier.",
      }),
      handler: (c, { params }) =>
        serveOpenAIModel(context, { request: c.req.raw, model: params.model }),
    }),
  ];
}

function transparencyRoutes(options: RouteTableOptions): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/gateways",
      summary: "The gateways the daemon knows (the gateways' own shape)",
      tags: ["transparency"],
      responses: answers("openai", "local", {
        description: "The known gateway set.",
        content: json(GATEWAYS),
      }),
      handler: () => serveGateways(options.gateways),
    }),
    defineRoute({
      method: "get",
      path: "/v1/verdicts",
      summary: "The latest verification verdicts, newest first",
      tags: ["transparency"],
      query: verdictsQuery(options.verdicts.capacity),
      responses: answers("openai", "local", {
        description: "The verdicts.",
        content: json(VERDICTS),
      }, { 400: "`invalid_request_error`: a bad `limit`." }),
      handler: (_c, { query }) => serveVerdicts(options.verdicts, query.limit),
    }),
  ];
}

/** Every route of the daemon (`GET /openapi.json` is added by the HTTP layer). */
export function daemonRoutes(options: RouteTableOptions): Route[] {
  return [...ollamaRoutes(options), ...openaiRoutes(options), ...transparencyRoutes(options)];
}

/**
 * The error answers no operation owns (an unknown path, a wrong method), documented once per
 * dialect as `components.responses`.
 */
export const SHARED_ERROR_RESPONSES: Readonly<
  Record<string, { description: string; content: Record<string, { schema: { $ref: string } }> }>
> = {
  OpenAIError: {
    description: "An error under `/v1`, e.g. `not_found` (404) or `method_not_allowed` (405).",
    content: { "application/json": { schema: { $ref: "#/components/schemas/OpenAIError" } } },
  },
  OllamaError: {
    description: "An error outside `/v1`, e.g. `not_found` (404) or `method_not_allowed` (405).",
    content: { "application/json": { schema: { $ref: "#/components/schemas/OllamaError" } } },
  },
};
