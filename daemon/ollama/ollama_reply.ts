/**
 * The Ollama dialect's replies to `POST /api/chat` and `POST /api/generate`, shaped as
 * `../shared/design/clients.md` describes and as ollama-js, ollama-python, Open WebUI and
 * Continue parse them.
 *
 * - Chat and generate stream NDJSON by default (`stream` defaults to `true`); every stream ends
 *   with a `done: true` line carrying `done_reason` and the counters (`prompt_eval_count`,
 *   `eval_count`, `total_duration`, `load_duration`, `prompt_eval_duration`, `eval_duration`,
 *   durations in nanoseconds as measured by the daemon). `stream: false` gives one object
 *   shaped like the final line with the whole content. An error after the stream has started
 *   is one `{"error":"…"}` line.
 * - Tool calls carry object `arguments`, sent in one line before the last.
 * - With `logprobs` (or `top_logprobs`), a line carries the `logprobs` of its tokens, and the
 *   whole answer all of them, as Ollama sends them; refused with a 400 for a model that does not
 *   advertise the capability.
 * - A load or unload request is answered with one `done: true` object, without the network.
 *
 * @module
 */

import { abbreviate } from "../../errors.ts";
import { type ChatReply, DaemonError, streamErrorText } from "../core/mod.ts";
import type { OllamaChatCall, OllamaLoadCall } from "./ollama_request.ts";
import {
  type AggregatedReply,
  aggregateReply,
  type AssembledToolCall,
  type CancelNote,
  costHeader,
  endedByCancel,
  ollamaCost,
  ReplyBudget,
  type ReplyEvent,
  servedHeaders,
  serveReply,
  type SurfaceContext,
  type TokenLogprob,
  ToolCallAssembler,
} from "../surface/mod.ts";
import type { OllamaLine } from "./_ollama_schemas.ts";

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The headers of an Ollama answer. */
export function ollamaHeaders(contentType: string): Headers {
  return new Headers({
    "content-type": contentType,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
}

/** The content type of a whole answer. */
export const JSON_TYPE = "application/json; charset=utf-8";
/** The content type of a stream. */
export const NDJSON_TYPE = "application/x-ndjson";

/** Answers a load or unload request: one `done: true` object, nothing sent to the network. */
export function serveOllamaLoad(context: SurfaceContext, call: OllamaLoadCall): Response {
  const head = { model: call.requestedModel, created_at: context.clock().toISOString() };
  const end = { done: true, done_reason: call.action } as const;
  const line: OllamaLine = call.endpoint === "chat"
    ? { ...head, message: { role: "assistant", content: "" }, ...end }
    : { ...head, response: "", ...end };
  const text = JSON.stringify(line) + (call.stream ? "\n" : "");
  return new Response(text, { headers: ollamaHeaders(call.stream ? NDJSON_TYPE : JSON_TYPE) });
}

function ns(fromMs: number, toMs: number): number {
  return Math.max(0, Math.round((toMs - fromMs) * 1e6));
}

/** Ollama's `done_reason` for an OpenAI `finish_reason`. */
export function doneReason(finishReason: string): string {
  return finishReason === "tool_calls" || finishReason === "function_call" ? "stop" : finishReason;
}

/** Token log probabilities as Ollama sends them: `bytes` only when there are some. */
function ollamaLogprobs(tokens: readonly TokenLogprob[]): Record<string, unknown>[] {
  const one = ({ token, logprob, bytes }: Omit<TokenLogprob, "top_logprobs">) =>
    bytes ? { token, logprob, bytes } : { token, logprob };
  return tokens.map((t) => ({ ...one(t), top_logprobs: t.top_logprobs.map(one) }));
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
  const headersOf = (type: string, reply: ChatReply) => {
    const out = ollamaHeaders(type);
    for (const [k, v] of Object.entries(servedHeaders(reply.served))) out.set(k, v);
    return out;
  };
  const what = `${call.endpoint} ${JSON.stringify(call.requestedModel)}`;
  const capabilities = { listing: "POST /api/show", fields: { format: "format" } };
  return await serveReply(context, { ...served, what, capabilities }, {
    async whole(events, reply) {
      let firstToken: number | undefined;
      const whole = await aggregateReply(
        context,
        onFirstEvent(events, () => firstToken = context.clock().getTime()),
      );
      const end = context.clock().getTime();
      const body = wholeAnswer(call, whole, { start, firstToken: firstToken ?? end, end });
      const headers = headersOf(JSON_TYPE, reply);
      for (const [name, value] of costHeader(whole.usage)) headers.set(name, value);
      return new Response(JSON.stringify(body), { headers });
    },
    stream(events, reply, cancel) {
      const pieces = ndjsonLines(context, { call, events, start, cancel });
      return { headers: headersOf(NDJSON_TYPE, reply), pieces };
    },
  });
}

/** The whole answer of a chat or generate call (`stream: false`): the last line, with all. */
function wholeAnswer(
  call: OllamaChatCall,
  whole: AggregatedReply,
  times: { start: number; firstToken: number; end: number },
): Record<string, unknown> {
  const { start, firstToken, end } = times;
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
  if (call.logprobs) body.logprobs = ollamaLogprobs(whole.logprobs ?? []);
  return Object.assign(body, {
    done: true,
    done_reason: doneReason(whole.finishReason),
    total_duration: ns(start, end),
    load_duration: 0,
    prompt_eval_count: whole.usage.prompt_tokens,
    prompt_eval_duration: ns(start, firstToken),
    eval_count: whole.usage.completion_tokens,
    eval_duration: ns(firstToken, end),
    ...ollamaCost(whole.usage),
  });
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
    cancel: CancelNote;
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
  // With logprobs, a piece waits for its chunk's log probabilities (they follow its content).
  let held: Record<string, unknown> | undefined;
  const flush = () => {
    const out = held === undefined ? [] : [line(held)];
    held = undefined;
    return out;
  };
  try {
    for await (const event of events) {
      if (event.type !== "logprobs") yield* flush();
      switch (event.type) {
        case "content":
        case "refusal":
          firstToken ??= context.clock().getTime();
          if (call.logprobs) held = { ...piece(event.text), done: false };
          else yield line({ ...piece(event.text), done: false });
          break;
        case "logprobs":
          if (!call.logprobs) break;
          held ??= { ...piece(""), done: false };
          held.logprobs = ollamaLogprobs(event.content);
          yield* flush();
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
            ...ollamaCost(event.usage),
          });
          break;
        }
      }
    }
  } catch (error) {
    if (endedByCancel(context, stream.cancel)) return;
    yield streamErrorText(error, "ollama", { log: context.log });
  } finally {
    await events.return(undefined);
  }
}
