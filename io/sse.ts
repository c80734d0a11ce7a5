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
  const maxEventBytes = options.maxEventBytes ?? 1 << 20;
  const decoder = new TextDecoder();
  let data: string[] = [];
  let dataBytes = 0;
  let event: string | undefined;
  let id: string | undefined;

  const line = (text: string): SseEvent | undefined => {
    if (text === "") {
      const out = data.length > 0 ? { data: data.join("\n"), event, id } : undefined;
      data = [];
      dataBytes = 0;
      event = undefined;
      return out;
    }
    if (text.startsWith(":")) return undefined;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      dataBytes += value.length + 1;
      if (dataBytes > maxEventBytes) {
        throw new SseError(
          `Cannot parse event stream: an event exceeds ${maxEventBytes} bytes`,
        );
      }
      data.push(value);
    } else if (field === "event") event = value;
    else if (field === "id" && !value.includes("\0")) id = value;
    return undefined;
  };

  // Every character is examined once and a long line is joined once (`_line_splitter.ts`):
  // a large event arriving in small chunks costs linear time.
  const lines = new LineSplitter(maxEventBytes, () =>
    new SseError(
      `Cannot parse event stream: a line exceeds ${maxEventBytes} bytes`,
    ));
  const reader = body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      // The decoder drops a byte order mark at the start of the stream, as the standard says.
      const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (const complete of lines.push(text)) {
        const out = line(complete);
        if (out) yield out;
      }
      // An unfinished line at the end is dropped, as the standard says.
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
