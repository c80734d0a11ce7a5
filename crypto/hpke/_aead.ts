/**
 * The AEADs of the network's suites behind one small interface (private): a key that seals and
 * opens under a given nonce and AAD.
 *
 * - AES-128-GCM on the runtime's WebCrypto (native, hardware AES): the key is imported once
 *   per context, then each seal or open is one `encrypt` or `decrypt` call.
 * - ChaCha20-Poly1305 on `@hpke/chacha20poly1305` (JavaScript, from `@noble/ciphers`; WebCrypto
 *   has no ChaCha20).
 *
 * @module
 */

import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { copy } from "../_bytes.ts";
import { AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305 } from "./suite.ts";

/** A symmetric key of an AEAD. */
export interface AeadKey {
  /** `Seal(key, nonce, aad, pt)`: the ciphertext with its tag. */
  seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Promise<Uint8Array>;
  /** `Open(key, nonce, aad, ct)`; rejects when authentication fails. */
  open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): Promise<Uint8Array>;
}

/**
 * The key of `aeadId` made of `key` (copied).
 *
 * @throws {RangeError} for an AEAD that cannot seal (export-only) or is unknown.
 */
export function aeadKey(aeadId: number, key: Uint8Array): AeadKey {
  if (aeadId === AEAD_AES_128_GCM) return new AesGcmKey(key);
  if (aeadId === AEAD_CHACHA20_POLY1305) return new ChachaKey(key);
  throw new RangeError(`Cannot use AEAD 0x${aeadId.toString(16).padStart(4, "0")} to seal`);
}

class AesGcmKey implements AeadKey {
  #key: CryptoKey | undefined;
  readonly #imported: Promise<CryptoKey>;

  constructor(key: Uint8Array) {
    this.#imported = crypto.subtle.importKey("raw", copy(key), "AES-GCM", false, [
      "encrypt",
      "decrypt",
    ]);
    this.#imported.then((imported) => this.#key = imported, () => {});
  }

  async seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Promise<Uint8Array> {
    const key = this.#key ?? await this.#imported;
    return new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv: source(nonce), additionalData: source(aad) },
        key,
        source(plaintext),
      ),
    );
  }

  async open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): Promise<Uint8Array> {
    const key = this.#key ?? await this.#imported;
    return new Uint8Array(
      await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: source(nonce), additionalData: source(aad) },
        key,
        source(ciphertext),
      ),
    );
  }
}

const chacha = new Chacha20Poly1305();

class ChachaKey implements AeadKey {
  readonly #context: ReturnType<Chacha20Poly1305["createEncryptionContext"]>;

  constructor(key: Uint8Array) {
    this.#context = chacha.createEncryptionContext(copy(key).buffer);
  }

  async seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(
      await this.#context.seal(source(nonce), source(plaintext), source(aad)),
    );
  }

  async open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(
      await this.#context.open(source(nonce), source(ciphertext), source(aad)),
    );
  }
}

/** The bytes as a WebCrypto `BufferSource`; WebCrypto copies its inputs, so no copy here. */
function source(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer ? bytes as Uint8Array<ArrayBuffer> : copy(bytes);
}
