/**
 * The AEADs of the network's suites behind one small synchronous interface (private): a key
 * that seals and opens under a given nonce and AAD.
 *
 * Both run on the runtime's `node:crypto` (`aes-128-gcm`, `chacha20-poly1305`): one native
 * call per seal or open, with no promise round trip and no hop to a worker thread. For the
 * small chunks a chat streams (an event or a batch of events, up to 16 KiB) that is cheaper than
 * WebCrypto's asynchronous `encrypt`/`decrypt`, whose fixed cost per call dominates; see
 * `bench/crypto_bench.ts` and `docs/decisions.md`.
 *
 * @module
 */

import { type CipherGCMTypes, createCipheriv, createDecipheriv } from "node:crypto";
import { copy } from "../_bytes.ts";
import { AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305 } from "./suite.ts";

/** Length of the authentication tag of both AEADs. */
const TAG_LENGTH = 16;

/** A symmetric key of an AEAD. */
export interface AeadKey {
  /** `Seal(key, nonce, aad, pt)`: the ciphertext with its tag. */
  seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array;
  /**
   * `Open(key, nonce, aad, ct)`.
   *
   * @throws {Error} when authentication fails.
   */
  open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): Uint8Array;
}

/**
 * The key of `aeadId` made of `key` (copied).
 *
 * @throws {RangeError} for an AEAD that cannot seal (export-only) or is unknown.
 */
export function aeadKey(aeadId: number, key: Uint8Array): AeadKey {
  if (aeadId === AEAD_AES_128_GCM) return new NodeAeadKey("aes-128-gcm", key);
  if (aeadId === AEAD_CHACHA20_POLY1305) {
    return new NodeAeadKey("chacha20-poly1305" as CipherGCMTypes, key);
  }
  throw new RangeError(`Cannot use AEAD 0x${aeadId.toString(16).padStart(4, "0")} to seal`);
}

class NodeAeadKey implements AeadKey {
  readonly #algorithm: CipherGCMTypes;
  readonly #key: Uint8Array;

  constructor(algorithm: CipherGCMTypes, key: Uint8Array) {
    this.#algorithm = algorithm;
    this.#key = copy(key);
  }

  seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
    const cipher = createCipheriv(this.#algorithm, this.#key, nonce, {
      authTagLength: TAG_LENGTH,
    });
    if (aad.length > 0) cipher.setAAD(aad, { plaintextLength: plaintext.length });
    const body = plaintext.length > 0 ? cipher.update(plaintext) : undefined;
    const rest = cipher.final();
    const tag = cipher.getAuthTag();
    const bodyLength = (body?.length ?? 0) + rest.length;
    const out = new Uint8Array(bodyLength + TAG_LENGTH);
    if (body) out.set(body);
    out.set(rest, body?.length ?? 0);
    out.set(tag, bodyLength);
    return out;
  }

  open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): Uint8Array {
    if (ciphertext.length < TAG_LENGTH) {
      throw new RangeError(
        `Cannot open: the ciphertext is ${ciphertext.length} bytes, shorter than its ${TAG_LENGTH}-byte tag`,
      );
    }
    const end = ciphertext.length - TAG_LENGTH;
    const decipher = createDecipheriv(this.#algorithm, this.#key, nonce, {
      authTagLength: TAG_LENGTH,
    });
    decipher.setAuthTag(ciphertext.subarray(end));
    if (aad.length > 0) decipher.setAAD(aad, { plaintextLength: end });
    const body = end > 0 ? decipher.update(ciphertext.subarray(0, end)) : undefined;
    const rest = decipher.final(); // throws when the tag does not authenticate
    // A fresh array of its own (a Buffer may be a view into a shared pool).
    const out = new Uint8Array((body?.length ?? 0) + rest.length);
    if (body) out.set(body);
    out.set(rest, body?.length ?? 0);
    return out;
  }
}
