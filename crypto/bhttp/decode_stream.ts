/**
 * Incremental Binary HTTP response decoding (RFC 9292): {@linkcode decodeResponseStream}
 * resolves once the head (informational responses, final status, header fields) has arrived;
 * the content then streams as it arrives, without waiting for whole chunks, and the trailers
 * settle at the end. The decoder never buffers more of the head than the limits allow.
 *
 * @module
 */

import { ByteQueue } from "../_byte_queue.ts";
import { bytesLabel, concat } from "../_bytes.ts";
import type { ByteReader } from "../_streams.ts";
import { readVarint, VARINT_TOO_LARGE, varintLength } from "../_varint.ts";
import {
  checkPaddingBytes,
  Cursor,
  type Limits,
  limitsOf,
  NEED_MORE,
  readFieldSection,
  readResponseHead,
  type ResponseHead,
} from "./_cursor.ts";
import { BinaryHttpError } from "./errors.ts";
import type { DecodeOptions, FieldLines, Framing, InformationalResponse } from "./types.ts";

/** A response whose head has been decoded and whose body is still arriving. */
export interface StreamedResponse {
  /** How the message is framed. */
  readonly framing: Framing;
  /** Informational responses, in order. */
  readonly informational: readonly InformationalResponse[];
  /** Final status, 200 to 599. */
  readonly status: number;
  /** Header fields. */
  readonly headers: FieldLines;
  /**
   * The content, as it arrives (a piece may be a view of a chunk the input gave). It ends normally only after the whole message (trailers and
   * padding included) has been read and the input has ended; any error of the input (such
   * as an `OpenError` from the sealing layer) or of the message errors it.
   */
  readonly body: ReadableStream<Uint8Array>;
  /**
   * The trailer fields; settles once `body` has been read to its end (rejects with the
   * same error as `body`).
   */
  readonly trailers: Promise<FieldLines>;
}

const ACTION = "decode binary HTTP response";
/** No bytes (shared: never written to). */
const NOTHING = new Uint8Array(0);

/**
 * Decodes a response from a stream: resolves once the informational responses, the final
 * status and the header fields have arrived; the content then streams through `body` as it
 * arrives, without waiting for whole chunks. Both framings are accepted.
 *
 * @throws {BinaryHttpError} when the head is malformed, truncated, invalid or oversized (the
 * input is cancelled); rejects with the input's own error when the input errors.
 */
export async function decodeResponseStream(
  stream: ReadableStream<Uint8Array>,
  options: DecodeOptions = {},
): Promise<StreamedResponse> {
  return await decodeResponseFrom(stream.getReader(), options);
}

/**
 * {@linkcode decodeResponseStream} from a reader (a stream's, or a pipeline of readers such as
 * the opened chunks of a sealed reply, with no stream in between).
 *
 * @throws {BinaryHttpError} as {@linkcode decodeResponseStream}.
 */
export async function decodeResponseFrom(
  reader: ByteReader,
  options: DecodeOptions = {},
): Promise<StreamedResponse> {
  const limits = limitsOf(options, ACTION);
  const input = new Input(reader);
  let head: ResponseHead;
  try {
    head = await input.parseWhole(
      (cursor) => readResponseHead(cursor, limits),
      headBound(limits),
      "response head",
    );
  } catch (error) {
    await input.cancel(error);
    input.releaseLock();
    throw error;
  }
  const content = new ContentDecoder(input, head.framing, limits);
  const response: StreamedResponse = {
    framing: head.framing,
    informational: head.informational,
    status: head.status,
    headers: head.headers,
    // Made when first asked for: a reader of the content may take its place.
    get body() {
      return content.body();
    },
    trailers: content.trailers,
  };
  decoders.set(response, content);
  return response;
}

/** The content decoder behind each response {@linkcode decodeResponseFrom} returned. */
const decoders = new WeakMap<StreamedResponse, ContentDecoder>();

/**
 * The content of `response` as a reader, in place of its `body` stream (no stream between the
 * decoder and its reader): the same pieces, ends and errors. Either this or `body` reads the
 * content, once.
 *
 * @throws {TypeError} when the content is already being read, or `response` was not made by
 * {@linkcode decodeResponseFrom}.
 */
export function contentReader(response: StreamedResponse): ByteReader {
  const content = decoders.get(response);
  if (!content) {
    throw new TypeError("Cannot read the content: the response was not decoded here");
  }
  return content.reader();
}

/** Most bytes a header or trailer section takes on the wire: its limit and a varint or two. */
function sectionBound(limits: Limits): number {
  return limits.section + 16;
}

/** Most bytes a response head takes: every allowed informational response and the final one. */
function headBound(limits: Limits): number {
  return (limits.informational + 1) * sectionBound(limits) + 32;
}

/** The input stream: the bytes at hand that no parse step has consumed, and whether it ended. */
class Input {
  /** Bytes the current parse step has not consumed. */
  pending: Uint8Array = NOTHING;
  /** Whether the input has ended. */
  eof = false;
  readonly #reader: ByteReader;

  constructor(reader: ByteReader) {
    this.#reader = reader;
  }

  /** Reads one more chunk into `pending`, or notes the end. */
  async read(): Promise<void> {
    this.accept(await this.#reader.read());
  }

  /** One read of the input, for {@linkcode accept}. */
  readRaw(): Promise<ReadableStreamReadResult<Uint8Array>> {
    return this.#reader.read();
  }

  /** Takes one read's result into `pending`, or notes the end. */
  accept({ done, value }: ReadableStreamReadResult<Uint8Array>): void {
    if (done) {
      this.eof = true;
      return;
    }
    if (!(value instanceof Uint8Array)) {
      throw new BinaryHttpError(
        "malformed",
        `Cannot ${ACTION}: the stream yielded ${typeof value}, expected bytes`,
      );
    }
    this.pending = this.pending.length === 0 ? value : concat(this.pending, value);
  }

  /** Hands over every byte at hand. */
  takePending(): Uint8Array {
    const out = this.pending;
    this.pending = NOTHING;
    return out;
  }

  /** Runs `parse` over what has arrived, reading more until it completes or passes `bound`. */
  async parseWhole<T>(parse: (cursor: Cursor) => T, bound: number, what: string): Promise<T> {
    while (true) {
      const cursor = new Cursor(this.pending, 0, this.pending.length, this.eof, ACTION);
      try {
        const result = parse(cursor);
        this.pending = this.pending.subarray(cursor.pos);
        return result;
      } catch (error) {
        if (error !== NEED_MORE) throw error;
      }
      if (this.pending.length > bound) {
        throw new BinaryHttpError(
          "too_large",
          `Cannot ${ACTION}: the ${what} is more than the ${bytesLabel(bound)} the limits allow`,
        );
      }
      await this.read();
    }
  }

  /** Cancels the input; a failure to cancel is not the caller's error. */
  async cancel(reason: unknown): Promise<void> {
    await this.#reader.cancel(reason).catch(() => {});
  }

  releaseLock(): void {
    this.#reader.releaseLock();
  }
}

/**
 * Where the content decoder is: before a length (known length: the content's; indeterminate:
 * the next chunk's), inside content, at the trailers, or finished.
 */
type ContentState = "content-length" | "content" | "chunk-length" | "trailers" | "done";

/** What a step returns when it needs more of the input. */
const READ = Symbol("read");
/** What a step returns when it took a piece of content. */
const PIECE = Symbol("piece");
/** What a step returns when the body ends there, without trailers. */
const CLOSE = Symbol("close");

/** The end of the content. */
const DONE: ReadableStreamReadResult<Uint8Array> = { done: true, value: undefined };

/** Streams the content after the head, then reads the trailers and the padding. */
class ContentDecoder {
  /** The trailer fields; settles when the body ends. */
  readonly trailers: Promise<FieldLines>;
  readonly #input: Input;
  readonly #framing: Framing;
  readonly #limits: Limits;
  readonly #queue = new ByteQueue();
  #state: ContentState;
  /** Content bytes still to come in the current piece. */
  #left = 0;
  #chunkCount = 0;
  /** Content taken by this read, not yet given. */
  readonly #pieces: Uint8Array[] = [];
  #failed: { error: unknown } | undefined;
  /** A failure met after some content of the same read: given first, it fails the next read. */
  #deferred: { error: unknown } | undefined;
  /** Whether the content is being read (by the stream or a reader). */
  #taken = false;
  #settle!: { resolve: (fields: FieldLines) => void; reject: (error: unknown) => void };

  constructor(input: Input, framing: Framing, limits: Limits) {
    this.#input = input;
    this.#framing = framing;
    this.#limits = limits;
    this.#queue.push(input.takePending());
    this.#state = framing === "known-length" ? "content-length" : "chunk-length";
    this.trailers = new Promise<FieldLines>((resolve, reject) => {
      this.#settle = { resolve, reject };
    });
    // Callers that never look at trailers must not see an unhandled rejection.
    this.trailers.catch(() => {});
  }

  #body: ReadableStream<Uint8Array> | undefined;

  /** The content as it arrives, as a stream (made once; pulled one piece at a time). */
  body(): ReadableStream<Uint8Array> {
    if (this.#body) return this.#body;
    this.#take();
    const deliver = (
      controller: ReadableStreamDefaultController<Uint8Array>,
      { done, value }: ReadableStreamReadResult<Uint8Array>,
    ) => done ? controller.close() : controller.enqueue(value);
    this.#body = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        const result = this.#read();
        if (result instanceof Promise) return result.then((r) => deliver(controller, r));
        deliver(controller, result);
        return undefined;
      },
      cancel: (reason) => this.#cancel(reason),
    }, { highWaterMark: 0 });
    return this.#body;
  }

  /** The content as it arrives, as a reader (in place of {@linkcode body}). */
  reader(): ByteReader {
    this.#take();
    return {
      read: () => {
        const result = this.#read();
        return result instanceof Promise ? result : Promise.resolve(result);
      },
      cancel: (reason) => this.#cancel(reason),
      releaseLock: () => {},
    };
  }

  #take(): void {
    if (this.#taken) throw new TypeError("Cannot read the content: it is already being read");
    this.#taken = true;
  }

  /**
   * One read: synchronous while the bytes at hand last; otherwise one read of the input,
   * chained (no async frame per layer), after which it goes on. All the content the bytes at
   * hand hold (every content chunk of one read of the input) is given as one piece: the reader
   * sees the content as a byte stream, wherever its chunks ended.
   */
  #read(): ReadableStreamReadResult<Uint8Array> | Promise<ReadableStreamReadResult<Uint8Array>> {
    if (this.#failed) return Promise.reject(this.#failed.error);
    if (this.#deferred) return this.#fail(this.#deferred.error);
    try {
      while (true) {
        // The content taken so far goes first: before a read, before the trailers.
        if (this.#pieces.length > 0 && (this.#queue.length === 0 || this.#state === "trailers")) {
          return this.#give();
        }
        const next = this.#step();
        if (next === PIECE || next === false) continue;
        if (next === true) return DONE;
        if (next === READ) {
          // One promise per read of the input: what it brings is taken, then read on.
          return this.#input.readRaw().then((step) => {
            try {
              this.#received(step);
            } catch (error) {
              return this.#fail(error);
            }
            return this.#read();
          }, (error) => this.#fail(error));
        }
        if (next === CLOSE) return this.#close([]);
        return next.then((trailers) => this.#close(trailers)).catch((error) => this.#fail(error));
      }
    } catch (error) {
      if (this.#pieces.length === 0) return this.#fail(error);
      this.#deferred = { error };
      return this.#give();
    }
  }

  /**
   * Gives the content taken: one piece as it lies when nothing after it is queued (no later
   * byte shares its array), else a copy of its own; several joined.
   */
  #give(): ReadableStreamReadResult<Uint8Array> {
    const pieces = this.#pieces;
    const piece = pieces.length === 1
      ? (this.#queue.length === 0 ? pieces[0] : pieces[0].slice())
      : concat(...pieces);
    pieces.length = 0;
    return { done: false, value: piece };
  }

  /** Fails the body and the trailers with `error`, cancelling the input. */
  async #fail(error: unknown): Promise<never> {
    if (this.#failed) throw this.#failed.error; // already failed, deeper in the chain
    this.#state = "done";
    this.#failed = { error };
    this.#settle.reject(error);
    await this.#input.cancel(error);
    throw error;
  }

  /**
   * Takes what one read of the input brought (or notes its end): between content chunks with
   * nothing queued, the whole chunks at its start are taken where they lie
   * ({@linkcode ContentDecoder.#takeInPlace}); the rest is queued for the step by step way.
   */
  #received(step: ReadableStreamReadResult<Uint8Array>): void {
    this.#input.accept(step);
    const bytes = this.#input.takePending();
    const at = this.#queue.length === 0 && this.#pieces.length === 0 ? this.#takeInPlace(bytes) : 0;
    if (at < bytes.length) this.#queue.push(at === 0 ? bytes : bytes.subarray(at));
  }

  /**
   * Takes the content chunks at the start of `bytes` (indeterminate-length framing, lengths of
   * one or two bytes) as views of it, without the queue: a streamed reply brings one chunk a
   * read. Stops at anything else (a longer length, the content terminator, a length cut by the
   * read), which the steps then read from the queue; a chunk cut by the read leaves its rest to
   * them. Returns the offset it stopped at.
   */
  #takeInPlace(bytes: Uint8Array): number {
    let at = 0;
    while (this.#state === "chunk-length" && at < bytes.length) {
      const first = bytes[at];
      const size = varintLength(first);
      if (size > 2 || at + size > bytes.length) break;
      const length = size === 1 ? first : ((first & 0x3f) << 8) | bytes[at + 1];
      if (length === 0) break; // the content terminator: the trailers follow
      at += size;
      this.#chunkCount++;
      const end = Math.min(bytes.length, at + length);
      if (end > at) this.#pieces.push(bytes.subarray(at, end));
      this.#left = length - (end - at);
      if (this.#left > 0) this.#state = "content";
      at = end;
    }
    return at;
  }

  /**
   * Runs one step: {@linkcode PIECE} when it took content, false for another step,
   * {@linkcode READ} when the input must be read first, {@linkcode CLOSE} when the body ends
   * here (no trailers), true once done, or the trailers once the rest of the message has been
   * read.
   */
  #step(): boolean | typeof READ | typeof PIECE | typeof CLOSE | Promise<FieldLines> {
    switch (this.#state) {
      case "content-length":
      case "chunk-length":
        return this.#readLength();
      case "content":
        return this.#readContent();
      case "trailers":
        return this.#finishMessage();
      case "done":
        return true;
    }
  }

  #readLength(): false | typeof READ | typeof CLOSE {
    if (this.#queue.length === 0 && this.#input.eof) {
      // Truncation is valid only before the content starts (empty content).
      if (this.#state === "content-length" || this.#chunkCount === 0) return CLOSE;
      throw new BinaryHttpError(
        "truncated",
        `Cannot ${ACTION}: the message ends after ${this.#chunkCount} content chunk${
          this.#chunkCount === 1 ? "" : "s"
        }, without the content terminator`,
      );
    }
    const value = this.#varintFromQueue();
    if (value === undefined) {
      if (this.#input.eof) {
        throw new BinaryHttpError(
          "truncated",
          `Cannot ${ACTION}: the message ends inside a content length`,
        );
      }
      return READ;
    }
    if (this.#state === "chunk-length" && value === 0) {
      this.#state = "trailers";
      return false;
    }
    this.#chunkCount++;
    this.#left = value;
    // A known length of zero: empty content.
    this.#state = value === 0 ? "trailers" : "content";
    return false;
  }

  #readContent(): typeof PIECE | typeof READ {
    if (this.#queue.length === 0) {
      if (this.#input.eof) {
        throw new BinaryHttpError(
          "truncated",
          `Cannot ${ACTION}: the message ends with ${bytesLabel(this.#left)} of content missing`,
        );
      }
      return READ;
    }
    const piece = this.#queue.takeSome(this.#left);
    this.#left -= piece.length;
    if (this.#left === 0) {
      this.#state = this.#framing === "known-length" ? "trailers" : "chunk-length";
    }
    this.#pieces.push(piece);
    return PIECE;
  }

  /** The trailers, then padding until the input ends. */
  async #finishMessage(): Promise<FieldLines> {
    const input = this.#input;
    input.pending = this.#queue.takeAll().slice();
    let fields: FieldLines = [];
    while (input.pending.length === 0 && !input.eof) await input.read();
    if (input.pending.length > 0) {
      fields = await input.parseWhole(
        (cursor) => readFieldSection(cursor, this.#framing, this.#limits, "trailer"),
        sectionBound(this.#limits),
        "trailer section",
      );
    }
    while (true) {
      checkPaddingBytes(new Cursor(input.pending, 0, input.pending.length, true, ACTION));
      input.pending = NOTHING;
      if (input.eof) return fields;
      await input.read();
    }
  }

  #close(trailers: FieldLines): ReadableStreamReadResult<Uint8Array> {
    this.#state = "done";
    this.#settle.resolve(trailers);
    return DONE;
  }

  #varintFromQueue(): number | undefined {
    const first = this.#queue.peek(0);
    if (first === undefined) return undefined;
    const size = varintLength(first);
    if (this.#queue.length < size) return undefined;
    const { value } = readVarint(this.#queue.take(size), 0);
    if (value === VARINT_TOO_LARGE) {
      throw new BinaryHttpError("too_large", `Cannot ${ACTION}: a content length is above 2^53`);
    }
    return value;
  }

  async #cancel(reason: unknown): Promise<void> {
    if (this.#state !== "done") {
      this.#state = "done";
      this.#settle.reject(
        new BinaryHttpError(
          "cancelled",
          `Cannot ${ACTION}: the body was cancelled before its end`,
          { cause: reason },
        ),
      );
    }
    await this.#input.cancel(reason);
  }
}
