/**
 * Oblivious HTTP key configurations (RFC 9458 §3): encode, decode and strictly validate one
 * configuration, and the `application/ohttp-keys` list of them (each with a 2-byte length).
 *
 * ```
 * Key Config {
 *   Key Identifier (8),
 *   HPKE KEM ID (16),
 *   HPKE Public Key (Npk * 8),
 *   HPKE Symmetric Algorithms Length (16) = 4..65532,
 *   HPKE Symmetric Algorithms (32) ...,   // KDF ID (16), AEAD ID (16)
 * }
 * ```
 *
 * Decoding is strict (`docs/crypto.md`): the KEM must be supported (its public key length is
 * known only then), every listed suite must be supported and able to seal, no suite may be
 * listed twice, there must be at least one, and no byte may follow.
 *
 * @example Publish a gateway key and read it back
 * ```ts
 * import { generateKeyPair } from "@net/consumer/hpke";
 * import { createGatewayKey, decodeKeyConfigList, encodeKeyConfigList } from "@net/consumer/ohttp";
 *
 * const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
 * const body = encodeKeyConfigList([key.config]); // served as application/ohttp-keys
 * const [config] = decodeKeyConfigList(body);
 * console.assert(config.keyId === 1 && config.suites.length === 2);
 * ```
 *
 * @module
 */

import { ReasonError } from "../../errors.ts";
import { bytesLabel, concat, equalBytes, hex16, u16 } from "../_bytes.ts";
import {
  AEAD_AES_128_GCM,
  AEAD_CHACHA20_POLY1305,
  aeadInfo,
  isSupportedAead,
  isSupportedKdf,
  isSupportedKem,
  KDF_HKDF_SHA256,
  kemInfo,
} from "../hpke/suite.ts";
import type { HpkeKeyPair } from "../hpke/key_pair.ts";

/** Media type of a key configuration list (RFC 9458 §9.1). */
export const KEY_CONFIG_MEDIA_TYPE = "application/ohttp-keys";

/** One symmetric suite a key configuration offers. */
export interface SymmetricSuite {
  /** KDF id, e.g. {@linkcode KDF_HKDF_SHA256}. */
  readonly kdf: number;
  /** AEAD id, e.g. {@linkcode AEAD_AES_128_GCM}. */
  readonly aead: number;
}

/** A decoded key configuration. */
export interface KeyConfig {
  /** Key identifier, 0 to 255. */
  readonly keyId: number;
  /** KEM id. */
  readonly kemId: number;
  /** Serialized public key, `Npk` bytes for the KEM. */
  readonly publicKey: Uint8Array;
  /** The symmetric suites offered, in order of the server's preference; at least one. */
  readonly suites: readonly SymmetricSuite[];
}

/** The suites a gateway offers by default: AES-128-GCM first, then ChaCha20-Poly1305. */
export const DEFAULT_SUITES: readonly SymmetricSuite[] = Object.freeze([
  Object.freeze({ kdf: KDF_HKDF_SHA256, aead: AEAD_AES_128_GCM }),
  Object.freeze({ kdf: KDF_HKDF_SHA256, aead: AEAD_CHACHA20_POLY1305 }),
]);

/** Why a key configuration was refused. */
export type KeyConfigFailure = "malformed" | "unsupported_kem" | "unsupported_suite";

/** Thrown when a key configuration (or a list of them) cannot be encoded or decoded. */
export class KeyConfigError extends ReasonError<KeyConfigFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "KeyConfigError" as const;
}

/**
 * Checks a configuration's fields; returns nothing, throws on the first problem.
 *
 * @throws {KeyConfigError}
 */
export function validateKeyConfig(config: KeyConfig, action = "use key configuration"): void {
  const fail = (reason: KeyConfigFailure, what: string): never => {
    throw new KeyConfigError(reason, `Cannot ${action}: ${what}`);
  };
  if (!Number.isInteger(config.keyId) || config.keyId < 0 || config.keyId > 255) {
    fail("malformed", `key id must be an integer from 0 to 255, found ${config.keyId}`);
  }
  if (!isSupportedKem(config.kemId)) {
    fail(
      "unsupported_kem",
      `KEM ${hex16(config.kemId)} is not supported (supported: 0x0020 DHKEM(X25519, HKDF-SHA256))`,
    );
  }
  const kem = kemInfo(config.kemId);
  if (
    !(config.publicKey instanceof Uint8Array) || config.publicKey.length !== kem.publicKeyLength
  ) {
    fail(
      "malformed",
      `public key for ${kem.name} must be ${bytesLabel(kem.publicKeyLength)}, found ${
        config.publicKey instanceof Uint8Array ? bytesLabel(config.publicKey.length) : "none"
      }`,
    );
  }
  if (!Array.isArray(config.suites) || config.suites.length === 0) {
    fail("malformed", "it offers no symmetric suite, expected at least one");
  }
  if (config.suites.length > 16383) {
    fail("malformed", `it offers ${config.suites.length} suites, at most 16383 fit`);
  }
  const seen = new Set<string>();
  for (const suite of config.suites) {
    if (!isSupportedKdf(suite.kdf)) {
      fail("unsupported_suite", `KDF ${hex16(suite.kdf)} is not supported (supported: 0x0001)`);
    }
    if (!isSupportedAead(suite.aead) || !aeadInfo(suite.aead).canSeal) {
      fail(
        "unsupported_suite",
        `AEAD ${hex16(suite.aead)} is not supported (supported: 0x0001 AES-128-GCM, ` +
          "0x0003 ChaCha20-Poly1305)",
      );
    }
    const key = `${suite.kdf}/${suite.aead}`;
    if (seen.has(key)) {
      fail(
        "malformed",
        `suite (KDF ${hex16(suite.kdf)}, AEAD ${hex16(suite.aead)}) is listed twice`,
      );
    }
    seen.add(key);
  }
}

/**
 * Encodes one key configuration.
 *
 * @throws {KeyConfigError} when a field is invalid (see {@linkcode validateKeyConfig}).
 */
export function encodeKeyConfig(config: KeyConfig): Uint8Array {
  validateKeyConfig(config, "encode key configuration");
  const suites = new Uint8Array(config.suites.length * 4);
  config.suites.forEach((suite, i) => {
    suites.set(u16(suite.kdf), i * 4);
    suites.set(u16(suite.aead), i * 4 + 2);
  });
  return concat(
    Uint8Array.of(config.keyId),
    u16(config.kemId),
    config.publicKey,
    u16(suites.length),
    suites,
  );
}

/**
 * Decodes and strictly validates one key configuration; no byte may follow it.
 *
 * @throws {KeyConfigError} with reason `malformed` (lengths, trailing bytes, duplicates),
 * `unsupported_kem` or `unsupported_suite`.
 */
export function decodeKeyConfig(bytes: Uint8Array): KeyConfig {
  if (!(bytes instanceof Uint8Array)) {
    throw new KeyConfigError(
      "malformed",
      `Cannot decode key configuration: expected bytes, found ${typeof bytes}`,
    );
  }
  const { config, next } = readKeyConfig(bytes, 0, bytes.length, "Cannot decode key configuration");
  if (next !== bytes.length) {
    throw new KeyConfigError(
      "malformed",
      `Cannot decode key configuration: ${
        bytesLabel(bytes.length - next)
      } follow the ${next}-byte configuration, expected none`,
    );
  }
  return config;
}

/**
 * Encodes an `application/ohttp-keys` list: each configuration prefixed by its length as a
 * 16-bit integer (RFC 9458 §3.2).
 *
 * @throws {KeyConfigError} when the list is empty or a configuration is invalid.
 */
export function encodeKeyConfigList(configs: readonly KeyConfig[]): Uint8Array {
  if (configs.length === 0) {
    throw new KeyConfigError("malformed", "Cannot encode key configuration list: it is empty");
  }
  const parts: Uint8Array[] = [];
  for (const config of configs) {
    const encoded = encodeKeyConfig(config);
    parts.push(u16(encoded.length), encoded);
  }
  return concat(...parts);
}

/**
 * Decodes and strictly validates an `application/ohttp-keys` list. Every entry must be a
 * valid, supported configuration whose length prefix matches it exactly; the list must not be
 * empty.
 *
 * @throws {KeyConfigError} naming the entry that failed.
 */
export function decodeKeyConfigList(bytes: Uint8Array): KeyConfig[] {
  if (!(bytes instanceof Uint8Array)) {
    throw new KeyConfigError(
      "malformed",
      `Cannot decode key configuration list: expected bytes, found ${typeof bytes}`,
    );
  }
  if (bytes.length === 0) {
    throw new KeyConfigError("malformed", "Cannot decode key configuration list: it is empty");
  }
  const configs: KeyConfig[] = [];
  let at = 0;
  while (at < bytes.length) {
    const action = `Cannot decode key configuration list entry ${configs.length}`;
    if (at + 2 > bytes.length) {
      throw new KeyConfigError(
        "malformed",
        `${action}: its 2-byte length is cut off after ${bytesLabel(bytes.length - at)}`,
      );
    }
    const length = (bytes[at] << 8) | bytes[at + 1];
    const start = at + 2;
    if (start + length > bytes.length) {
      throw new KeyConfigError(
        "malformed",
        `${action}: length says ${bytesLabel(length)}, only ${
          bytesLabel(bytes.length - start)
        } remain`,
      );
    }
    const { config, next } = readKeyConfig(bytes, start, start + length, action);
    if (next !== start + length) {
      throw new KeyConfigError(
        "malformed",
        `${action}: length says ${bytesLabel(length)}, the configuration takes ${
          bytesLabel(next - start)
        }`,
      );
    }
    configs.push(config);
    at = start + length;
  }
  return configs;
}

/** A gateway's key: the configuration it publishes and the key pair behind it. */
export interface GatewayKey {
  /** The published configuration. */
  readonly config: KeyConfig;
  /** The key pair whose public key the configuration carries. */
  readonly keyPair: HpkeKeyPair;
}

/** Options of {@linkcode createGatewayKey}. */
export interface CreateGatewayKeyOptions {
  /** Key identifier, 0 to 255. */
  keyId: number;
  /**
   * The symmetric suites to offer, in order of preference.
   *
   * @default {DEFAULT_SUITES} (AES-128-GCM, then ChaCha20-Poly1305)
   */
  suites?: readonly SymmetricSuite[];
}

/**
 * Pairs a key pair with the configuration that publishes it.
 *
 * @throws {KeyConfigError} when the key id or a suite is invalid.
 */
export function createGatewayKey(
  keyPair: HpkeKeyPair,
  options: CreateGatewayKeyOptions,
): GatewayKey {
  const config: KeyConfig = {
    keyId: options.keyId,
    kemId: keyPair.kemId,
    publicKey: keyPair.publicKey.slice(),
    suites: (options.suites ?? DEFAULT_SUITES).map((suite) => ({
      kdf: suite.kdf,
      aead: suite.aead,
    })),
  };
  validateKeyConfig(config, "create gateway key");
  return { config, keyPair };
}

/**
 * Checks that a gateway key's configuration matches its key pair.
 *
 * @throws {KeyConfigError} with reason `malformed` when the public keys or KEMs differ.
 */
export function validateGatewayKey(key: GatewayKey): void {
  validateKeyConfig(key.config, `use gateway key ${key.config.keyId}`);
  if (
    key.keyPair.kemId !== key.config.kemId ||
    !equalBytes(key.keyPair.publicKey, key.config.publicKey)
  ) {
    throw new KeyConfigError(
      "malformed",
      `Cannot use gateway key ${key.config.keyId}: its key pair does not match the configuration's public key`,
    );
  }
}

function readKeyConfig(
  bytes: Uint8Array,
  start: number,
  end: number,
  action: string,
): { config: KeyConfig; next: number } {
  const fail = (reason: KeyConfigFailure, what: string): never => {
    throw new KeyConfigError(reason, `${action}: ${what}`);
  };
  if (end - start < 3) {
    fail("malformed", `it is ${bytesLabel(end - start)}, the key id and KEM id alone take 3`);
  }
  const keyId = bytes[start];
  const kemId = (bytes[start + 1] << 8) | bytes[start + 2];
  if (!isSupportedKem(kemId)) {
    fail(
      "unsupported_kem",
      `KEM ${hex16(kemId)} is not supported (supported: 0x0020 DHKEM(X25519, HKDF-SHA256))`,
    );
  }
  const kem = kemInfo(kemId);
  let at = start + 3;
  if (at + kem.publicKeyLength + 2 > end) {
    fail(
      "malformed",
      `it is ${bytesLabel(end - start)}, too short for a ${
        bytesLabel(kem.publicKeyLength)
      } ${kem.name} public key and the suites length`,
    );
  }
  const publicKey = bytes.slice(at, at + kem.publicKeyLength);
  at += kem.publicKeyLength;
  const suitesLength = (bytes[at] << 8) | bytes[at + 1];
  at += 2;
  if (suitesLength < 4 || suitesLength % 4 !== 0) {
    fail(
      "malformed",
      `symmetric suites length is ${suitesLength}, expected a positive multiple of 4`,
    );
  }
  if (at + suitesLength > end) {
    fail(
      "malformed",
      `symmetric suites length says ${bytesLabel(suitesLength)}, only ${
        bytesLabel(end - at)
      } remain`,
    );
  }
  const suites: SymmetricSuite[] = [];
  for (let i = 0; i < suitesLength; i += 4) {
    suites.push({
      kdf: (bytes[at + i] << 8) | bytes[at + i + 1],
      aead: (bytes[at + i + 2] << 8) | bytes[at + i + 3],
    });
  }
  at += suitesLength;
  const config: KeyConfig = { keyId, kemId, publicKey, suites };
  validateKeyConfig(config, action.replace(/^Cannot /, ""));
  return { config, next: at };
}
