/**
 * Byte helpers shared by the crypto modules (private).
 *
 * @module
 */

/** Concatenates byte arrays into a new array. */
export function concat(...parts: readonly Uint8Array[]): Uint8Array {
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

/** Lower-case hex without prefix. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0");
  return out;
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
