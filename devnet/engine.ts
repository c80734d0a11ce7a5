/**
 * Inference engines of the devnet provider. An engine takes an OpenAI chat-completions
 * request and produces `chat.completion.chunk` objects as tokens are generated, ending with a
 * usage chunk. Two engines exist: {@linkcode EchoEngine}, a small built-in dev model that
 * needs nothing, and `UpstreamEngine` (`upstream_engine.ts`), which forwards to any
 * OpenAI-compatible server.
 *
 * @module
 */

import { ReasonError } from "../errors.ts";

/** A model an engine serves, as it appears in the provider's ad. */
export interface EngineModel {
  /** `maker/model` (`docs/protocol.md` §1). */
  id: string;
  /** Context length in tokens. */
  contextLength: number;
}

/** The subset of an OpenAI chat-completions request the engines read. */
export interface ChatBody {
  model: string;
  messages: { role: string; content?: unknown }[];
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  [key: string]: unknown;
}

/** An OpenAI `chat.completion.chunk`. */
export interface ChatChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: "assistant"; content?: string };
    finish_reason: "stop" | "length" | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** Something that runs chat completions. */
export interface InferenceEngine {
  /** The models served. */
  models(): Promise<EngineModel[]>;
  /**
   * Streams the completion of `body` as chunks: a role chunk, content chunks, a finish chunk
   * and a final usage chunk (`choices: []`).
   *
   * @throws {EngineError} for an unknown model or an upstream failure.
   */
  complete(body: ChatBody, signal: AbortSignal): AsyncIterable<ChatChunk>;
}

/** Why an engine refused or failed a request. */
export type EngineFailure =
  /** The engine does not serve the requested model (the provider answers a sealed 404). */
  | "unknown_model"
  /** The request is not one the engine can run (a sealed 400). */
  | "invalid_request"
  /** The upstream server failed or could not be reached (a sealed 502). */
  | "upstream";

/** Thrown by engines. */
export class EngineError extends ReasonError<EngineFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "EngineError" as const;
}

/**
 * Splits text into the dev model's tokens: each run of non-space characters with the
 * whitespace before it. Used for the usage counts, so they are real counts of what the
 * model read and wrote.
 */
export function devTokens(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** The text content of a message (string content, or the text parts of an array). */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        (part as { type?: unknown; text?: unknown })?.type === "text"
          ? String((part as { text?: unknown }).text ?? "")
          : ""
      )
      .join("");
  }
  return "";
}

/** Options of {@linkcode EchoEngine}. */
export interface EchoEngineOptions {
  /** Pause between tokens, in ms (makes streaming visible). @default {15} */
  tokenDelayMs?: number;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** A label naming who serves, included in the reply. */
  servedBy?: string;
}

/** The built-in dev model's id. */
export const ECHO_MODEL = "devnet/echo";

/**
 * The built-in dev model, `devnet/echo`: it answers with what the last user message said,
 * token by token, and counts tokens for real. Honest about what it is: no weights, no
 * network, deterministic.
 */
export class EchoEngine implements InferenceEngine {
  readonly #delay: number;
  readonly #clock: () => Date;
  readonly #servedBy: string;

  /** Creates the engine. */
  constructor(options: EchoEngineOptions = {}) {
    this.#delay = options.tokenDelayMs ?? 15;
    this.#clock = options.clock ?? (() => new Date());
    this.#servedBy = options.servedBy ?? "a devnet provider";
  }

  /** {@inheritDoc InferenceEngine.models} */
  models(): Promise<EngineModel[]> {
    return Promise.resolve([{ id: ECHO_MODEL, contextLength: 8192 }]);
  }

  /** {@inheritDoc InferenceEngine.complete} */
  async *complete(body: ChatBody, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    if (body.model !== ECHO_MODEL) {
      throw new EngineError(
        "unknown_model",
        `Cannot serve model ${JSON.stringify(body.model)}: this engine serves ${ECHO_MODEL}`,
      );
    }
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      throw new EngineError(
        "invalid_request",
        "Cannot complete: messages must be a non-empty array",
      );
    }
    const promptTokens = body.messages.reduce(
      (sum, m) => sum + devTokens(`${m.role} ${messageText(m.content)}`).length,
      0,
    );
    const lastUser = [...body.messages].reverse().find((m) => m.role === "user");
    const said = lastUser ? messageText(lastUser.content).trim() : "";
    const reply = said
      ? `You said: "${said}" — echoed by devnet/echo on ${this.#servedBy}.`
      : `Nothing to echo — devnet/echo on ${this.#servedBy} found no user message.`;
    const limit = body.max_completion_tokens ?? body.max_tokens ?? Infinity;
    const tokens = devTokens(reply);
    const emitted = tokens.slice(0, Math.max(0, limit));
    const id = `chatcmpl-${crypto.randomUUID()}`;
    const created = Math.floor(this.#clock().getTime() / 1000);
    const chunk = (
      delta: ChatChunk["choices"][0]["delta"],
      finish: ChatChunk["choices"][0]["finish_reason"] = null,
    ): ChatChunk => ({
      id,
      object: "chat.completion.chunk",
      created,
      model: ECHO_MODEL,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });

    yield chunk({ role: "assistant", content: "" });
    for (const token of emitted) {
      if (this.#delay > 0) await abortableDelay(this.#delay, signal);
      signal.throwIfAborted();
      yield chunk({ content: token });
    }
    yield chunk({}, emitted.length < tokens.length ? "length" : "stop");
    yield {
      id,
      object: "chat.completion.chunk",
      created,
      model: ECHO_MODEL,
      choices: [],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: emitted.length,
        total_tokens: promptTokens + emitted.length,
      },
    };
  }
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
