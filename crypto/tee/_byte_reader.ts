/**
 * A bounds-checked little-endian reader for the TEE parsers (private).
 *
 * @module
 */

import { QuoteParseError } from "./errors.ts";

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
