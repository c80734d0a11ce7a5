/**
 * Server-Sent Events (the `text/event-stream` format of the WHATWG HTML standard, §9.2):
 * an incremental parser with a size bound, and an encoder.
 *
 * @example
 * ```ts
 * import { encodeSse, parseSse } from "./sse.ts";
 *
 * const body = ReadableStream.from([encodeSse('{"a":1}'), encodeSse("[DONE]")]);
 * const data: string[] = [];
 * for await (const event of parseSse(body)) data.push(event.data);
 * console.assert(data.join(",") === '{"a":1},[DONE]');
 * ```
 *
 * @module
 */

import { NetError } from "../errors.ts";
import { LineSplitter } from "./_line_splitter.ts";

/** One dispatched event. */
export interface SseEvent {
  /** The event's data lines, joined with `\n`. */
  data: string;
  /** The `event:` field, when present. */
  event?: string;
  /** The `id:` field, when present. */
  id?: string;
}

/** Thrown when an event stream exceeds its bounds. */
export class SseError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SseError" as const;
}

/** Options of {@linkcode parseSse}. */
export interface ParseSseOptions {
  /** Largest accepted event (all its lines) in bytes. @default {1 MiB} */
  maxEventBytes?: number;
}

/**
 * An incremental event-stream parser without a stream of its own: bytes in, the events they
 * complete out, synchronously. {@linkcode parseSse} is this parser over a `ReadableStream`; a
 * reader that handles every event of a read at once uses it directly (no promise per event).
 */
export class SseParser {
  readonly #maxEventBytes: number;
  readonly #decoder = new TextDecoder();
  readonly #lines: LineSplitter;
  #data: string[] = [];
  #dataBytes = 0;
  #event: string | undefined;
  #id: string | undefined;
  /** Whether the last text ended in CR (an LF that follows is the rest of that CRLF). */
  #afterCr = false;

  /** Creates a parser; `options.maxEventBytes` bounds one event (1 MiB by default). */
  constructor(options: ParseSseOptions = {}) {
    this.#maxEventBytes = options.maxEventBytes ?? 1 << 20;
    // Every character is examined once and a long line is joined once (`_line_splitter.ts`):
    // a large event arriving in small chunks costs linear time.
    this.#lines = new LineSplitter(this.#maxEventBytes, () =>
      new SseError(
        `Cannot parse event stream: a line exceeds ${this.#maxEventBytes} bytes`,
      ));
  }

  /**
   * Feeds the next bytes of the stream; returns the events they complete, in order.
   *
   * @throws {SseError} when one event grows past `maxEventBytes`.
   */
  push(bytes: Uint8Array): SseEvent[] {
    return this.#text(this.#decoder.decode(bytes, { stream: true }));
  }

  /**
   * Ends the stream: returns the events the last bytes complete. An unfinished line at the end
   * is dropped, as the standard says.
   *
   * @throws {SseError} as {@linkcode SseParser.push}.
   */
  end(): SseEvent[] {
    // The decoder drops a byte order mark at the start of the stream, as the standard says.
    return this.#text(this.#decoder.decode());
  }

  #text(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    for (const complete of this.#split(text)) {
      const out = this.#line(complete);
      if (out) events.push(out);
    }
    this.#afterCr = text.length > 0 ? text.charCodeAt(text.length - 1) === 13 : this.#afterCr;
    return events;
  }

  /**
   * The lines `text` completes. The common case — nothing pending, no CR anywhere (a stream
   * whose lines end in LF, read in pieces that end between events) — is split with the
   * runtime's native search; anything else goes through the line splitter, character by
   * character. Both give the same lines.
   */
  #split(text: string): string[] {
    if (this.#lines.pending > 0 || this.#afterCr || text.indexOf("\r") !== -1) {
      return this.#lines.push(text);
    }
    const last = text.lastIndexOf("\n");
    if (last === -1) return this.#lines.push(text);
    const lines = text.slice(0, last).split("\n");
    if (last + 1 < text.length) this.#lines.push(text.slice(last + 1));
    return lines;
  }

  #line(text: string): SseEvent | undefined {
    if (text === "") {
      const out = this.#data.length > 0
        ? {
          data: this.#data.length === 1 ? this.#data[0] : this.#data.join("\n"),
          event: this.#event,
          id: this.#id,
        }
        : undefined;
      this.#data = [];
      this.#dataBytes = 0;
      this.#event = undefined;
      return out;
    }
    if (text.startsWith(":")) return undefined;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.#dataBytes += value.length + 1;
      if (this.#dataBytes > this.#maxEventBytes) {
        throw new SseError(
          `Cannot parse event stream: an event exceeds ${this.#maxEventBytes} bytes`,
        );
      }
      this.#data.push(value);
    } else if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\0")) this.#id = value;
    return undefined;
  }
}

/**
 * Parses an event stream as it arrives and yields each event when its blank line arrives.
 * Comments and `retry:` are skipped; an unterminated last event is dropped, as the standard
 * says.
 *
 * @throws {SseError} when one event grows past `maxEventBytes`.
 */
export async function* parseSse(
  body: ReadableStream<Uint8Array>,
  options: ParseSseOptions = {},
): AsyncGenerator<SseEvent> {
  const parser = new SseParser(options);
  const reader = body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      yield* done ? parser.end() : parser.push(value);
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

const encoder = new TextEncoder();

/** Encodes one event with the given data (multi-line data becomes several `data:` lines). */
export function encodeSse(data: string, event?: string): Uint8Array {
  const head = event === undefined ? "" : `event: ${event}\n`;
  return encoder.encode(
    `${head}${data.split(/\r\n|\r|\n/).map((l) => `data: ${l}`).join("\n")}\n\n`,
  );
}
