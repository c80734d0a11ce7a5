/**
 * Binary HTTP messages (RFC 9292): known-length and indeterminate-length requests and
 * responses, encoded and decoded, plus a streaming encoder and an incremental decoder for
 * responses, so a reply can be relayed while it is produced.
 *
 * ```
 * Request  = framing (0 known | 2 indeterminate) ‖ method ‖ scheme ‖ authority ‖ path
 *            ‖ header section ‖ content ‖ trailer section ‖ padding
 * Response = framing (1 known | 3 indeterminate) ‖ (1xx status ‖ header section)*
 *            ‖ final status ‖ header section ‖ content ‖ trailer section ‖ padding
 * ```
 *
 * Decoding is strict: an unknown framing indicator, a length running past the input, a
 * truncation anywhere but the points RFC 9292 §3.8 allows, non-zero padding, an invalid
 * status, an invalid field name or value (HTTP/2 rules, RFC 9113 §8.2), a connection-specific
 * field, or a field or section above the limits is refused with a {@linkcode BinaryHttpError}.
 * Field names are lower case; values are byte strings mapped one byte to one character
 * (as `Headers` does).
 *
 * @example Encode a request, decode it again
 * ```ts
 * import { decodeRequest, encodeRequest } from "@net/consumer/crypto";
 *
 * const bytes = encodeRequest({
 *   method: "POST",
 *   path: "/v1/chat/completions",
 *   headers: { "content-type": "application/json" },
 *   content: new TextEncoder().encode('{"model":"devnet/tiny-chat"}'),
 * });
 * const request = decodeRequest(bytes);
 * console.assert(request.method === "POST" && request.headers[0][1] === "application/json");
 * ```
 *
 * @example Stream a response and read it incrementally
 * ```ts
 * import { decodeResponseStream, encodeResponseStream } from "@net/consumer/crypto";
 *
 * const events = ReadableStream.from(["data: 1\n\n", "data: 2\n\n"])
 *   .pipeThrough(new TextEncoderStream());
 * const wire = encodeResponseStream({ status: 200, headers: { "content-type": "text/event-stream" } }, events);
 * const response = await decodeResponseStream(wire);
 * console.assert(response.status === 200);
 * console.assert(await new Response(response.body).text() === "data: 1\n\ndata: 2\n\n");
 * ```
 *
 * @module
 */

import { ReasonError } from "../errors.ts";
import { ByteQueue } from "./_byte_queue.ts";
import { bytesLabel, concat } from "./_bytes.ts";
import {
  encodeVarint,
  readVarint,
  VARINT_INCOMPLETE,
  VARINT_TOO_LARGE,
  varintLength,
  varintSize,
  writeVarint,
} from "./_varint.ts";

/** Media type of a binary HTTP message. */
export const BHTTP_MEDIA_TYPE = "message/bhttp";

/** Field lines in order, names in lower case, duplicates kept. */
export type FieldLines = readonly (readonly [name: string, value: string])[];

/** How a message is framed: with length prefixes, or with terminators. */
export type Framing = "known-length" | "indeterminate-length";

/** A decoded request. */
export interface BhttpRequest {
  /** How the message was framed. */
  readonly framing: Framing;
  /** Method, e.g. `POST`. */
  readonly method: string;
  /** Scheme, e.g. `https` (empty for CONNECT). */
  readonly scheme: string;
  /** Authority; may be empty. */
  readonly authority: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  readonly path: string;
  /** Header fields. */
  readonly headers: FieldLines;
  /** Content. */
  readonly content: Uint8Array;
  /** Trailer fields. */
  readonly trailers: FieldLines;
}

/** An informational (1xx) response that precedes the final one. */
export interface InformationalResponse {
  /** Status, 100 to 199. */
  readonly status: number;
  /** Its header fields. */
  readonly headers: FieldLines;
}

/** A decoded response. */
export interface BhttpResponse {
  /** How the message was framed. */
  readonly framing: Framing;
  /** Informational responses, in order. */
  readonly informational: readonly InformationalResponse[];
  /** Final status, 200 to 599. */
  readonly status: number;
  /** Header fields. */
  readonly headers: FieldLines;
  /** Content. */
  readonly content: Uint8Array;
  /** Trailer fields. */
  readonly trailers: FieldLines;
}

/** Fields to encode: a `Headers`, `[name, value]` pairs (order kept; {@linkcode FieldLines} too) or a record. */
export type FieldsInit = HeadersInit | FieldLines;

/** A request to encode. */
export interface BhttpRequestInit {
  /** Method, a token such as `POST`. */
  method: string;
  /**
   * Scheme.
   *
   * @default {"https"}
   */
  scheme?: string;
  /**
   * Authority.
   *
   * @default {""}
   */
  authority?: string;
  /** Path and query, e.g. `/v1/chat/completions`. */
  path: string;
  /**
   * Header fields.
   *
   * @default {[]}
   */
  headers?: FieldsInit;
  /**
   * Content.
   *
   * @default {empty}
   */
  content?: Uint8Array;
  /**
   * Trailer fields.
   *
   * @default {[]}
   */
  trailers?: FieldsInit;
}

/** A response head (status and fields) to encode. */
export interface BhttpResponseHeadInit {
  /** Final status, 200 to 599. */
  status: number;
  /**
   * Header fields.
   *
   * @default {[]}
   */
  headers?: FieldsInit;
  /**
   * Informational responses to send first.
   *
   * @default {[]}
   */
  informational?: readonly { status: number; headers?: FieldsInit }[];
}

/** A response to encode. */
export interface BhttpResponseInit extends BhttpResponseHeadInit {
  /**
   * Content.
   *
   * @default {empty}
   */
  content?: Uint8Array;
  /**
   * Trailer fields.
   *
   * @default {[]}
   */
  trailers?: FieldsInit;
}

/** Options of {@linkcode encodeRequest} and {@linkcode encodeResponse}. */
export interface EncodeOptions {
  /**
   * Framing to use.
   *
   * @default {"known-length"}
   */
  framing?: Framing;
  /**
   * Omit empty trailing parts (trailers; then content; then headers) as RFC 9292 §3.8 allows.
   *
   * @default {false}
   */
  truncate?: boolean;
  /**
   * Zero bytes of padding to append.
   *
   * @default {0}
   */
  padding?: number;
}

/** Limits of the decoders, each refused with reason `too_large` when exceeded. */
export interface DecodeOptions {
  /**
   * Largest field name, field value, method, scheme, authority or path, in bytes.
   *
   * @default {DEFAULT_MAX_FIELD_LENGTH} (16 KiB)
   */
  maxFieldLength?: number;
  /**
   * Largest header or trailer section, in encoded bytes (names, values and their lengths).
   *
   * @default {DEFAULT_MAX_FIELD_SECTION_LENGTH} (64 KiB)
   */
  maxFieldSectionLength?: number;
  /**
   * Most informational (1xx) responses before the final one.
   *
   * @default {DEFAULT_MAX_INFORMATIONAL_RESPONSES} (8)
   */
  maxInformationalResponses?: number;
}

/** Default of {@linkcode DecodeOptions.maxFieldLength}: 16 KiB. */
export const DEFAULT_MAX_FIELD_LENGTH = 16 * 1024;
/** Default of {@linkcode DecodeOptions.maxFieldSectionLength}: 64 KiB. */
export const DEFAULT_MAX_FIELD_SECTION_LENGTH = 64 * 1024;
/** Default of {@linkcode DecodeOptions.maxInformationalResponses}: 8. */
export const DEFAULT_MAX_INFORMATIONAL_RESPONSES = 8;

/** Why a binary HTTP message was refused. */
export type BinaryHttpFailure =
  /** Broken framing: unknown indicator, lengths that disagree, non-zero padding. */
  | "malformed"
  /** The input ends where the message cannot end. */
  | "truncated"
  /** A field, section or count is above its limit. */
  | "too_large"
  /** A field name or value breaks the HTTP/2 rules, or is connection-specific. */
  | "invalid_field"
  /** A status outside 100–599, or a 1xx where a final status belongs. */
  | "invalid_status"
  /** A method, scheme, authority or path with characters it may not contain. */
  | "invalid_control_data"
  /** The message is of the other kind (a request where a response was expected, or back). */
  | "wrong_kind"
  /** The reader cancelled the body before the end. */
  | "cancelled";

/** Thrown when a binary HTTP message cannot be encoded or decoded. */
export class BinaryHttpError extends ReasonError<BinaryHttpFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "BinaryHttpError" as const;
}

const FRAMING_KNOWN_REQUEST = 0;
const FRAMING_KNOWN_RESPONSE = 1;
const FRAMING_INDETERMINATE_REQUEST = 2;
const FRAMING_INDETERMINATE_RESPONSE = 3;

// ---------------------------------------------------------------------------------------------
// Validation (RFC 9113 §8.2 field rules, RFC 9110 token, RFC 3986 scheme).

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+\-.]*$/;
const VISIBLE = /^[\x21-\x7e]*$/;
// deno-lint-ignore no-control-regex
const BAD_VALUE = /[\x00\r\n]|^[ \t]|[ \t]$/;
// deno-lint-ignore no-control-regex
const NON_LATIN1 = /[^\x00-\xff]/;
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

function checkField(name: string, value: string, action: string): void {
  if (!FIELD_NAME.test(name)) {
    throw new BinaryHttpError(
      "invalid_field",
      `Cannot ${action}: field name ${
        JSON.stringify(abbreviate(name))
      } is not a lower-case token (RFC 9113 §8.2.1)`,
    );
  }
  if (NON_LATIN1.test(value) || BAD_VALUE.test(value)) {
    throw new BinaryHttpError(
      "invalid_field",
      `Cannot ${action}: the value of field "${name}" contains NUL, CR, LF, a character above ` +
        "0xFF, or leading or trailing whitespace (RFC 9113 §8.2.1)",
    );
  }
  if (CONNECTION_SPECIFIC.has(name) || (name === "te" && value !== "trailers")) {
    throw new BinaryHttpError(
      "invalid_field",
      `Cannot ${action}: "${name}" is a connection-specific field, not allowed in binary HTTP ` +
        "(RFC 9113 §8.2.2)",
    );
  }
}

function checkControl(
  method: string,
  scheme: string,
  authority: string,
  path: string,
  action: string,
): void {
  const bad = (what: string, value: string, rule: string): never => {
    throw new BinaryHttpError(
      "invalid_control_data",
      `Cannot ${action}: ${what} ${JSON.stringify(abbreviate(value))} ${rule}`,
    );
  };
  if (!TOKEN.test(method)) bad("method", method, "is not a token");
  if (scheme !== "" && !SCHEME.test(scheme)) bad("scheme", scheme, "is not a URI scheme");
  if (!VISIBLE.test(authority)) {
    bad("authority", authority, "contains a space or control character");
  }
  if (!VISIBLE.test(path)) bad("path", path, "contains a space or control character");
  if (method !== "CONNECT" && (scheme === "" || path === "")) {
    bad(
      "request",
      `${method} ${scheme}://${authority}${path}`,
      "lacks a scheme or path (only CONNECT may)",
    );
  }
}

function abbreviate(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

// ---------------------------------------------------------------------------------------------
// Encoding.

function latin1(text: string, what: string, action: string): Uint8Array {
  if (NON_LATIN1.test(text)) {
    throw new BinaryHttpError(
      "invalid_field",
      `Cannot ${action}: ${what} contains a character above 0xFF`,
    );
  }
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

function fromLatin1(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    out += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return out;
}

/** Normalizes fields to lower-case `[name, value]` pairs, keeping order and duplicates. */
export function fieldLines(init: FieldsInit | undefined): [string, string][] {
  if (init === undefined) return [];
  let pairs: [string, string][];
  if (init instanceof Headers) {
    pairs = [...init];
  } else if (Array.isArray(init)) {
    pairs = init.map((pair) => {
      if (!Array.isArray(pair) || pair.length !== 2) {
        throw new BinaryHttpError(
          "invalid_field",
          "Cannot encode fields: each entry must be a [name, value] pair",
        );
      }
      return [String(pair[0]), String(pair[1])];
    });
  } else {
    pairs = Object.entries(init as Record<string, string>).map((
      [name, value],
    ) => [name, String(value)]);
  }
  return pairs.map(([name, value]) => [name.toLowerCase(), value]);
}

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
  const action = "encode binary HTTP response";
  const first = concat(
    ...encodeResponseHead(head, false, action),
    encodeFieldSection(head.headers, false, action),
  );
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start(controller) {
        controller.enqueue(first);
      },
      transform(chunk, controller) {
        if (!(chunk instanceof Uint8Array)) {
          throw new BinaryHttpError(
            "malformed",
            `Cannot ${action}: the body yielded ${typeof chunk}, expected bytes`,
          );
        }
        if (chunk.length === 0) return;
        const out = new Uint8Array(varintSize(chunk.length) + chunk.length);
        out.set(chunk, writeVarint(out, 0, chunk.length));
        controller.enqueue(out);
      },
      async flush(controller) {
        const trailers = typeof options.trailers === "function"
          ? await options.trailers()
          : options.trailers;
        controller.enqueue(concat(Uint8Array.of(0), encodeFieldSection(trailers, false, action)));
      },
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Decoding: a cursor over the bytes at hand. When more may come (`eof` false), running out
// throws NEED_MORE and the incremental decoder retries with more bytes.

const NEED_MORE = Symbol("need more bytes");

interface Limits {
  field: number;
  section: number;
  informational: number;
}

function limitsOf(options: DecodeOptions, action: string): Limits {
  const check = (value: number | undefined, fallback: number, name: string): number => {
    const limit = value ?? fallback;
    if (!Number.isSafeInteger(limit) || limit < 0) {
      throw new BinaryHttpError(
        "malformed",
        `Cannot ${action}: ${name} must be a non-negative integer, found ${value}`,
      );
    }
    return limit;
  };
  return {
    field: check(options.maxFieldLength, DEFAULT_MAX_FIELD_LENGTH, "maxFieldLength"),
    section: check(
      options.maxFieldSectionLength,
      DEFAULT_MAX_FIELD_SECTION_LENGTH,
      "maxFieldSectionLength",
    ),
    informational: check(
      options.maxInformationalResponses,
      DEFAULT_MAX_INFORMATIONAL_RESPONSES,
      "maxInformationalResponses",
    ),
  };
}

class Cursor {
  pos: number;
  readonly bytes: Uint8Array;
  readonly end: number;
  readonly eof: boolean;
  readonly action: string;
  /** Inside a length-delimited section: running out means the section's length lied. */
  readonly section: string | undefined;

  constructor(
    bytes: Uint8Array,
    pos: number,
    end: number,
    eof: boolean,
    action: string,
    section?: string,
  ) {
    this.bytes = bytes;
    this.pos = pos;
    this.end = end;
    this.eof = eof;
    this.action = action;
    this.section = section;
  }

  /** True when no byte remains and none will come. */
  get atEnd(): boolean {
    return this.pos >= this.end && this.eof;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  short(what: string): never {
    if (this.section !== undefined) {
      throw new BinaryHttpError(
        "malformed",
        `Cannot ${this.action}: ${what} runs past the end of the ${this.section}`,
      );
    }
    if (!this.eof) throw NEED_MORE;
    throw new BinaryHttpError(
      "truncated",
      `Cannot ${this.action}: the message ends inside ${what}`,
    );
  }

  varint(what: string): number {
    const { value, next } = readVarint(this.bytes, this.pos, this.end);
    if (value === VARINT_INCOMPLETE) this.short(what);
    if (value === VARINT_TOO_LARGE) {
      throw new BinaryHttpError("too_large", `Cannot ${this.action}: ${what} is above 2^53`);
    }
    this.pos = next;
    return value;
  }

  take(count: number, what: string): Uint8Array {
    if (this.pos + count > this.end) this.short(what);
    const out = this.bytes.subarray(this.pos, this.pos + count);
    this.pos += count;
    return out;
  }

  /** A length-prefixed string, limited to `max` bytes. */
  string(what: string, max: number): string {
    const length = this.varint(`the length of ${what}`);
    if (length > max) {
      throw new BinaryHttpError(
        "too_large",
        `Cannot ${this.action}: ${what} is ${bytesLabel(length)}, more than the ${
          bytesLabel(max)
        } allowed`,
      );
    }
    return fromLatin1(this.take(length, what));
  }
}

function readFraming(cursor: Cursor, kind: "request" | "response"): Framing {
  const indicator = cursor.varint("the framing indicator");
  if (indicator > 3) {
    throw new BinaryHttpError(
      "malformed",
      `Cannot ${cursor.action}: framing indicator is ${indicator}, expected 0 to 3`,
    );
  }
  const isRequest = indicator === FRAMING_KNOWN_REQUEST ||
    indicator === FRAMING_INDETERMINATE_REQUEST;
  if ((kind === "request") !== isRequest) {
    throw new BinaryHttpError(
      "wrong_kind",
      `Cannot ${cursor.action}: framing indicator ${indicator} marks a ${
        isRequest ? "request" : "response"
      }`,
    );
  }
  return indicator < 2 ? "known-length" : "indeterminate-length";
}

function readFieldLine(cursor: Cursor, limits: Limits, section: string): [string, string] {
  const name = cursor.string(`a ${section} field name`, limits.field);
  const value = cursor.string(`the value of ${section} field "${abbreviate(name)}"`, limits.field);
  if (name.length === 0) {
    throw new BinaryHttpError(
      "invalid_field",
      `Cannot ${cursor.action}: a ${section} field name is empty`,
    );
  }
  checkField(name, value, cursor.action);
  return [name, value];
}

function readFieldSection(
  cursor: Cursor,
  framing: Framing,
  limits: Limits,
  section: string,
): FieldLines {
  const fields: [string, string][] = [];
  if (framing === "known-length") {
    const length = cursor.varint(`the length of the ${section} section`);
    if (length > limits.section) {
      throw new BinaryHttpError(
        "too_large",
        `Cannot ${cursor.action}: the ${section} section is ${bytesLabel(length)}, more than the ${
          bytesLabel(limits.section)
        } allowed`,
      );
    }
    const start = cursor.pos;
    cursor.take(length, `the ${section} section`);
    const inner = new Cursor(
      cursor.bytes,
      start,
      start + length,
      true,
      cursor.action,
      `${section} section`,
    );
    while (inner.remaining > 0) fields.push(readFieldLine(inner, limits, section));
    return fields;
  }
  const start = cursor.pos;
  while (true) {
    const first = cursor.bytes[cursor.pos];
    if (cursor.pos < cursor.end && first === 0) {
      cursor.pos++;
      return fields;
    }
    if (cursor.pos >= cursor.end) cursor.short(`the ${section} section`);
    fields.push(readFieldLine(cursor, limits, section));
    if (cursor.pos - start > limits.section) {
      throw new BinaryHttpError(
        "too_large",
        `Cannot ${cursor.action}: the ${section} section is more than the ${
          bytesLabel(limits.section)
        } allowed`,
      );
    }
  }
}

function readContent(cursor: Cursor, framing: Framing): Uint8Array {
  if (framing === "known-length") {
    const length = cursor.varint("the content length");
    return cursor.take(length, "the content").slice();
  }
  const chunks: Uint8Array[] = [];
  while (true) {
    const length = cursor.varint("the length of a content chunk");
    if (length === 0) return concat(...chunks);
    chunks.push(cursor.take(length, "a content chunk"));
  }
}

function checkPaddingBytes(cursor: Cursor): void {
  for (let i = cursor.pos; i < cursor.end; i++) {
    if (cursor.bytes[i] !== 0) {
      throw new BinaryHttpError(
        "malformed",
        `Cannot ${cursor.action}: byte ${i} after the message is 0x${
          cursor.bytes[i].toString(16).padStart(2, "0")
        }, padding must be zero`,
      );
    }
  }
}

function asBytes(bytes: Uint8Array, action: string): Uint8Array {
  if (!(bytes instanceof Uint8Array)) {
    throw new BinaryHttpError(
      "malformed",
      `Cannot ${action}: expected bytes, found ${typeof bytes}`,
    );
  }
  return bytes;
}

/**
 * Decodes a request (either framing).
 *
 * @throws {BinaryHttpError} for malformed, truncated, invalid or oversized input.
 */
export function decodeRequest(bytes: Uint8Array, options: DecodeOptions = {}): BhttpRequest {
  const action = "decode binary HTTP request";
  const limits = limitsOf(options, action);
  const cursor = new Cursor(asBytes(bytes, action), 0, bytes.length, true, action);
  const framing = readFraming(cursor, "request");
  const method = cursor.string("the method", limits.field);
  const scheme = cursor.string("the scheme", limits.field);
  const authority = cursor.string("the authority", limits.field);
  const path = cursor.string("the path", limits.field);
  checkControl(method, scheme, authority, path, action);
  const headers = cursor.atEnd ? [] : readFieldSection(cursor, framing, limits, "header");
  const content = cursor.atEnd ? new Uint8Array(0) : readContent(cursor, framing);
  const trailers = cursor.atEnd ? [] : readFieldSection(cursor, framing, limits, "trailer");
  checkPaddingBytes(cursor);
  return { framing, method, scheme, authority, path, headers, content, trailers };
}

interface ResponseHead {
  framing: Framing;
  informational: InformationalResponse[];
  status: number;
  headers: FieldLines;
}

function readResponseHead(cursor: Cursor, limits: Limits): ResponseHead {
  const framing = readFraming(cursor, "response");
  const informational: InformationalResponse[] = [];
  while (true) {
    const status = cursor.varint("the status");
    if (status >= 100 && status <= 199) {
      if (informational.length >= limits.informational) {
        throw new BinaryHttpError(
          "too_large",
          `Cannot ${cursor.action}: more than ${limits.informational} informational responses`,
        );
      }
      informational.push({
        status,
        headers: readFieldSection(cursor, framing, limits, "informational header"),
      });
      continue;
    }
    if (status < 200 || status > 599) {
      throw new BinaryHttpError(
        "invalid_status",
        `Cannot ${cursor.action}: status is ${status}, expected 100 to 599`,
      );
    }
    const headers = cursor.atEnd ? [] : readFieldSection(cursor, framing, limits, "header");
    return { framing, informational, status, headers };
  }
}

/**
 * Decodes a response (either framing).
 *
 * @throws {BinaryHttpError} for malformed, truncated, invalid or oversized input.
 */
export function decodeResponse(bytes: Uint8Array, options: DecodeOptions = {}): BhttpResponse {
  const action = "decode binary HTTP response";
  const limits = limitsOf(options, action);
  const cursor = new Cursor(asBytes(bytes, action), 0, bytes.length, true, action);
  const head = readResponseHead(cursor, limits);
  const content = cursor.atEnd ? new Uint8Array(0) : readContent(cursor, head.framing);
  const trailers = cursor.atEnd ? [] : readFieldSection(cursor, head.framing, limits, "trailer");
  checkPaddingBytes(cursor);
  return { ...head, content, trailers };
}

// ---------------------------------------------------------------------------------------------
// Incremental response decoding.

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
  const action = "decode binary HTTP response";
  const limits = limitsOf(options, action);
  const reader = stream.getReader();
  let pending: Uint8Array = new Uint8Array(0); // bytes the current parse step has not consumed
  let eof = false;

  const read = async (): Promise<void> => {
    const { done, value } = await reader.read();
    if (done) {
      eof = true;
      return;
    }
    if (!(value instanceof Uint8Array)) {
      throw new BinaryHttpError(
        "malformed",
        `Cannot ${action}: the stream yielded ${typeof value}, expected bytes`,
      );
    }
    pending = pending.length === 0 ? value : concat(pending, value);
  };

  /** Runs `parse` over what has arrived, reading more until it completes. */
  const parseWhole = async <T>(
    parse: (cursor: Cursor) => T,
    bound: number,
    what: string,
  ): Promise<T> => {
    while (true) {
      const cursor = new Cursor(pending, 0, pending.length, eof, action);
      try {
        const result = parse(cursor);
        pending = pending.subarray(cursor.pos);
        return result;
      } catch (error) {
        if (error !== NEED_MORE) throw error;
      }
      if (pending.length > bound) {
        throw new BinaryHttpError(
          "too_large",
          `Cannot ${action}: the ${what} is more than the ${bytesLabel(bound)} the limits allow`,
        );
      }
      await read();
    }
  };

  // Each section is bounded by its limit; a varint adds at most 8 bytes.
  const sectionBound = limits.section + 16;
  const headBound = (limits.informational + 1) * sectionBound + 32;

  let head: ResponseHead;
  try {
    head = await parseWhole(
      (cursor) => readResponseHead(cursor, limits),
      headBound,
      "response head",
    );
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    reader.releaseLock();
    throw error;
  }

  const { framing } = head;
  const queue = new ByteQueue();
  queue.push(pending);
  pending = new Uint8Array(0);
  // Content state: for known length, the bytes still to come (or -1 before its length); for
  // indeterminate length, the bytes left in the current chunk (0 between chunks).
  let state: "content-length" | "content" | "chunk-length" | "trailers" | "done" =
    framing === "known-length" ? "content-length" : "chunk-length";
  let left = 0;
  let settle!: { resolve: (fields: FieldLines) => void; reject: (error: unknown) => void };
  const trailers = new Promise<FieldLines>((resolve, reject) => {
    settle = { resolve, reject };
  });
  trailers.catch(() => {}); // callers that never look at trailers must not see an unhandled rejection

  let chunkCount = 0;
  const readQueued = async (): Promise<void> => {
    await read();
    queue.push(pending);
    pending = new Uint8Array(0);
  };

  const varintFromQueue = (): number | undefined => {
    const first = queue.peek(0);
    if (first === undefined) return undefined;
    const size = varintLength(first);
    if (queue.length < size) return undefined;
    const { value } = readVarint(queue.take(size), 0);
    if (value === VARINT_TOO_LARGE) {
      throw new BinaryHttpError("too_large", `Cannot ${action}: a content length is above 2^53`);
    }
    return value;
  };

  const finishMessage = async (): Promise<FieldLines> => {
    // Trailers, then padding until the input ends.
    pending = queue.takeAll().slice();
    let fields: FieldLines = [];
    const present = await (async () => {
      while (pending.length === 0 && !eof) await read();
      return pending.length > 0;
    })();
    if (present) {
      fields = await parseWhole(
        (cursor) => readFieldSection(cursor, framing, limits, "trailer"),
        sectionBound,
        "trailer section",
      );
    }
    while (true) {
      const cursor = new Cursor(pending, 0, pending.length, true, action);
      checkPaddingBytes(cursor);
      pending = new Uint8Array(0);
      if (eof) return fields;
      await read();
    }
  };

  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        while (true) {
          if (state === "content-length" || state === "chunk-length") {
            if (queue.length === 0 && eof) {
              // Truncation is valid only before the content starts (empty content).
              if (state === "content-length" || chunkCount === 0) {
                state = "done";
                settle.resolve([]);
                controller.close();
                return;
              }
              throw new BinaryHttpError(
                "truncated",
                `Cannot ${action}: the message ends after ${chunkCount} content chunk${
                  chunkCount === 1 ? "" : "s"
                }, without the content terminator`,
              );
            }
            const value = varintFromQueue();
            if (value === undefined) {
              if (eof) {
                throw new BinaryHttpError(
                  "truncated",
                  `Cannot ${action}: the message ends inside a content length`,
                );
              }
              await readQueued();
              continue;
            }
            if (state === "chunk-length" && value === 0) {
              state = "trailers";
              continue;
            }
            chunkCount++;
            left = value;
            state = "content";
            if (left === 0) { // known-length, empty content
              state = "trailers";
            }
            continue;
          }
          if (state === "content") {
            if (queue.length === 0) {
              if (eof) {
                throw new BinaryHttpError(
                  "truncated",
                  `Cannot ${action}: the message ends with ${bytesLabel(left)} of content missing`,
                );
              }
              await readQueued();
              continue;
            }
            const piece = queue.takeSome(left);
            left -= piece.length;
            if (left === 0) state = framing === "known-length" ? "trailers" : "chunk-length";
            controller.enqueue(piece.slice());
            return;
          }
          if (state === "trailers") {
            const fields = await finishMessage();
            state = "done";
            settle.resolve(fields);
            controller.close();
            return;
          }
          return;
        }
      } catch (error) {
        state = "done";
        settle.reject(error);
        await reader.cancel(error).catch(() => {});
        throw error;
      }
    },
    async cancel(reason) {
      if (state !== "done") {
        state = "done";
        settle.reject(
          new BinaryHttpError(
            "cancelled",
            `Cannot ${action}: the body was cancelled before its end`,
            {
              cause: reason,
            },
          ),
        );
      }
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });

  return {
    framing,
    informational: head.informational,
    status: head.status,
    headers: head.headers,
    body,
    trailers,
  };
}
