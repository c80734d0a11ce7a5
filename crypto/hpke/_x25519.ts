/**
 * X25519 (RFC 7748) on the runtime's WebCrypto (private): the two operations DHKEM needs,
 * each one native call.
 *
 * - {@linkcode importX25519PrivateKey}: 32 private key bytes as a `CryptoKey` (PKCS #8 import,
 *   the same form `@hpke/core` imports them in).
 * - {@linkcode x25519PublicKey}: the public key of a private key (read from its JWK export;
 *   native, about half the time of `@noble/curves`'s JavaScript scalar multiplication).
 * - {@linkcode x25519SharedSecret}: `DH(sk, pk)`, refusing the all-zero output of a small-order
 *   public key (RFC 9180 §7.1.4, RFC 7748 §6.1).
 *
 * @module
 */

import { copy, isAllZero } from "../_bytes.ts";

const ALGORITHM = { name: "X25519" } as const;

/** DER prefix of a PKCS #8 X25519 private key; the 32 key bytes follow. */
const PKCS8_PREFIX = Uint8Array.of(
  0x30,
  0x2e,
  0x02,
  0x01,
  0x00,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x6e,
  0x04,
  0x22,
  0x04,
  0x20,
);

/** Length of an X25519 key or shared secret. */
export const X25519_LENGTH = 32;

/**
 * Imports 32 private key bytes as an X25519 `CryptoKey` that can derive bits (and be exported,
 * so its public key can be read).
 *
 * @throws {RangeError} for a key that is not 32 bytes.
 */
export async function importX25519PrivateKey(secret: Uint8Array): Promise<CryptoKey> {
  if (secret.length !== X25519_LENGTH) {
    throw new RangeError(
      `Cannot import X25519 private key: expected ${X25519_LENGTH} bytes, found ${secret.length}`,
    );
  }
  const pkcs8 = new Uint8Array(PKCS8_PREFIX.length + X25519_LENGTH);
  pkcs8.set(PKCS8_PREFIX);
  pkcs8.set(secret, PKCS8_PREFIX.length);
  try {
    return await crypto.subtle.importKey("pkcs8", pkcs8, ALGORITHM, true, ["deriveBits"]);
  } finally {
    pkcs8.fill(0);
  }
}

/** The 32-byte public key of an (extractable) X25519 private key. */
export async function x25519PublicKey(privateKey: CryptoKey): Promise<Uint8Array> {
  const jwk = await crypto.subtle.exportKey("jwk", privateKey);
  if (typeof jwk.x !== "string") {
    throw new TypeError("Cannot read X25519 public key: the JWK export has no x");
  }
  const publicKey = fromBase64Url(jwk.x);
  if (publicKey.length !== X25519_LENGTH) {
    throw new TypeError(
      `Cannot read X25519 public key: expected ${X25519_LENGTH} bytes, found ${publicKey.length}`,
    );
  }
  return publicKey;
}

/**
 * `DH(sk, pk)`: the X25519 shared secret of a private key and a serialized public key.
 *
 * @throws {RangeError} for a public key that is not 32 bytes, or a small-order one (the
 * output is all zero).
 */
export async function x25519SharedSecret(
  privateKey: CryptoKey,
  publicKey: Uint8Array,
): Promise<Uint8Array> {
  if (publicKey.length !== X25519_LENGTH) {
    throw new RangeError(
      `Cannot run X25519: expected a ${X25519_LENGTH}-byte public key, found ${publicKey.length}`,
    );
  }
  const peer = await crypto.subtle.importKey("raw", copy(publicKey), ALGORITHM, true, []);
  const secret = new Uint8Array(
    await crypto.subtle.deriveBits({ name: "X25519", public: peer }, privateKey, 256),
  );
  if (isAllZero(secret)) {
    throw new RangeError("Cannot run X25519: the public key has small order (all-zero secret)");
  }
  return secret;
}

function fromBase64Url(text: string): Uint8Array {
  const base64 = text.replaceAll("-", "+").replaceAll("_", "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
