/**
 * HPKE key pairs: generate, import (from the serialized private key), derive (RFC 9180
 * §7.1.3), and the random source the project's crypto draws from.
 *
 * @module
 */

import { DhkemX25519HkdfSha256 } from "@hpke/core";
import { x25519 } from "@noble/curves/ed25519.js";
import { bytesLabel, copy } from "../_bytes.ts";
import { HpkeError, KEM_X25519_HKDF_SHA256, kemInfo } from "./suite.ts";

/** A KEM key pair. The private key stays inside; {@linkcode HpkeKeyPair.exportPrivateKey} copies it out. */
export interface HpkeKeyPair {
  /** The KEM the keys belong to. */
  readonly kemId: number;
  /** The serialized public key (`Npk` bytes), as it appears in a key configuration. */
  readonly publicKey: Uint8Array;
  /** The keys in the form `@hpke/core` takes (`recipientKey`, `ekm`). */
  readonly keys: CryptoKeyPair;
  /** Returns a copy of the serialized private key (`Nsk` bytes). Keep it secret. */
  exportPrivateKey(): Uint8Array;
}

/** A source of random bytes: returns `length` fresh random bytes. */
export type RandomSource = (length: number) => Uint8Array;

/** The default random source: `crypto.getRandomValues`. */
export const systemRandom: RandomSource = (length: number): Uint8Array =>
  crypto.getRandomValues(new Uint8Array(length));

/** Options of {@linkcode generateKeyPair}. */
export interface GenerateKeyPairOptions {
  /**
   * The KEM.
   *
   * @default {KEM_X25519_HKDF_SHA256}
   */
  kem?: number;
  /**
   * Where the private key's bytes come from.
   *
   * @default {crypto.getRandomValues}
   */
  random?: RandomSource;
}

/**
 * Generates a key pair: `Nsk` random bytes are the private key (X25519 clamps them).
 *
 * @throws {HpkeError} with reason `unsupported_suite` for an unknown KEM, `invalid_key` when
 * the random source returns the wrong number of bytes.
 */
export async function generateKeyPair(options: GenerateKeyPairOptions = {}): Promise<HpkeKeyPair> {
  const kem = kemInfo(options.kem ?? KEM_X25519_HKDF_SHA256);
  const random = options.random ?? systemRandom;
  return await importKeyPair(randomBytes(random, kem.privateKeyLength, "private key"), {
    kem: kem.id,
  });
}

/** Options of {@linkcode importKeyPair} and {@linkcode deriveKeyPair}. */
export interface KeyPairOptions {
  /**
   * The KEM.
   *
   * @default {KEM_X25519_HKDF_SHA256}
   */
  kem?: number;
}

/**
 * Loads a key pair from its serialized private key (what
 * {@linkcode HpkeKeyPair.exportPrivateKey} returned); the public key is derived from it.
 *
 * @throws {HpkeError} with reason `invalid_key` for a key of the wrong length, or
 * `unsupported_suite` for an unknown KEM.
 */
export async function importKeyPair(
  privateKey: Uint8Array,
  options: KeyPairOptions = {},
): Promise<HpkeKeyPair> {
  const kem = kemInfo(options.kem ?? KEM_X25519_HKDF_SHA256);
  if (!(privateKey instanceof Uint8Array) || privateKey.length !== kem.privateKeyLength) {
    throw new HpkeError(
      "invalid_key",
      `Cannot import ${kem.name} private key: expected ${bytesLabel(kem.privateKeyLength)}, found ${
        privateKey instanceof Uint8Array ? bytesLabel(privateKey.length) : typeof privateKey
      }`,
    );
  }
  const secret = copy(privateKey);
  const publicKey = x25519.getPublicKey(secret);
  const primitive = kemOf(kem.id);
  try {
    const keys: CryptoKeyPair = {
      privateKey: await primitive.deserializePrivateKey(copy(secret)),
      publicKey: await primitive.deserializePublicKey(copy(publicKey)),
    };
    return new KeyPair(kem.id, publicKey, keys, secret);
  } catch (cause) {
    throw new HpkeError("invalid_key", `Cannot import ${kem.name} private key`, { cause });
  }
}

/**
 * Derives a key pair deterministically from input keying material (RFC 9180 §7.1.3
 * `DeriveKeyPair`). Use it for reproducible devnet keys, never with a guessable `ikm`.
 *
 * @throws {HpkeError} with reason `invalid_key` when `ikm` is shorter than `Nsk` bytes.
 */
export async function deriveKeyPair(
  ikm: Uint8Array,
  options: KeyPairOptions = {},
): Promise<HpkeKeyPair> {
  const kem = kemInfo(options.kem ?? KEM_X25519_HKDF_SHA256);
  if (!(ikm instanceof Uint8Array) || ikm.length < kem.privateKeyLength) {
    throw new HpkeError(
      "invalid_key",
      `Cannot derive ${kem.name} key pair: input keying material must be at least ${
        bytesLabel(kem.privateKeyLength)
      }, found ${ikm instanceof Uint8Array ? bytesLabel(ikm.length) : typeof ikm}`,
    );
  }
  const primitive = kemOf(kem.id);
  let derived: CryptoKeyPair;
  try {
    derived = await primitive.deriveKeyPair(copy(ikm));
  } catch (cause) {
    throw new HpkeError("invalid_key", `Cannot derive ${kem.name} key pair`, { cause });
  }
  const secret = new Uint8Array(await primitive.serializePrivateKey(derived.privateKey)).slice();
  return await importKeyPair(secret, { kem: kem.id });
}

let x25519Kem: DhkemX25519HkdfSha256 | undefined;

function kemOf(_id: number): DhkemX25519HkdfSha256 {
  x25519Kem ??= new DhkemX25519HkdfSha256();
  return x25519Kem;
}

/**
 * Calls the random source for `length` bytes and checks what it returned.
 *
 * @throws {HpkeError} with reason `invalid_key` when the source returns the wrong length.
 */
export function randomBytes(random: RandomSource, length: number, what: string): Uint8Array {
  const bytes = random(length);
  if (!(bytes instanceof Uint8Array) || bytes.length !== length) {
    throw new HpkeError(
      "invalid_key",
      `Cannot draw ${what}: the random source returned ${
        bytes instanceof Uint8Array ? bytesLabel(bytes.length) : typeof bytes
      }, expected ${bytesLabel(length)}`,
    );
  }
  return copy(bytes);
}

// The private key lives in private fields and behind a getter, so logging a key pair shows
// only its KEM and public key.
class KeyPair implements HpkeKeyPair {
  readonly kemId: number;
  readonly publicKey: Uint8Array;
  readonly #keys: CryptoKeyPair;
  readonly #secret: Uint8Array;

  constructor(kemId: number, publicKey: Uint8Array, keys: CryptoKeyPair, secret: Uint8Array) {
    this.kemId = kemId;
    this.publicKey = publicKey;
    this.#keys = keys;
    this.#secret = secret;
  }

  get keys(): CryptoKeyPair {
    return this.#keys;
  }

  exportPrivateKey(): Uint8Array {
    return this.#secret.slice();
  }
}
