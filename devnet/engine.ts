/**
 * Inference engines of the devnet provider. An engine takes an OpenAI chat-completions
 * request and produces `chat.completion.chunk` objects as tokens are generated, ending with a
 * usage chunk; an engine with embedding models also answers OpenAI embeddings requests. Two
 * engines exist: {@linkcode EchoEngine}, the small built-in dev models that need nothing
 * (`devnet/echo` for chat, `devnet/embed` for embeddings), and `UpstreamEngine`
 * (`upstream_engine.ts`), which forwards to any OpenAI-compatible server.
 *
 * @module
 */

import type { ModelCapability, ModelKind } from "../chain/ad.ts";
import { EngineError } from "./engine_error.ts";
import { devEmbeddings, type EmbedBody, type EmbeddingList } from "./dev_embed.ts";
import { devToolCall, type ToolCallPlan } from "./dev_tools.ts";
import { structuredReply } from "./dev_structured.ts";

export type { EmbedBody, EmbeddingList } from "./dev_embed.ts";
export { EngineError, type EngineFailure } from "./engine_error.ts";

/** A model an engine serves, as it appears in the provider's ad. */
export interface EngineModel {
  /** `maker/model` (`docs/protocol.md` §1). */
  id: string;
  /** Context length in tokens (an embedding model: the longest input). */
  contextLength: number;
  /** What it does. @default {"chat"} */
  kind?: ModelKind;
  /** What it supports (`docs/protocol.md` §1). @default {[]} */
  capabilities?: ModelCapability[];
  /** An embedding model's vector length. */
  embeddingDimensions?: number;
}

/** The subset of an OpenAI chat-completions request the engines read. */
export interface ChatBody {
  model: string;
  messages: { role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: unknown }[];
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  [key: string]: unknown;
}

/** One tool-call fragment of a streamed delta (`arguments` is a piece of JSON text). */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: "function";
  function?: { name?: string; arguments?: string };
}

/** The log probability of one token (OpenAI's `logprobs.content[]` item). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

/** An OpenAI `chat.completion.chunk`. */
export interface ChatChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: "assistant"; content?: string; tool_calls?: ToolCallDelta[] };
    logprobs?: { content: TokenLogprob[] | null; refusal?: null } | null;
    finish_reason: "stop" | "length" | "tool_calls" | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** Something that runs chat completions (and, with embedding models, embeddings). */
export interface InferenceEngine {
  /** The models served. */
  models(): Promise<EngineModel[]>;
  /**
   * Streams the completion of `body` as chunks: a role chunk, content (or tool-call) chunks, a
   * finish chunk and a final usage chunk (`choices: []`).
   *
   * @throws {EngineError} for an unknown model or an upstream failure.
   */
  complete(body: ChatBody, signal: AbortSignal): AsyncIterable<ChatChunk>;
  /**
   * Embeds `body.input`: an OpenAI embeddings list (float vectors) with usage. Absent when the
   * engine serves no embedding model.
   *
   * @throws {EngineError} for an unknown model, a bad request or an upstream failure.
   */
  embed?(body: EmbedBody, signal: AbortSignal): Promise<EmbeddingList>;
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

/** The built-in dev chat model's id. */
export const ECHO_MODEL = "devnet/echo";
/** The built-in dev embedding model's id. */
export const EMBED_MODEL = "devnet/embed";
/** The dev embedding model's vector length. */
export const EMBED_DIMENSIONS = 256;

/**
 * The built-in dev models. Honest about what they are: no weights, no network, deterministic.
 *
 * - `devnet/echo` (chat; `tools`, `logprobs`, `json_mode`, `structured_outputs`) answers with what the last user message said,
 *   token by token, and counts tokens for real. Offered tools (and `tool_choice` not `"none"`)
 *   with a user message last, it calls a tool instead (`dev_tools.ts`): the one `tool_choice`
 *   names, else the first, with its first parameter (the first `required` one, else the first
 *   property) set to the last user message's text, e.g. `get_weather({"city": "Paris?"})`, the
 *   arguments streamed in pieces. With a tool result last, it answers
 *   `Tool <name> returned: <result>`. With `logprobs: true` each token carries a log
 *   probability of 0 (it is certain of every token it echoes), and `top_logprobs` lists that
 *   token alone. With `response_format` (`json_mode`, `structured_outputs`) it answers JSON
 *   instead, in pieces of 8 characters: `{"echo": <text>}` for `json_object`, and for
 *   `json_schema` a value valid for the schema built from the last user message's text
 *   (`dev_structured.ts`); a schema it cannot follow is a 400 naming the field.
 * - `devnet/embed` (embedding; `dimensions`): a hashed bag of words (`dev_embed.ts`), a unit
 *   vector of 256 dimensions (fewer with `dimensions`).
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
    return Promise.resolve([
      {
        id: ECHO_MODEL,
        contextLength: 8192,
        kind: "chat",
        capabilities: ["tools", "logprobs", "json_mode", "structured_outputs"],
      },
      {
        id: EMBED_MODEL,
        contextLength: 8192,
        kind: "embedding",
        capabilities: ["dimensions"],
        embeddingDimensions: EMBED_DIMENSIONS,
      },
    ]);
  }

  /** {@inheritDoc InferenceEngine.embed} */
  // deno-lint-ignore require-await
  async embed(body: EmbedBody, signal: AbortSignal): Promise<EmbeddingList> {
    signal.throwIfAborted();
    if (body.model !== EMBED_MODEL) {
      throw new EngineError(
        "unknown_model",
        `Cannot embed with model ${
          JSON.stringify(body.model)
        }: this engine embeds with ${EMBED_MODEL}`,
      );
    }
    return devEmbeddings(body, { dimensions: EMBED_DIMENSIONS, maxTokens: 8192 });
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
    const id = `chatcmpl-${crypto.randomUUID()}`;
    const created = Math.floor(this.#clock().getTime() / 1000);
    const chunk = (
      delta: ChatChunk["choices"][0]["delta"],
      finish: ChatChunk["choices"][0]["finish_reason"] = null,
      logprobs?: TokenLogprob[],
    ): ChatChunk => ({
      id,
      object: "chat.completion.chunk",
      created,
      model: ECHO_MODEL,
      choices: [{
        index: 0,
        delta,
        ...(logprobs ? { logprobs: { content: logprobs, refusal: null } } : {}),
        finish_reason: finish,
      }],
    });
    const usage = (completion: number): ChatChunk => ({
      id,
      object: "chat.completion.chunk",
      created,
      model: ECHO_MODEL,
      choices: [],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completion,
        total_tokens: promptTokens + completion,
      },
    });
    const plan = devToolCall(body);
    if (plan) {
      yield* this.#callTool(plan, { chunk, usage, signal });
      return;
    }
    const structured = structuredReply(body.response_format, lastUserText(body));
    const reply = structured ?? this.#reply(body);
    const limit = body.max_completion_tokens ?? body.max_tokens ?? Infinity;
    const tokens = structured === undefined ? devTokens(reply) : jsonPieces(reply);
    const emitted = tokens.slice(0, Math.max(0, limit));
    const top = typeof body.top_logprobs === "number" ? body.top_logprobs : 0;
    yield chunk({ role: "assistant", content: "" });
    for (const token of emitted) {
      if (this.#delay > 0) await abortableDelay(this.#delay, signal);
      signal.throwIfAborted();
      yield chunk(
        { content: token },
        null,
        body.logprobs === true ? [certain(token, top)] : undefined,
      );
    }
    yield chunk({}, emitted.length < tokens.length ? "length" : "stop");
    yield usage(emitted.length);
  }

  /** The text of a reply: the echo of the last user message, or of the tool result given. */
  #reply(body: ChatBody): string {
    const last = body.messages[body.messages.length - 1];
    if (last?.role === "tool") {
      type Call = { id?: unknown; function?: { name?: unknown } };
      const name = body.messages.flatMap((m) =>
        Array.isArray(m.tool_calls) ? m.tool_calls as Call[] : []
      ).find((call) => call?.id === last.tool_call_id)?.function?.name;
      return `Tool ${typeof name === "string" ? name : "(unknown)"} returned: ${
        messageText(last.content).trim()
      }`;
    }
    const said = lastUserText(body);
    return said
      ? `You said: "${said}" — echoed by devnet/echo on ${this.#servedBy}.`
      : `Nothing to echo — devnet/echo on ${this.#servedBy} found no user message.`;
  }

  /** A tool call: its head, then its arguments' JSON text in pieces, then `tool_calls`. */
  async *#callTool(
    plan: ToolCallPlan,
    out: {
      chunk: (delta: ChatChunk["choices"][0]["delta"], finish?: "tool_calls") => ChatChunk;
      usage: (completion: number) => ChatChunk;
      signal: AbortSignal;
    },
  ): AsyncGenerator<ChatChunk> {
    const { chunk, signal } = out;
    const callId = `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
    yield chunk({ role: "assistant", content: "" });
    yield chunk({
      tool_calls: [{
        index: 0,
        id: callId,
        type: "function",
        function: { name: plan.name, arguments: "" },
      }],
    });
    for (const piece of plan.pieces) {
      if (this.#delay > 0) await abortableDelay(this.#delay, signal);
      signal.throwIfAborted();
      yield chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] });
    }
    yield chunk({}, "tool_calls");
    yield out.usage(1 + plan.pieces.length);
  }
}

/** The text of the last user message, trimmed (`""` when there is none). */
function lastUserText(body: ChatBody): string {
  const lastUser = [...body.messages].reverse().find((m) => m.role === "user");
  return lastUser ? messageText(lastUser.content).trim() : "";
}

/** JSON text as the dev model's tokens: pieces of at most 8 characters (code points). */
function jsonPieces(text: string): string[] {
  const chars = [...text];
  const pieces: string[] = [];
  for (let at = 0; at < chars.length; at += 8) pieces.push(chars.slice(at, at + 8).join(""));
  return pieces;
}

/** A token the model is certain of: log probability 0, alone in its `top_logprobs`. */
function certain(token: string, top: number): TokenLogprob {
  const bytes = [...new TextEncoder().encode(token)];
  return {
    token,
    logprob: 0,
    bytes,
    top_logprobs: top > 0 ? [{ token, logprob: 0, bytes }] : [],
  };
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
