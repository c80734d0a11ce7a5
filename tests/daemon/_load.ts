/**
 * Helpers of the load, cancel and status tests: chats in both dialects over real HTTP, read to
 * their end or stopped on cue, and a poll for a condition with a bound.
 *
 * @module
 */

import { waitFor } from "../_wait.ts";

/** The two chat dialects. */
export type Dialect = "openai" | "ollama";

/** A prompt of `n` words: devnet/echo answers with about as many tokens. */
export function words(n: number, tag = "w"): string {
  return Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ");
}

/** What one chat came to. */
export interface ChatOutcome {
  /** The HTTP status. */
  status: number;
  /** `x-net-provider`, when served. */
  provider: string | null;
  /** `retry-after`, when sent. */
  retryAfter: string | null;
  /** The whole body as text (as far as it was read). */
  body: string;
}

/** Options of {@linkcode chat}. */
export interface ChatOptions {
  /** The dialect. @default {"openai"} */
  dialect?: Dialect;
  /** Stream the reply. @default {true} */
  stream?: boolean;
  /** The prompt. @default {words(8)} */
  content?: string;
  /** The model. @default {"net/verified/devnet/echo"} */
  model?: string;
  /** Aborts the request (a client's Stop button). */
  signal?: AbortSignal;
  /** Called once the response head has arrived. */
  onHead?: () => void;
}

/** One chat to the daemon at `url`, read to its end (or until `signal` aborts it). */
export async function chat(url: string, options: ChatOptions = {}): Promise<ChatOutcome> {
  const dialect = options.dialect ?? "openai";
  const stream = options.stream ?? true;
  const messages = [{ role: "user", content: options.content ?? words(8) }];
  const model = options.model ?? "net/verified/devnet/echo";
  const response = await fetch(
    `${url}${dialect === "openai" ? "/v1/chat/completions" : "/api/chat"}`,
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, messages, stream }),
      signal: options.signal,
    },
  );
  options.onHead?.();
  let body = "";
  try {
    body = await response.text();
  } catch (error) {
    if (!options.signal?.aborted) throw error;
  }
  return {
    status: response.status,
    provider: response.headers.get("x-net-provider"),
    retryAfter: response.headers.get("retry-after"),
    body,
  };
}

/** Whether a 200 answer is a complete reply in its dialect (not an in-stream error). */
export function complete(outcome: ChatOutcome, dialect: Dialect = "openai"): boolean {
  if (outcome.status !== 200) return false;
  if (dialect === "openai") {
    return outcome.body.startsWith("{")
      ? JSON.parse(outcome.body).object === "chat.completion"
      : outcome.body.endsWith("data: [DONE]\n\n");
  }
  return /"done":true/.test(outcome.body) && !/"error"/.test(outcome.body);
}

/**
 * Polls `condition` every 20 ms until it holds (a wait on a state, `tests/_wait.ts`). `withinMs`
 * is the time the product promises (it would take on a quiet machine); it is not enforced, since
 * a busy machine may take longer, and is named when the wait is declared stuck.
 */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  withinMs: number,
  what: () => string,
): Promise<void> {
  let last = "";
  await waitFor(`a state promised within ${withinMs} ms`, async () => {
    if (await condition()) return true;
    last = what();
    return undefined;
  }, { everyMs: 20 }).catch((error) => {
    throw new Error(`${error.message}: ${last}`);
  });
}

/** Starts a chat and returns it with its abort controller, once its head has arrived. */
export async function startStream(
  url: string,
  options: ChatOptions = {},
): Promise<{ done: Promise<ChatOutcome>; abort: AbortController }> {
  const abort = new AbortController();
  let headed!: () => void;
  const head = new Promise<void>((resolve) => (headed = resolve));
  const done = chat(url, { ...options, signal: abort.signal, onHead: headed });
  await Promise.race([head, done]);
  return { done, abort };
}
