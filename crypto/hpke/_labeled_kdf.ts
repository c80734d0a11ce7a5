/**
 * HKDF-SHA256 and RFC 9180's labeled forms of it (private), synchronous, on `@noble/hashes`.
 *
 * ```
 * LabeledExtract(salt, label, ikm)     = Extract(salt, "HPKE-v1" ‖ suite_id ‖ label ‖ ikm)
 * LabeledExpand(prk, label, info, L)   = Expand(prk, I2OSP(L, 2) ‖ "HPKE-v1" ‖ suite_id ‖ label ‖ info, L)
 * ```
 *
 * (RFC 9180 §4.) An empty `salt` is HKDF's default, `Nh` zero bytes (RFC 5869 §2.2): the
 * same HMAC key once padded to the block.
 *
 * `@hpke/core` runs these through WebCrypto, one `importKey` and one `sign` (two promise
 * round trips) per HMAC, about ten of them per HPKE setup; here each is a plain function call
 * of a few microseconds.
 *
 * @module
 */

import { expand, extract } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { concat, u16 } from "../_bytes.ts";

const encoder = new TextEncoder();

/** `"HPKE-v1"`. */
const HPKE_V1: Uint8Array = encoder.encode("HPKE-v1");

/** `Nh` of HKDF-SHA256. */
export const HASH_LENGTH = 32;

/** `suite_id` of a KEM: `"KEM" ‖ I2OSP(kem_id, 2)` (RFC 9180 §4.1). */
export function kemSuiteId(kem: number): Uint8Array {
  return concat(encoder.encode("KEM"), u16(kem));
}

/** `suite_id` of an HPKE suite: `"HPKE" ‖ I2OSP(kem_id, 2) ‖ I2OSP(kdf_id, 2) ‖ I2OSP(aead_id, 2)`. */
export function hpkeSuiteId(kem: number, kdf: number, aead: number): Uint8Array {
  return concat(encoder.encode("HPKE"), u16(kem), u16(kdf), u16(aead));
}

/** An ASCII label as bytes. */
export function label(text: string): Uint8Array {
  return encoder.encode(text);
}

/** HKDF-Extract with SHA-256 (RFC 5869 §2.2); an empty salt is `Nh` zero bytes. */
export function hkdfExtract(salt: Uint8Array, ikm: Uint8Array): Uint8Array {
  return extract(sha256, ikm, salt.length === 0 ? undefined : salt);
}

/**
 * HKDF-Expand with SHA-256 (RFC 5869 §2.3).
 *
 * @throws {RangeError} when `length` is above `255 · Nh`.
 */
export function hkdfExpand(prk: Uint8Array, info: Uint8Array, length: number): Uint8Array {
  if (!Number.isInteger(length) || length < 0 || length > 255 * HASH_LENGTH) {
    throw new RangeError(
      `Cannot expand HKDF-SHA256: length must be an integer from 0 to ${
        255 * HASH_LENGTH
      }, found ${length}`,
    );
  }
  if (length === 0) return new Uint8Array(0);
  return expand(sha256, prk, info, length);
}

/** `LabeledExtract(salt, label, ikm)` under `suiteId` (RFC 9180 §4). */
export function labeledExtract(
  suiteId: Uint8Array,
  salt: Uint8Array,
  labelBytes: Uint8Array,
  ikm: Uint8Array,
): Uint8Array {
  return hkdfExtract(salt, concat(HPKE_V1, suiteId, labelBytes, ikm));
}

/**
 * `LabeledExpand(prk, label, info, L)` under `suiteId` (RFC 9180 §4).
 *
 * @throws {RangeError} when `length` is above `255 · Nh` (it must also fit the 2-byte prefix).
 */
export function labeledExpand(
  suiteId: Uint8Array,
  prk: Uint8Array,
  labelBytes: Uint8Array,
  info: Uint8Array,
  length: number,
): Uint8Array {
  if (!Number.isInteger(length) || length < 0 || length > 255 * HASH_LENGTH) {
    throw new RangeError(
      `Cannot run LabeledExpand: length must be an integer from 0 to ${
        255 * HASH_LENGTH
      }, found ${length}`,
    );
  }
  return hkdfExpand(prk, concat(u16(length), HPKE_V1, suiteId, labelBytes, info), length);
}
