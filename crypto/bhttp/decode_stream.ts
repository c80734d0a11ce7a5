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
   * The content, as it arrives. It ends normally only after the whole message (trailers and
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
  return {
    framing: head.framing,
    informational: head.informational,
    status: head.status,
    headers: head.headers,
    body: content.body,
    trailers: content.trailers,
  };
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
  pending: Uint8Array = new Uint8Array(0);
  /** Whether the input has ended. */
  eof = false;
  readonly #reader: ByteReader;

  constructor(reader: ByteReader) {
    this.#reader = reader;
  }

  /** Reads one more chunk into `pending`, or notes the end. */
  async read(): Promise<void> {
    const { done, value } = await this.#reader.read();
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
    this.pending = new Uint8Array(0);
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

/** Streams the content after the head, then reads the trailers and the padding. */
class ContentDecoder {
  /** The content as it arrives (pulled one piece at a time). */
  readonly body: ReadableStream<Uint8Array>;
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
    this.body = new ReadableStream<Uint8Array>({
      pull: (controller) => this.#pull(controller),
      cancel: (reason) => this.#cancel(reason),
    }, { highWaterMark: 0 });
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    try {
      // Synchronous while the bytes at hand last: one await per read of the input, not per step.
      while (true) {
        const next = this.#step(controller);
        if (next === true) return;
        if (next === READ) await this.#readQueued();
        else if (next !== false) {
          this.#close(controller, await next);
          return;
        }
      }
    } catch (error) {
      this.#state = "done";
      this.#settle.reject(error);
      await this.#input.cancel(error);
      throw error;
    }
  }

  /**
   * Runs one step: true when this pull is over (a piece was enqueued or the body closed), false
   * for another step, {@linkcode READ} when the input must be read first, or the trailers once
   * the rest of the message has been read.
   */
  #step(
    controller: ReadableStreamDefaultController<Uint8Array>,
  ): boolean | typeof READ | Promise<FieldLines> {
    switch (this.#state) {
      case "content-length":
      case "chunk-length":
        return this.#readLength(controller);
      case "content":
        return this.#readContent(controller);
      case "trailers":
        return this.#finishMessage();
      case "done":
        return true;
    }
  }

  #readLength(controller: ReadableStreamDefaultController<Uint8Array>): boolean | typeof READ {
    if (this.#queue.length === 0 && this.#input.eof) {
      // Truncation is valid only before the content starts (empty content).
      if (this.#state === "content-length" || this.#chunkCount === 0) {
        this.#close(controller, []);
        return true;
      }
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

  #readContent(controller: ReadableStreamDefaultController<Uint8Array>): boolean | typeof READ {
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
    controller.enqueue(piece.slice());
    return true;
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
      input.pending = new Uint8Array(0);
      if (input.eof) return fields;
      await input.read();
    }
  }

  #close(controller: ReadableStreamDefaultController<Uint8Array>, trailers: FieldLines): void {
    this.#state = "done";
    this.#settle.resolve(trailers);
    controller.close();
  }

  async #readQueued(): Promise<void> {
    await this.#input.read();
    this.#queue.push(this.#input.takePending());
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
