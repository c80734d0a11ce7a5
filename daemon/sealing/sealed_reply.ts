/**
 * Opening a provider's sealed reply (`docs/protocol.md` §7) into the OpenAI
 * `chat.completion.chunk` objects the daemon's surface consumes.
 *
 * The reply is a Binary HTTP response inside chunked OHTTP. A non-200 status carries the
 * provider's OpenAI-style error. A 200 carries an event stream; each event is one chunk, the
 * last is `[DONE]`. Or, to a request for a whole reply (`stream: false`), one
 * `chat.completion` object (`application/json`), which becomes a single chunk; whitespace
 * before it is the provider showing it is alive while it generates. The iteration ends
 * normally only after the sealed stream's final chunk has authenticated — `[DONE]` alone is
 * not enough, since a relay could cut the stream right after it. Any failure to open or
 * authenticate is a {@linkcode DaemonError}: `stream_truncated` when the sealed stream ended
 * early, `decryption_failed` otherwise.
 *
 * In the TEE tier the reply's end is checked too (`onEnd`): once the content has been read and
 * authenticated, its SHA-256 digest, status and trailers (the provider's receipt) are handed to
 * the caller's check before the reply completes — a stream's last chunk is followed by the
 * check, not by a normal end, and a whole reply's one chunk waits for it.
 *
 * @module
 */

import { sha256 } from "@noble/hashes/sha2.js";
import { BinaryHttpError, OpenError, type SealedHttpRequest } from "../../crypto/mod.ts";
// Not in the library's entry point: the daemon's own way to read a reply without a stream.
import { type BodyReader, openedBodyReader } from "../../crypto/ohttp/opened_body_reader.ts";
import { readAllLimited } from "../../io/read_limited.ts";
import { SseError, type SseEvent, SseParser } from "../../io/sse.ts";
import { type ChatCompletionChunk, DaemonError } from "../core/mod.ts";
import { ProviderBusyError, retryAfterMs } from "../gateway/mod.ts";
import { ALIVE, completionChunk, throwIfFailed } from "./_whole_reply.ts";
import { providerAnswer, refusalOf } from "./_refusal.ts";

/** The opened reply: its first chunk (already read) and the rest. */
export interface OpenedReply {
  /**
   * The first chunk: the "first byte" of an event stream. A whole reply has none: its head
   * (the provider answered 200 with the answer to come) is its first byte.
   */
  first?: ChatCompletionChunk;
  /** The remaining chunks; completes only after the sealed stream's end authenticated. */
  rest: AsyncGenerator<ChatCompletionChunk>;
}

/** Largest whole reply (one `chat.completion` object) read from a provider: 64 MiB. */
export const MAX_WHOLE_REPLY_BYTES = 64 << 20;

/** What a reply ended with: checked by `onEnd` before the reply completes. */
export interface ReplyEnding {
  /** The inner response's status. */
  readonly status: number;
  /** SHA-256 of the inner response's content, every byte as the provider sent it. */
  readonly digest: Uint8Array;
  /** The inner response's trailer fields. */
  readonly trailers: Headers;
}

/** Checks a reply's end; throws (a `DaemonError`) to refuse the reply. */
export type ReplyEndCheck = (ending: ReplyEnding) => Promise<void>;

/** Options of {@linkcode openSealedReply}. */
export interface OpenSealedReplyOptions {
  /** Largest single event, in bytes. @default {1 MiB} */
  maxEventBytes?: number;
  /**
   * The request's signal: once it aborts (the client went away, a deadline passed), a failure
   * to read is that abort, not a truncated stream.
   */
  signal?: AbortSignal;
  /** Checks the reply's end (TEE tier: its receipt) before the reply completes. */
  onEnd?: ReplyEndCheck;
}

/**
 * Opens the sealed reply stream and reads up to its first chunk (an event stream), or up to
 * its head (a whole reply, `application/json`: the rest is its one chunk, once it has come).
 *
 * @throws {DaemonError} `decryption_failed` / `stream_truncated` when the sealed stream is
 * broken, `provider_error` (with the provider's status) for a provider's error answer or a
 * reply that is not an event stream of chunks.
 * @throws {ProviderBusyError} when the provider answered `503` inside the sealed exchange (it is
 * at capacity: authenticated, so only the provider can say it).
 */
export async function openSealedReply(
  sealed: Pick<SealedHttpRequest, "openResponse">,
  stream: ReadableStream<Uint8Array>,
  options: OpenSealedReplyOptions = {},
): Promise<OpenedReply> {
  const { signal } = options;
  const opened = await openOk(sealed, stream, signal, options.onEnd);
  const type = opened.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
  if (type === "application/json") {
    return { rest: wholeReply(opened.body(), signal, opened.end) };
  }
  if (type !== "text/event-stream") {
    await opened.body().cancel().catch(() => {});
    throw new DaemonError(
      "provider_error",
      `The provider answered ${type ?? "no content type"}, expected text/event-stream or ` +
        "application/json",
    );
  }
  const rest = chunks(opened.reader(), options.maxEventBytes ?? 1 << 20, signal, opened.end);
  const first = await rest.next();
  if (first.done) {
    throw new DaemonError("provider_error", "The provider's reply ended without any chunk");
  }
  return { first: first.value, rest };
}

/**
 * Opens a sealed reply that is one JSON document (`application/json`, e.g. an embeddings
 * answer) and reads it whole, at most `maxBytes`; the body counts only once the sealed
 * stream's end authenticated.
 *
 * @throws {DaemonError} as {@linkcode openSealedReply}, and `provider_error` for a body that is
 * not JSON or is larger than `maxBytes`.
 * @throws {ProviderBusyError} for a sealed 503.
 */
export async function openSealedJson(
  sealed: Pick<SealedHttpRequest, "openResponse">,
  stream: ReadableStream<Uint8Array>,
  options: { maxBytes: number; signal?: AbortSignal; onEnd?: ReplyEndCheck },
): Promise<unknown> {
  const { signal } = options;
  const opened = await openOk(sealed, stream, signal, options.onEnd);
  const type = opened.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
  if (type !== "application/json") {
    await opened.body().cancel().catch(() => {});
    throw new DaemonError(
      "provider_error",
      `The provider answered ${type ?? "no content type"}, expected application/json`,
    );
  }
  let body: Uint8Array | null;
  try {
    body = await readAllLimited(opened.body(), options.maxBytes);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw cryptoFailure(error);
  }
  if (body === null) {
    throw new DaemonError(
      "provider_error",
      `The provider's answer is larger than ${options.maxBytes} bytes`,
    );
  }
  let answer: unknown;
  try {
    answer = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new DaemonError("provider_error", "The provider's answer is not JSON");
  }
  await opened.end();
  return answer;
}

/** An opened 200 reply: its content read as a stream or by a reader (one of them, once). */
interface OkReply {
  readonly headers: Headers;
  /** The content as a stream. */
  body(): ReadableStream<Uint8Array>;
  /** The content by a reader (without a stream between it and the decoding, when it can). */
  reader(): BodyReader;
  /** Called once the content has been read to its end. */
  end(): Promise<void>;
}

/**
 * Opens the sealed response; a non-200 status becomes the matching refusal. With `onEnd`, the
 * body is hashed as it is read, and `end()` (called once the body has been read to its end)
 * hands the digest, status and trailers to the check; without, `end()` does nothing.
 */
async function openOk(
  sealed: Pick<SealedHttpRequest, "openResponse">,
  stream: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
  onEnd?: ReplyEndCheck,
): Promise<OkReply> {
  const opened = await openStatusOk(sealed, stream, signal);
  if (!onEnd) {
    return {
      headers: opened.headers,
      body: () => opened.body,
      reader: () => openedBodyReader(opened) ?? opened.body.getReader(),
      end: () => Promise.resolve(),
    };
  }
  const hash = sha256.create();
  const body = opened.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        hash.update(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  const end = async () => {
    let trailers: Headers;
    try {
      trailers = await opened.trailers;
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw cryptoFailure(error);
    }
    await onEnd({ status: opened.status, digest: hash.digest(), trailers });
  };
  return { headers: opened.headers, body: () => body, reader: () => body.getReader(), end };
}

/** Opens the sealed response; a non-200 status becomes the matching refusal. */
async function openStatusOk(
  sealed: Pick<SealedHttpRequest, "openResponse">,
  stream: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
) {
  const failure = (error: unknown) => {
    if (signal?.aborted) return signal.reason;
    return cryptoFailure(error);
  };
  let opened;
  try {
    opened = await sealed.openResponse(stream);
  } catch (error) {
    throw failure(error);
  }
  if (opened.status !== 200) {
    const body = await readAllLimited(opened.body, 64 * 1024).catch((error) => {
      throw failure(error);
    });
    if (opened.status === 503) {
      throw providerAnswer(
        new ProviderBusyError(
          "The provider is at capacity (a sealed 503)",
          retryAfterMs(opened.headers.get("retry-after")),
        ),
      );
    }
    throw refusalOf(opened.status, body);
  }
  return opened;
}

/**
 * The reply's chunks. Each read of the opened content (every event of the sealed chunks one read
 * of the sealed stream brought) is parsed and checked at once, synchronously; its chunks are
 * then yielded in order.
 */
async function* chunks(
  reader: BodyReader,
  maxEventBytes: number,
  signal: AbortSignal | undefined,
  end: () => Promise<void>,
): AsyncGenerator<ChatCompletionChunk> {
  const parser = new SseParser({ maxEventBytes });
  const state = { done: false };
  try {
    while (true) {
      const ready: ChatCompletionChunk[] = [];
      let ended = false;
      let failure: unknown;
      try {
        const step = await reader.read();
        ended = step.done;
        for (const event of step.done ? parser.end() : parser.push(step.value)) {
          const chunk = checkedChunk(event, state);
          if (chunk) ready.push(chunk);
        }
      } catch (error) {
        failure = error;
      }
      // The chunks before a bad event (or a failed read) are passed on first, as they came
      // (one by one: `yield*` over an array would add an await per element).
      for (const chunk of ready) yield chunk;
      if (failure !== undefined) {
        if (failure instanceof DaemonError) throw failure;
        // A read that failed because the request was aborted is that abort, not a broken stream.
        if (signal?.aborted) throw signal.reason;
        throw cryptoFailure(failure);
      }
      if (ended) break;
    }
  } finally {
    reader.releaseLock();
  }
  if (!state.done) {
    throw new DaemonError("provider_error", "The provider's reply ended without [DONE]");
  }
  await end();
}

/**
 * A whole reply's chunks: {@linkcode ALIVE} for each piece read before the end (so the reader's
 * idle timeout sees the provider is alive), then the `chat.completion` as one chunk — only once
 * the sealed stream's end authenticated, and at most {@linkcode MAX_WHOLE_REPLY_BYTES}.
 */
async function* wholeReply(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
  end: () => Promise<void>,
): AsyncGenerator<ChatCompletionChunk> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  try {
    while (true) {
      let step;
      try {
        step = await reader.read();
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        throw cryptoFailure(error);
      }
      if (step.done) break;
      size += step.value.length;
      if (size > MAX_WHOLE_REPLY_BYTES) {
        throw new DaemonError(
          "provider_error",
          `The provider's whole reply is larger than ${MAX_WHOLE_REPLY_BYTES} bytes`,
        );
      }
      text += decoder.decode(step.value, { stream: true });
      yield ALIVE;
    }
  } finally {
    reader.releaseLock();
  }
  const completion = completionChunk(text + decoder.decode());
  await end();
  yield completion;
}

/** One event, checked: its chat chunk, or nothing for `[DONE]` (then `state.done`). */
function checkedChunk(
  event: SseEvent,
  state: { done: boolean },
): ChatCompletionChunk | undefined {
  if (state.done) {
    throw new DaemonError("provider_error", "The provider sent events after [DONE]");
  }
  if (event.data === "[DONE]") {
    state.done = true;
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(event.data);
  } catch {
    throw new DaemonError("provider_error", "The provider sent an event that is not JSON");
  }
  throwIfFailed(value);
  if ((value as { object?: unknown } | null)?.object !== "chat.completion.chunk") {
    throw new DaemonError(
      "provider_error",
      "The provider sent an event that is not a chat.completion.chunk",
    );
  }
  return value as ChatCompletionChunk;
}

/** Maps a failure to open or read the sealed stream to the client-facing code. */
function cryptoFailure(error: unknown): DaemonError {
  if (error instanceof DaemonError) return error;
  if (error instanceof OpenError || error instanceof BinaryHttpError) {
    const truncated = error.reason === "truncated";
    return new DaemonError(
      truncated ? "stream_truncated" : "decryption_failed",
      truncated
        ? "The sealed reply ended before its final chunk"
        : "The sealed reply could not be opened",
      { cause: error },
    );
  }
  if (error instanceof SseError) {
    return new DaemonError("provider_error", error.shortMessage, { cause: error });
  }
  // A transport failure while reading (the relay went away): the stream did not end properly.
  return new DaemonError("stream_truncated", "The sealed reply ended before its final chunk", {
    cause: error,
  });
}
