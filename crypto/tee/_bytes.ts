/**
 * Byte helpers shared by the TEE parsers and verifiers (private).
 *
 * @module
 */

import { QuoteParseError } from "./errors.ts";

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Lower-case hex without `0x`. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

/** Lower-case hex with `0x`. */
export function to0x(bytes: Uint8Array): `0x${string}` {
  return `0x${toHex(bytes)}`;
}

/**
 * Decodes hex with or without `0x`, either case. Returns `null` when the text is not hex of
 * an even length (callers turn that into their own error).
 */
export function fromHex(text: string): Uint8Array | null {
  const body = text.startsWith("0x") || text.startsWith("0X") ? text.slice(2) : text;
  if (body.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(body)) return null;
  const out = new Uint8Array(body.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(body.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Decodes a hex constant of the source code; throws a plain error on a typo. */
export function hexConstant(text: string): Uint8Array {
  const bytes = fromHex(text);
  if (!bytes) throw new Error(`bad hex constant ${text}`);
  return bytes;
}

/** Constant-time equality of two byte strings (length is not secret). */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Whether every byte is zero. */
export function isAllZero(bytes: Uint8Array): boolean {
  let acc = 0;
  for (let i = 0; i < bytes.length; i++) acc |= bytes[i];
  return acc === 0;
}

/** Concatenates byte strings. */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Reverses a copy of the bytes (little-endian ↔ big-endian). */
export function reversed(bytes: Uint8Array): Uint8Array {
  return bytes.slice().reverse();
}

/**
 * A bounds-checked little-endian reader over a byte buffer. Every read names the field, so a
 * short buffer produces a {@linkcode QuoteParseError} that says what was being read, where,
 * and how many bytes were missing.
 */
export class ByteReader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #what: string;
  #offset: number;

  /** Reads `bytes` from `offset`; `what` names the structure in error messages. */
  constructor(bytes: Uint8Array, what: string, offset = 0) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#what = what;
    this.#offset = offset;
  }

  /** The current offset. */
  get offset(): number {
    return this.#offset;
  }

  /** Bytes left after the current offset. */
  get remaining(): number {
    return this.#bytes.length - this.#offset;
  }

  #need(field: string, length: number): void {
    if (length > this.remaining) {
      throw new QuoteParseError(
        `Cannot parse ${this.#what}: ${field} needs ${length} bytes at offset ${this.#offset}, ` +
          `only ${this.remaining} left`,
        { offset: this.#offset },
      );
    }
  }

  /** Reads `length` bytes (a view, not a copy). */
  bytes(field: string, length: number): Uint8Array {
    this.#need(field, length);
    const out = this.#bytes.subarray(this.#offset, this.#offset + length);
    this.#offset += length;
    return out;
  }

  /** Reads a little-endian u16. */
  u16(field: string): number {
    this.#need(field, 2);
    const value = this.#view.getUint16(this.#offset, true);
    this.#offset += 2;
    return value;
  }

  /** Reads a little-endian u32. */
  u32(field: string): number {
    this.#need(field, 4);
    const value = this.#view.getUint32(this.#offset, true);
    this.#offset += 4;
    return value;
  }

  /** Reads a little-endian u64. */
  u64(field: string): bigint {
    this.#need(field, 8);
    const value = this.#view.getBigUint64(this.#offset, true);
    this.#offset += 8;
    return value;
  }
}
