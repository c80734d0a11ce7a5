/**
 * The one interface between the daemon's client-facing surface (the OpenAI and Ollama
 * dialects, hygiene, error rendering) and its network backend (gateway resolution, provider
 * selection, attestation, sealing, failover).
 *
 * The surface validates a client's request, translates it into one OpenAI-shaped
 * {@linkcode ChatRequest} and calls {@linkcode ChatBackend.chat}. The backend answers with a
 * {@linkcode ChatReply}: who served it, and the reply as a stream of OpenAI
 * `chat.completion.chunk` objects. The surface aggregates that stream for `stream: false`
 * clients and translates it for Ollama clients, so the backend only ever deals with one shape.
 *
 * The contract, in full:
 *
 * - `chat()` resolves once the first chunk of the opened reply is available. Everything that
 *   can fail before that (no gateway, no provider, attestation, key endorsement, failover to
 *   the next candidate) happens inside `chat()`, and a refusal rejects it with a
 *   {@linkcode DaemonError} whose `code` says why (`no_gateway`, `no_provider`, `overloaded`,
 *   `model_not_found`, a refusal of trust — `attestation_failed`, `attestation_mock`,
 *   `attestation_stale`, `measurement_not_approved`, `key_not_vouched`, `tier_mismatch` —,
 *   `decryption_failed`, `stream_truncated`, `provider_error`, `timeout`). The surface then
 *   answers the client with the matching HTTP status. Waiting for a provider slot (the queue)
 *   happens inside `chat()` too.
 * - `chunks` yields the provider's chunks in order. It completes normally only after the
 *   sealed stream's final chunk has been verified; a failure after the first chunk rejects the
 *   iteration with a {@linkcode DaemonError} (typically `stream_truncated` or
 *   `decryption_failed`), which the surface reports in-stream in the client's dialect.
 * - The reply always has: content or tool-call deltas in `choices[0].delta`, one chunk with a
 *   `finish_reason`, and a last chunk with `usage` (the surface always asks the provider to
 *   stream with usage). A reply that ends without a finish reason or usage is reported to the
 *   client as `provider_error`.
 * - When the signal aborts (the client went away, or a timeout fired), the backend stops at
 *   once — leaves the queue, or aborts its relay and closes its sockets — and releases the
 *   provider slot it held; the surface also calls the iterator's `return()`.
 * - Any other error thrown (not a `DaemonError`) is logged by the surface and shown to the
 *   client as a generic `internal_error`: internals never leak.
 *
 * The surface never copies anything but these objects from the backend: no HTTP headers, no
 * framing. It sets its own `Content-Type`, `Content-Length` or chunked encoding.
 *
 * @module
 */

// deno-lint-ignore no-unused-vars
import type { DaemonError } from "./daemon_error.ts";

/** The two service tiers: `verified` (sealed to an endorsed key) and `tee` (attested first). */
export type Tier = "verified" | "tee";

/** Prices of a model, decimal strings in the smallest token unit per 1M tokens. */
export interface ModelPrices {
  /** Price of input (prompt) tokens. */
  readonly input: string;
  /** Price of output (completion) tokens. */
  readonly output: string;
}

/** One model the network offers in one tier. */
export interface NetworkModel {
  /** The tier it is offered in. */
  readonly tier: Tier;
  /** The network's id, `maker/model` (`docs/protocol.md` §1). */
  readonly model: string;
  /** Context length in tokens (the smallest among its providers). */
  readonly contextLength: number;
  /** How many providers serve it in this tier. */
  readonly providers: number;
  /** The cheapest advertised prices, or `null` when unknown. */
  readonly cheapestPrice: ModelPrices | null;
  /**
   * Ollama-style capabilities reported by `POST /api/show` (`completion`, `tools`, `vision`,
   * `embedding`, …).
   *
   * @default {derived from `kind` and `supports`: `["completion", …]` or `["embedding"]`}
   */
  readonly capabilities?: readonly string[];
  /** What the model does (`docs/protocol.md` §1). @default {"chat"} */
  readonly kind?: "chat" | "embedding";
  /**
   * What every provider of it supports, as ads say it (`tools`, `vision`, `json_mode`,
   * `logprobs`, `dimensions`).
   *
   * @default {[]}
   */
  readonly supports?: readonly string[];
  /** An embedding model's vector length (the smallest its providers give). */
  readonly embeddingDimensions?: number;
  /**
   * The digests of the weights its providers' ads name (`0x` + 64 hex, distinct, sorted; at
   * most 16). In the TEE tier the daemon seals only to a provider whose enclave attests the
   * digest its ad names.
   *
   * @default {[]}
   */
  readonly weightsDigests?: readonly string[];
}

/**
 * The OpenAI embeddings body sent to the provider as `POST /v1/embeddings`: `model` =
 * `maker/model`, the inputs, and `dimensions` when asked; vectors always as floats (the daemon
 * encodes base64 for its client).
 */
export interface ForwardedEmbeddingsBody {
  /** `maker/model`. */
  model: string;
  /** A string, strings, token ids, or arrays of token ids. */
  input: string | string[] | number[] | number[][];
  /** Always `"float"`. */
  encoding_format: "float";
  /** The vector length asked for. */
  dimensions?: number;
}

/** One embeddings request, ready to be sealed and sent. */
export interface EmbeddingsRequest {
  /** The tier the client asked for. */
  readonly tier: Tier;
  /** `maker/model`. */
  readonly model: string;
  /** The body to send to the provider. */
  readonly body: ForwardedEmbeddingsBody;
  /** The API key name it is paid under (`core/payment.ts`). @default {"local"} */
  readonly payer?: string;
}

/** The provider's embeddings answer, checked: one float vector per input, in order. */
export interface EmbeddingsReply {
  /** Who served it. */
  readonly served: ServedBy;
  /** The vectors, `vectors[i]` for input `i`. */
  readonly vectors: readonly number[][];
  /** Input tokens counted by the provider. */
  readonly promptTokens: number;
  /** What it cost, in the chain's smallest unit, when the daemon paid for it. */
  readonly costWei?: bigint;
}

/**
 * The OpenAI chat-completions body forwarded to the provider: the client's body (for Ollama
 * clients, its translation), with `model` = `maker/model` (no `net/<tier>/` prefix) and
 * streaming with usage always on (a request for a whole reply, {@linkcode ChatRequest.whole},
 * is sent with `stream: false` instead).
 */
export interface ForwardedChatBody {
  /** `maker/model`. */
  model: string;
  /** The conversation, OpenAI-shaped. */
  messages: unknown[];
  /** Always `true` here: the backend sends `false` for a whole reply. */
  stream: true;
  /** Always `{ include_usage: true }`. */
  stream_options: { include_usage: true };
  /** Everything else the client asked for (sampling options, tools, response format, …). */
  [field: string]: unknown;
}

/**
 * Where a request may go and in which order, as its client asked (OpenRouter's `provider`
 * object, plus the network's own `require_tier` and `min_stake`). The tier is settled by the
 * surface ({@linkcode ChatRequest.tier}); the rest the backend honours when it chooses.
 */
export interface RoutingPreferences {
  /** The order of preference: `price` (the default rule), `throughput` or `latency`. */
  readonly sort?: "price" | "throughput" | "latency";
  /** Providers (addresses, lower case) to try first, in this order. */
  readonly order?: readonly string[];
  /** Whether providers not in `order` may serve it. @default {true} */
  readonly allowFallbacks?: boolean;
  /** The only providers that may serve it (lower case). */
  readonly only?: readonly string[];
  /** Providers that must not serve it (lower case). */
  readonly ignore?: readonly string[];
  /** The highest prices per 1M tokens, in the ads' smallest unit. */
  readonly maxPrice?: { readonly prompt?: bigint; readonly completion?: bigint };
  /** The smallest stake (Staking, smallest unit) a provider must have on chain. */
  readonly minStake?: bigint;
}

/** One chat request, ready to be sealed and sent. */
export interface ChatRequest {
  /** The tier to serve it in: the model id's, or higher when the client required it. */
  readonly tier: Tier;
  /** `maker/model`. */
  readonly model: string;
  /** The body to send to the provider, as `POST /v1/chat/completions`. */
  readonly body: ForwardedChatBody;
  /**
   * The client waits for the whole reply (`stream: false`): the backend may ask the provider
   * for one `chat.completion` instead of a stream. The reply's chunks mean the same either way.
   *
   * @default {false}
   */
  readonly whole?: boolean;
  /** The client's routing preferences. @default {none: the scheduler's own rule} */
  readonly preferences?: RoutingPreferences;
  /** The API key name it is paid under (`core/payment.ts`). @default {"local"} */
  readonly payer?: string;
}

/** Who served a reply, as the response headers and the verdict log report it. */
export interface ServedBy {
  /** The provider's address (`0x…`, lower case). */
  readonly provider: string;
  /** The tier it was served in. */
  readonly tier: Tier;
  /**
   * The verification verdict in a short line, e.g. `endorsed-key` or
   * `tee:tdx measurement 0x91eb… approved`. Printable ASCII; longer than 200 characters is cut.
   */
  readonly verdict: string;
  /** The gateway URL that relayed the sealed exchange. */
  readonly gateway: string;
  /**
   * TEE tier: the reply's id; its receipt, once verified, is served at `GET /v1/verdicts/{id}`
   * (`x-net-receipt` header).
   */
  readonly receipt?: string;
}

/** Token counts of one reply. */
export interface Usage {
  /** Tokens in the prompt. */
  prompt_tokens: number;
  /** Tokens generated. */
  completion_tokens: number;
  /** Their sum. */
  total_tokens: number;
  /**
   * What the reply cost, a decimal string in the chain's smallest unit: set by the daemon from
   * the provider's signed ad prices when it paid for the reply, never taken from the provider.
   */
  cost_wei?: string;
}

/** One tool-call fragment in a streamed delta (OpenAI shape: `arguments` is a JSON string). */
export interface ToolCallDelta {
  /** Position of the tool call in the message. */
  index: number;
  /** The call id, on its first fragment. */
  id?: string;
  /** Always `"function"`, on its first fragment. */
  type?: "function";
  /** The function name (first fragment) and a piece of the arguments' JSON text. */
  function?: { name?: string; arguments?: string };
}

/** The delta of one streamed choice. */
export interface ChunkDelta {
  /** `"assistant"`, on the first chunk. */
  role?: string;
  /** A piece of the text. */
  content?: string | null;
  /** A piece of a refusal. */
  refusal?: string | null;
  /** A piece of the model's reasoning, when the provider reports it (vLLM, DeepSeek style). */
  reasoning_content?: string | null;
  /** Tool-call fragments. */
  tool_calls?: ToolCallDelta[];
}

/** One choice in a streamed chunk. */
export interface ChunkChoice {
  /** Always `0`: the daemon serves one choice per request. */
  index: number;
  /** What changed. */
  delta: ChunkDelta;
  /** Set on the chunk that ends the choice: `stop`, `length`, `tool_calls`, `content_filter`. */
  finish_reason: string | null;
}

/** An OpenAI `chat.completion.chunk`, as the provider streams it. */
export interface ChatCompletionChunk {
  /** The completion id. */
  id: string;
  /** `"chat.completion.chunk"`. */
  object: "chat.completion.chunk";
  /** Unix seconds. */
  created: number;
  /** The provider's model id. */
  model: string;
  /** Zero or one choice (the usage chunk has none). */
  choices: ChunkChoice[];
  /** On the last chunk: the token counts. */
  usage?: Usage | null;
}

/** The opened reply to a chat request. */
export interface ChatReply {
  /** Who served it, and how it was verified. */
  readonly served: ServedBy;
  /**
   * The reply's chunks. Completes only after the sealed stream's final chunk; rejects with a
   * {@linkcode DaemonError} when the stream fails after its first chunk.
   */
  readonly chunks: AsyncIterable<ChatCompletionChunk>;
}

/** The daemon's network side, implemented by the network backend and by test doubles. */
export interface ChatBackend {
  /**
   * The models the network offers, one entry per tier and model.
   *
   * @throws {DaemonError} `no_gateway` when no gateway can be reached.
   */
  listModels(signal: AbortSignal): Promise<readonly NetworkModel[]>;
  /**
   * Runs one chat request; resolves when the first chunk of the reply is available. See the
   * module documentation for the full contract.
   *
   * @throws {DaemonError} with the code of the refusal.
   */
  chat(request: ChatRequest, signal: AbortSignal): Promise<ChatReply>;
  /**
   * Runs one embeddings request, sealed like a chat request (same selection, trust and
   * failover); resolves with the whole answer. Absent in a backend without embeddings (the
   * routes then answer `model_not_found`).
   *
   * @throws {DaemonError} with the code of the refusal.
   */
  embed?(request: EmbeddingsRequest, signal: AbortSignal): Promise<EmbeddingsReply>;
}
