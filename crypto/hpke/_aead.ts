/**
 * The AEADs of the network's suites behind one small interface (private): a key that seals and
 * opens under a given nonce and AAD, synchronously for small messages.
 *
 * - AES-128-GCM: up to {@linkcode SYNC_LIMIT} bytes on the runtime's `node:crypto`, one
 *   synchronous native call (no promise, no hop to a worker thread: a token or a few events of
 *   a stream); above it on WebCrypto, whose asynchronous `encrypt`/`decrypt` has a fixed cost of
 *   about 10 µs but runs at about 0.6 GB/s against `node:crypto`'s 0.17 GB/s here (measured:
 *   they cross near 2 KiB). The WebCrypto key is imported on first use.
 * - ChaCha20-Poly1305: always `node:crypto` (WebCrypto has no ChaCha20).
 *
 * @module
 */

import { type CipherGCMTypes, createCipheriv, createDecipheriv } from "node:crypto";
import { copy } from "../_bytes.ts";
import { AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305 } from "./suite.ts";

/** Length of the authentication tag of both AEADs. */
const TAG_LENGTH = 16;

/** Largest message (plaintext, or ciphertext with its tag) sealed or opened synchronously. */
export const SYNC_LIMIT = 2048;

/** Bytes, now or once an asynchronous step has run. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * A symmetric key of an AEAD. Both calls read the nonce and the AAD before they return (an
 * asynchronous call copies them first), so a caller may reuse their arrays at once.
 */
export interface AeadKey {
  /** `Seal(key, nonce, aad, pt)`: the ciphertext with its tag. */
  seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array>;
  /**
   * `Open(key, nonce, aad, ct)`.
   *
   * @throws {Error} (or rejects) when authentication fails.
   */
  open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array>;
}

/**
 * The key of `aeadId` made of `key` (copied).
 *
 * @throws {RangeError} for an AEAD that cannot seal (export-only) or is unknown.
 */
export function aeadKey(aeadId: number, key: Uint8Array): AeadKey {
  if (aeadId === AEAD_AES_128_GCM) return new AesGcmKey(key);
  if (aeadId === AEAD_CHACHA20_POLY1305) {
    return new NodeAeadKey("chacha20-poly1305" as CipherGCMTypes, key);
  }
  throw new RangeError(`Cannot use AEAD 0x${aeadId.toString(16).padStart(4, "0")} to seal`);
}

/** An AEAD on `node:crypto`: every call synchronous. */
class NodeAeadKey implements AeadKey {
  readonly #algorithm: CipherGCMTypes;
  protected readonly key: Uint8Array;

  constructor(algorithm: CipherGCMTypes, key: Uint8Array) {
    this.#algorithm = algorithm;
    this.key = copy(key);
  }

  seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array> {
    const cipher = createCipheriv(this.#algorithm, this.key, nonce, {
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

  open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array> {
    checkLength(ciphertext);
    const end = ciphertext.length - TAG_LENGTH;
    const decipher = createDecipheriv(this.#algorithm, this.key, nonce, {
      authTagLength: TAG_LENGTH,
    });
    decipher.setAuthTag(ciphertext.subarray(end));
    if (aad.length > 0) decipher.setAAD(aad, { plaintextLength: end });
    const body = end > 0 ? decipher.update(ciphertext.subarray(0, end)) : undefined;
    const rest = decipher.final(); // throws when the tag does not authenticate
    // An array of its own: the Buffer's memory when it has it all to itself (Deno's), else a
    // copy (a Buffer may be a view into a shared pool).
    if (body && rest.length === 0 && body.byteOffset === 0) {
      const memory = body.buffer;
      if (memory instanceof ArrayBuffer && memory.byteLength === body.length) {
        return new Uint8Array(memory);
      }
    }
    const out = new Uint8Array((body?.length ?? 0) + rest.length);
    if (body) out.set(body);
    out.set(rest, body?.length ?? 0);
    return out;
  }
}

/** AES-128-GCM: `node:crypto` up to {@linkcode SYNC_LIMIT} bytes, WebCrypto above. */
class AesGcmKey extends NodeAeadKey {
  #webCrypto: Promise<CryptoKey> | undefined;

  constructor(key: Uint8Array) {
    super("aes-128-gcm", key);
  }

  override seal(
    nonce: Uint8Array,
    plaintext: Uint8Array,
    aad: Uint8Array,
  ): MaybePromise<Uint8Array> {
    if (plaintext.length <= SYNC_LIMIT) return super.seal(nonce, plaintext, aad);
    const params = gcmParams(nonce, aad);
    const data = copy(plaintext);
    return this.#cryptoKey().then(async (key) =>
      new Uint8Array(await crypto.subtle.encrypt(params, key, data))
    );
  }

  override open(
    nonce: Uint8Array,
    ciphertext: Uint8Array,
    aad: Uint8Array,
  ): MaybePromise<Uint8Array> {
    if (ciphertext.length <= SYNC_LIMIT) return super.open(nonce, ciphertext, aad);
    const params = gcmParams(nonce, aad);
    const data = copy(ciphertext);
    return this.#cryptoKey().then(async (key) =>
      new Uint8Array(await crypto.subtle.decrypt(params, key, data))
    );
  }

  #cryptoKey(): Promise<CryptoKey> {
    this.#webCrypto ??= crypto.subtle.importKey("raw", copy(this.key), "AES-GCM", false, [
      "encrypt",
      "decrypt",
    ]);
    return this.#webCrypto;
  }
}

function gcmParams(nonce: Uint8Array, aad: Uint8Array): AesGcmParams {
  return { name: "AES-GCM", iv: copy(nonce), additionalData: copy(aad), tagLength: 128 };
}

function checkLength(ciphertext: Uint8Array): void {
  if (ciphertext.length < TAG_LENGTH) {
    throw new RangeError(
      `Cannot open: the ciphertext is ${ciphertext.length} bytes, shorter than its ${TAG_LENGTH}-byte tag`,
    );
  }
}
