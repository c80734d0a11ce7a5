/**
 * The part of a chat that both dialects share: starting the backend's reply (with a first-byte
 * timeout, and a check that it was served in the tier asked for), reading its chunks as
 * validated events (with an idle timeout), and aggregating them for `stream: false` clients.
 *
 * The provider's chunks are data from the network: every field the surface uses is checked,
 * and a reply that breaks the backend contract (`backend.ts`) becomes a `provider_error`.
 *
 * @module
 */

import { abbreviate } from "../errors.ts";
import type { ChatReply, ChatRequest, ServedBy, Tier, ToolCallDelta, Usage } from "./backend.ts";
import { DaemonError } from "./daemon_error.ts";
import { randomId, type SurfaceContext } from "./_context.ts";

/** One validated piece of a reply, in the order the provider sent it (usage always last). */
export type ReplyEvent =
  | { readonly type: "content"; readonly text: string }
  | { readonly type: "refusal"; readonly text: string }
  | { readonly type: "reasoning"; readonly text: string }
  | { readonly type: "tool_call"; readonly delta: ToolCallDelta }
  | { readonly type: "finish"; readonly reason: string }
  | { readonly type: "usage"; readonly usage: Usage };

/** The largest number of tool calls accepted in one reply. */
const MAX_TOOL_CALLS = 128;

/**
 * An abort controller for one request: aborted when the client goes away (`request.signal`)
 * and by the surface on timeouts and cancellation. Call `release()` when the request is done.
 */
export function requestController(
  request: Request,
): { controller: AbortController; release: () => void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(request.signal.reason);
  if (request.signal.aborted) onAbort();
  else request.signal.addEventListener("abort", onAbort, { once: true });
  return {
    controller,
    release: () => request.signal.removeEventListener("abort", onAbort),
  };
}

/**
 * Runs `promise` against a timer: when `ms` passes first, aborts `controller` and throws a
 * `timeout` error saying what was awaited.
 */
export async function withTimeout<T>(
  promise: Promise<T>,
  options: { ms: number; controller: AbortController; what: string },
): Promise<T> {
  const { ms, controller, what } = options;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new DaemonError(
        "timeout",
        `Cannot finish the request: ${what} for ${formatSeconds(ms)}`,
      );
      controller.abort(error);
      reject(error);
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * An idle watchdog for a stream: `next(promise)` waits for one step, and fails with a
 * `timeout` (after aborting `controller`) when a step takes longer than `ms`. One timer per
 * stream, re-armed lazily, instead of one per step: a step costs a promise, not a timer.
 */
export function idleWatchdog(
  options: { ms: number; controller: AbortController; what: string },
): { next<T>(step: Promise<T>): Promise<T>; stop(): void } {
  const { ms, controller, what } = options;
  let deadline = 0;
  let waiting: ((error: unknown) => void) | undefined;
  let expired: DaemonError | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = () => {
    timer = undefined;
    const left = deadline - performance.now();
    if (waiting === undefined || left > 0) {
      timer = setTimeout(check, waiting === undefined ? ms : left);
      return;
    }
    expired = new DaemonError(
      "timeout",
      `Cannot finish the request: ${what} for ${formatSeconds(ms)}`,
    );
    controller.abort(expired);
    waiting(expired);
  };
  return {
    next<T>(step: Promise<T>): Promise<T> {
      if (expired) return Promise.reject(expired);
      deadline = performance.now() + ms;
      timer ??= setTimeout(check, ms);
      return new Promise<T>((resolve, reject) => {
        waiting = reject;
        step.then(resolve, reject).finally(() => {
          // Only this step's waiter: the next step may already be waiting.
          if (waiting === reject) waiting = undefined;
        });
      });
    },
    stop() {
      clearTimeout(timer);
      timer = undefined;
      waiting = undefined;
    },
  };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/**
 * Asks the backend for a reply and waits for its first chunk, at most the first-byte timeout.
 * The reply must be served in the tier that was asked for: a TEE request is never answered by
 * a verified-tier provider (fail closed, whatever the backend does).
 *
 * @throws {DaemonError} the backend's refusal (`model_not_found` reworded to name
 * `requestedModel`), `timeout`, or an internal error for a reply whose `served` is malformed
 * or in the wrong tier.
 */
export async function openReply(
  context: SurfaceContext,
  call: { request: ChatRequest; requestedModel: string; controller: AbortController },
): Promise<ChatReply> {
  const { request, requestedModel, controller } = call;
  const pending = context.backend.chat(request, controller.signal);
  let reply: ChatReply;
  try {
    reply = await withTimeout(pending, {
      ms: context.firstByteTimeoutMs,
      controller,
      what: "no reply from the network",
    });
  } catch (error) {
    // A reply that arrives after we gave up is closed at once.
    pending.then((late) => closeChunks(late), () => {});
    if (error instanceof DaemonError && error.code === "model_not_found") {
      // One wording in both dialects, naming the id the client sent (Ollama's own text).
      throw new DaemonError("model_not_found", `model '${requestedModel}' not found`, {
        param: "model",
        cause: error,
      });
    }
    throw error;
  }
  const served = reply?.served;
  if (
    !served || !isText(served.provider) || !isText(served.verdict) ||
    !isText(served.gateway) || served.tier !== request.tier
  ) {
    controller.abort();
    closeChunks(reply);
    throw new Error(
      `backend contract broken: a ${request.tier}-tier reply says it was served by ${
        JSON.stringify(served)?.slice(0, 300)
      }`,
    );
  }
  return reply;
}

function isText(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}

function closeChunks(reply: ChatReply | undefined): void {
  try {
    const iterator = reply?.chunks?.[Symbol.asyncIterator]?.();
    iterator?.return?.()?.catch?.(() => {});
  } catch {
    // Nothing more to release.
  }
}

/** Printable ASCII only, at most 200 characters: safe as an HTTP header value. */
function headerValue(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, "?").trim();
  return clean.length <= 200 ? clean : clean.slice(0, 200);
}

/** The response headers naming who served a reply (`docs/daemon.md`). */
export function servedHeaders(served: ServedBy): Record<string, string> {
  return {
    "x-net-provider": headerValue(served.provider),
    "x-net-tier": headerValue(served.tier satisfies Tier),
    "x-net-verdict": headerValue(served.verdict),
    "x-net-gateway": headerValue(served.gateway),
  };
}

function providerError(what: string): DaemonError {
  return new DaemonError("provider_error", `Cannot read the provider's reply: ${what}`);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(abbreviate(value, 40));
  return typeof value === "object" ? "an object" : String(value);
}

function optionalText(value: unknown, where: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw providerError(`${where} must be a string, found ${describe(value)}`);
  }
  return value;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function parseUsage(value: unknown, where: string): Usage {
  const usage = value as Record<string, unknown>;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw providerError(`${where} usage must be an object, found ${describe(value)}`);
  }
  const prompt = usage.prompt_tokens;
  const completion = usage.completion_tokens;
  if (!isCount(prompt) || !isCount(completion)) {
    throw providerError(
      `${where} usage must have non-negative integer prompt_tokens and completion_tokens, found ${
        describe(prompt)
      } and ${describe(completion)}`,
    );
  }
  const total = isCount(usage.total_tokens) ? usage.total_tokens : prompt + completion;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
}

function parseToolCall(value: unknown, where: string): ToolCallDelta {
  const call = value as Record<string, unknown>;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw providerError(`${where} must be an object, found ${describe(value)}`);
  }
  const index = call.index ?? 0;
  if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= MAX_TOOL_CALLS) {
    throw providerError(
      `${where}.index must be an integer in 0–${MAX_TOOL_CALLS - 1}, found ${describe(index)}`,
    );
  }
  const delta: ToolCallDelta = { index: index as number };
  const id = optionalText(call.id, `${where}.id`);
  if (id !== undefined) delta.id = id;
  if (call.type !== undefined && call.type !== null && call.type !== "function") {
    throw providerError(`${where}.type must be "function", found ${describe(call.type)}`);
  }
  if (call.function !== undefined && call.function !== null) {
    const fn = call.function as Record<string, unknown>;
    if (typeof fn !== "object" || Array.isArray(fn)) {
      throw providerError(`${where}.function must be an object, found ${describe(fn)}`);
    }
    const name = optionalText(fn.name, `${where}.function.name`);
    const args = optionalText(fn.arguments, `${where}.function.arguments`);
    delta.function = {
      ...(name === undefined ? {} : { name }),
      ...(args === undefined ? {} : { arguments: args }),
    };
  }
  return delta;
}

/**
 * Reads the reply's chunks as validated events. Each `next()` waits at most the idle timeout.
 * Usage is held back and yielded last, after the stream has completed. A reply that ends
 * without a finish reason or without usage is a `provider_error`.
 *
 * @throws {DaemonError} from the backend's iteration, `timeout`, or `provider_error`.
 */
export async function* replyEvents(
  context: SurfaceContext,
  call: { reply: ChatReply; controller: AbortController },
): AsyncGenerator<ReplyEvent, void, undefined> {
  const { reply, controller } = call;
  const iterator = reply.chunks[Symbol.asyncIterator]();
  const watchdog = idleWatchdog({
    ms: context.idleTimeoutMs,
    controller,
    what: "the provider sent nothing more",
  });
  let finished = false;
  let usage: Usage | undefined;
  let count = 0;
  let completed = false;
  try {
    while (true) {
      const step = await watchdog.next(iterator.next());
      if (step.done) break;
      const where = `chunk ${++count}`;
      const chunk = step.value as unknown as Record<string, unknown>;
      if (typeof chunk !== "object" || chunk === null || Array.isArray(chunk)) {
        throw providerError(`${where} must be an object, found ${describe(chunk)}`);
      }
      if (chunk.error !== undefined && chunk.error !== null) {
        const inner = chunk.error as { message?: unknown };
        const message = typeof inner?.message === "string"
          ? inner.message
          : typeof chunk.error === "string"
          ? chunk.error
          : "no message";
        throw new DaemonError(
          "provider_error",
          `The provider reported an error: ${abbreviate(message.replace(/\s+/g, " "), 200)}`,
        );
      }
      const choices = chunk.choices ?? [];
      if (!Array.isArray(choices)) {
        throw providerError(`${where} choices must be an array, found ${describe(choices)}`);
      }
      for (const [position, raw] of choices.entries()) {
        const at = `${where} choice ${position}`;
        const choice = raw as Record<string, unknown>;
        if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
          throw providerError(`${at} must be an object, found ${describe(raw)}`);
        }
        if ((choice.index ?? 0) !== 0) {
          throw providerError(`${at} has index ${describe(choice.index)}, expected 0 (n = 1)`);
        }
        const delta = (choice.delta ?? {}) as Record<string, unknown>;
        if (typeof delta !== "object" || Array.isArray(delta)) {
          throw providerError(`${at} delta must be an object, found ${describe(delta)}`);
        }
        const reasoning = optionalText(
          delta.reasoning_content ?? delta.reasoning,
          `${at} delta.reasoning_content`,
        );
        if (reasoning) yield { type: "reasoning", text: reasoning };
        const content = optionalText(delta.content, `${at} delta.content`);
        if (content) yield { type: "content", text: content };
        const refusal = optionalText(delta.refusal, `${at} delta.refusal`);
        if (refusal) yield { type: "refusal", text: refusal };
        if (delta.tool_calls !== undefined && delta.tool_calls !== null) {
          if (!Array.isArray(delta.tool_calls)) {
            throw providerError(
              `${at} delta.tool_calls must be an array, found ${describe(delta.tool_calls)}`,
            );
          }
          for (const [i, call] of delta.tool_calls.entries()) {
            yield { type: "tool_call", delta: parseToolCall(call, `${at} tool_calls[${i}]`) };
          }
        }
        const reason = optionalText(choice.finish_reason, `${at} finish_reason`);
        if (reason) {
          finished = true;
          yield { type: "finish", reason };
        }
      }
      if (chunk.usage !== undefined && chunk.usage !== null) {
        usage = parseUsage(chunk.usage, where);
      }
    }
    completed = true;
  } finally {
    watchdog.stop();
    if (!completed) {
      if (!controller.signal.aborted) controller.abort();
      iterator.return?.()?.catch(() => {});
    }
  }
  if (!finished) throw providerError("the stream ended without a finish_reason");
  if (!usage) throw providerError("the stream ended without usage (token counts)");
  yield { type: "usage", usage };
}

/** The UTF-8 length of `text`, without encoding it. */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2; // a surrogate pair: 2 code units, 4 bytes
        i++;
      } else bytes += 2;
    } else bytes += 2;
  }
  return bytes;
}

/**
 * How much of a provider's reply the surface may hold in memory (`maxReplyBytes`). A provider
 * is untrusted: without a bound, one that keeps streaming would make the daemon buffer until
 * the process runs out of memory.
 */
export class ReplyBudget {
  readonly #max: number;
  #used = 0;

  /** Creates a budget of `maxBytes` UTF-8 bytes. */
  constructor(maxBytes: number) {
    this.#max = maxBytes;
  }

  /** Bytes charged so far. */
  get used(): number {
    return this.#used;
  }

  /**
   * Charges `text` to the budget.
   *
   * @throws {DaemonError} `provider_error` once the total passes the limit.
   */
  charge(text: string, what: string): void {
    this.#used += utf8Length(text);
    if (this.#used > this.#max) {
      throw providerError(
        `the reply is larger than the daemon buffers (more than ${this.#max} bytes, reached ` +
          `while reading ${what}); limit: maxReplyBytes`,
      );
    }
  }
}

/** A tool call assembled from its streamed fragments. */
export interface AssembledToolCall {
  /** The call id (the provider's, or a fresh one). */
  id: string;
  /** The function name. */
  name: string;
  /** The arguments' JSON text. */
  arguments: string;
}

/** Assembles tool-call fragments by index, within a {@linkcode ReplyBudget}. */
export class ToolCallAssembler {
  readonly #calls = new Map<number, { id?: string; name: string; arguments: string }>();
  readonly #budget: ReplyBudget;

  /** Creates an assembler whose names, ids and arguments are charged to `budget`. */
  constructor(budget: ReplyBudget) {
    this.#budget = budget;
  }

  /**
   * Adds one fragment.
   *
   * @throws {DaemonError} `provider_error` when the budget is exhausted.
   */
  add(delta: ToolCallDelta): void {
    const call = this.#calls.get(delta.index) ?? { name: "", arguments: "" };
    const what = `tool call ${delta.index}`;
    if (delta.id) {
      this.#budget.charge(delta.id, what);
      call.id = delta.id;
    }
    if (delta.function?.name) {
      this.#budget.charge(delta.function.name, what);
      call.name += delta.function.name;
    }
    if (delta.function?.arguments) {
      this.#budget.charge(delta.function.arguments, what);
      call.arguments += delta.function.arguments;
    }
    this.#calls.set(delta.index, call);
  }

  /** Whether any fragment was added. */
  get size(): number {
    return this.#calls.size;
  }

  /**
   * The assembled calls, by index. Ids the provider did not send are made up.
   *
   * @throws {DaemonError} `provider_error` for a call without a function name.
   */
  calls(context: SurfaceContext): AssembledToolCall[] {
    return [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([index, call]) => {
      if (!call.name) throw providerError(`tool call ${index} has no function name`);
      return {
        id: call.id ?? randomId(context, "call_"),
        name: call.name,
        arguments: call.arguments,
      };
    });
  }
}

/** A whole reply, for `stream: false` clients. */
export interface AggregatedReply {
  /** The text. */
  content: string;
  /** Refusal text, if any. */
  refusal: string;
  /** Reasoning text, if the provider reported any. */
  reasoning: string;
  /** The tool calls. */
  toolCalls: AssembledToolCall[];
  /** Why generation stopped. */
  finishReason: string;
  /** Token counts. */
  usage: Usage;
}

/**
 * Reads a whole reply, holding at most `context.maxReplyBytes` of text and tool-call fragments.
 * Past the limit it stops reading at once (leaving the loop closes `events`, which aborts the
 * backend) and fails.
 *
 * @throws {DaemonError} as {@linkcode replyEvents}, and `provider_error` for a reply over the
 * limit.
 */
export async function aggregateReply(
  context: SurfaceContext,
  events: AsyncIterable<ReplyEvent>,
): Promise<AggregatedReply> {
  let content = "";
  let refusal = "";
  let reasoning = "";
  let finishReason = "stop";
  let usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const budget = new ReplyBudget(context.maxReplyBytes);
  const tools = new ToolCallAssembler(budget);
  for await (const event of events) {
    switch (event.type) {
      case "content":
        budget.charge(event.text, "content");
        content += event.text;
        break;
      case "refusal":
        budget.charge(event.text, "refusal");
        refusal += event.text;
        break;
      case "reasoning":
        budget.charge(event.text, "reasoning");
        reasoning += event.text;
        break;
      case "tool_call":
        tools.add(event.delta);
        break;
      case "finish":
        finishReason = event.reason;
        break;
      case "usage":
        usage = event.usage;
        break;
    }
  }
  return { content, refusal, reasoning, toolCalls: tools.calls(context), finishReason, usage };
}

/**
 * A streamed response body from a generator of text pieces. Cancelling the body (the client
 * went away) aborts the request and closes the generator.
 */
export function textStream(
  pieces: AsyncGenerator<string, void, undefined>,
  options: { controller: AbortController; onDone: () => void },
): ReadableStream<Uint8Array> {
  const { controller, onDone } = options;
  const encoder = new TextEncoder();
  let done = false;
  const finish = () => {
    if (!done) {
      done = true;
      onDone();
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(stream) {
      try {
        const step = await pieces.next();
        if (step.done) {
          stream.close();
          finish();
        } else {
          stream.enqueue(encoder.encode(step.value));
        }
      } catch (error) {
        stream.error(error);
        finish();
      }
    },
    async cancel() {
      controller.abort();
      finish();
      await pieces.return(undefined).catch(() => {});
    },
  }, { highWaterMark: 0 });
}
