/**
 * HPKE (RFC 9180) for the network: suites by id and X25519 key pairs, over `@hpke/core`
 * (X25519 through the runtime's WebCrypto) and `@hpke/chacha20poly1305`.
 *
 * - {@linkcode hpkeSuite}: the suite for a KEM, KDF and AEAD id, with its sizes and the
 *   `@hpke/core` suite that runs it. Supported: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
 *   AES-128-GCM (the network's default) and ChaCha20-Poly1305; the export-only AEAD too (for
 *   the RFC vectors), though it cannot seal.
 * - {@linkcode generateKeyPair}, {@linkcode importKeyPair}, {@linkcode deriveKeyPair}: key
 *   pairs; {@linkcode HpkeKeyPair.exportPrivateKey} copies the private key out to keep it.
 *
 * A gateway publishes its key pair as an Oblivious HTTP key configuration: see
 * `@net/consumer/ohttp` (`createGatewayKey`).
 *
 * @example Look up a suite, generate a key pair, keep it and load it again
 * ```ts
 * import {
 *   AEAD_AES_128_GCM,
 *   generateKeyPair,
 *   hpkeSuite,
 *   importKeyPair,
 *   KDF_HKDF_SHA256,
 *   KEM_X25519_HKDF_SHA256,
 * } from "@net/consumer/hpke";
 *
 * const suite = hpkeSuite({
 *   kem: KEM_X25519_HKDF_SHA256,
 *   kdf: KDF_HKDF_SHA256,
 *   aead: AEAD_AES_128_GCM,
 * });
 * console.assert(suite.name === "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM");
 *
 * const keyPair = await generateKeyPair();
 * const saved = keyPair.exportPrivateKey(); // 32 bytes; store it secretly
 * const again = await importKeyPair(saved);
 * console.assert(again.publicKey.every((byte, i) => byte === keyPair.publicKey[i]));
 * ```
 *
 * @module
 */

export {
  AEAD_AES_128_GCM,
  AEAD_CHACHA20_POLY1305,
  AEAD_EXPORT_ONLY,
  type AeadInfo,
  HpkeError,
  type HpkeFailure,
  type HpkeSuite,
  hpkeSuite,
  KDF_HKDF_SHA256,
  type KdfInfo,
  KEM_X25519_HKDF_SHA256,
  type KemInfo,
  type SuiteIds,
} from "./suite.ts";
export {
  deriveKeyPair,
  generateKeyPair,
  type GenerateKeyPairOptions,
  type HpkeKeyPair,
  importKeyPair,
  type KeyPairOptions,
  type RandomSource,
} from "./key_pair.ts";
