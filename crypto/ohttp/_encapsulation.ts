/**
 * What the one-shot (RFC 9458 §4) and chunked (draft-ietf-ohai-chunked-ohttp) encapsulations
 * share (private): the request header, the HPKE `info`, suite choice on the client, key
 * lookup on the gateway, and the response key schedule.
 *
 * ```
 * hdr        = key_id (1) ‖ kem_id (2) ‖ kdf_id (2) ‖ aead_id (2)
 * info       = label ‖ 0x00 ‖ hdr
 * secret     = context.Export(response label, max(Nn, Nk))
 * salt       = enc ‖ response_nonce
 * prk        = Extract(salt, secret)
 * aead_key   = Expand(prk, "key", Nk)
 * aead_nonce = Expand(prk, "nonce", Nn)
 * ```
 *
 * @module
 */

import { bytesLabel, concat, copy, hex16, u16 } from "../_bytes.ts";
import { type AeadKey, aeadKey, type MaybePromise } from "../hpke/_aead.ts";
import {
  type HpkeExporter,
  type HpkeRecipientContext,
  type HpkeSenderContext,
  type RecipientKey,
  setupBaseRecipient,
  setupBaseSender,
  xorCounter,
} from "../hpke/_base_mode.ts";
import { expandParts, hkdfExtract, HmacKey } from "../hpke/_labeled_kdf.ts";
import { x25519PrivateKey } from "../hpke/_x25519.ts";
import {
  type HpkeKeyPair,
  randomBytes,
  type RandomSource,
  systemRandom,
} from "../hpke/key_pair.ts";
import {
  AEAD_AES_128_GCM,
  type HpkeSuite,
  hpkeSuite,
  isSupportedAead,
  isSupportedKdf,
  isSupportedKem,
  kemInfo,
  type SuiteIds,
} from "../hpke/suite.ts";
import {
  decodeKeyConfig,
  type GatewayKey,
  type KeyConfig,
  KeyConfigError,
  validateGatewayKey,
  validateKeyConfig,
} from "./key_config.ts";
import { OpenError, SealError } from "./errors.ts";

const encoder = new TextEncoder();

/** The labels that separate the one-shot form from the chunked form. */
export interface Labels {
  /** Request `info` label. */
  readonly request: Uint8Array;
  /** Response export label. */
  readonly response: Uint8Array;
  /** `"request"` or `"chunked request"`, for messages. */
  readonly what: string;
}

/** RFC 9458 §4.3 and §4.4. */
export const ONE_SHOT_LABELS: Labels = {
  request: encoder.encode("message/bhttp request"),
  response: encoder.encode("message/bhttp response"),
  what: "request",
};

/** draft-ietf-ohai-chunked-ohttp §6.1 and §6.2. */
export const CHUNKED_LABELS: Labels = {
  request: encoder.encode("message/bhttp chunked request"),
  response: encoder.encode("message/bhttp chunked response"),
  what: "chunked request",
};

/** The AAD of every final chunk: ASCII `"final"`. */
export const FINAL_AAD: Uint8Array = encoder.encode("final");

/** Empty AAD. */
export const EMPTY: Uint8Array = new Uint8Array(0);

/** Length of the request header before `enc`. */
export const HEADER_LENGTH = 7;

/** Encodes the 7-byte request header. */
export function requestHeader(keyId: number, ids: SuiteIds): Uint8Array {
  return concat(Uint8Array.of(keyId), u16(ids.kem), u16(ids.kdf), u16(ids.aead));
}

/** `info = label ‖ 0x00 ‖ hdr`. */
export function requestInfo(label: Uint8Array, header: Uint8Array): Uint8Array {
  return concat(label, Uint8Array.of(0), header);
}

/** The parsed 7-byte request header. */
export interface ParsedHeader {
  /** Key identifier. */
  readonly keyId: number;
  /** Suite ids. */
  readonly ids: SuiteIds;
}

/** Parses the 7-byte request header (no validation). */
export function parseRequestHeader(header: Uint8Array): ParsedHeader {
  return {
    keyId: header[0],
    ids: {
      kem: (header[1] << 8) | header[2],
      kdf: (header[3] << 8) | header[4],
      aead: (header[5] << 8) | header[6],
    },
  };
}

/** Options shared by the client-side functions. */
export interface ClientSetupOptions {
  /**
   * The AEAD to use. The key configuration must offer it (with HKDF-SHA256).
   *
   * @default AES-128-GCM when offered, else the first supported suite the configuration lists
   */
  aead?: number;
  /**
   * Where the ephemeral key's bytes come from (inject a fixed source only in tests).
   *
   * @default {crypto.getRandomValues}
   */
  random?: RandomSource;
}

/** A sender context ready to seal the request. */
export interface ClientSetup {
  /** Key identifier used. */
  readonly keyId: number;
  /** Suite used. */
  readonly suite: HpkeSuite;
  /** `hdr ‖ enc`. */
  readonly prefix: Uint8Array;
  /** The encapsulated key. */
  readonly enc: Uint8Array;
  /** The HPKE sender context. */
  readonly context: HpkeSenderContext;
}

/** Decodes (when needed) and validates a key configuration for sealing. */
export function clientKeyConfig(keyConfig: Uint8Array | KeyConfig, action: string): KeyConfig {
  try {
    if (keyConfig instanceof Uint8Array) return decodeKeyConfig(keyConfig);
    validateKeyConfig(keyConfig);
    return keyConfig;
  } catch (cause) {
    if (cause instanceof KeyConfigError) {
      throw new SealError(
        cause.reason === "malformed" ? "invalid_key_config" : "unsupported_suite",
        `Cannot ${action}: ${cause.shortMessage.replace(/^Cannot [^:]*: /, "")}`,
        { cause },
      );
    }
    throw cause;
  }
}

/** Picks the suite to use from a configuration. */
export function chooseSuite(
  config: KeyConfig,
  aead: number | undefined,
  action: string,
): HpkeSuite {
  const usable = config.suites.filter((suite) =>
    isSupportedKdf(suite.kdf) && isSupportedAead(suite.aead)
  );
  const wanted = aead ?? AEAD_AES_128_GCM;
  const pick = usable.find((suite) => suite.aead === wanted) ??
    (aead === undefined ? usable[0] : undefined);
  if (!pick) {
    const offered = config.suites.map((suite) =>
      `(KDF ${hex16(suite.kdf)}, AEAD ${hex16(suite.aead)})`
    )
      .join(", ");
    throw new SealError(
      "unsupported_suite",
      `Cannot ${action}: key ${config.keyId} does not offer AEAD ${
        hex16(wanted)
      }; it offers ${offered}`,
    );
  }
  return hpkeSuite({ kem: config.kemId, kdf: pick.kdf, aead: pick.aead });
}

/** Sets up the sender context for a request (HPKE `SetupBaseS`; synchronous). */
export function setupClient(
  keyConfig: Uint8Array | KeyConfig,
  labels: Labels,
  options: ClientSetupOptions,
): ClientSetup {
  const action = `seal ${labels.what}`;
  const config = clientKeyConfig(keyConfig, action);
  const suite = chooseSuite(config, options.aead, action);
  const header = requestHeader(config.keyId, suite.ids);
  let ephemeral: Uint8Array | undefined;
  let context: HpkeSenderContext;
  try {
    ephemeral = randomBytes(
      options.random ?? systemRandom,
      suite.kem.privateKeyLength,
      "ephemeral key",
    );
    context = setupBaseSender(
      suite.ids,
      config.publicKey,
      requestInfo(labels.request, header),
      ephemeral,
    );
  } catch (cause) {
    throw new SealError("crypto", `Cannot ${action}: HPKE setup failed`, { cause });
  } finally {
    ephemeral?.fill(0);
  }
  const enc = context.enc.slice();
  return { keyId: config.keyId, suite, prefix: concat(header, enc), enc, context };
}

/** A recipient context ready to open the request. */
export interface GatewaySetup {
  /** Key identifier used. */
  readonly keyId: number;
  /** Suite used. */
  readonly suite: HpkeSuite;
  /** The encapsulated key. */
  readonly enc: Uint8Array;
  /** The HPKE recipient context. */
  readonly context: HpkeRecipientContext;
}

/** Normalizes the gateway's keys and checks each. */
export function gatewayKeys(keys: GatewayKey | readonly GatewayKey[]): readonly GatewayKey[] {
  const list = Array.isArray(keys) ? keys as readonly GatewayKey[] : [keys as GatewayKey];
  if (list.length === 0) {
    throw new OpenError("unknown_key", "Cannot open request: the gateway holds no keys");
  }
  for (const key of list) validateGatewayKey(key);
  return list;
}

/**
 * Finds the key and suite a request header names, refusing unknown keys and suites the key
 * does not offer.
 */
export function selectGatewayKey(
  keys: readonly GatewayKey[],
  header: ParsedHeader,
  what: string,
): { key: GatewayKey; suite: HpkeSuite } {
  const key = keys.find((candidate) => candidate.config.keyId === header.keyId);
  if (!key) {
    throw new OpenError(
      "unknown_key",
      `Cannot open ${what}: key id ${header.keyId} is unknown (the gateway holds ${
        keys.map((k) => k.config.keyId).join(", ")
      })`,
    );
  }
  const { ids } = header;
  const offered = key.config.suites.some((suite) =>
    suite.kdf === ids.kdf && suite.aead === ids.aead
  );
  if (!isSupportedKem(ids.kem) || ids.kem !== key.config.kemId || !offered) {
    throw new OpenError(
      "unsupported_suite",
      `Cannot open ${what}: suite (KEM ${hex16(ids.kem)}, KDF ${hex16(ids.kdf)}, AEAD ${
        hex16(ids.aead)
      }) is not offered by key ${header.keyId}`,
      {
        details: `key ${header.keyId} offers KEM ${hex16(key.config.kemId)} with ${
          key.config.suites.map((s) => `(KDF ${hex16(s.kdf)}, AEAD ${hex16(s.aead)})`).join(", ")
        }`,
      },
    );
  }
  return { key, suite: hpkeSuite(ids) };
}

/** Length of `hdr ‖ enc` for the KEM named in a header, or `undefined` for an unknown KEM. */
export function prefixLength(kemId: number): number | undefined {
  return isSupportedKem(kemId) ? HEADER_LENGTH + kemInfo(kemId).encLength : undefined;
}

/** Sets up the recipient context (HPKE `SetupBaseR`; synchronous). */
export function setupGateway(
  key: GatewayKey,
  suite: HpkeSuite,
  header: Uint8Array,
  enc: Uint8Array,
  labels: Labels,
): GatewaySetup {
  try {
    const context = setupBaseRecipient(
      suite.ids,
      recipientKeyOf(key.keyPair),
      enc,
      requestInfo(labels.request, header),
    );
    return { keyId: key.config.keyId, suite, enc: copy(enc), context };
  } catch (cause) {
    throw new OpenError(
      "malformed",
      `Cannot open ${labels.what}: the ${
        bytesLabel(enc.length)
      } encapsulated key is not a valid ${suite.kem.name} public key`,
      { cause },
    );
  }
}

const recipientKeys = new WeakMap<HpkeKeyPair, RecipientKey>();

/** The gateway's key pair in the form the fast HPKE path takes, imported once per key pair. */
function recipientKeyOf(keyPair: HpkeKeyPair): RecipientKey {
  let key = recipientKeys.get(keyPair);
  if (!key) {
    const secret = keyPair.exportPrivateKey();
    try {
      key = { privateKey: x25519PrivateKey(secret), publicKey: keyPair.publicKey.slice() };
    } finally {
      secret.fill(0);
    }
    recipientKeys.set(keyPair, key);
  }
  return key;
}

/** The response key schedule's intermediate values and the AEAD they produce. */
export interface ResponseKeys {
  /** `Export(label, max(Nn, Nk))`. */
  readonly secret: Uint8Array;
  /** `enc ‖ response_nonce`. */
  readonly salt: Uint8Array;
  /** `Extract(salt, secret)`. */
  readonly prk: Uint8Array;
  /** `Expand(prk, "key", Nk)`. */
  readonly key: Uint8Array;
  /** `Expand(prk, "nonce", Nn)`. */
  readonly nonce: Uint8Array;
  /** Seals with `key` under the given nonce and AAD (synchronously for small messages). */
  seal(nonce: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array>;
  /** Opens with `key`; throws (or rejects) when authentication fails. */
  open(nonce: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): MaybePromise<Uint8Array>;
}

/** The response key schedule's expansion labels. */
const KEY_LABEL = encoder.encode("key");
const NONCE_LABEL = encoder.encode("nonce");

/** `max(Nn, Nk)`: the length of the response nonce and of the exported secret. */
export function responseNonceLength(suite: HpkeSuite): number {
  return Math.max(suite.aead.nonceLength, suite.aead.keyLength);
}

/**
 * Runs the response key schedule (RFC 9458 §4.4, chunked draft §6.2). Synchronous: the export
 * and HKDF are plain HKDF-SHA256 calls.
 */
export function deriveResponseKeys(
  suite: HpkeSuite,
  context: HpkeExporter,
  enc: Uint8Array,
  responseNonce: Uint8Array,
  label: Uint8Array,
): ResponseKeys {
  const length = responseNonceLength(suite);
  const secret = context.export(label, length);
  const salt = concat(enc, responseNonce);
  // HKDF-SHA256 is the only KDF (hpkeSuite refuses others); one HMAC key for both expansions.
  const prk = hkdfExtract(salt, secret);
  const prkKey = new HmacKey(prk);
  const key = expandParts(prkKey, [KEY_LABEL], suite.aead.keyLength);
  const nonce = expandParts(prkKey, [NONCE_LABEL], suite.aead.nonceLength);
  prkKey.destroy();
  const aead: AeadKey = aeadKey(suite.aead.id, key);
  return {
    secret,
    salt,
    prk,
    key,
    nonce,
    seal: (n, plaintext, aad) => aead.seal(n, plaintext, aad),
    open: (n, ciphertext, aad) => aead.open(n, ciphertext, aad),
  };
}

/**
 * `chunk_nonce = aead_nonce XOR encode(Nn, counter)`, written into `out` when given (an
 * exchange's one scratch array, reused chunk after chunk: the AEADs read a nonce at once, see
 * `AeadKey`), else into a new array.
 */
export function chunkNonce(base: Uint8Array, counter: number, out?: Uint8Array): Uint8Array {
  return xorCounter(base, counter, out);
}
