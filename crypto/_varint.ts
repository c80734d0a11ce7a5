/**
 * QUIC variable-length integers (RFC 9000 §16), used by Binary HTTP and chunked Oblivious HTTP
 * for lengths (private).
 *
 * The two most significant bits of the first byte give the encoded length (1, 2, 4 or 8
 * bytes); the rest is the value, big-endian. Values above `Number.MAX_SAFE_INTEGER` are
 * reported as {@linkcode VARINT_TOO_LARGE}: no length this project accepts comes near it.
 *
 * @module
 */

/** Largest value a varint can carry: 2^62 - 1. */
export const VARINT_MAX = 2 ** 62 - 1;

/** Returned by {@linkcode readVarint} for a value that does not fit a safe integer. */
export const VARINT_TOO_LARGE = -2;

/** Returned by {@linkcode readVarint} when the input ends inside the integer. */
export const VARINT_INCOMPLETE = -1;

/** Number of bytes the varint starting with `firstByte` takes. */
export function varintLength(firstByte: number): 1 | 2 | 4 | 8 {
  return (1 << (firstByte >> 6)) as 1 | 2 | 4 | 8;
}

/** Number of bytes the minimal encoding of `value` takes. */
export function varintSize(value: number): 1 | 2 | 4 | 8 {
  if (value < 0x40) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x40000000) return 4;
  return 8;
}

/**
 * Encodes a non-negative safe integer with the minimal length.
 *
 * @throws {RangeError} for a negative, fractional or unsafe value.
 */
export function encodeVarint(value: number): Uint8Array {
  const out = new Uint8Array(varintSize(checkValue(value)));
  writeVarint(out, 0, value);
  return out;
}

/** Writes the minimal encoding of `value` at `offset`; returns the offset after it. */
export function writeVarint(out: Uint8Array, offset: number, value: number): number {
  const size = varintSize(value);
  switch (size) {
    case 1:
      out[offset] = value;
      break;
    case 2:
      out[offset] = 0x40 | (value >>> 8);
      out[offset + 1] = value & 0xff;
      break;
    case 4:
      out[offset] = 0x80 | (value >>> 24);
      out[offset + 1] = (value >>> 16) & 0xff;
      out[offset + 2] = (value >>> 8) & 0xff;
      out[offset + 3] = value & 0xff;
      break;
    case 8: {
      const high = Math.floor(value / 2 ** 32);
      const low = value >>> 0;
      out[offset] = 0xc0 | (high >>> 24);
      out[offset + 1] = (high >>> 16) & 0xff;
      out[offset + 2] = (high >>> 8) & 0xff;
      out[offset + 3] = high & 0xff;
      out[offset + 4] = low >>> 24;
      out[offset + 5] = (low >>> 16) & 0xff;
      out[offset + 6] = (low >>> 8) & 0xff;
      out[offset + 7] = low & 0xff;
      break;
    }
  }
  return offset + size;
}

/**
 * Reads a varint at `offset`. Returns the value and the offset after it, or a negative value
 * ({@linkcode VARINT_INCOMPLETE}, {@linkcode VARINT_TOO_LARGE}) with the offset unchanged.
 */
export function readVarint(
  bytes: Uint8Array,
  offset: number,
  end: number = bytes.length,
): { value: number; next: number } {
  if (offset >= end) return { value: VARINT_INCOMPLETE, next: offset };
  const size = varintLength(bytes[offset]);
  if (offset + size > end) return { value: VARINT_INCOMPLETE, next: offset };
  let value = bytes[offset] & 0x3f;
  for (let i = 1; i < size; i++) {
    value = value * 256 + bytes[offset + i];
  }
  if (value > Number.MAX_SAFE_INTEGER) return { value: VARINT_TOO_LARGE, next: offset };
  return { value, next: offset + size };
}

function checkValue(value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `Cannot encode varint: expected a non-negative safe integer, got ${value}`,
    );
  }
  return value;
}
