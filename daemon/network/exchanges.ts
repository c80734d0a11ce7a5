/**
 * The exchanges the network backend seals (`network_backend.ts`): what each sends to a provider
 * and how its sealed reply is opened. A chat's reply is opened up to its first chunk and then
 * streamed, holding the provider's slot until it ends; an embeddings answer is read whole and
 * checked, and frees the slot at once.
 *
 * @module
 */

import {
  type ChatCompletionChunk,
  type ChatReply,
  type ChatRequest,
  DaemonError,
  type EmbeddingsReply,
  type EmbeddingsRequest,
  type PaymentTicket,
  type ServedBy,
  type Usage,
} from "../core/mod.ts";
import { type ModelKind, modelKind } from "../../chain/ad.ts";
import { checkedEmbeddings } from "./_embeddings_reply.ts";
import type { ProviderCandidate } from "../gateway/mod.ts";
import type { Lease } from "./scheduler.ts";
import {
  openSealedJson,
  openSealedReply,
  type ReplyEndCheck,
  type SealedChat,
} from "../sealing/mod.ts";

/** A request the backend seals: a chat or an embeddings request. */
export type Sealable = ChatRequest | EmbeddingsRequest;

/** Largest embeddings answer read from a provider: 64 MiB. */
export const MAX_EMBEDDINGS_REPLY_BYTES = 64 << 20;

/**
 * What is sealed and how its reply is opened: `open` reads the reply up to what the caller
 * needs (a chat's first chunk, an embeddings answer whole) and returns how to finish it once
 * the provider is known.
 */
export interface Exchange<R> {
  /** The path sealed inside the request. */
  readonly path: "/v1/chat/completions" | "/v1/embeddings";
  /** The body sealed inside the request (sent as its JSON text). */
  readonly body: unknown;
  /** The kind of model it needs. */
  readonly kind: ModelKind;
  /**
   * Opens the sealed reply `stream` of one attempt (aborted with `signal`) from `candidate`
   * (whose ad says what its answer must be); `onEnd` checks the reply's end (TEE tier: its
   * receipt) before the reply completes.
   */
  open(
    sealed: Pick<SealedChat, "openResponse">,
    stream: ReadableStream<Uint8Array>,
    lease: Lease,
    signal: AbortSignal,
    candidate: ProviderCandidate,
    onEnd?: ReplyEndCheck,
    ticket?: PaymentTicket,
  ): Promise<(served: ServedBy) => R>;
}

/**
 * A chat: the reply opened up to its first chunk (or, for a whole reply, its head); its chunks
 * then hold the slot until they end or the request (`signal`) is aborted (the backend frees it
 * earlier, once the relayed reply has come in whole). `onUsage` sees the
 * reply's last usage once, when it ends. A request for a whole reply (`request.whole`) asks
 * the provider for one `chat.completion` (`stream: false`): one JSON document to seal and open
 * instead of an event per token.
 */
export function chatExchange(
  request: ChatRequest,
  signal: AbortSignal,
  onUsage?: (usage: Usage) => void,
): Exchange<ChatReply> {
  return {
    path: "/v1/chat/completions",
    body: request.whole ? wholeBody(request.body) : request.body,
    kind: "chat",
    open: async (sealed, stream, lease, attemptSignal, _candidate, onEnd, ticket) => {
      const opened = await openSealedReply(sealed, stream, { signal: attemptSignal, onEnd });
      return (served) => ({
        served,
        chunks: leasedChunks(opened, lease, signal, { onUsage, ticket }),
      });
    },
  };
}

/**
 * Embeddings: the provider's answer read whole (at most {@linkcode MAX_EMBEDDINGS_REPLY_BYTES})
 * and checked — one finite vector per input, every one of the same length: the `dimensions`
 * asked for, else the vector length the provider's ad gives the model (when it does).
 */
export function embeddingsExchange(request: EmbeddingsRequest): Exchange<EmbeddingsReply> {
  const inputs = embeddingInputCount(request.body.input);
  return {
    path: "/v1/embeddings",
    body: request.body,
    kind: "embedding",
    open: async (sealed, stream, lease, attemptSignal, candidate, onEnd, ticket) => {
      const answer = await openSealedJson(sealed, stream, {
        maxBytes: MAX_EMBEDDINGS_REPLY_BYTES,
        signal: attemptSignal,
        onEnd,
      });
      const advertised = candidate.ad.models.find((m) => m.id === request.model)
        ?.embedding_dimensions;
      const length = request.body.dimensions ?? advertised;
      const checked = checkedEmbeddings(answer, inputs, length);
      // Whole and checked: what it cost is known (a failure before is settled by the caller).
      const costWei = ticket?.paid({ promptTokens: checked.promptTokens, completionTokens: 0 });
      // The answer is whole: the slot is free (a failure is released by the caller).
      lease.release();
      return (served) => ({ served, ...checked, ...(costWei === undefined ? {} : { costWei }) });
    },
  };
}

/**
 * Refuses a request whose model no candidate serves as the kind the exchange needs (a chat
 * with an embedding model, embeddings with a chat model), before anything is sealed: every
 * provider would refuse it, and none of them is at fault.
 *
 * @throws {DaemonError} `invalid_request_error` (`param: "model"`).
 */
export function checkModelKind(
  kind: ModelKind,
  model: string,
  candidates: readonly ProviderCandidate[],
): void {
  const kinds = new Set<ModelKind>();
  for (const candidate of candidates) {
    const entry = candidate.ad.models.find((m) => m.id === model);
    if (entry) kinds.add(modelKind(entry));
  }
  if (kinds.size === 0 || kinds.has(kind)) return;
  const served = [...kinds][0];
  throw new DaemonError(
    "invalid_request_error",
    kind === "chat"
      ? `Cannot chat with ${model}: it is an ${served} model; use POST /v1/embeddings or ` +
        "POST /api/embed (GET /v1/models lists each model's kind)"
      : `Cannot embed with ${model}: it is a ${served} model; use an embedding model ` +
        "(GET /v1/models lists each model's kind)",
    { param: "model" },
  );
}

/** A chat body asking for the whole reply: `stream: false`, usage in the object itself. */
function wholeBody(body: ChatRequest["body"]): Record<string, unknown> {
  const { stream_options: _options, ...rest } = body;
  return { ...rest, stream: false };
}

/** How many inputs an embeddings body has. */
function embeddingInputCount(input: EmbeddingsRequest["body"]["input"]): number {
  if (typeof input === "string") return 1;
  return input.length > 0 && typeof input[0] === "number" ? 1 : input.length;
}

/**
 * The reply's chunks, holding the provider slot until they end: at their last chunk, at a
 * failure, when the reader stops early (`return()`), or as soon as the request is aborted. When
 * the daemon paid for the reply (`ticket`), each usage the provider reports gets its cost at the
 * ad's prices (`cost_wei`, at most the worst case; a `cost_wei` the provider sent is never
 * kept), and the attempt's cost is recorded once it ends: from the last usage, or — a reply that
 * ended without one (cut, failed) — from the provider's bill, looked up.
 */
function leasedChunks(
  opened: { first?: ChatCompletionChunk; rest: AsyncGenerator<ChatCompletionChunk> },
  lease: Lease,
  signal: AbortSignal,
  pay: { onUsage?: (usage: Usage) => void; ticket?: PaymentTicket },
): AsyncIterable<ChatCompletionChunk> {
  // A reply may carry usage in several chunks (a running count); it is reported once, the
  // last one seen, when the reply ends.
  let usage: Usage | undefined;
  // The reply reached its end: the sealed stream's, or its finish reason (the reader may stop
  // after the usage that follows it without reading on to the end).
  let complete = false;
  const { ticket, onUsage } = pay;
  const free = () => {
    signal.removeEventListener("abort", free);
    lease.release();
    if (ticket) {
      if (complete && usage) {
        ticket.paid({
          promptTokens: usage.prompt_tokens,
          completionTokens: usage.completion_tokens,
        });
      } else ticket.unknown();
    }
    if (usage !== undefined) onUsage?.(usage);
    usage = undefined;
  };
  let finished = false;
  const seen = (chunk: ChatCompletionChunk) => {
    if (chunk.choices?.some((c) => c.finish_reason)) finished = true;
    // The usage after the finish reason is the reply's last word on its tokens.
    if (chunk.usage && finished) complete = true;
    if (!chunk.usage) return;
    usage = chunk.usage;
    // A cost is the daemon's to say (from the ad's prices), never the provider's.
    if (!ticket && "cost_wei" in chunk.usage) {
      const { cost_wei: _theirs, ...counts } = chunk.usage;
      chunk.usage = usage = counts;
    }
    if (ticket) {
      const { cost_wei: _theirs, ...counts } = chunk.usage;
      chunk.usage = {
        ...counts,
        cost_wei: String(ticket.cost({
          promptTokens: counts.prompt_tokens,
          completionTokens: counts.completion_tokens,
        })),
      };
      usage = chunk.usage;
    }
  };
  signal.addEventListener("abort", free, { once: true });
  let first: ChatCompletionChunk | undefined = opened.first;
  const { rest } = opened;
  const iterator: AsyncIterator<ChatCompletionChunk> = {
    async next() {
      if (first !== undefined) {
        const value = first;
        first = undefined;
        seen(value);
        return { done: false, value };
      }
      try {
        const step = await rest.next();
        if (step.done) {
          complete = true;
          free();
        } else seen(step.value);
        return step;
      } catch (error) {
        free();
        throw error;
      }
    },
    async return() {
      first = undefined;
      free();
      await rest.return(undefined).catch(() => {});
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}
