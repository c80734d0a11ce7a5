/**
 * Small Web Streams helpers (private).
 *
 * @module
 */

import { ByteQueue } from "./_byte_queue.ts";

/**
 * What the stream readers here need of a `ReadableStreamDefaultReader`: a reader of bytes that
 * may also be a pipeline of readers, each turning what it reads into what it gives, without a
 * stream (and its promises and queues) between them.
 */
export interface ByteReader {
  /** The next piece, or `done` at the end; rejects with the source's or the step's error. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Cancels the source. */
  cancel(reason?: unknown): Promise<void>;
  /** Lets go of the source. */
  releaseLock(): void;
}

/** A stream of what `reader` gives, read as it is pulled (no read-ahead). */
export function streamOfReader(reader: ByteReader): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/** A stream that yields `head` (when not empty) and then whatever `reader` yields. */
export function prepend(
  head: Uint8Array,
  reader: ReadableStreamDefaultReader<Uint8Array>,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (head.length > 0) controller.enqueue(head);
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}

/** A stream of one chunk (none when empty). */
export function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (bytes.length > 0) controller.enqueue(bytes);
      controller.close();
    },
  });
}

/**
 * Reads a whole stream into one array. When more than `maxLength` bytes arrive, cancels the
 * stream and throws what `tooLarge` returns.
 */
export async function readAll(
  stream: ReadableStream<Uint8Array>,
  maxLength: number,
  tooLarge: (received: number) => Error,
): Promise<Uint8Array> {
  const queue = new ByteQueue();
  const reader = stream.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      queue.push(value);
      if (queue.length > maxLength) {
        const error = tooLarge(queue.length);
        await reader.cancel(error).catch(() => {});
        throw error;
      }
    }
  } finally {
    reader.releaseLock();
  }
  return queue.length === 0 ? new Uint8Array(0) : queue.takeAll().slice();
}
