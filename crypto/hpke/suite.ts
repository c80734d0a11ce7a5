/**
 * HPKE (RFC 9180) suites: the algorithm ids, their sizes, and {@linkcode hpkeSuite}, which
 * returns the `@hpke/core` suite that runs them. The network uses one KEM, DHKEM(X25519,
 * HKDF-SHA256), one KDF, HKDF-SHA256, and two AEADs: AES-128-GCM (the default) and
 * ChaCha20-Poly1305. The export-only AEAD is known too, so the RFC vectors can be run, but it
 * cannot seal and Oblivious HTTP refuses it.
 *
 * @module
 */

// `@hpke/core`'s X25519 KEM runs on the runtime's WebCrypto X25519 (native in Deno): 3× faster
// per seal+open than the pure-JavaScript `@hpke/dhkem-x25519`, and wire-identical (RFC 9180).
import { Aes128Gcm, CipherSuite, DhkemX25519HkdfSha256, ExportOnly, HkdfSha256 } from "@hpke/core";
import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { ReasonError } from "../../errors.ts";
import { hex16 } from "../_bytes.ts";

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

/** The names of the supported entries of a table, for messages. */
function supportedList(map: ReadonlyMap<number, { name: string }>): string {
  return [...map.values()].map((entry) => entry.name).join(", ");
}
