/**
 * The Binary HTTP decoders' reader (private): a cursor over the bytes at hand and the readers
 * of each part of a message. When more bytes may come (`eof` false), running out throws
 * {@linkcode NEED_MORE} and the incremental decoder retries with more bytes.
 *
 * @module
 */

import { bytesLabel, concat } from "../_bytes.ts";
import { readVarint, VARINT_INCOMPLETE, VARINT_TOO_LARGE } from "../_varint.ts";
import {
  abbreviate,
  checkField,
  FRAMING_INDETERMINATE_REQUEST,
  FRAMING_KNOWN_REQUEST,
  fromLatin1,
} from "./_rules.ts";
import { BinaryHttpError } from "./errors.ts";
import {
  type DecodeOptions,
  DEFAULT_MAX_FIELD_LENGTH,
  DEFAULT_MAX_FIELD_SECTION_LENGTH,
  DEFAULT_MAX_INFORMATIONAL_RESPONSES,
  type FieldLines,
  type Framing,
  type InformationalResponse,
} from "./types.ts";

export const NEED_MORE = Symbol("need more bytes");

export interface Limits {
  field: number;
  section: number;
  informational: number;
}

export function limitsOf(options: DecodeOptions, action: string): Limits {
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

export class Cursor {
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

export function readFraming(cursor: Cursor, kind: "request" | "response"): Framing {
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

export function readFieldSection(
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

export function readContent(cursor: Cursor, framing: Framing): Uint8Array {
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

export function checkPaddingBytes(cursor: Cursor): void {
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

export function asBytes(bytes: Uint8Array, action: string): Uint8Array {
  if (!(bytes instanceof Uint8Array)) {
    throw new BinaryHttpError(
      "malformed",
      `Cannot ${action}: expected bytes, found ${typeof bytes}`,
    );
  }
  return bytes;
}

export interface ResponseHead {
  framing: Framing;
  informational: InformationalResponse[];
  status: number;
  headers: FieldLines;
}

export function readResponseHead(cursor: Cursor, limits: Limits): ResponseHead {
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
