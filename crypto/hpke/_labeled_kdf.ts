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
 * of a few microseconds. An HMAC key is hashed into its two padded blocks once
 * ({@linkcode HmacKey}) and each MAC under it clones that state: the empty salt's key (every
 * `LabeledExtract` of the KEM and `info_hash`) once per process, a key schedule's `secret` once
 * for its three expansions. The labeled input is given to the hash in its parts, not joined
 * first.
 *
 * @module
 */

import { hmac } from "@noble/hashes/hmac.js";
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

/** An HMAC-SHA256 key, its padded blocks hashed once; each {@linkcode HmacKey.mac} reuses them. */
export class HmacKey {
  readonly #keyed: ReturnType<typeof hmac.create>;

  /** Hashes `key`'s inner and outer blocks (RFC 2104). */
  constructor(key: Uint8Array) {
    this.#keyed = hmac.create(sha256, key);
  }

  /** `HMAC(key, parts[0] ‖ parts[1] ‖ …)`, 32 bytes. */
  mac(...parts: readonly Uint8Array[]): Uint8Array {
    const h = this.#keyed.clone();
    for (const part of parts) h.update(part);
    return h.digest();
  }

  /** Wipes the keyed state (best effort, as JavaScript allows); `mac` then throws. */
  destroy(): void {
    this.#keyed.destroy();
  }
}

/** HKDF's default salt, `Nh` zero bytes, as a key (RFC 5869 §2.2). */
const ZERO_SALT = new HmacKey(new Uint8Array(HASH_LENGTH));

/** HKDF-Extract with SHA-256 (RFC 5869 §2.2); an empty salt is `Nh` zero bytes. */
export function hkdfExtract(salt: Uint8Array, ikm: Uint8Array): Uint8Array {
  return macOnce(salt, [ikm]);
}

/** `HMAC(salt or Nh zeros, parts…)`; a key made for `salt` is wiped after its one use. */
function macOnce(salt: Uint8Array, parts: readonly Uint8Array[]): Uint8Array {
  if (salt.length === 0) return ZERO_SALT.mac(...parts);
  const key = new HmacKey(salt);
  try {
    return key.mac(...parts);
  } finally {
    key.destroy();
  }
}

/**
 * HKDF-Expand with SHA-256 (RFC 5869 §2.3).
 *
 * @throws {RangeError} when `length` is above `255 · Nh`.
 */
export function hkdfExpand(prk: Uint8Array, info: Uint8Array, length: number): Uint8Array {
  const key = new HmacKey(prk);
  try {
    return expandParts(key, [info], length, "expand HKDF-SHA256");
  } finally {
    key.destroy();
  }
}

/**
 * HKDF-Expand under a key already made: `T(i) = HMAC(prk, T(i-1) ‖ info ‖ i)`, `info` given
 * in parts, the first `length` bytes of `T(1) ‖ T(2) ‖ …`.
 *
 * @throws {RangeError} when `length` is above `255 · Nh`.
 */
export function expandParts(
  prk: HmacKey,
  info: readonly Uint8Array[],
  length: number,
  action = "expand HKDF-SHA256",
): Uint8Array {
  if (!Number.isInteger(length) || length < 0 || length > 255 * HASH_LENGTH) {
    throw new RangeError(
      `Cannot ${action}: length must be an integer from 0 to ${255 * HASH_LENGTH}, found ${length}`,
    );
  }
  if (length <= HASH_LENGTH) {
    if (length === 0) return new Uint8Array(0);
    const t = prk.mac(...info, COUNTER[1]);
    return length === HASH_LENGTH ? t : t.slice(0, length);
  }
  const out = new Uint8Array(length);
  let previous: Uint8Array = new Uint8Array(0);
  for (let i = 1, at = 0; at < length; i++, at += HASH_LENGTH) {
    previous = prk.mac(previous, ...info, COUNTER[i]);
    out.set(previous.subarray(0, Math.min(HASH_LENGTH, length - at)), at);
  }
  return out;
}

/** `[i]` for HKDF-Expand's block counter, 1 to 255. */
const COUNTER: readonly Uint8Array[] = Array.from({ length: 256 }, (_, i) => Uint8Array.of(i));

/** `LabeledExtract(salt, label, ikm)` under `suiteId` (RFC 9180 §4). */
export function labeledExtract(
  suiteId: Uint8Array,
  salt: Uint8Array,
  labelBytes: Uint8Array,
  ikm: Uint8Array,
): Uint8Array {
  return macOnce(salt, [HPKE_V1, suiteId, labelBytes, ikm]);
}

/**
 * `LabeledExpand(prk, label, info, L)` under `suiteId` (RFC 9180 §4), the key given as
 * bytes or as an {@linkcode HmacKey} already made.
 *
 * @throws {RangeError} when `length` is above `255 · Nh` (it must also fit the 2-byte prefix).
 */
export function labeledExpand(
  suiteId: Uint8Array,
  prk: Uint8Array | HmacKey,
  labelBytes: Uint8Array,
  info: Uint8Array,
  length: number,
): Uint8Array {
  const key = prk instanceof HmacKey ? prk : new HmacKey(prk);
  try {
    return expandParts(
      key,
      [u16(length), HPKE_V1, suiteId, labelBytes, info],
      length,
      "run LabeledExpand",
    );
  } finally {
    if (key !== prk) key.destroy(); // made here: wiped here; one given stays its owner's
  }
}
