/**
 * The rules both directions of Binary HTTP apply (private): the framing indicators, field
 * names and values (RFC 9113 §8.2), control data (RFC 9110 token, RFC 3986 scheme), and the
 * one-byte-per-character mapping of values.
 *
 * @module
 */

import { BinaryHttpError } from "./errors.ts";
import type { FieldsInit } from "./types.ts";

export const FRAMING_KNOWN_REQUEST = 0;
export const FRAMING_KNOWN_RESPONSE = 1;
export const FRAMING_INDETERMINATE_REQUEST = 2;
export const FRAMING_INDETERMINATE_RESPONSE = 3;

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

export function checkField(name: string, value: string, action: string): void {
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

export function checkControl(
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

export function abbreviate(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

export function latin1(text: string, what: string, action: string): Uint8Array {
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

export function fromLatin1(bytes: Uint8Array): string {
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
