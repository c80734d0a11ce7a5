/**
 * The Ollama dialect: `POST /api/chat`, `POST /api/generate`, `GET /api/tags`,
 * `POST /api/show`, `GET /api/ps`, `GET /api/version`, shaped as
 * `../shared/design/clients.md` describes and as ollama-js, ollama-python, Open WebUI and
 * Continue parse them.
 *
 * - Chat and generate stream NDJSON by default (`stream` defaults to `true`); every stream ends
 *   with a `done: true` line carrying `done_reason` and the counters (`prompt_eval_count`,
 *   `eval_count`, `total_duration`, `load_duration`, `prompt_eval_duration`, `eval_duration`,
 *   durations in nanoseconds as measured by the daemon). `stream: false` gives one object
 *   shaped like the final line with the whole content. An error after the stream has started
 *   is one `{"error":"…"}` line.
 * - Tool calls carry object `arguments`; the request's Ollama messages (object arguments,
 *   `tool_name`, base64 `images`) are translated to the OpenAI shape the provider receives.
 * - `POST /api/generate` with an empty prompt loads (`done_reason: "load"`), and with
 *   `keep_alive: 0` unloads (`done_reason: "unload"`); `POST /api/chat` does the same for an
 *   empty `messages` array. Nothing is sent to the network for them: there is nothing to load.
 * - Ids are listed with `:latest` (`net/<tier>/<maker>/<model>:latest`).
 *
 * @module
 */

import { abbreviate } from "../errors.ts";
import type { ChatRequest, ForwardedChatBody, NetworkModel } from "./backend.ts";
import { DaemonError } from "./daemon_error.ts";
import { streamErrorText } from "./http_error.ts";
import { formatModelId, parseModelId } from "./model_id.ts";
import type { SurfaceContext } from "./_context.ts";
import {
  aggregateReply,
  type AssembledToolCall,
  openReply,
  ReplyBudget,
  type ReplyEvent,
  replyEvents,
  requestController,
  servedHeaders,
  textStream,
  ToolCallAssembler,
} from "./_reply.ts";
import { findModel, listNetworkModels } from "./_models.ts";

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

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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

function imagePart(image: unknown, where: string): Record<string, unknown> {
  if (typeof image !== "string" || image.length === 0) {
    throw invalid(`Cannot chat: ${where} must be a base64 string, found ${kind(image)}`, where);
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

function withImages(
  content: string,
  images: unknown,
  where: string,
): string | Record<string, unknown>[] {
  if (images === undefined || images === null) return content;
  if (!Array.isArray(images)) {
    throw invalid(`Cannot chat: ${where}.images must be an array, found ${kind(images)}`);
  }
  if (images.length === 0) return content;
  return [
    { type: "text", text: content },
    ...images.map((image, i) => imagePart(image, `${where}.images[${i}]`)),
  ];
}

/**
 * Translates Ollama messages to OpenAI messages: object tool-call arguments become JSON text,
 * tool results get the `tool_call_id` of the call they answer (by `tool_name`, else in order),
 * base64 images become `image_url` parts.
 *
 * @throws {DaemonError} `invalid_request_error` naming the message at fault.
 */
export function translateMessages(messages: readonly unknown[]): Record<string, unknown>[] {
  const pending: { id: string; name: string }[] = [];
  return messages.map((raw, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(raw)) {
      throw invalid(`Cannot chat: ${where} must be an object, found ${kind(raw)}`, where);
    }
    const role = raw.role;
    if (typeof role !== "string" || role.length === 0) {
      throw invalid(
        `Cannot chat: ${where}.role must be a non-empty string, found ${
          role === undefined ? "nothing" : kind(role)
        }`,
        `${where}.role`,
      );
    }
    const content = raw.content ?? "";
    if (typeof content !== "string") {
      throw invalid(
        `Cannot chat: ${where}.content must be a string, found ${kind(content)}`,
        `${where}.content`,
      );
    }
    const out: Record<string, unknown> = { role, content: withImages(content, raw.images, where) };
    if (role === "assistant" && raw.tool_calls !== undefined && raw.tool_calls !== null) {
      if (!Array.isArray(raw.tool_calls)) {
        throw invalid(`Cannot chat: ${where}.tool_calls must be an array`, `${where}.tool_calls`);
      }
      pending.length = 0;
      out.tool_calls = raw.tool_calls.map((call, j) => {
        const fn = isRecord(call) ? call.function : undefined;
        const name = isRecord(fn) ? fn.name : undefined;
        if (!isRecord(fn) || typeof name !== "string" || name.length === 0) {
          throw invalid(
            `Cannot chat: ${where}.tool_calls[${j}] must have a function with a name`,
            `${where}.tool_calls`,
          );
        }
        const args = fn.arguments ?? {};
        const id = isRecord(call) && typeof call.id === "string" && call.id
          ? call.id
          : `call_${i}_${j}`;
        pending.push({ id, name });
        return {
          id,
          type: "function",
          function: { name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
        };
      });
      if (content === "") out.content = null;
    }
    if (role === "tool") {
      let id = typeof raw.tool_call_id === "string" && raw.tool_call_id ? raw.tool_call_id : "";
      if (!id) {
        const byName = typeof raw.tool_name === "string"
          ? pending.findIndex((p) => p.name === raw.tool_name)
          : -1;
        const at = byName >= 0 ? byName : 0;
        if (pending.length === 0) {
          throw invalid(
            `Cannot chat: ${where} is a tool result, but no earlier assistant tool call is left ` +
              "for it to answer",
            where,
          );
        }
        id = pending.splice(at, 1)[0].id;
      }
      out.tool_call_id = id;
    }
    return out;
  });
}

const NUMERIC_OPTIONS: readonly [string, string][] = [
  ["temperature", "temperature"],
  ["top_p", "top_p"],
  ["presence_penalty", "presence_penalty"],
  ["frequency_penalty", "frequency_penalty"],
];

/**
 * Maps Ollama `options` to OpenAI sampling fields: `temperature`, `top_p`, `seed`,
 * `presence_penalty`, `frequency_penalty`, `stop`, and `num_predict` → `max_tokens` (negative:
 * no limit). Other options (`num_ctx`, `top_k`, `repeat_penalty`, …) have no OpenAI
 * counterpart and are ignored.
 *
 * @throws {DaemonError} `invalid_request_error` for a mapped option of the wrong type.
 */
export function translateOptions(options: unknown): Record<string, unknown> {
  if (options === undefined || options === null) return {};
  if (!isRecord(options)) {
    throw invalid(`Cannot chat: "options" must be an object, found ${kind(options)}`, "options");
  }
  const out: Record<string, unknown> = {};
  for (const [from, to] of NUMERIC_OPTIONS) {
    const value = options[from];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw invalid(
        `Cannot chat: options.${from} must be a number, found ${kind(value)}`,
        `options.${from}`,
      );
    }
    out[to] = value;
  }
  for (const name of ["seed", "num_predict"]) {
    const value = options[name];
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value)) {
      throw invalid(
        `Cannot chat: options.${name} must be an integer, found ${
          abbreviate(JSON.stringify(value), 20)
        }`,
        `options.${name}`,
      );
    }
    if (name === "seed") out.seed = value;
    else if ((value as number) > 0) out.max_tokens = value;
  }
  const stop = options.stop;
  if (stop !== undefined && stop !== null) {
    const list = typeof stop === "string" ? [stop] : stop;
    if (!Array.isArray(list) || !list.every((s) => typeof s === "string")) {
      throw invalid(
        `Cannot chat: options.stop must be a list of strings, found ${kind(stop)}`,
        "options.stop",
      );
    }
    if (list.length > 0) out.stop = list;
  }
  return out;
}

function translateFormat(format: unknown): Record<string, unknown> {
  if (format === undefined || format === null || format === "") return {};
  if (format === "json") return { response_format: { type: "json_object" } };
  if (isRecord(format)) {
    return {
      response_format: { type: "json_schema", json_schema: { name: "response", schema: format } },
    };
  }
  throw invalid(
    `Cannot chat: "format" must be "json" or a JSON schema object, found ${
      abbreviate(JSON.stringify(format), 30)
    }`,
    "format",
  );
}

function parseThink(think: unknown): { think: boolean; fields: Record<string, unknown> } {
  if (think === undefined || think === null || think === false) return { think: false, fields: {} };
  if (think === true) return { think: true, fields: {} };
  if (think === "low" || think === "medium" || think === "high") {
    return { think: true, fields: { reasoning_effort: think } };
  }
  throw invalid(
    `Cannot chat: "think" must be a boolean or low, medium or high, found ${
      abbreviate(JSON.stringify(think), 20)
    }`,
    "think",
  );
}

/**
 * Validates `POST /api/chat` or `POST /api/generate` and builds the OpenAI request to forward,
 * or recognizes a load/unload request.
 *
 * @throws {DaemonError} `invalid_request_error`, or the `ModelIdError` of a malformed model id.
 */
export function parseOllamaRequest(
  endpoint: "chat" | "generate",
  body: Record<string, unknown>,
): OllamaCall {
  if (body.model === undefined) {
    throw invalid(`Cannot ${endpoint}: the request has no "model"`, "model");
  }
  const id = parseModelId(body.model);
  const requestedModel = body.model as string;
  const stream = body.stream ?? true;
  if (typeof stream !== "boolean") {
    throw invalid(`Cannot ${endpoint}: "stream" must be a boolean, found ${kind(stream)}`);
  }
  const action = isZeroKeepAlive(body.keep_alive) ? "unload" : "load";
  let messages: Record<string, unknown>[];
  if (endpoint === "chat") {
    if (!Array.isArray(body.messages)) {
      throw invalid(
        `Cannot chat: "messages" must be an array of messages, found ${
          body.messages === undefined ? "nothing" : kind(body.messages)
        }`,
        "messages",
      );
    }
    if (body.messages.length === 0) {
      return { kind: "load", call: { endpoint, requestedModel, stream, action } };
    }
    messages = translateMessages(body.messages);
  } else {
    const prompt = body.prompt ?? "";
    const system = body.system ?? "";
    if (typeof prompt !== "string") {
      throw invalid(`Cannot generate: "prompt" must be a string, found ${kind(prompt)}`, "prompt");
    }
    if (typeof system !== "string") {
      throw invalid(`Cannot generate: "system" must be a string, found ${kind(system)}`, "system");
    }
    const images = Array.isArray(body.images) ? body.images : [];
    if (prompt === "" && images.length === 0) {
      return { kind: "load", call: { endpoint, requestedModel, stream, action } };
    }
    messages = [
      ...(system ? [{ role: "system", content: system }] : []),
      { role: "user", content: withImages(prompt, body.images, "request") },
    ];
  }
  const think = parseThink(body.think);
  const forwarded: ForwardedChatBody = {
    model: id.model,
    messages,
    ...translateOptions(body.options),
    ...translateFormat(body.format),
    ...think.fields,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (endpoint === "chat" && body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) {
      throw invalid(`Cannot chat: "tools" must be an array, found ${kind(body.tools)}`, "tools");
    }
    if (body.tools.length > 0) forwarded.tools = body.tools;
  }
  return {
    kind: "chat",
    call: {
      endpoint,
      requestedModel,
      request: { tier: id.tier, model: id.model, body: forwarded },
      stream,
      think: think.think,
    },
  };
}

function headers(contentType: string): Headers {
  return new Headers({
    "content-type": contentType,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
}

const JSON_TYPE = "application/json; charset=utf-8";
const NDJSON_TYPE = "application/x-ndjson";

/** Answers a load or unload request: one `done: true` object, nothing sent to the network. */
export function serveOllamaLoad(context: SurfaceContext, call: OllamaLoadCall): Response {
  const line: Record<string, unknown> = {
    model: call.requestedModel,
    created_at: context.clock().toISOString(),
    ...(call.endpoint === "chat"
      ? { message: { role: "assistant", content: "" } }
      : { response: "" }),
    done: true,
    done_reason: call.action,
  };
  const text = JSON.stringify(line) + (call.stream ? "\n" : "");
  return new Response(text, { headers: headers(call.stream ? NDJSON_TYPE : JSON_TYPE) });
}

function ns(fromMs: number, toMs: number): number {
  return Math.max(0, Math.round((toMs - fromMs) * 1e6));
}

/** Ollama's `done_reason` for an OpenAI `finish_reason`. */
export function doneReason(finishReason: string): string {
  return finishReason === "tool_calls" || finishReason === "function_call" ? "stop" : finishReason;
}

/** Parses assembled tool calls into Ollama's object-argument form. */
function ollamaToolCalls(calls: readonly AssembledToolCall[]): Record<string, unknown>[] {
  return calls.map((call) => {
    let args: unknown;
    try {
      args = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
    } catch (cause) {
      throw new DaemonError(
        "provider_error",
        `Cannot read the provider's reply: the arguments of tool call ${
          JSON.stringify(call.name)
        } are not JSON (${JSON.stringify(abbreviate(call.arguments, 40))})`,
        { cause },
      );
    }
    if (!isRecord(args)) {
      throw new DaemonError(
        "provider_error",
        `Cannot read the provider's reply: the arguments of tool call ${
          JSON.stringify(call.name)
        } must be a JSON object, found ${kind(args)}`,
      );
    }
    return { id: call.id, function: { name: call.name, arguments: args } };
  });
}

/**
 * Serves a validated chat or generate call: NDJSON lines ending with `done: true`, or one
 * object for `stream: false`.
 *
 * @throws {DaemonError} (or any error, rendered as 500) when the reply fails before it starts;
 * for a stream, later failures are sent in-stream.
 */
export async function serveOllamaChat(
  context: SurfaceContext,
  served: { call: OllamaChatCall; request: Request },
): Promise<Response> {
  const { call } = served;
  const start = context.clock().getTime();
  const { controller, release } = requestController(served.request);
  try {
    const reply = await openReply(context, {
      request: call.request,
      requestedModel: call.requestedModel,
      controller,
    });
    const events = replyEvents(context, { reply, controller });
    if (!call.stream) {
      let firstToken: number | undefined;
      const whole = await aggregateReply(
        context,
        onFirstEvent(events, () => firstToken = context.clock().getTime()),
      );
      const end = context.clock().getTime();
      firstToken ??= end;
      const body: Record<string, unknown> = {
        model: call.requestedModel,
        created_at: new Date(end).toISOString(),
      };
      if (call.endpoint === "chat") {
        const message: Record<string, unknown> = { role: "assistant", content: whole.content };
        if (call.think && whole.reasoning) message.thinking = whole.reasoning;
        if (whole.toolCalls.length > 0) message.tool_calls = ollamaToolCalls(whole.toolCalls);
        body.message = message;
      } else {
        body.response = whole.content;
        if (call.think && whole.reasoning) body.thinking = whole.reasoning;
      }
      Object.assign(body, {
        done: true,
        done_reason: doneReason(whole.finishReason),
        total_duration: ns(start, end),
        load_duration: 0,
        prompt_eval_count: whole.usage.prompt_tokens,
        prompt_eval_duration: ns(start, firstToken),
        eval_count: whole.usage.completion_tokens,
        eval_duration: ns(firstToken, end),
      });
      release();
      const out = headers(JSON_TYPE);
      for (const [k, v] of Object.entries(servedHeaders(reply.served))) out.set(k, v);
      return new Response(JSON.stringify(body), { headers: out });
    }
    const out = headers(NDJSON_TYPE);
    for (const [k, v] of Object.entries(servedHeaders(reply.served))) out.set(k, v);
    const pieces = ndjsonLines(context, { call, events, start });
    return new Response(textStream(pieces, { controller, onDone: release }), { headers: out });
  } catch (error) {
    release();
    throw error;
  }
}

async function* onFirstEvent<T>(
  events: AsyncIterable<T>,
  first: () => void,
): AsyncGenerator<T, void, undefined> {
  let seen = false;
  for await (const event of events) {
    if (!seen) {
      seen = true;
      first();
    }
    yield event;
  }
}

async function* ndjsonLines(
  context: SurfaceContext,
  stream: {
    call: OllamaChatCall;
    events: AsyncGenerator<ReplyEvent, void, undefined>;
    start: number;
  },
): AsyncGenerator<string, void, undefined> {
  const { call, events, start } = stream;
  const line = (fields: Record<string, unknown>) =>
    JSON.stringify({
      model: call.requestedModel,
      created_at: context.clock().toISOString(),
      ...fields,
    }) + "\n";
  const piece = (content: string, thinking?: string) =>
    call.endpoint === "chat"
      ? {
        message: {
          role: "assistant",
          content,
          ...(thinking === undefined ? {} : { thinking }),
        },
      }
      : { response: content, ...(thinking === undefined ? {} : { thinking }) };
  // Ollama sends tool calls in one line at the end: they are buffered, so they are bounded.
  const tools = new ToolCallAssembler(new ReplyBudget(context.maxReplyBytes));
  let firstToken: number | undefined;
  let finishReason = "stop";
  try {
    for await (const event of events) {
      switch (event.type) {
        case "content":
        case "refusal":
          firstToken ??= context.clock().getTime();
          yield line({ ...piece(event.text), done: false });
          break;
        case "reasoning":
          firstToken ??= context.clock().getTime();
          if (call.think) yield line({ ...piece("", event.text), done: false });
          break;
        case "tool_call":
          firstToken ??= context.clock().getTime();
          tools.add(event.delta);
          break;
        case "finish":
          finishReason = event.reason;
          break;
        case "usage": {
          if (tools.size > 0 && call.endpoint === "chat") {
            yield line({
              message: {
                role: "assistant",
                content: "",
                tool_calls: ollamaToolCalls(tools.calls(context)),
              },
              done: false,
            });
          }
          const end = context.clock().getTime();
          firstToken ??= end;
          yield line({
            ...piece(""),
            done: true,
            done_reason: doneReason(finishReason),
            total_duration: ns(start, end),
            load_duration: 0,
            prompt_eval_count: event.usage.prompt_tokens,
            prompt_eval_duration: ns(start, firstToken),
            eval_count: event.usage.completion_tokens,
            eval_duration: ns(firstToken, end),
          });
          break;
        }
      }
    }
  } catch (error) {
    yield streamErrorText(error, "ollama", { log: context.log });
  } finally {
    await events.return(undefined);
  }
}

/** The `details` object of a listed model. */
function details(model: NetworkModel): Record<string, unknown> {
  const maker = model.model.split("/")[0];
  return {
    parent_model: "",
    format: "remote",
    family: maker,
    families: [maker],
    parameter_size: "",
    quantization_level: "",
  };
}

async function digest(id: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(id));
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One entry of `GET /api/tags`. */
export interface OllamaTag {
  /** `net/<tier>/<maker>/<model>:latest` (Continue keys on it). */
  name: string;
  /** The same (Open WebUI keys on it). */
  model: string;
  /** When the daemon started (RFC 3339). */
  modified_at: string;
  /** `0`: nothing is stored locally. */
  size: number;
  /** SHA-256 of the id, hex: stable per model. */
  digest: string;
  /** Format `remote`, family = the maker. */
  details: Record<string, unknown>;
}

/** Serves `GET /api/tags`: `{"models":[…]}` with `:latest` names. */
export async function serveOllamaTags(
  context: SurfaceContext,
  httpRequest: Request,
): Promise<Response> {
  const models = await listNetworkModels(context, httpRequest);
  const tags: OllamaTag[] = await Promise.all(models.map(async (model) => {
    const name = formatModelId(model, { latest: true });
    return {
      name,
      model: name,
      modified_at: context.startedAt.toISOString(),
      size: 0,
      digest: await digest(name),
      details: details(model),
    };
  }));
  return new Response(JSON.stringify({ models: tags }), { headers: headers(JSON_TYPE) });
}

/**
 * Serves `POST /api/show` (`{"model": …}` or the legacy `{"name": …}`): parameters
 * (`num_ctx <context length>`), template, details, `model_info`, capabilities.
 *
 * @throws {DaemonError} `model_not_found` (`model '…' not found`), `invalid_request_error`
 * when no name is given, or the `ModelIdError` of a malformed id.
 */
export async function serveOllamaShow(
  context: SurfaceContext,
  show: { body: Record<string, unknown>; request: Request },
): Promise<Response> {
  const { body } = show;
  const requested = body.model ?? body.name;
  if (requested === undefined) {
    throw invalid(`Cannot show a model: the request has no "model" (or "name")`, "model");
  }
  const id = parseModelId(requested);
  const models = await listNetworkModels(context, show.request);
  const model = findModel(models, id);
  if (!model) {
    throw new DaemonError("model_not_found", `model '${requested}' not found`, { param: "model" });
  }
  const name = formatModelId(model, { latest: true });
  const shown = {
    license: "",
    modelfile: `# Served by the network through the local daemon (${model.tier} tier)\n` +
      `FROM ${name}\nPARAMETER num_ctx ${model.contextLength}\n`,
    parameters: `num_ctx ${model.contextLength}`,
    template: "{{ .Prompt }}",
    system: "",
    details: details(model),
    model_info: {
      "general.architecture": "net",
      "general.basename": model.model,
      "net.context_length": model.contextLength,
      "net.tier": model.tier,
      "net.providers": model.providers,
    },
    capabilities: [...(model.capabilities ?? ["completion"])],
    modified_at: context.startedAt.toISOString(),
  };
  return new Response(JSON.stringify(shown), { headers: headers(JSON_TYPE) });
}

/** Serves `GET /api/ps`: nothing is loaded locally. */
export function serveOllamaPs(): Response {
  return new Response(JSON.stringify({ models: [] }), { headers: headers(JSON_TYPE) });
}

/** Serves `GET /api/version`: `{"version":"X.Y.Z"}`. */
export function serveOllamaVersion(version: string): Response {
  return new Response(JSON.stringify({ version }), { headers: headers(JSON_TYPE) });
}
