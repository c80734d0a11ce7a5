/**
 * Key endorsements: a provider's serving key (secp256k1) vouches for an HPKE key
 * configuration with an EIP-191 signature over a domain-separated message. The exact bytes
 * are specified in `docs/protocol.md` §5.
 *
 * @example Endorse a key configuration and verify it
 * ```ts
 * import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
 * import { endorseKey, verifyEndorsement } from "@net/consumer/endorsement";
 *
 * const servingKey = privateKeyToAccount(generatePrivateKey());
 * const now = new Date();
 * const endorsement = await endorseKey(servingKey, {
 *   keyConfig: new Uint8Array([1, 0, 32]),
 *   expiresAt: Math.floor(now.getTime() / 1000) + 3600,
 * });
 * const signer = await verifyEndorsement(endorsement, { now, signer: servingKey.address });
 * console.assert(signer === servingKey.address.toLowerCase());
 * ```
 *
 * @module
 */

import { type Address, bytesToHex, type Hex, hexToBytes, isHex, recoverMessageAddress } from "viem";
import { abbreviate, ReasonError } from "../errors.ts";
import { equalBytes } from "./_bytes.ts";
import { checkNow, checkPositiveSeconds } from "./_time.ts";

/** ASCII domain tag that starts every endorsement message. */
export const ENDORSEMENT_DOMAIN = "net-consumer/key-endorsement/v1";

/** Default upper bound on how far in the future an endorsement may expire: 7 days. */
export const DEFAULT_MAX_ENDORSEMENT_LIFETIME_SECONDS = 7 * 24 * 3600;

const NONCE_LENGTH = 32;
const encoder = new TextEncoder();

/** A serving key's signature over an HPKE key configuration, an expiry and an optional nonce. */
export interface KeyEndorsement {
  /** One RFC 9458 §3 key configuration, as bytes. */
  readonly keyConfig: Uint8Array;
  /** Unix seconds after which the endorsement is void. */
  readonly expiresAt: number;
  /** The 32-byte nonce the endorsement answers (TEE tier), or `null`. */
  readonly nonce: Uint8Array | null;
  /** 65-byte EIP-191 signature `r ‖ s ‖ v`, hex. */
  readonly signature: Hex;
}

/** The JSON form of a {@linkcode KeyEndorsement} (`docs/protocol.md` §5). */
export interface KeyEndorsementJson {
  /** Key configuration, `0x` hex. */
  key_config: string;
  /** Unix seconds. */
  expires_at: number;
  /** 32-byte nonce as `0x` hex, or `null`. */
  nonce: string | null;
  /** 65-byte signature, `0x` hex. */
  signature: string;
}

/** Why an endorsement was refused. */
export type EndorsementFailure =
  | "malformed"
  | "bad_signature"
  | "expired"
  | "lifetime_too_long"
  | "nonce_mismatch"
  | "wrong_signer";

/** Thrown when an endorsement cannot be created, parsed or verified. */
export class EndorsementError extends ReasonError<EndorsementFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "EndorsementError" as const;
}

/** The fields an endorsement signs. */
export interface EndorsementFields {
  /** One RFC 9458 §3 key configuration. */
  keyConfig: Uint8Array;
  /** Unix seconds after which the endorsement is void. */
  expiresAt: number;
  /** A 32-byte nonce to answer (TEE tier). */
  nonce?: Uint8Array | null;
}

function checkFields(fields: EndorsementFields): void {
  const { keyConfig, expiresAt, nonce } = fields;
  if (!(keyConfig instanceof Uint8Array) || keyConfig.length === 0 || keyConfig.length > 0xffff) {
    throw new EndorsementError(
      "malformed",
      `Cannot encode endorsement: key configuration must be 1 to 65535 bytes, found ${
        keyConfig instanceof Uint8Array ? keyConfig.length : typeof keyConfig
      }`,
    );
  }
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0) {
    throw new EndorsementError(
      "malformed",
      `Cannot encode endorsement: expiry must be a non-negative integer of Unix seconds, found ${expiresAt}`,
    );
  }
  if (nonce != null && (!(nonce instanceof Uint8Array) || nonce.length !== NONCE_LENGTH)) {
    throw new EndorsementError(
      "malformed",
      `Cannot encode endorsement: nonce must be ${NONCE_LENGTH} bytes, found ${
        nonce instanceof Uint8Array ? nonce.length : typeof nonce
      }`,
    );
  }
}

/**
 * Returns the exact message bytes an endorsement signs (`docs/protocol.md` §5), before the
 * EIP-191 prefix.
 *
 * @throws {EndorsementError} when a field is out of range.
 */
export function endorsementMessage(fields: EndorsementFields): Uint8Array {
  checkFields(fields);
  const domain = encoder.encode(ENDORSEMENT_DOMAIN);
  const nonce = fields.nonce ?? null;
  const length = domain.length + 1 + 8 + 1 + (nonce ? NONCE_LENGTH : 0) + 2 +
    fields.keyConfig.length;
  const out = new Uint8Array(length);
  const view = new DataView(out.buffer);
  let at = 0;
  out.set(domain, at);
  at += domain.length;
  out[at++] = 0;
  view.setBigUint64(at, BigInt(fields.expiresAt));
  at += 8;
  out[at++] = nonce ? 1 : 0;
  if (nonce) {
    out.set(nonce, at);
    at += NONCE_LENGTH;
  }
  view.setUint16(at, fields.keyConfig.length);
  at += 2;
  out.set(fields.keyConfig, at);
  return out;
}

/** Anything that signs EIP-191 messages the way viem's local accounts do. */
export interface MessageSigner {
  /** Signs `message.raw` as an EIP-191 personal message. */
  signMessage(args: { message: { raw: Uint8Array } }): Promise<Hex>;
}

/**
 * Signs an endorsement with the serving key.
 *
 * @throws {EndorsementError} when a field is out of range.
 */
export async function endorseKey(
  signer: MessageSigner,
  fields: EndorsementFields,
): Promise<KeyEndorsement> {
  const raw = endorsementMessage(fields);
  const signature = await signer.signMessage({ message: { raw } });
  return {
    keyConfig: fields.keyConfig.slice(),
    expiresAt: fields.expiresAt,
    nonce: fields.nonce ? fields.nonce.slice() : null,
    signature,
  };
}

/** Options of {@linkcode verifyEndorsement}. */
export interface VerifyEndorsementOptions {
  /** The current time: a valid `Date` (an Invalid Date is a `TypeError`). */
  now: Date;
  /**
   * The nonce the endorsement must answer. `null` or absent: the endorsement must carry none.
   */
  nonce?: Uint8Array | null;
  /** When given, the signer must be this address (compared case-insensitively). */
  signer?: Address;
  /**
   * Largest accepted distance between `now` and the expiry, in seconds: a positive integer
   * (`NaN`, `Infinity`, fractions, zero and negatives are a `RangeError`; no value turns the
   * check off).
   *
   * @default {7 days}
   */
  maxLifetimeSeconds?: number;
}

/**
 * Verifies an endorsement and returns its signer's address (lower case).
 *
 * @throws {EndorsementError} with `reason` `malformed`, `bad_signature`, `expired`,
 * `lifetime_too_long`, `nonce_mismatch` or `wrong_signer`.
 * @throws {TypeError} when `now` is not a valid `Date`.
 * @throws {RangeError} when `maxLifetimeSeconds` is not a positive integer.
 */
export async function verifyEndorsement(
  endorsement: KeyEndorsement,
  options: VerifyEndorsementOptions,
): Promise<Address> {
  const raw = endorsementMessage(endorsement);
  if (!isHex(endorsement.signature) || endorsement.signature.length !== 2 + 130) {
    throw new EndorsementError(
      "malformed",
      `Cannot verify endorsement: signature must be 65 bytes of hex, found ${
        abbreviate(String(endorsement.signature), 14)
      }`,
    );
  }
  // Checked first: an Invalid Date or a NaN/Infinity bound would turn both freshness checks
  // below into comparisons with NaN, which never refuse.
  const now = checkNow(options.now, "verifyEndorsement");
  const maxLifetime = checkPositiveSeconds(
    options.maxLifetimeSeconds ?? DEFAULT_MAX_ENDORSEMENT_LIFETIME_SECONDS,
    "maxLifetimeSeconds",
    "verifyEndorsement",
  );
  const nowSeconds = Math.floor(now.getTime() / 1000);
  if (endorsement.expiresAt <= nowSeconds) {
    throw new EndorsementError(
      "expired",
      `Cannot verify endorsement: it expired at ${
        new Date(endorsement.expiresAt * 1000).toISOString()
      }, now is ${now.toISOString()}`,
    );
  }
  if (endorsement.expiresAt - nowSeconds > maxLifetime) {
    throw new EndorsementError(
      "lifetime_too_long",
      `Cannot verify endorsement: it expires in ${
        endorsement.expiresAt - nowSeconds
      } s, more than the allowed ${maxLifetime} s`,
    );
  }
  const expectedNonce = options.nonce ?? null;
  if (!sameBytes(expectedNonce, endorsement.nonce)) {
    throw new EndorsementError(
      "nonce_mismatch",
      `Cannot verify endorsement: it answers nonce ${describeNonce(endorsement.nonce)}, expected ${
        describeNonce(expectedNonce)
      }`,
    );
  }
  let signer: Address;
  try {
    signer = await recoverMessageAddress({ message: { raw }, signature: endorsement.signature });
  } catch (cause) {
    throw new EndorsementError(
      "bad_signature",
      "Cannot verify endorsement: the signature does not recover to a public key",
      { cause },
    );
  }
  const recovered = signer.toLowerCase() as Address;
  if (options.signer && options.signer.toLowerCase() !== recovered) {
    throw new EndorsementError(
      "wrong_signer",
      `Cannot verify endorsement: signed by ${recovered}, expected ${options.signer.toLowerCase()}`,
    );
  }
  return recovered;
}

function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  return a === null || b === null ? a === b : equalBytes(a, b);
}

function describeNonce(nonce: Uint8Array | null): string {
  return nonce ? abbreviate(bytesToHex(nonce), 12) : "none";
}

/** Converts an endorsement to its JSON form (`docs/protocol.md` §5). */
export function endorsementToJson(endorsement: KeyEndorsement): KeyEndorsementJson {
  return {
    key_config: bytesToHex(endorsement.keyConfig),
    expires_at: endorsement.expiresAt,
    nonce: endorsement.nonce ? bytesToHex(endorsement.nonce) : null,
    signature: endorsement.signature.toLowerCase(),
  };
}

/**
 * Parses and strictly validates the JSON form of an endorsement. The signature is not
 * checked here; call {@linkcode verifyEndorsement}.
 *
 * @throws {EndorsementError} with reason `malformed`, naming the offending field.
 */
export function endorsementFromJson(value: unknown): KeyEndorsement {
  const fail = (what: string): never => {
    throw new EndorsementError("malformed", `Cannot parse endorsement: ${what}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return fail(`expected a JSON object, found ${Array.isArray(value) ? "array" : typeof value}`);
  }
  const record = value as Record<string, unknown>;
  const allowed = new Set(["key_config", "expires_at", "nonce", "signature"]);
  for (const key of Object.keys(record)) {
    if (!allowed.has(key)) fail(`unknown field "${key}"`);
  }
  const hexField = (name: string, bytes?: number): Uint8Array => {
    const field = record[name];
    if (typeof field !== "string" || !/^0x([0-9a-fA-F]{2})+$/.test(field)) {
      return fail(`"${name}" must be 0x-prefixed hex, found ${abbreviate(String(field), 14)}`);
    }
    const decoded = hexToBytes(field as Hex);
    if (bytes !== undefined && decoded.length !== bytes) {
      fail(`"${name}" must be ${bytes} bytes, found ${decoded.length}`);
    }
    return decoded;
  };
  const keyConfig = hexField("key_config");
  const expiresAt = record.expires_at;
  if (typeof expiresAt !== "number" || !Number.isSafeInteger(expiresAt) || expiresAt < 0) {
    fail(`"expires_at" must be a non-negative integer, found ${JSON.stringify(expiresAt)}`);
  }
  const nonce = record.nonce === null || record.nonce === undefined
    ? null
    : hexField("nonce", NONCE_LENGTH);
  const signature = bytesToHex(hexField("signature", 65));
  const endorsement = { keyConfig, expiresAt: expiresAt as number, nonce, signature };
  checkFields(endorsement);
  return endorsement;
}
