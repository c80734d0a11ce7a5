/**
 * Binary HTTP decoders (RFC 9292) for whole messages: requests and responses in either
 * framing, strictly (see `docs/crypto.md` §3).
 *
 * @module
 */

import {
  asBytes,
  checkPaddingBytes,
  Cursor,
  limitsOf,
  readContent,
  readFieldSection,
  readFraming,
  readResponseHead,
} from "./_cursor.ts";
import { checkControl } from "./_rules.ts";
import type { BhttpRequest, BhttpResponse, DecodeOptions } from "./types.ts";

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
