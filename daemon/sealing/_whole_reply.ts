/**
 * A provider's whole reply (`stream: false`: one `chat.completion` object) read as the chunks
 * the daemon's surfaces consume (private, `sealed_reply.ts`): a read that does not end it is a
 * sign of life ({@linkcode ALIVE}), and the object itself becomes one chunk whose delta is the
 * message. Its fields are checked where every chunk's are (`surface/reply_events.ts`); here only its
 * shape is.
 *
 * @module
 */

import { type ChatCompletionChunk, type ChunkChoice, DaemonError } from "../core/mod.ts";

/**
 * A chunk that carries nothing: a piece of a whole reply arrived (whitespace the provider sends
 * while it generates, or part of a long answer), so the provider is alive.
 */
export const ALIVE: ChatCompletionChunk = Object.freeze({
  id: "",
  object: "chat.completion.chunk",
  created: 0,
  model: "",
  choices: Object.freeze([]) as unknown as ChunkChoice[],
}) as ChatCompletionChunk;

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Throws the provider's failure when `value` (an event's or a whole reply's JSON) is an
 * `{"error": …}` object: the provider failed after its reply had started.
 *
 * @throws {DaemonError} `provider_error`, with the provider's message (at most 200 characters).
 */
export function throwIfFailed(value: unknown): void {
  if (!isObject(value) || value.error === undefined || value.error === null) return;
  const message = isObject(value.error) && typeof value.error.message === "string"
    ? value.error.message.slice(0, 200)
    : "";
  throw new DaemonError(
    "provider_error",
    `The provider failed mid-reply${message ? `: ${message}` : ""}`,
  );
}

/**
 * The chunk a whole reply's text becomes: the completion's id, created and model, each choice's
 * message as its delta (tool calls numbered in order, as a stream numbers them), and its usage.
 *
 * @throws {DaemonError} `provider_error` for text that is not JSON, an error object, or an object
 * that is not a `chat.completion`.
 */
export function completionChunk(text: string): ChatCompletionChunk {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DaemonError("provider_error", "The provider's whole reply is not JSON");
  }
  throwIfFailed(value);
  if (!isObject(value) || value.object !== "chat.completion" || !Array.isArray(value.choices)) {
    throw new DaemonError(
      "provider_error",
      "The provider's whole reply is not a chat.completion object with choices",
    );
  }
  return {
    id: typeof value.id === "string" ? value.id : "",
    object: "chat.completion.chunk",
    created: typeof value.created === "number" ? value.created : 0,
    model: typeof value.model === "string" ? value.model : "",
    choices: value.choices.map(asDelta),
    usage: value.usage as ChatCompletionChunk["usage"],
  };
}

/** A completion's choice as a chunk's: its message is the delta (checked downstream). */
function asDelta(choice: unknown): ChunkChoice {
  if (!isObject(choice) || !isObject(choice.message)) {
    // Passed on as it is: the chunk reader says what is wrong with it.
    return (isObject(choice) ? { ...choice, delta: choice.message } : choice) as ChunkChoice;
  }
  const { tool_calls: calls, ...message } = choice.message;
  const delta: Fields = { ...message };
  if (Array.isArray(calls)) {
    delta.tool_calls = calls.map((call, index) => isObject(call) ? { index, ...call } : call);
  } else if (calls !== undefined) delta.tool_calls = calls;
  return {
    index: choice.index as number,
    delta,
    ...(choice.logprobs === undefined ? {} : { logprobs: choice.logprobs }),
    finish_reason: choice.finish_reason as string | null,
  } as ChunkChoice;
}
