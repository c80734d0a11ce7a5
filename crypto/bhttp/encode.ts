/**
 * Binary HTTP encoders (RFC 9292): requests and responses in either framing, and a
 * streaming encoder that emits a response's head first and then one content chunk per body
 * chunk as it is read.
 *
 * @module
 */

import { type ByteReader, streamOfReader } from "../_streams.ts";
import { concat } from "../_bytes.ts";
import { encodeVarint, varintSize, writeVarint } from "../_varint.ts";
import {
  checkControl,
  checkField,
  fieldLines,
  FRAMING_INDETERMINATE_REQUEST,
  FRAMING_INDETERMINATE_RESPONSE,
  FRAMING_KNOWN_REQUEST,
  FRAMING_KNOWN_RESPONSE,
  latin1,
} from "./_rules.ts";
import { BinaryHttpError } from "./errors.ts";
import type {
  BhttpRequestInit,
  BhttpResponseHeadInit,
  BhttpResponseInit,
  EncodeOptions,
  FieldsInit,
} from "./types.ts";

function encodeString(text: string, what: string, action: string): Uint8Array {
  const bytes = latin1(text, what, action);
  return concat(encodeVarint(bytes.length), bytes);
}

function encodeFieldSection(
  fields: FieldsInit | undefined,
  known: boolean,
  action: string,
): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, value] of fieldLines(fields)) {
    checkField(name, value, action);
    parts.push(encodeString(name, `field name "${name}"`, action));
    parts.push(encodeString(value, `field "${name}"`, action));
  }
  const body = concat(...parts);
  return known ? concat(encodeVarint(body.length), body) : concat(body, Uint8Array.of(0));
}

function encodeContent(content: Uint8Array, known: boolean): Uint8Array {
  if (known) return concat(encodeVarint(content.length), content);
  return content.length === 0
    ? Uint8Array.of(0)
    : concat(encodeVarint(content.length), content, Uint8Array.of(0));
}

function checkStatus(status: number, informational: boolean, action: string): void {
  const [low, high] = informational ? [100, 199] : [200, 599];
  if (!Number.isInteger(status) || status < low || status > high) {
    throw new BinaryHttpError(
      "invalid_status",
      `Cannot ${action}: ${
        informational ? "informational" : "final"
      } status must be ${low} to ${high}, found ${status}`,
    );
  }
}

function checkContent(content: unknown, action: string): Uint8Array {
  if (content === undefined) return new Uint8Array(0);
  if (!(content instanceof Uint8Array)) {
    throw new BinaryHttpError(
      "malformed",
      `Cannot ${action}: content must be bytes, found ${typeof content}`,
    );
  }
  return content;
}

function checkPadding(padding: number | undefined, action: string): number {
  const value = padding ?? 0;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new BinaryHttpError(
      "malformed",
      `Cannot ${action}: padding must be a non-negative integer, found ${padding}`,
    );
  }
  return value;
}

/** Joins the parts, dropping the empty trailing ones when truncating (RFC 9292 §3.8). */
function finish(
  head: Uint8Array[],
  tail: { bytes: Uint8Array; empty: boolean }[],
  options: EncodeOptions,
  action: string,
): Uint8Array {
  const padding = checkPadding(options.padding, action);
  let keep = tail.length;
  if (options.truncate) {
    while (keep > 0 && tail[keep - 1].empty) keep--;
  }
  return concat(...head, ...tail.slice(0, keep).map((part) => part.bytes), new Uint8Array(padding));
}

/**
 * Encodes a request.
 *
 * @throws {BinaryHttpError} with reason `invalid_control_data`, `invalid_field` or
 * `malformed`.
 */
export function encodeRequest(request: BhttpRequestInit, options: EncodeOptions = {}): Uint8Array {
  const action = "encode binary HTTP request";
  const known = (options.framing ?? "known-length") === "known-length";
  const method = String(request.method);
  const scheme = request.scheme ?? "https";
  const authority = request.authority ?? "";
  const path = String(request.path);
  checkControl(method, scheme, authority, path, action);
  const content = checkContent(request.content, action);
  const headers = fieldLines(request.headers);
  const trailers = fieldLines(request.trailers);
  return finish(
    [
      encodeVarint(known ? FRAMING_KNOWN_REQUEST : FRAMING_INDETERMINATE_REQUEST),
      encodeString(method, "method", action),
      encodeString(scheme, "scheme", action),
      encodeString(authority, "authority", action),
      encodeString(path, "path", action),
    ],
    [
      { bytes: encodeFieldSection(headers, known, action), empty: headers.length === 0 },
      { bytes: encodeContent(content, known), empty: content.length === 0 },
      { bytes: encodeFieldSection(trailers, known, action), empty: trailers.length === 0 },
    ],
    options,
    action,
  );
}

function encodeResponseHead(
  head: BhttpResponseHeadInit,
  known: boolean,
  action: string,
): Uint8Array[] {
  const parts: Uint8Array[] = [
    encodeVarint(known ? FRAMING_KNOWN_RESPONSE : FRAMING_INDETERMINATE_RESPONSE),
  ];
  for (const interim of head.informational ?? []) {
    checkStatus(interim.status, true, action);
    parts.push(encodeVarint(interim.status), encodeFieldSection(interim.headers, known, action));
  }
  checkStatus(head.status, false, action);
  parts.push(encodeVarint(head.status));
  return parts;
}

/**
 * Encodes a response.
 *
 * @throws {BinaryHttpError} with reason `invalid_status`, `invalid_field` or `malformed`.
 */
export function encodeResponse(
  response: BhttpResponseInit,
  options: EncodeOptions = {},
): Uint8Array {
  const action = "encode binary HTTP response";
  const known = (options.framing ?? "known-length") === "known-length";
  const content = checkContent(response.content, action);
  const headers = fieldLines(response.headers);
  const trailers = fieldLines(response.trailers);
  return finish(
    encodeResponseHead(response, known, action),
    [
      { bytes: encodeFieldSection(headers, known, action), empty: headers.length === 0 },
      { bytes: encodeContent(content, known), empty: content.length === 0 },
      { bytes: encodeFieldSection(trailers, known, action), empty: trailers.length === 0 },
    ],
    options,
    action,
  );
}

/** Options of {@linkcode encodeResponseStream}. */
export interface EncodeResponseStreamOptions {
  /**
   * Trailer fields, or a function called once the body has ended that returns them.
   *
   * @default {[]}
   */
  trailers?: FieldsInit | (() => FieldsInit | Promise<FieldsInit>);
}

/**
 * Encodes a response as an indeterminate-length message, streaming: the head (status and
 * header fields) is the first chunk out, then each non-empty body chunk becomes one content
 * chunk, emitted as soon as it is read; the terminators and trailers follow the body's end.
 *
 * @throws {BinaryHttpError} with reason `invalid_status` or `invalid_field` for a bad head;
 * the stream errors with a {@linkcode BinaryHttpError} for bad trailers or a non-bytes chunk.
 */
export function encodeResponseStream(
  head: BhttpResponseHeadInit,
  body: ReadableStream<Uint8Array>,
  options: EncodeResponseStreamOptions = {},
): ReadableStream<Uint8Array> {
  return streamOfReader(encodeResponseReader(head, body.getReader(), options));
}

/**
 * {@linkcode encodeResponseStream} over a reader, as a reader (a pipeline of readers, such as
 * this and the sealing of each piece, has no stream between its steps): the head first, then
 * each non-empty piece it reads as one content chunk, then the terminator and the trailers.
 *
 * @throws {BinaryHttpError} with reason `invalid_status` or `invalid_field` for a bad head; a
 * read rejects with a {@linkcode BinaryHttpError} for bad trailers or a non-bytes piece.
 */
export function encodeResponseReader(
  head: BhttpResponseHeadInit,
  body: ByteReader,
  options: EncodeResponseStreamOptions = {},
): ByteReader {
  const action = "encode binary HTTP response";
  let first: Uint8Array | undefined = concat(
    ...encodeResponseHead(head, false, action),
    encodeFieldSection(head.headers, false, action),
  );
  let ended = false;
  const step = async (): Promise<ReadableStreamReadResult<Uint8Array>> => {
    while (!ended) {
      const { done, value } = await body.read();
      if (done) {
        ended = true;
        const trailers = typeof options.trailers === "function"
          ? await options.trailers()
          : options.trailers;
        return {
          done: false,
          value: concat(Uint8Array.of(0), encodeFieldSection(trailers, false, action)),
        };
      }
      if (!(value instanceof Uint8Array)) {
        throw new BinaryHttpError(
          "malformed",
          `Cannot ${action}: the body yielded ${typeof value}, expected bytes`,
        );
      }
      if (value.length === 0) continue;
      const out = new Uint8Array(varintSize(value.length) + value.length);
      out.set(value, writeVarint(out, 0, value.length));
      return { done: false, value: out };
    }
    return { done: true, value: undefined };
  };
  return {
    read: async () => {
      if (first) {
        const value = first;
        first = undefined;
        return { done: false, value };
      }
      try {
        return await step();
      } catch (error) {
        ended = true;
        await body.cancel(error).catch(() => {});
        throw error;
      }
    },
    cancel: (reason) => body.cancel(reason),
    releaseLock: () => body.releaseLock(),
  };
}
