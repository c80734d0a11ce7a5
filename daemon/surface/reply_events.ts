/**
 * A provider's reply read as validated events. The chunks are data from the network: every
 * field the surface uses is checked, and a reply that breaks the backend contract
 * (`core/backend.ts`) becomes a `provider_error`.
 *
 * @module
 */

import { abbreviate } from "../../errors.ts";
import {
  type ChatReply,
  DaemonError,
  idleWatchdog,
  type ToolCallDelta,
  type Usage,
} from "../core/mod.ts";
import type { SurfaceContext } from "./context.ts";

/** One validated piece of a reply, in the order the provider sent it (usage always last). */
export type ReplyEvent =
  | { readonly type: "content"; readonly text: string }
  | { readonly type: "refusal"; readonly text: string }
  | { readonly type: "reasoning"; readonly text: string }
  | { readonly type: "tool_call"; readonly delta: ToolCallDelta }
  | { readonly type: "logprobs"; readonly content: readonly TokenLogprob[] }
  | { readonly type: "finish"; readonly reason: string }
  | { readonly type: "usage"; readonly usage: Usage };

/** The log probability of one token, as OpenAI sends it (`choices[].logprobs.content[]`). */
export interface TokenLogprob {
  /** The token. */
  token: string;
  /** Its log probability. */
  logprob: number;
  /** Its UTF-8 bytes, or `null`. */
  bytes: number[] | null;
  /** The most likely tokens at this position. */
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

function isLogprob(value: unknown): boolean {
  const item = value as Record<string, unknown> | null;
  return typeof item === "object" && item !== null && typeof item.token === "string" &&
    typeof item.logprob === "number" &&
    (item.bytes === null || item.bytes === undefined || Array.isArray(item.bytes));
}

/** A choice's `logprobs.content`, checked (an array of token log probabilities), or none. */
function parseLogprobs(value: unknown, where: string): TokenLogprob[] | undefined {
  if (value === undefined || value === null) return undefined;
  const content = (value as { content?: unknown }).content;
  if (content === undefined || content === null) return undefined;
  if (
    !Array.isArray(content) ||
    !content.every((item) =>
      isLogprob(item) && (item.top_logprobs === undefined || (Array.isArray(item.top_logprobs) &&
        item.top_logprobs.every(isLogprob)))
    )
  ) {
    throw providerError(`${where} logprobs.content must be an array of token log probabilities`);
  }
  return content.map((item) => ({
    token: item.token,
    logprob: item.logprob,
    bytes: item.bytes ?? null,
    top_logprobs: (item.top_logprobs ?? []).map((top: TokenLogprob) => ({
      token: top.token,
      logprob: top.logprob,
      bytes: top.bytes ?? null,
    })),
  }));
}

/** The largest number of tool calls accepted in one reply. */
const MAX_TOOL_CALLS = 128;

/** A `provider_error` saying what in the reply was wrong. */
export function providerError(what: string): DaemonError {
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
  // The cost the backend put there (`surface/cost.ts`); anything else is dropped.
  const cost = typeof usage.cost_wei === "string" && /^(0|[1-9][0-9]{0,77})$/.test(usage.cost_wei)
    ? { cost_wei: usage.cost_wei }
    : {};
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total, ...cost };
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
        const logprobs = parseLogprobs(choice.logprobs, at);
        if (logprobs?.length) yield { type: "logprobs", content: logprobs };
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
