/**
 * The Ollama dialect's requests: a validated `POST /api/chat` or `POST /api/generate` body
 * (`_ollama_schemas.ts`) translated to the OpenAI request the provider receives, or recognized
 * as a load or unload request, which is answered locally.
 *
 * - Messages: object tool-call arguments become JSON text, tool results get the `tool_call_id`
 *   of the call they answer (by `tool_name`, else in order), base64 `images` become `image_url`
 *   parts with a sniffed type.
 * - `options` map to OpenAI sampling fields, `format` to `response_format`, `think` to
 *   `reasoning_effort`.
 * - `POST /api/generate` with an empty prompt loads (`done_reason: "load"`), and with
 *   `keep_alive: 0` unloads (`done_reason: "unload"`); `POST /api/chat` does the same for an
 *   empty `messages` array. Nothing is sent to the network for them: there is nothing to load.
 *
 * @example
 * ```ts
 * import { parseOllamaRequest } from "./ollama_request.ts";
 *
 * const parsed = parseOllamaRequest("generate", { model: "net/tee/devnet/echo", prompt: "" });
 * console.assert(parsed.kind === "load");
 * ```
 *
 * @module
 */

import { abbreviate } from "../../errors.ts";
import {
  type ChatRequest,
  DaemonError,
  type ForwardedChatBody,
  parseModelId,
} from "../core/mod.ts";
import {
  OLLAMA_CHAT_REQUEST,
  OLLAMA_GENERATE_REQUEST,
  OLLAMA_OPTIONS,
  type OllamaChatBody,
  type OllamaGenerateBody,
  type OllamaMessage,
} from "./_ollama_schemas.ts";
import { routed, validate } from "../surface/mod.ts";

/** A validated `/api/chat` or `/api/generate` request that goes to the network. */
export interface OllamaChatCall {
  /** Which endpoint was called: it decides `message` (chat) or `response` (generate). */
  readonly endpoint: "chat" | "generate";
  /** The model id as the client wrote it (echoed in the reply). */
  readonly requestedModel: string;
  /** What goes to the backend. */
  readonly request: ChatRequest;
  /** Whether to stream NDJSON. */
  readonly stream: boolean;
  /** Whether the client asked for the model's thinking (`think`). */
  readonly think: boolean;
  /** Whether the client asked for log probabilities (`logprobs`, `top_logprobs`). */
  readonly logprobs: boolean;
}

/** A load or unload request (empty prompt or messages): answered locally. */
export interface OllamaLoadCall {
  /** Which endpoint was called. */
  readonly endpoint: "chat" | "generate";
  /** The model id as the client wrote it. */
  readonly requestedModel: string;
  /** Whether to answer as a one-line NDJSON stream. */
  readonly stream: boolean;
  /** `load`, or `unload` for `keep_alive: 0`. */
  readonly action: "load" | "unload";
}

/** The parsed form of an Ollama chat or generate request. */
export type OllamaCall =
  | { readonly kind: "chat"; readonly call: OllamaChatCall }
  | { readonly kind: "load"; readonly call: OllamaLoadCall };

function invalid(message: string, param: string | null = null): DaemonError {
  return new DaemonError("invalid_request_error", message, { param });
}

/** Whether a `keep_alive` value means "unload now": `0`, `"0"`, `"0s"`, `"0m"`, … */
export function isZeroKeepAlive(value: unknown): boolean {
  if (value === 0) return true;
  return typeof value === "string" && /^0+(\.0+)?(ns|us|µs|ms|s|m|h)?$/.test(value.trim());
}

const SNIFF: readonly [string, string][] = [
  ["iVBORw0KGgo", "image/png"],
  ["/9j/", "image/jpeg"],
  ["R0lGOD", "image/gif"],
  ["UklGR", "image/webp"],
];

function imagePart(image: string, where: string): Record<string, unknown> {
  if (image.length === 0) {
    throw invalid(`Cannot chat: ${where} must be a base64 string, found an empty one`, where);
  }
  if (image.startsWith("data:")) return { type: "image_url", image_url: { url: image } };
  const base64 = image.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) {
    throw invalid(
      `Cannot chat: ${where} is not base64 (found ${JSON.stringify(abbreviate(image, 16))})`,
      where,
    );
  }
  const mime = SNIFF.find(([prefix]) => base64.startsWith(prefix))?.[1] ?? "image/jpeg";
  return { type: "image_url", image_url: { url: `data:${mime};base64,${base64}` } };
}

/** The content with its images as parts; `where` is the field the images are in. */
function withImages(
  content: string,
  images: readonly string[] | null | undefined,
  where: string,
): string | Record<string, unknown>[] {
  if (!images || images.length === 0) return content;
  return [
    { type: "text", text: content },
    ...images.map((image, i) => imagePart(image, `${where}[${i}]`)),
  ];
}

/** Tool calls with object arguments as OpenAI's, with ids (`call_<message>_<index>` if none). */
function toolCalls(
  message: OllamaMessage,
  i: number,
): { id: string; name: string; out: unknown }[] {
  return (message.tool_calls ?? []).map((call, j) => {
    const args = call.function.arguments ?? {};
    const id = call.id ? call.id : `call_${i}_${j}`;
    const name = call.function.name;
    return {
      id,
      name,
      out: {
        id,
        type: "function",
        function: { name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
      },
    };
  });
}

/**
 * Translates validated Ollama messages to OpenAI messages: object tool-call arguments become
 * JSON text, tool results get the `tool_call_id` of the call they answer (by `tool_name`, else in
 * order), base64 images become `image_url` parts.
 *
 * @throws {DaemonError} `invalid_request_error` naming the message at fault (an image that is
 * not base64, a tool result with no call to answer).
 */
export function translateMessages(messages: readonly OllamaMessage[]): Record<string, unknown>[] {
  const pending: { id: string; name: string }[] = [];
  return messages.map((message, i) => {
    const where = `messages[${i}]`;
    const content = message.content ?? "";
    const out: Record<string, unknown> = {
      role: message.role,
      content: withImages(content, message.images, `${where}.images`),
    };
    if (message.role === "assistant" && message.tool_calls) {
      const calls = toolCalls(message, i);
      pending.length = 0;
      pending.push(...calls.map(({ id, name }) => ({ id, name })));
      out.tool_calls = calls.map((call) => call.out);
      if (content === "") out.content = null;
    }
    if (message.role === "tool") {
      let id = message.tool_call_id ?? "";
      if (!id) {
        if (pending.length === 0) {
          throw invalid(
            `Cannot chat: ${where} is a tool result, but no earlier assistant tool call is left ` +
              "for it to answer",
            where,
          );
        }
        const byName = pending.findIndex((p) => p.name === message.tool_name);
        id = pending.splice(byName >= 0 ? byName : 0, 1)[0].id;
      }
      out.tool_call_id = id;
    }
    return out;
  });
}

const SAMPLING = ["temperature", "top_p", "presence_penalty", "frequency_penalty"] as const;

const MAYBE_OPTIONS = OLLAMA_OPTIONS.nullable().optional();

/**
 * Maps Ollama `options` to OpenAI sampling fields: `temperature`, `top_p`, `seed`,
 * `presence_penalty`, `frequency_penalty`, `stop`, and `num_predict` → `max_tokens` (negative:
 * no limit). Other options (`num_ctx`, `top_k`, `repeat_penalty`, …) have no OpenAI
 * counterpart and are ignored.
 *
 * @throws {DaemonError} `invalid_request_error` for options that are not an object, or a mapped
 * option of the wrong type.
 */
export function translateOptions(options: unknown): Record<string, unknown> {
  const checked = validate(MAYBE_OPTIONS, options, "options");
  if (!checked) return {};
  const out: Record<string, unknown> = {};
  for (const name of SAMPLING) {
    const value = checked[name];
    if (value !== undefined && value !== null) out[name] = value;
  }
  if (checked.seed !== undefined && checked.seed !== null) out.seed = checked.seed;
  if (checked.num_predict && checked.num_predict > 0) out.max_tokens = checked.num_predict;
  const stop = typeof checked.stop === "string" ? [checked.stop] : checked.stop;
  if (stop && stop.length > 0) out.stop = stop;
  return out;
}

function translateFormat(format: OllamaChatBody["format"]): Record<string, unknown> {
  if (format === undefined || format === null || format === "") return {};
  if (format === "json") return { response_format: { type: "json_object" } };
  return {
    response_format: { type: "json_schema", json_schema: { name: "response", schema: format } },
  };
}

function translateThink(think: OllamaChatBody["think"]): Record<string, unknown> {
  return typeof think === "string" ? { reasoning_effort: think } : {};
}

/** The messages a generate request becomes: its system prompt, then its prompt and images. */
function generateMessages(body: OllamaGenerateBody): Record<string, unknown>[] {
  return [
    ...(body.system ? [{ role: "system", content: body.system }] : []),
    { role: "user", content: withImages(body.prompt ?? "", body.images, "images") },
  ];
}

/**
 * Builds the call of a validated chat or generate body: the OpenAI request to forward, or a
 * load/unload request.
 *
 * @throws {DaemonError} `invalid_request_error`, or the `ModelIdError` of a malformed model id.
 */
export function ollamaCall(
  endpoint: "chat" | "generate",
  body: OllamaChatBody | OllamaGenerateBody,
): OllamaCall {
  if (body.model === undefined) {
    throw invalid(`Cannot ${endpoint}: the request has no "model"`, "model");
  }
  const id = parseModelId(body.model);
  const requestedModel = body.model as string;
  const stream = body.stream ?? true;
  const load = (): OllamaCall => ({
    kind: "load",
    call: {
      endpoint,
      requestedModel,
      stream,
      action: isZeroKeepAlive(body.keep_alive) ? "unload" : "load",
    },
  });
  let messages: Record<string, unknown>[];
  if (endpoint === "chat") {
    const chat = body as OllamaChatBody;
    if (chat.messages.length === 0) return load();
    messages = translateMessages(chat.messages);
  } else {
    const generate = body as OllamaGenerateBody;
    if (!generate.prompt && !generate.images?.length) return load();
    messages = generateMessages(generate);
  }
  const forwarded: ForwardedChatBody = {
    model: id.model,
    messages,
    ...translateOptions(body.options),
    ...translateFormat(body.format),
    ...translateThink(body.think),
    stream: true,
    stream_options: { include_usage: true },
  };
  const tools = endpoint === "chat" ? (body as OllamaChatBody).tools : undefined;
  if (tools && tools.length > 0) forwarded.tools = tools;
  const think = body.think !== undefined && body.think !== null && body.think !== false;
  const logprobs = body.logprobs === true || (body.top_logprobs ?? 0) > 0;
  if (logprobs) {
    forwarded.logprobs = true;
    if (body.top_logprobs) forwarded.top_logprobs = body.top_logprobs;
  }
  return {
    kind: "chat",
    call: {
      endpoint,
      requestedModel,
      request: routed(
        { tier: id.tier, model: id.model, body: forwarded, whole: !stream },
        body.provider,
      ),
      stream,
      think,
      logprobs,
    },
  };
}

/**
 * Validates a raw `POST /api/chat` or `POST /api/generate` body and builds its call.
 *
 * @throws {DaemonError} `invalid_request_error` naming the field, or the `ModelIdError` of a
 * malformed model id.
 */
export function parseOllamaRequest(endpoint: "chat" | "generate", body: unknown): OllamaCall {
  const schema = endpoint === "chat" ? OLLAMA_CHAT_REQUEST : OLLAMA_GENERATE_REQUEST;
  return ollamaCall(endpoint, validate(schema, body));
}
