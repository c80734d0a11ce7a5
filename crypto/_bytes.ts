/**
 * Byte helpers shared by the crypto modules (private).
 *
 * @module
 */

/** Concatenates byte arrays into a new array. */
export function concat(...parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
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

/** Compares two byte arrays in time that depends only on their lengths. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Lower-case hex without prefix. */
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

/** Whether every byte is zero. */
export function isAllZero(bytes: Uint8Array): boolean {
  let acc = 0;
  for (let i = 0; i < bytes.length; i++) acc |= bytes[i];
  return acc === 0;
}

/** A 16-bit identifier as `0x0020`. */
export function hex16(value: number): string {
  return `0x${value.toString(16).padStart(4, "0")}`;
}

/** Big-endian 16-bit integer. */
export function u16(value: number): Uint8Array {
  return Uint8Array.of(value >>> 8, value & 0xff);
}

/** A fresh copy of a byte array as a `Uint8Array` backed by its own `ArrayBuffer`. */
export function copy(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(bytes.length);
  out.set(bytes);
  return out;
}

/** Wraps an `ArrayBuffer` result of a WebCrypto-style call. */
export function view(buffer: ArrayBuffer): Uint8Array<ArrayBuffer> {
  return new Uint8Array(buffer);
}

/** Describes a length in bytes for an error message. */
export function bytesLabel(count: number): string {
  return count === 1 ? "1 byte" : `${count} bytes`;
}
