/**
 * The OpenAI dialect's model and inference routes under `/v1`, each declared once with its
 * schemas, its answers (errors in OpenAI's shape) and its handler. (The daemon's own `/v1`
 * endpoints, `/v1/gateways` and `/v1/verdicts`, are the service's: `service/_routes.ts`.)
 *
 * | method | path                   | what                                     |
 * | ------ | ---------------------- | ---------------------------------------- |
 * | POST   | `/v1/chat/completions` | chat completion                          |
 * | POST   | `/v1/responses`        | the Responses API, mapped onto chat      |
 * | POST   | `/v1/completions`      | legacy prompt completions, onto chat     |
 * | POST   | `/v1/embeddings`       | embeddings                               |
 * | GET    | `/v1/models`           | the network's models                     |
 * | GET    | `/v1/models/{model}`   | one model                                |
 *
 * @module
 */

import { defineRoute, json, type Route, z } from "../../http/mod.ts";
import {
  answers,
  EMBEDDINGS_DESCRIPTION,
  OPENAI_ERROR,
  SERVED_HEADERS,
  type SurfaceContext,
  wholeOrStreamed,
} from "../surface/mod.ts";
import { completionsCall, serveCompletions } from "./completions.ts";
import { COMPLETION, COMPLETION_CHUNK, COMPLETIONS_REQUEST } from "./_completions_schemas.ts";
import { serveOpenAIEmbeddings } from "./embeddings.ts";
import { OPENAI_EMBEDDINGS, OPENAI_EMBEDDINGS_REQUEST } from "./_embeddings_schemas.ts";
import { openAIChatCall, serveOpenAIChat, serveOpenAIModel, serveOpenAIModels } from "./openai.ts";
import {
  CHAT_COMPLETION,
  CHAT_COMPLETION_CHUNK,
  MODEL_ENTRY,
  MODEL_LIST,
  MODEL_PATH,
  OPENAI_CHAT_REQUEST,
} from "./_openai_schemas.ts";
import { responsesCall, serveResponses } from "./responses.ts";
import { RESPONSE, RESPONSE_EVENT, RESPONSES_REQUEST } from "./_responses_schemas.ts";

/** Server-Sent Events of OpenAI's kind: `data: <JSON>` events, the last `data: [DONE]`. */
const SSE_DONE = "`data: <JSON>` events; the last one is `data: [DONE]`.";

/** The OpenAI dialect's routes, in the order the document lists them. */
export function openaiRoutes(context: SurfaceContext): Route[] {
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
      description: EMBEDDINGS_DESCRIPTION +
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
