/**
 * X25519 (RFC 7748) on the runtime's `node:crypto` (private): the operations DHKEM needs, each
 * one synchronous native call — no promise round trip, no hop to a worker thread.
 *
 * - {@linkcode x25519PrivateKey}: 32 private key bytes as a `KeyObject` (PKCS #8 import);
 * - {@linkcode x25519PublicKey}: the public key of a private key (its SPKI export);
 * - {@linkcode x25519SharedSecret}: `DH(sk, pk)`, refusing the all-zero output of a small-order
 *   public key (RFC 9180 §7.1.4, RFC 7748 §6.1).
 *
 * Measured against the runtime's WebCrypto X25519 (import, JWK export, import, `deriveBits`,
 * each an asynchronous operation): a sender's setup takes about a third of the time
 * (`bench/crypto_bench.ts`).
 *
 * @module
 */

import { createPrivateKey, createPublicKey, diffieHellman, type KeyObject } from "node:crypto";
import { isAllZero } from "../_bytes.ts";

/** Length of an X25519 key or shared secret. */
export const X25519_LENGTH = 32;

/** DER prefix of a PKCS #8 X25519 private key (RFC 8410); the 32 key bytes follow. */
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

/** DER prefix of an SPKI X25519 public key (RFC 8410); the 32 key bytes follow. */
const SPKI_PREFIX = Uint8Array.of(
  0x30,
  0x2a,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x6e,
  0x03,
  0x21,
  0x00,
);

/** An X25519 private key as `node:crypto` holds it. */
export type X25519PrivateKey = KeyObject;

/**
 * Imports 32 private key bytes (RFC 7748 clamps them when used).
 *
 * @throws {RangeError} for a key that is not 32 bytes.
 */
export function x25519PrivateKey(secret: Uint8Array): X25519PrivateKey {
  checkLength(secret, "private key");
  const der = withPrefix(PKCS8_PREFIX, secret);
  try {
    return createPrivateKey({ key: der as Buffer, format: "der", type: "pkcs8" });
  } finally {
    der.fill(0);
  }
}

/** The 32-byte serialized public key of a private key. */
export function x25519PublicKey(privateKey: X25519PrivateKey): Uint8Array {
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  if (spki.length !== SPKI_PREFIX.length + X25519_LENGTH) {
    throw new TypeError(
      `Cannot read X25519 public key: expected a ${
        SPKI_PREFIX.length + X25519_LENGTH
      }-byte SPKI, found ${spki.length} bytes`,
    );
  }
  return new Uint8Array(spki.subarray(SPKI_PREFIX.length));
}

/** A serialized X25519 public key imported as `node:crypto` holds it. */
export type X25519PeerKey = KeyObject;

/** Most public keys {@linkcode x25519PeerKey} keeps imported. */
const MAX_PEER_KEYS = 256;
const peerKeys = new Map<string, X25519PeerKey>();

/**
 * A public key a sender seals to again and again (a recipient's), imported once: the last
 * {@linkcode MAX_PEER_KEYS} are kept, keyed by their bytes (public data).
 *
 * @throws {RangeError} for a public key that is not 32 bytes.
 */
export function x25519PeerKey(publicKey: Uint8Array): X25519PeerKey {
  checkLength(publicKey, "public key");
  let name = "";
  for (const b of publicKey) name += String.fromCharCode(b);
  let peer = peerKeys.get(name);
  if (!peer) {
    peer = importPublicKey(publicKey);
    if (peerKeys.size >= MAX_PEER_KEYS) peerKeys.delete(peerKeys.keys().next().value!);
    peerKeys.set(name, peer);
  }
  return peer;
}

function importPublicKey(publicKey: Uint8Array): X25519PeerKey {
  return createPublicKey({
    key: withPrefix(SPKI_PREFIX, publicKey) as Buffer,
    format: "der",
    type: "spki",
  });
}

/**
 * `DH(sk, pk)`: the X25519 shared secret of a private key and a public key (serialized, or
 * imported by {@linkcode x25519PeerKey}).
 *
 * @throws {RangeError} for a public key that is not 32 bytes, or a small-order one (the
 * output is all zero).
 */
export function x25519SharedSecret(
  privateKey: X25519PrivateKey,
  publicKey: Uint8Array | X25519PeerKey,
): Uint8Array {
  let peer: X25519PeerKey;
  if (publicKey instanceof Uint8Array) {
    checkLength(publicKey, "public key");
    peer = importPublicKey(publicKey);
  } else peer = publicKey;
  const secret = new Uint8Array(diffieHellman({ privateKey, publicKey: peer }));
  if (secret.length !== X25519_LENGTH || isAllZero(secret)) {
    throw new RangeError("Cannot run X25519: the public key has small order (all-zero secret)");
  }
  return secret;
}

function checkLength(key: Uint8Array, what: string): void {
  if (!(key instanceof Uint8Array) || key.length !== X25519_LENGTH) {
    throw new RangeError(
      `Cannot use X25519 ${what}: expected ${X25519_LENGTH} bytes, found ${
        key instanceof Uint8Array ? key.length : typeof key
      }`,
    );
  }
}

function withPrefix(prefix: Uint8Array, key: Uint8Array): Uint8Array {
  const out = new Uint8Array(prefix.length + key.length);
  out.set(prefix);
  out.set(key, prefix.length);
  return out;
}
