/**
 * HPKE (RFC 9180) suites and key pairs, over `@hpke/core` (X25519 via the runtime's WebCrypto) and
 * `@hpke/chacha20poly1305`.
 *
 * The network uses one KEM, DHKEM(X25519, HKDF-SHA256), one KDF, HKDF-SHA256, and two AEADs:
 * AES-128-GCM (the default) and ChaCha20-Poly1305. The export-only AEAD is known too, so the
 * RFC vectors can be run, but it cannot seal and Oblivious HTTP refuses it.
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
 * } from "@net/consumer/crypto";
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

// `@hpke/core`'s X25519 KEM runs on the runtime's WebCrypto X25519 (native in Deno): 3× faster
// per seal+open than the pure-JavaScript `@hpke/dhkem-x25519`, and wire-identical (RFC 9180).
import { Aes128Gcm, CipherSuite, DhkemX25519HkdfSha256, ExportOnly, HkdfSha256 } from "@hpke/core";
import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { x25519 } from "@noble/curves/ed25519.js";
import { ReasonError } from "../errors.ts";
import { bytesLabel, copy, hex16 } from "./_bytes.ts";

/** KEM id of DHKEM(X25519, HKDF-SHA256) (RFC 9180 §7.1). */
export const KEM_X25519_HKDF_SHA256 = 0x0020;
/** KDF id of HKDF-SHA256 (RFC 9180 §7.2). */
export const KDF_HKDF_SHA256 = 0x0001;
/** AEAD id of AES-128-GCM (RFC 9180 §7.3), the network's default. */
export const AEAD_AES_128_GCM = 0x0001;
/** AEAD id of ChaCha20-Poly1305 (RFC 9180 §7.3). */
export const AEAD_CHACHA20_POLY1305 = 0x0003;
/** AEAD id of the export-only mode (RFC 9180 §7.3); cannot seal. */
export const AEAD_EXPORT_ONLY = 0xffff;

/** The three algorithm ids that name an HPKE suite. */
export interface SuiteIds {
  /** KEM id, e.g. {@linkcode KEM_X25519_HKDF_SHA256}. */
  readonly kem: number;
  /** KDF id, e.g. {@linkcode KDF_HKDF_SHA256}. */
  readonly kdf: number;
  /** AEAD id, e.g. {@linkcode AEAD_AES_128_GCM}. */
  readonly aead: number;
}

/** Sizes and name of a KEM. */
export interface KemInfo {
  /** The KEM id. */
  readonly id: number;
  /** Human-readable name, as in RFC 9180. */
  readonly name: string;
  /** `Npk`: bytes of a serialized public key. */
  readonly publicKeyLength: number;
  /** `Nsk`: bytes of a serialized private key. */
  readonly privateKeyLength: number;
  /** `Nenc`: bytes of an encapsulated key. */
  readonly encLength: number;
}

/** Sizes and name of a KDF. */
export interface KdfInfo {
  /** The KDF id. */
  readonly id: number;
  /** Human-readable name. */
  readonly name: string;
  /** `Nh`: output bytes of the hash. */
  readonly hashLength: number;
}

/** Sizes and name of an AEAD. */
export interface AeadInfo {
  /** The AEAD id. */
  readonly id: number;
  /** Human-readable name. */
  readonly name: string;
  /** `Nk`: key bytes (0 for export-only). */
  readonly keyLength: number;
  /** `Nn`: nonce bytes (0 for export-only). */
  readonly nonceLength: number;
  /** `Nt`: authentication tag bytes (0 for export-only). */
  readonly tagLength: number;
  /** Whether the AEAD can seal and open (false for export-only). */
  readonly canSeal: boolean;
}

/** A supported HPKE suite: its ids, sizes, and the `@hpke/core` suite that runs it. */
export interface HpkeSuite {
  /** The algorithm ids. */
  readonly ids: SuiteIds;
  /** `"DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM"` and so on. */
  readonly name: string;
  /** The KEM. */
  readonly kem: KemInfo;
  /** The KDF. */
  readonly kdf: KdfInfo;
  /** The AEAD. */
  readonly aead: AeadInfo;
  /** The `@hpke/core` cipher suite (sender and recipient contexts, KDF and AEAD primitives). */
  readonly cipherSuite: CipherSuite;
}

/** Why an HPKE operation was refused. */
export type HpkeFailure = "unsupported_suite" | "invalid_key";

/** Thrown when an HPKE suite is not supported or a key cannot be used. */
export class HpkeError extends ReasonError<HpkeFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "HpkeError" as const;
}

const KEMS: ReadonlyMap<number, KemInfo> = new Map([
  [KEM_X25519_HKDF_SHA256, {
    id: KEM_X25519_HKDF_SHA256,
    name: "DHKEM(X25519, HKDF-SHA256)",
    publicKeyLength: 32,
    privateKeyLength: 32,
    encLength: 32,
  }],
]);

const KDFS: ReadonlyMap<number, KdfInfo> = new Map([
  [KDF_HKDF_SHA256, { id: KDF_HKDF_SHA256, name: "HKDF-SHA256", hashLength: 32 }],
]);

const AEADS: ReadonlyMap<number, AeadInfo> = new Map([
  [AEAD_AES_128_GCM, {
    id: AEAD_AES_128_GCM,
    name: "AES-128-GCM",
    keyLength: 16,
    nonceLength: 12,
    tagLength: 16,
    canSeal: true,
  }],
  [AEAD_CHACHA20_POLY1305, {
    id: AEAD_CHACHA20_POLY1305,
    name: "ChaCha20-Poly1305",
    keyLength: 32,
    nonceLength: 12,
    tagLength: 16,
    canSeal: true,
  }],
  [AEAD_EXPORT_ONLY, {
    id: AEAD_EXPORT_ONLY,
    name: "Export-only",
    keyLength: 0,
    nonceLength: 0,
    tagLength: 0,
    canSeal: false,
  }],
]);

/** Whether the KEM id is supported. */
export function isSupportedKem(id: number): boolean {
  return KEMS.has(id);
}

/** Whether the KDF id is supported. */
export function isSupportedKdf(id: number): boolean {
  return KDFS.has(id);
}

/** Whether the AEAD id is supported (including export-only). */
export function isSupportedAead(id: number): boolean {
  return AEADS.has(id);
}

/**
 * Returns the KEM's sizes and name.
 *
 * @throws {HpkeError} with reason `unsupported_suite` for an unknown id.
 */
export function kemInfo(id: number): KemInfo {
  const kem = KEMS.get(id);
  if (!kem) {
    throw new HpkeError(
      "unsupported_suite",
      `Cannot use HPKE KEM ${hex16(id)}: not supported (supported: ${supportedList(KEMS)})`,
    );
  }
  return kem;
}

/**
 * Returns the AEAD's sizes and name.
 *
 * @throws {HpkeError} with reason `unsupported_suite` for an unknown id.
 */
export function aeadInfo(id: number): AeadInfo {
  const aead = AEADS.get(id);
  if (!aead) {
    throw new HpkeError(
      "unsupported_suite",
      `Cannot use HPKE AEAD ${hex16(id)}: not supported (supported: ${supportedList(AEADS)})`,
    );
  }
  return aead;
}

const suites = new Map<string, HpkeSuite>();

/**
 * Returns the suite for the ids (one instance per suite, created on first use).
 *
 * @throws {HpkeError} with reason `unsupported_suite` when any id is unknown.
 */
export function hpkeSuite(ids: SuiteIds): HpkeSuite {
  const key = `${ids.kem}/${ids.kdf}/${ids.aead}`;
  const cached = suites.get(key);
  if (cached) return cached;
  const kem = KEMS.get(ids.kem);
  const kdf = KDFS.get(ids.kdf);
  const aead = AEADS.get(ids.aead);
  if (!kem || !kdf || !aead) {
    const unknown = [
      !kem && `KEM ${hex16(ids.kem)}`,
      !kdf && `KDF ${hex16(ids.kdf)}`,
      !aead && `AEAD ${hex16(ids.aead)}`,
    ].filter(Boolean).join(", ");
    throw new HpkeError(
      "unsupported_suite",
      `Cannot use HPKE suite (KEM ${hex16(ids.kem)}, KDF ${hex16(ids.kdf)}, AEAD ${
        hex16(ids.aead)
      }): ${unknown} not supported`,
      {
        details: `supported: KEM ${supportedList(KEMS)}; KDF ${supportedList(KDFS)}; AEAD ${
          supportedList(AEADS)
        }`,
      },
    );
  }
  const cipherSuite = new CipherSuite({
    kem: new DhkemX25519HkdfSha256(),
    kdf: new HkdfSha256(),
    aead: ids.aead === AEAD_AES_128_GCM
      ? new Aes128Gcm()
      : ids.aead === AEAD_CHACHA20_POLY1305
      ? new Chacha20Poly1305()
      : new ExportOnly(),
  });
  const suite: HpkeSuite = {
    ids: { kem: ids.kem, kdf: ids.kdf, aead: ids.aead },
    name: `${kem.name}, ${kdf.name}, ${aead.name}`,
    kem,
    kdf,
    aead,
    cipherSuite,
  };
  suites.set(key, suite);
  return suite;
}

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
   * @default {systemRandom}
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

function supportedList(map: ReadonlyMap<number, { name: string }>): string {
  return [...map.values()].map((entry) => entry.name).join(", ");
}
