/**
 * The OpenAPI 3.1 description of the daemon's HTTP API, served at `GET /openapi.json`: both
 * dialects (OpenAI under `/v1`, Ollama under `/api` and `/`), their request and response
 * bodies, their streams (`text/event-stream` and `application/x-ndjson`, one schema per item
 * in `x-item-schema`, what OpenAPI 3.2 calls `itemSchema`) and their error shapes. The codes
 * and statuses are `DAEMON_ERROR_STATUS`'s; `docs/daemon.md` explains each.
 * `tests/daemon/openapi_test.ts` checks real answers of a daemon in front of the devnet
 * against it.
 *
 * @example
 * ```ts
 * import { DAEMON_OPENAPI } from "./openapi.ts";
 *
 * console.assert(DAEMON_OPENAPI.openapi === "3.1.1");
 * ```
 *
 * @module
 */

import { VERSION } from "../version.ts";
import { DAEMON_ERROR_STATUS } from "./daemon_error.ts";

/** An OpenAPI document: a JSON object with its version in `openapi`. */
export interface DaemonOpenApiDocument {
  /** The OpenAPI version, `3.1.x`. */
  readonly openapi: string;
  /** Every other field of the document. */
  readonly [field: string]: unknown;
}

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str: Schema = { type: "string" };
const int: Schema = { type: "integer", minimum: 0 };
const nullable = (schema: Schema): Schema => ({ oneOf: [schema, { type: "null" }] });
const closed = (properties: Record<string, Schema>, optional: string[] = []): Schema => ({
  type: "object",
  properties,
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
  additionalProperties: false,
});
const json = (schema: Schema) => ({ "application/json": { schema } });

/** Every error code, and the statuses they come with. */
const CODES = Object.keys(DAEMON_ERROR_STATUS);

type Dialect = "openai" | "ollama";

const errorResponse = (dialect: Dialect, description: string) => ({
  description,
  content: json(ref(dialect === "openai" ? "OpenAIError" : "OllamaError")),
});

/** The error answers an operation can give, in its dialect. */
function errors(dialect: Dialect, kind: "get" | "list" | "post" | "chat"): Record<string, unknown> {
  const e = (description: string) => errorResponse(dialect, description);
  const out: Record<string, unknown> = {
    "403": e("`forbidden_host` (the Host header is not allowed) or `forbidden_origin`."),
    "500": e("`internal_error`: an unexpected failure, logged; the message is generic."),
  };
  if (kind === "post" || kind === "chat") {
    out["400"] = e("`invalid_request_error`: bad JSON or a bad field (`param` names it).");
    out["413"] = e("`request_too_large`: the body is over the limit.");
  }
  if (kind === "list" || kind === "post" || kind === "chat") {
    out["502"] = e(
      "`provider_error` or a refusal of trust (`attestation_failed`, `attestation_mock`, " +
        "`attestation_stale`, `decryption_failed`, `stream_truncated`): nothing was sent.",
    );
    out["503"] = e("`no_gateway` or `no_provider`.");
    out["504"] = e("`timeout`: no answer from the network in time.");
  }
  if (kind === "post" || kind === "chat") {
    out["404"] = e("`model_not_found`: the network offers no such model in that tier.");
  }
  if (kind === "chat") {
    out["4XX"] = e(
      "`provider_error` carrying the provider's own 4xx status (a request it refused).",
    );
  }
  return out;
}

const servedHeaders = {
  "x-net-provider": {
    description: "The provider that served the reply (its address).",
    required: true,
    schema: str,
  },
  "x-net-tier": { description: "Its tier.", required: true, schema: ref("Tier") },
  "x-net-gateway": { description: "The gateway that relayed it.", required: true, schema: str },
  "x-net-verdict": {
    description: "Why it was trusted, e.g. `endorsed-key by 0x07c5…, on-chain trust root`.",
    required: true,
    schema: str,
  },
};

const counters: Record<string, Schema> = {
  done_reason: str,
  total_duration: { ...int, description: "Nanoseconds, measured by the daemon." },
  load_duration: int,
  prompt_eval_count: int,
  prompt_eval_duration: int,
  eval_count: int,
  eval_duration: int,
};
const COUNTERS = Object.keys(counters);

/**
 * An Ollama answer line: a piece (`done: false`), or the last one (`done: true` with
 * `done_reason` and, for a generated reply, the counters; a load or unload has none).
 */
const ollamaLine = (body: Record<string, Schema>, optional: string[]): Schema => ({
  oneOf: [
    closed({ model: str, created_at: ref("Time"), ...body, done: { const: false } }, optional),
    closed(
      { model: str, created_at: ref("Time"), ...body, done: { const: true }, ...counters },
      [...optional, ...COUNTERS.filter((c) => c !== "done_reason")],
    ),
  ],
});

const ollamaChat = (endpoint: "chat" | "generate") => ({
  post: {
    summary: endpoint === "chat" ? "Chat (Ollama)" : "Generate (Ollama)",
    description:
      "Streams NDJSON by default (`stream` defaults to true): pieces with `done: false`, then " +
      "one line with `done: true`, `done_reason` and the counters. `stream: false` answers one " +
      "object shaped like the last line with the whole content. An error after the stream " +
      'started is one `{"error": …}` line. An empty ' +
      (endpoint === "chat" ? "`messages` array" : "`prompt`") +
      " loads (`done_reason: load`; with `keep_alive: 0`, `unload`) without calling the network.",
    operationId: endpoint === "chat" ? "ollamaChat" : "ollamaGenerate",
    requestBody: {
      required: true,
      content: json(ref(endpoint === "chat" ? "OllamaChatRequest" : "OllamaGenerateRequest")),
    },
    responses: {
      "200": {
        description: "The reply, whole or streamed. Loads and unloads have no served-by headers.",
        content: {
          "application/json": {
            schema: ref(endpoint === "chat" ? "OllamaChatLine" : "OllamaGenerateLine"),
          },
          "application/x-ndjson": {
            schema: { type: "string", description: "One JSON object per line." },
            "x-item-schema": {
              anyOf: [
                ref(endpoint === "chat" ? "OllamaChatLine" : "OllamaGenerateLine"),
                ref("OllamaError"),
              ],
            },
          },
        },
      },
      ...errors("ollama", "chat"),
    },
  },
});

const get = (
  operationId: string,
  summary: string,
  dialect: Dialect,
  kind: "get" | "list",
  content: Record<string, unknown>,
  extra: { parameters?: unknown[]; errors?: Record<string, string> } = {},
) => ({
  get: {
    summary,
    operationId,
    ...(extra.parameters ? { parameters: extra.parameters } : {}),
    responses: {
      "200": { description: summary, content },
      ...errors(dialect, kind),
      ...Object.fromEntries(
        Object.entries(extra.errors ?? {}).map((
          [status, description],
        ) => [status, errorResponse(dialect, description)]),
      ),
    },
  },
});

const tier: Schema = { type: "string", enum: ["verified", "tee"] };

/** The daemon's OpenAPI 3.1 document. */
export const DAEMON_OPENAPI: DaemonOpenApiDocument = {
  openapi: "3.1.1",
  jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
  info: {
    title: "net-consumer daemon",
    version: VERSION,
    summary: "A local OpenAI- and Ollama-compatible server; every request is sealed end to end " +
      "to a provider of the network.",
    description:
      "Model ids are `net/<tier>/<maker>/<model>` with tier `verified` or `tee` (`:latest` " +
      "accepted). Paths under `/v1` speak the OpenAI dialect, errors included " +
      '(`{"error": {"message", "type", "param", "code"}}`); every other path speaks ' +
      'Ollama\'s (`{"error": "message"}`). An unknown path is answered with `not_found` ' +
      "(404) and a wrong method with `method_not_allowed` (405, with `Allow`) in the dialect " +
      "of the path. `HEAD` is answered for every `GET`; `OPTIONS` lists the methods, or " +
      "answers a CORS preflight for an allowed origin. Every request must carry an allowed " +
      "`Host` (DNS-rebinding protection) and, from a browser, an allowed `Origin`.",
    license: { name: "Apache-2.0", identifier: "Apache-2.0" },
  },
  servers: [{ url: "http://127.0.0.1:11435", description: "The default bind address" }],
  paths: {
    "/": get("root", "Liveness, as Ollama answers it", "ollama", "get", {
      "text/plain": { schema: { type: "string", const: "Ollama is running" } },
    }),
    "/api/version": get(
      "ollamaVersion",
      "The daemon's version",
      "ollama",
      "get",
      json(ref("Version")),
    ),
    "/api/tags": get("ollamaTags", "Models of the network", "ollama", "list", json(ref("Tags"))),
    "/api/ps": get(
      "ollamaPs",
      "Loaded models (none: nothing runs locally)",
      "ollama",
      "get",
      json(ref("Ps")),
    ),
    "/api/show": {
      post: {
        summary: "One model's details",
        operationId: "ollamaShow",
        requestBody: { required: true, content: json(ref("ShowRequest")) },
        responses: {
          "200": { description: "The model.", content: json(ref("Show")) },
          ...errors("ollama", "post"),
        },
      },
    },
    "/api/chat": ollamaChat("chat"),
    "/api/generate": ollamaChat("generate"),
    "/v1/chat/completions": {
      post: {
        summary: "Chat completion (OpenAI)",
        description:
          "One `chat.completion`, or with `stream: true` Server-Sent Events: `data:` chunks " +
          "(`chat.completion.chunk`; with `stream_options.include_usage` a last chunk with " +
          "`choices: []` and `usage`), then `data: [DONE]`. An error after the stream started " +
          'is one `data: {"error": …}` event and the stream ends without `[DONE]`.',
        operationId: "createChatCompletion",
        requestBody: { required: true, content: json(ref("ChatCompletionRequest")) },
        responses: {
          "200": {
            description: "The reply, whole or streamed.",
            headers: servedHeaders,
            content: {
              "application/json": { schema: ref("ChatCompletion") },
              "text/event-stream": {
                schema: {
                  type: "string",
                  description: "`data: <JSON>` events; the last one is `data: [DONE]`.",
                },
                "x-item-schema": { anyOf: [ref("ChatCompletionChunk"), ref("OpenAIError")] },
              },
            },
          },
          ...errors("openai", "chat"),
        },
      },
    },
    "/v1/models": get(
      "listModels",
      "Models of the network",
      "openai",
      "list",
      json(ref("ModelList")),
    ),
    "/v1/models/{model}": get(
      "retrieveModel",
      "One model",
      "openai",
      "list",
      json(ref("Model")),
      {
        parameters: [{
          name: "model",
          in: "path",
          required: true,
          description: "`net/<tier>/<maker>/<model>`; its slashes may be sent as they are or " +
            "percent-encoded.",
          schema: str,
        }],
        errors: {
          "400": "`invalid_request_error`: a malformed model id.",
          "404": "`model_not_found`: the network offers no such model in that tier.",
        },
      },
    ),
    "/v1/gateways": get(
      "listGateways",
      "The gateways the daemon knows (the gateways' own shape)",
      "openai",
      "get",
      json(ref("Gateways")),
    ),
    "/v1/verdicts": get(
      "listVerdicts",
      "The latest verification verdicts, newest first",
      "openai",
      "get",
      json(ref("Verdicts")),
      {
        parameters: [{
          name: "limit",
          in: "query",
          required: false,
          description: "How many, 1 to the log's capacity (default 50).",
          schema: { type: "integer", minimum: 1 },
        }],
        errors: { "400": "`invalid_request_error`: a bad `limit`." },
      },
    ),
    "/openapi.json": get(
      "openapi",
      "This document",
      "ollama",
      "get",
      json({
        type: "object",
        properties: {
          openapi: { type: "string", pattern: "^3\\.1\\.\\d+$" },
          info: { type: "object" },
          paths: { type: "object" },
        },
        required: ["openapi", "info", "paths"],
      }),
    ),
  },
  components: {
    responses: {
      OpenAIError: errorResponse(
        "openai",
        "An error under `/v1`, e.g. `not_found` (404) or `method_not_allowed` (405).",
      ),
      OllamaError: errorResponse(
        "ollama",
        "An error outside `/v1`, e.g. `not_found` (404) or `method_not_allowed` (405).",
      ),
    },
    schemas: {
      Time: { type: "string", format: "date-time" },
      Tier: tier,
      Decimal: { type: "string", pattern: "^(0|[1-9][0-9]*)$" },
      OpenAIError: closed({
        error: closed({
          message: str,
          type: {
            type: "string",
            enum: ["invalid_request_error", "permission_error", "server_error"],
          },
          param: nullable(str),
          code: { type: "string", enum: CODES },
        }),
      }),
      OllamaError: closed({ error: str }),
      ChatCompletionRequest: {
        type: "object",
        description: "The OpenAI request; other fields are forwarded to the provider as they are.",
        properties: {
          model: str,
          messages: {
            type: "array",
            minItems: 1,
            items: {
              type: "object",
              properties: {
                role: { type: "string", minLength: 1 },
                content: { type: ["string", "array", "null"] },
              },
              required: ["role"],
            },
          },
          stream: { type: "boolean", default: false },
          stream_options: { type: ["object", "null"] },
          n: { const: 1 },
        },
        required: ["model", "messages"],
      },
      Usage: closed({ prompt_tokens: int, completion_tokens: int, total_tokens: int }),
      ToolCall: closed({
        id: str,
        type: { const: "function" },
        function: closed({ name: str, arguments: { type: "string", description: "JSON text." } }),
      }),
      ToolCallDelta: closed(
        {
          index: int,
          id: str,
          function: closed({ name: str, arguments: str }, ["name", "arguments"]),
        },
        ["id", "function"],
      ),
      ChatCompletion: closed({
        id: { type: "string", pattern: "^chatcmpl-" },
        object: { const: "chat.completion" },
        created: int,
        model: { type: "string", description: "The model id as the client wrote it." },
        choices: {
          type: "array",
          minItems: 1,
          maxItems: 1,
          items: closed({
            index: { const: 0 },
            message: closed({
              role: { const: "assistant" },
              content: nullable(str),
              refusal: nullable(str),
              reasoning_content: str,
              tool_calls: { type: "array", items: ref("ToolCall") },
            }, ["reasoning_content", "tool_calls"]),
            logprobs: { type: "null" },
            finish_reason: str,
          }),
        },
        usage: ref("Usage"),
      }),
      ChatCompletionChunk: closed({
        id: { type: "string", pattern: "^chatcmpl-" },
        object: { const: "chat.completion.chunk" },
        created: int,
        model: str,
        choices: {
          type: "array",
          maxItems: 1,
          items: closed({
            index: { const: 0 },
            delta: closed({
              role: { const: "assistant" },
              content: str,
              refusal: str,
              reasoning_content: str,
              tool_calls: { type: "array", items: ref("ToolCallDelta") },
            }, ["role", "content", "refusal", "reasoning_content", "tool_calls"]),
            logprobs: { type: "null" },
            finish_reason: nullable(str),
          }),
        },
        usage: nullable(ref("Usage")),
      }, ["usage"]),
      Model: closed({
        id: { type: "string", pattern: "^net/(verified|tee)/[^/]+/[^/]+$" },
        object: { const: "model" },
        created: int,
        owned_by: str,
        net: closed({
          tier,
          providers: int,
          context_length: { type: "integer", minimum: 1 },
          cheapest_price: nullable(closed({ input: ref("Decimal"), output: ref("Decimal") })),
        }),
      }),
      ModelList: closed({
        object: { const: "list" },
        data: { type: "array", items: ref("Model") },
      }),
      Gateways: closed({
        gateways: {
          type: "array",
          items: closed({ url: { type: "string", format: "uri" }, last_seen: ref("Time") }),
        },
      }),
      Verdicts: closed({
        verdicts: {
          type: "array",
          items: closed({
            at: ref("Time"),
            tier,
            model: str,
            provider: str,
            gateway: str,
            outcome: { type: "string", enum: ["accepted", "refused"] },
            verdict: str,
            code: nullable({ type: "string", enum: CODES }),
          }),
        },
      }),
      OllamaChatRequest: {
        type: "object",
        description: "The Ollama request (`options`, `format`, `think`, `tools` are translated).",
        properties: {
          model: str,
          messages: { type: "array", items: { type: "object" } },
          stream: { type: "boolean", default: true },
          keep_alive: { type: ["string", "number"] },
        },
        required: ["model", "messages"],
      },
      OllamaGenerateRequest: {
        type: "object",
        properties: {
          model: str,
          prompt: str,
          system: str,
          images: { type: "array", items: str },
          stream: { type: "boolean", default: true },
          keep_alive: { type: ["string", "number"] },
        },
        required: ["model"],
      },
      OllamaToolCall: closed({
        id: str,
        function: closed({ name: str, arguments: { type: "object" } }),
      }),
      OllamaChatLine: ollamaLine({
        message: closed({
          role: { const: "assistant" },
          content: str,
          thinking: str,
          tool_calls: { type: "array", items: ref("OllamaToolCall") },
        }, ["thinking", "tool_calls"]),
      }, []),
      OllamaGenerateLine: ollamaLine({ response: str, thinking: str }, ["thinking"]),
      Details: closed({
        parent_model: str,
        format: { const: "remote" },
        family: str,
        families: { type: "array", items: str },
        parameter_size: str,
        quantization_level: str,
      }),
      Tags: closed({
        models: {
          type: "array",
          items: closed({
            name: { type: "string", pattern: "^net/(verified|tee)/[^/]+/[^/]+:latest$" },
            model: str,
            modified_at: ref("Time"),
            size: { const: 0 },
            digest: { type: "string", pattern: "^[0-9a-f]{64}$" },
            details: ref("Details"),
          }),
        },
      }),
      ShowRequest: {
        type: "object",
        properties: {
          model: str,
          name: { type: "string", description: "Legacy name of `model`." },
        },
        anyOf: [{ required: ["model"] }, { required: ["name"] }],
      },
      Show: closed({
        license: str,
        modelfile: str,
        parameters: str,
        template: str,
        system: str,
        details: ref("Details"),
        model_info: closed({
          "general.architecture": { const: "net" },
          "general.basename": str,
          "net.context_length": { type: "integer", minimum: 1 },
          "net.tier": tier,
          "net.providers": int,
        }),
        capabilities: { type: "array", items: str },
        modified_at: ref("Time"),
      }),
      Ps: closed({ models: { type: "array", maxItems: 0 } }),
      Version: closed({ version: { type: "string", pattern: "^\\d+\\.\\d+\\.\\d+$" } }),
    },
  },
};

const OPENAPI_BODY = JSON.stringify(DAEMON_OPENAPI);

/** Serves `GET /openapi.json`: {@linkcode DAEMON_OPENAPI}. */
export function serveOpenApi(): Response {
  return new Response(OPENAPI_BODY, {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}
