/**
 * The framing of chunked Oblivious HTTP shared by both directions (private): sealing a body
 * into `prefix ‖ chunk* ‖ 0x00 ‖ final chunk` and opening such a stream, one chunk at a time,
 * fail-closed (see `chunked.ts` and `docs/crypto.md` §3).
 *
 * ```
 * chunk = varint(length) ‖ sealed chunk      (length ≥ 1; the final chunk: 0, then to the end)
 * ```
 *
 * @module
 */

import { ByteQueue } from "../_byte_queue.ts";
import { bytesLabel, concat } from "../_bytes.ts";
import { readVarint, VARINT_TOO_LARGE, varintLength, varintSize, writeVarint } from "../_varint.ts";
import type { MaybePromise } from "../hpke/_aead.ts";
import { type ByteReader, streamOfReader } from "../_streams.ts";
import { EMPTY } from "./_encapsulation.ts";
import { OpenError, SealError } from "./errors.ts";

/** Seals one plaintext chunk (the final one with the final AAD); synchronous when it can be. */
export type ChunkSeal = (plaintext: Uint8Array, final: boolean) => MaybePromise<Uint8Array>;
/** Opens one sealed chunk (the final one with the final AAD); throws or rejects when forged. */
export type ChunkOpen = (ciphertext: Uint8Array, final: boolean) => MaybePromise<Uint8Array>;

/** What sealing one direction needs. */
export interface SealSpec {
  /** For messages. */
  what: "request" | "response";
  /** The AEAD's tag length. */
  tagLength: number;
  /** Largest sealed chunk, tag included. */
  maxChunkLength: number;
  /**
   * Sets up sealing: the prefix to send first (`hdr ‖ enc` or the nonce) and the sealer. Called
   * when the stream starts; what it throws errors the stream.
   */
  start(): SealStart | Promise<SealStart>;
}

/** What opening one direction needs. */
export interface OpenSpec {
  /** For messages. */
  what: "request" | "response";
  /** Bytes before the first chunk (the response nonce), 0 for none. */
  prefixLength: number;
  /** The AEAD's tag length. */
  tagLength: number;
  /** Largest sealed chunk accepted, tag included. */
  maxChunkLength: number;
  /** Sets up opening from the prefix; what it throws errors the stream. */
  start(prefix: Uint8Array): ChunkOpen | Promise<ChunkOpen>;
}

/** What {@linkcode SealSpec.start} returns. */
export interface SealStart {
  /** Bytes sent before the first chunk. */
  prefix: Uint8Array;
  /** The sealer. */
  seal: ChunkSeal;
}

function frame(ciphertext: Uint8Array, final: boolean): Uint8Array {
  const length = final ? 0 : ciphertext.length;
  const out = new Uint8Array(varintSize(length) + ciphertext.length);
  const at = writeVarint(out, 0, length);
  out.set(ciphertext, at);
  return out;
}

function sealChunk(
  seal: ChunkSeal,
  plaintext: Uint8Array,
  final: boolean,
  what: string,
): MaybePromise<Uint8Array> {
  const failed = (cause: unknown) =>
    new SealError("crypto", `Cannot seal chunked ${what}: the AEAD failed`, { cause });
  let sealed: MaybePromise<Uint8Array>;
  try {
    sealed = seal(plaintext, final);
  } catch (cause) {
    throw failed(cause);
  }
  if (!(sealed instanceof Promise)) return frame(sealed, final);
  return sealed.then((bytes) => frame(bytes, final), (cause) => {
    throw failed(cause);
  });
}

/**
 * Seals a body held whole into the bytes {@linkcode sealStream} would stream for it — the
 * prefix, the pieces (split at `maxChunkLength`), the last one as the final chunk — at once:
 * synchronous unless a piece is large enough to be sealed on WebCrypto.
 *
 * @throws {SealError} (or rejects with it) when sealing fails.
 */
export function sealBytesWhole(
  body: Uint8Array,
  spec: Omit<SealSpec, "start">,
  started: SealStart,
): MaybePromise<Uint8Array<ArrayBuffer>> {
  const maxPlaintext = spec.maxChunkLength - spec.tagLength;
  const pieces: MaybePromise<Uint8Array>[] = [started.prefix];
  let at = 0;
  do {
    const end = Math.min(body.length, at + maxPlaintext);
    // Each seal takes its sequence number when called: in order, even when some are promises.
    pieces.push(sealChunk(started.seal, body.subarray(at, end), end === body.length, spec.what));
    at = end;
  } while (at < body.length);
  if (pieces.some((piece) => piece instanceof Promise)) {
    return Promise.all(pieces).then((sealed) => concat(...sealed));
  }
  return concat(...pieces as Uint8Array[]);
}

/**
 * Seals a body (a stream, or bytes) into a chunked stream: the prefix first, then one sealed
 * chunk per plaintext chunk as it is read (split at `maxChunkLength`), then the final chunk.
 *
 * @throws {SealError} with reason `invalid_input` when the body is neither; the stream errors
 * with a {@linkcode SealError} when sealing fails.
 */
export function sealStream(
  body: ReadableStream<Uint8Array> | Uint8Array,
  spec: SealSpec,
): ReadableStream<Uint8Array> {
  const maxPlaintext = spec.maxChunkLength - spec.tagLength;
  if (body instanceof Uint8Array) return sealBytes(body.slice(), spec, maxPlaintext);
  if (!(body instanceof ReadableStream)) {
    throw new SealError(
      "invalid_input",
      `Cannot seal chunked ${spec.what}: expected bytes or a ReadableStream, found ${typeof body}`,
    );
  }
  return streamOfReader(sealReader(body.getReader(), spec));
}

/**
 * {@linkcode sealStream} over a reader, as a reader: the prefix first, then each piece it reads
 * sealed (one sealed chunk per piece, split at `maxChunkLength`; empty pieces skipped), then the
 * final chunk once it ends; no stream between the two. A failure cancels the source and rejects
 * this read and the next ones.
 */
export function sealReader(source: ByteReader, spec: SealSpec): ByteReader {
  const maxPlaintext = spec.maxChunkLength - spec.tagLength;
  const out: Uint8Array[] = [];
  let seal: ChunkSeal | undefined;
  let ended = false;
  let failure: { error: unknown } | undefined;
  const step = async (): Promise<ReadableStreamReadResult<Uint8Array>> => {
    if (!seal) {
      const started = await spec.start();
      seal = started.seal;
      return { done: false, value: started.prefix };
    }
    while (out.length === 0) {
      if (ended) return { done: true, value: undefined };
      const { done, value } = await source.read();
      if (done) {
        ended = true;
        out.push(await sealChunk(seal, EMPTY, true, spec.what));
        break;
      }
      if (!(value instanceof Uint8Array)) {
        throw new SealError(
          "invalid_input",
          `Cannot seal chunked ${spec.what}: the body yielded ${typeof value}, expected bytes`,
        );
      }
      // Each seal takes its sequence number when called: in order, even when some are promises.
      const sealed: MaybePromise<Uint8Array>[] = [];
      for (let at = 0; at < value.length; at += maxPlaintext) {
        const end = Math.min(value.length, at + maxPlaintext);
        sealed.push(sealChunk(seal, value.subarray(at, end), false, spec.what));
      }
      for (const piece of sealed) out.push(piece instanceof Promise ? await piece : piece);
    }
    return { done: false, value: out.shift()! };
  };
  return {
    read: async () => {
      if (out.length > 0) return { done: false, value: out.shift()! };
      if (failure) throw failure.error;
      try {
        return await step();
      } catch (error) {
        failure = { error };
        await source.cancel(error).catch(() => {});
        throw error;
      }
    },
    cancel: (reason) => source.cancel(reason),
    releaseLock: () => source.releaseLock(),
  };
}

function sealBytes(
  body: Uint8Array,
  spec: SealSpec,
  maxPlaintext: number,
): ReadableStream<Uint8Array> {
  let seal: ChunkSeal;
  let at = 0;
  let done = false;
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const started = await spec.start();
      seal = started.seal;
      controller.enqueue(started.prefix);
    },
    pull(controller) {
      if (done) return;
      const end = Math.min(body.length, at + maxPlaintext);
      const final = end === body.length;
      const sealed = sealChunk(seal, body.subarray(at, end), final, spec.what);
      const deliver = (bytes: Uint8Array) => {
        controller.enqueue(bytes);
        at = end;
        if (final) {
          done = true;
          controller.close();
        }
      };
      if (sealed instanceof Promise) return sealed.then(deliver);
      deliver(sealed);
      return undefined;
    },
  }, { highWaterMark: 0 });
}

/**
 * Opens a sealed stream chunk by chunk. The result errors with an {@linkcode OpenError} for
 * anything but a stream that ends right after an authenticated final chunk.
 *
 * @throws {OpenError} with reason `malformed` when `sealed` is not a stream.
 */
export function openStream(
  sealed: ReadableStream<Uint8Array>,
  spec: OpenSpec,
): ReadableStream<Uint8Array> {
  return streamOfReader(openReader(sealed, spec));
}

/** Options of {@linkcode openReader}. */
export interface OpenReaderOptions {
  /**
   * Give what one read of the sealed stream opened as one piece (the chunks' plaintexts joined)
   * rather than one piece per chunk — the plaintext a reader of a byte stream sees, as TCP
   * gives a plaintext reply's bytes. The bytes are the same; only where pieces end differs.
   * @default {false}
   */
  join?: boolean;
}

/**
 * {@linkcode openStream} as a reader: each `read()` gives the next plaintext chunk (with
 * `join`, every chunk still at hand, as one piece), reading the sealed stream only when none is
 * left (each piece read is opened at once, synchronously unless a chunk is large enough for
 * WebCrypto); no stream between the two. A failure cancels the sealed stream and rejects this
 * read and the next ones (after what opened before it has been given).
 *
 * @throws {OpenError} with reason `malformed` when `sealed` is not a stream.
 */
export function openReader(
  sealed: ReadableStream<Uint8Array>,
  spec: OpenSpec,
  options: OpenReaderOptions = {},
): ByteReader {
  if (!(sealed instanceof ReadableStream)) {
    throw new OpenError(
      "malformed",
      `Cannot open chunked ${spec.what}: expected a ReadableStream, found ${typeof sealed}`,
    );
  }
  const source = sealed.getReader();
  const opener = new ChunkOpener(spec);
  const pieces: Uint8Array[] = [];
  let given = 0;
  const sink = {
    enqueue: (piece: Uint8Array) => void pieces.push(piece),
  } as TransformStreamDefaultController<Uint8Array>;
  let started: Promise<void> | undefined = opener.start();
  let failure: { error: unknown } | undefined;
  // A failure after some chunks of the same read opened: those are given first.
  let deferred: { error: unknown } | undefined;
  let ended = false;
  type Result = ReadableStreamReadResult<Uint8Array>;
  const join = options.join === true;
  const give = (): Result => {
    let value: Uint8Array;
    if (join && pieces.length - given > 1) {
      value = concat(...(given === 0 ? pieces : pieces.slice(given)));
      given = pieces.length;
    } else value = pieces[given++];
    if (given === pieces.length) {
      pieces.length = 0;
      given = 0;
    }
    return { done: false, value };
  };
  // Fails this read and the next ones, cancelling the sealed stream.
  const fail = (error: unknown): Promise<never> => {
    failure = { error };
    return source.cancel(error).catch(() => {}).then(() => Promise.reject(error));
  };
  const failed = (error: unknown): MaybePromise<Result> => {
    if (pieces.length === 0) return fail(error);
    deferred = { error };
    return give();
  };
  // One promise per read of the sealed stream (its own), nothing chained per layer: what a read
  // brings is opened at once, synchronously unless a chunk needs WebCrypto or the prefix sets up.
  const received = (step: Result): MaybePromise<Result> => {
    let opened: Promise<void> | undefined;
    try {
      if (step.done) {
        ended = true;
        opened = opener.flush(sink);
      } else opened = opener.transform(step.value, sink);
    } catch (error) {
      return failed(error);
    }
    return opened ? opened.then(next, failed) : next();
  };
  const next = (): MaybePromise<Result> => {
    if (pieces.length > 0) return give();
    if (deferred) return fail(deferred.error);
    if (ended) return { done: true, value: undefined };
    return source.read().then(received, fail);
  };
  return {
    read: () => {
      if (pieces.length > 0) return Promise.resolve(give());
      if (failure) return Promise.reject(failure.error);
      if (started) {
        const waiting = started;
        started = undefined;
        return waiting.then(next, fail);
      }
      const result = next();
      return result instanceof Promise ? result : Promise.resolve(result);
    },
    cancel: (reason) => source.cancel(reason),
    releaseLock: () => source.releaseLock(),
  };
}

/**
 * Opens chunks held in memory, synchronously, with the same checks and errors as
 * {@linkcode openStream} (for a direction without a prefix): the plaintext chunks, or an
 * {@linkcode OpenError} for anything but chunks that end right after an authenticated final
 * chunk.
 */
export function openBytes(
  sealed: Uint8Array,
  spec: Omit<OpenSpec, "start" | "prefixLength">,
  open: ChunkOpen,
): MaybePromise<Uint8Array[]> {
  const opener = new ChunkOpener({ ...spec, prefixLength: 0, start: () => open }, open);
  const chunks: Uint8Array[] = [];
  const controller = {
    enqueue: (chunk: Uint8Array) => void chunks.push(chunk),
  } as TransformStreamDefaultController<Uint8Array>;
  const opened = sealed.length > 0 ? opener.transform(sealed, controller) : undefined;
  if (!opened) {
    const flushed = opener.flush(controller);
    return flushed ? flushed.then(() => chunks) : chunks;
  }
  return opened.then(() => opener.flush(controller)).then(() => chunks);
}

/** Where the opener is: in the prefix, before a length, inside a chunk, or in the final chunk. */
type OpenState = "prefix" | "length" | "body" | "final";

/** The transformer behind {@linkcode openStream}: a small state machine over a byte queue. */
class ChunkOpener implements Transformer<Uint8Array, Uint8Array> {
  readonly #spec: OpenSpec;
  readonly #what: string;
  readonly #queue = new ByteQueue();
  #open: ChunkOpen | undefined;
  #state: OpenState;
  #bodyLength = 0;
  #chunks = 0;

  /** With `open` given (and no prefix), it is set up at once, without calling `spec.start`. */
  constructor(spec: OpenSpec, open?: ChunkOpen) {
    this.#spec = spec;
    this.#what = `chunked ${spec.what}`;
    this.#state = spec.prefixLength > 0 ? "prefix" : "length";
    this.#open = open;
  }

  start(): Promise<void> | undefined {
    if (this.#state === "prefix" || this.#open) return undefined;
    return Promise.resolve().then(() => this.#spec.start(EMPTY)).then((open) => {
      this.#open = open;
    });
  }

  transform(
    chunk: Uint8Array,
    controller: TransformStreamDefaultController<Uint8Array>,
  ): Promise<void> | undefined {
    if (!(chunk instanceof Uint8Array)) {
      throw new OpenError(
        "malformed",
        `Cannot open ${this.#what}: the stream yielded ${typeof chunk}, expected bytes`,
      );
    }
    if (this.#state === "length" && this.#queue.length === 0) {
      return this.#openInPlace(chunk, controller);
    }
    this.#queue.push(chunk);
    return this.#drain(controller);
  }

  /**
   * Between chunks with nothing queued: opens the whole chunks at the start of `bytes` where
   * they lie (views, no queue), and queues what is left (a chunk cut by the read, the final
   * chunk) for the step by step way.
   */
  #openInPlace(
    bytes: Uint8Array,
    controller: TransformStreamDefaultController<Uint8Array>,
  ): Promise<void> | undefined {
    let at = 0;
    while (at < bytes.length) {
      const first = bytes[at];
      const size = varintLength(first);
      if (bytes.length - at < size) break;
      const value = size === 1
        ? first
        : size === 2
        ? ((first & 0x3f) << 8) | bytes[at + 1]
        : readVarint(bytes, at).value;
      if (value === 0) break; // the final chunk
      this.#checkChunkLength(value);
      const end = at + size + value;
      if (end > bytes.length) break;
      const plaintext = this.#openChunk(bytes.subarray(at + size, end), false);
      at = end;
      if (plaintext instanceof Promise) {
        const rest = bytes.subarray(at);
        return plaintext.then((opened) => {
          this.#deliver(opened, controller);
          this.#queue.push(rest);
          return this.#drain(controller);
        });
      }
      this.#deliver(plaintext, controller);
    }
    if (at === bytes.length) return undefined;
    this.#queue.push(bytes.subarray(at));
    return this.#drain(controller);
  }

  flush(controller: TransformStreamDefaultController<Uint8Array>): Promise<void> | undefined {
    const queue = this.#queue;
    if (this.#state !== "final") {
      throw new OpenError(
        "truncated",
        `Cannot open ${this.#what}: the stream ended ${this.#where()}, without the final chunk`,
      );
    }
    if (queue.length < this.#spec.tagLength) {
      throw new OpenError(
        "truncated",
        `Cannot open ${this.#what}: the final chunk is ${
          bytesLabel(queue.length)
        }, shorter than the ${this.#spec.tagLength}-byte tag`,
      );
    }
    const deliver = (plaintext: Uint8Array) => {
      if (plaintext.length > 0) controller.enqueue(plaintext);
    };
    const plaintext = this.#openChunk(queue.takeAll().slice(), true);
    if (plaintext instanceof Promise) return plaintext.then(deliver);
    deliver(plaintext);
    return undefined;
  }

  /**
   * Consumes what the queue holds, step by step; synchronous except for setting up from the
   * prefix (a promise, after which it goes on).
   */
  #drain(controller: TransformStreamDefaultController<Uint8Array>): Promise<void> | undefined {
    while (true) {
      if (this.#state === "prefix") {
        const { prefixLength } = this.#spec;
        if (this.#queue.length < prefixLength) return undefined;
        const prefix = this.#queue.take(prefixLength).slice();
        return Promise.resolve().then(() => this.#spec.start(prefix)).then((open) => {
          this.#open = open;
          this.#state = "length";
          return this.#drain(controller);
        });
      }
      const more = this.#step(controller);
      if (more instanceof Promise) {
        return more.then((again) => again ? this.#drain(controller) : undefined);
      }
      if (!more) return undefined;
    }
  }

  /** Consumes what the queue holds for the current state; true when another step may follow. */
  #step(controller: TransformStreamDefaultController<Uint8Array>): MaybePromise<boolean> {
    switch (this.#state) {
      case "length":
        return this.#readLength();
      case "body":
        return this.#readBody(controller);
      case "final":
        this.#checkFinalLength();
        return false;
      default:
        return false;
    }
  }

  #readLength(): boolean {
    const queue = this.#queue;
    const first = queue.peek(0);
    if (first === undefined) return false;
    const size = varintLength(first);
    if (queue.length < size) return false;
    const { value } = readVarint(queue.take(size), 0);
    if (value === 0) {
      this.#state = "final";
      return true;
    }
    this.#checkChunkLength(value);
    this.#bodyLength = value;
    this.#state = "body";
    return true;
  }

  /** Refuses a non-final chunk's length: too large, no data, shorter than the tag. */
  #checkChunkLength(value: number): void {
    const { maxChunkLength, tagLength } = this.#spec;
    if (value > tagLength && value <= maxChunkLength) return;
    const chunk = `chunk ${this.#chunks}`;
    if (value === VARINT_TOO_LARGE || value > maxChunkLength) {
      throw new OpenError(
        "chunk_too_large",
        `Cannot open ${this.#what}: ${chunk} is ${
          value === VARINT_TOO_LARGE ? "over 2^53 bytes" : bytesLabel(value)
        }, more than the ${bytesLabel(maxChunkLength)} allowed`,
      );
    }
    if (value === tagLength) {
      throw new OpenError(
        "empty_chunk",
        `Cannot open ${this.#what}: non-final ${chunk} carries no data`,
      );
    }
    if (value < tagLength) {
      throw new OpenError(
        "malformed",
        `Cannot open ${this.#what}: ${chunk} is ${
          bytesLabel(value)
        }, shorter than the ${tagLength}-byte tag`,
      );
    }
  }

  #readBody(controller: TransformStreamDefaultController<Uint8Array>): MaybePromise<boolean> {
    if (this.#queue.length < this.#bodyLength) return false;
    // A view of what was received: opened at once (an asynchronous open copies it first).
    const plaintext = this.#openChunk(this.#queue.take(this.#bodyLength), false);
    if (plaintext instanceof Promise) {
      return plaintext.then((bytes) => this.#deliver(bytes, controller));
    }
    return this.#deliver(plaintext, controller);
  }

  /** Passes on an opened non-final chunk; refuses an empty one. */
  #deliver(plaintext: Uint8Array, controller: TransformStreamDefaultController<Uint8Array>): true {
    if (plaintext.length === 0) {
      throw new OpenError(
        "empty_chunk",
        `Cannot open ${this.#what}: non-final chunk ${this.#chunks} carries no data`,
      );
    }
    this.#chunks++;
    controller.enqueue(plaintext);
    this.#state = "length";
    return true;
  }

  /** The final chunk runs to the end of the stream: refuse it as soon as it passes the limit. */
  #checkFinalLength(): void {
    if (this.#queue.length > this.#spec.maxChunkLength) {
      throw new OpenError(
        "chunk_too_large",
        `Cannot open ${this.#what}: the final chunk exceeds the ${
          bytesLabel(this.#spec.maxChunkLength)
        } allowed`,
      );
    }
  }

  #openChunk(ciphertext: Uint8Array, final: boolean): MaybePromise<Uint8Array> {
    let opened: MaybePromise<Uint8Array>;
    try {
      opened = this.#open!(ciphertext, final);
    } catch (cause) {
      throw this.#forged(cause, final);
    }
    if (!(opened instanceof Promise)) return opened;
    return opened.catch((cause) => {
      throw this.#forged(cause, final);
    });
  }

  #forged(cause: unknown, final: boolean): OpenError {
    return new OpenError(
      "authentication",
      `Cannot open ${this.#what}: ${
        final ? "final chunk" : `chunk ${this.#chunks}`
      } failed authentication`,
      {
        cause,
        details: "the chunk was altered, reordered, sealed with another key, or the final " +
          "chunk was replaced",
      },
    );
  }

  /** Where a stream that ended too early ended, for the message. */
  #where(): string {
    const chunks = this.#chunks;
    switch (this.#state) {
      case "prefix":
        return `inside the ${this.#spec.prefixLength}-byte response nonce`;
      case "body":
        return `inside chunk ${chunks} (${bytesLabel(this.#queue.length)} of ${
          bytesLabel(this.#bodyLength)
        })`;
      default:
        return this.#queue.length > 0
          ? `inside the length of chunk ${chunks}`
          : `after ${chunks} chunk${chunks === 1 ? "" : "s"}`;
    }
  }
}
