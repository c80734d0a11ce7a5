/**
 * AMD SEV-SNP attestation reports (1184 bytes, AMD "SEV Secure Nested Paging Firmware ABI
 * Specification", table "ATTESTATION_REPORT"): a bounds-checked parser and verification of
 * the ARK → ASK → VCEK chain under the pinned AMD roots, the P-384 report signature, the
 * VCEK's TCB and chip id against the report, and the guest policy (debug off).
 *
 * The VCEK comes with the bundle (`{"vcek":"0x<DER>"}`): there is no network path to AMD's
 * key distribution service, and none is needed, since the VCEK is itself verified.
 *
 * @example
 * ```ts ignore
 * import { verifySnpReport } from "@net/consumer/tee";
 *
 * const result = await verifySnpReport(reportBytes, { vcek: vcekDer, now: new Date() });
 * console.log(result.product, result.report.measurement);
 * ```
 *
 * @module
 */

import { type AmdAnchors, resolveAnchors } from "./_anchors.ts";
import { concat, equalBytes, isAllZero, toHex } from "../_bytes.ts";
import { ByteReader, reversed } from "./_byte_reader.ts";
import { DerError, readRoot, readSmallInteger } from "./_der.ts";
import { checkNow } from "../_time.ts";
import { verifyChain } from "./_chain.ts";
import { verifyEcdsa } from "./_signature.ts";
import { type Certificate, parseCertificate } from "./_x509.ts";
import { AttestationError, QuoteParseError } from "./errors.ts";
import { PINNED_ROOTS, type TrustRoots } from "./roots.ts";

/** Length of an SEV-SNP attestation report. */
export const SNP_REPORT_LENGTH = 1184;
/** Start of the signature; the signed region is `[0, SNP_SIGNED_LENGTH)`. */
export const SNP_SIGNED_LENGTH = 0x2a0;
/** Guest policy bit 19: the guest may be debugged by the host. */
export const SNP_POLICY_DEBUG: bigint = 1n << 19n;
/** Guest policy bit 17: reserved, must be one. */
export const SNP_POLICY_RESERVED_ONE: bigint = 1n << 17n;

/** A parsed SEV-SNP attestation report. Byte fields are views into `raw`. */
export interface SnpReport {
  /** The 1184 bytes. */
  readonly raw: Uint8Array;
  /** Report version (2 to 5). */
  readonly version: number;
  /** Guest SVN. */
  readonly guestSvn: number;
  /** Guest policy. */
  readonly policy: bigint;
  /** Family id, 16 bytes. */
  readonly familyId: Uint8Array;
  /** Image id, 16 bytes. */
  readonly imageId: Uint8Array;
  /** VMPL of the request. */
  readonly vmpl: number;
  /** Signature algorithm (1 = ECDSA P-384 with SHA-384). */
  readonly signatureAlgorithm: number;
  /** Current TCB, 8 bytes. */
  readonly currentTcb: Uint8Array;
  /** Platform info. */
  readonly platformInfo: bigint;
  /** REPORT_DATA, 64 bytes. */
  readonly reportData: Uint8Array;
  /** MEASUREMENT, 48 bytes. */
  readonly measurement: Uint8Array;
  /** HOST_DATA, 32 bytes. */
  readonly hostData: Uint8Array;
  /** ID_KEY_DIGEST, 48 bytes. */
  readonly idKeyDigest: Uint8Array;
  /** AUTHOR_KEY_DIGEST, 48 bytes. */
  readonly authorKeyDigest: Uint8Array;
  /** REPORT_ID, 32 bytes. */
  readonly reportId: Uint8Array;
  /** REPORTED_TCB, 8 bytes: the TCB the VCEK must be derived from. */
  readonly reportedTcb: Uint8Array;
  /** CHIP_ID, 64 bytes. */
  readonly chipId: Uint8Array;
  /** COMMITTED_TCB, 8 bytes. */
  readonly committedTcb: Uint8Array;
  /** LAUNCH_TCB, 8 bytes. */
  readonly launchTcb: Uint8Array;
  /** The signed region `[0, 0x2A0)`. */
  readonly signedRegion: Uint8Array;
  /** The signature as raw big-endian `r ‖ s`, 96 bytes. */
  readonly signature: Uint8Array;
}

/**
 * Parses a 1184-byte SEV-SNP report. The signature's `r` and `s` are stored as 72-byte
 * little-endian values; they are converted to 48-byte big-endian.
 *
 * @throws {QuoteParseError} when the bytes do not follow the layout.
 */
export function parseSnpReport(bytes: Uint8Array): SnpReport {
  if (!(bytes instanceof Uint8Array)) {
    throw new QuoteParseError(`Cannot parse SEV-SNP report: expected bytes, found ${typeof bytes}`);
  }
  if (bytes.length !== SNP_REPORT_LENGTH) {
    throw new QuoteParseError(
      `Cannot parse SEV-SNP report: it must be ${SNP_REPORT_LENGTH} bytes, found ${bytes.length}`,
    );
  }
  const reader = new ByteReader(bytes, "SEV-SNP report");
  const version = reader.u32("version");
  if (version < 2 || version > 5) {
    throw new QuoteParseError(
      `Cannot parse SEV-SNP report: version ${version} is not supported, expected 2 to 5`,
      { offset: 0 },
    );
  }
  const guestSvn = reader.u32("guest SVN");
  const policy = reader.u64("policy");
  const familyId = reader.bytes("family id", 16);
  const imageId = reader.bytes("image id", 16);
  const vmpl = reader.u32("VMPL");
  const signatureAlgorithm = reader.u32("signature algorithm");
  const currentTcb = reader.bytes("current TCB", 8);
  const platformInfo = reader.u64("platform info");
  reader.bytes("flags", 8);
  const reportData = reader.bytes("REPORT_DATA", 64);
  const measurement = reader.bytes("MEASUREMENT", 48);
  const hostData = reader.bytes("HOST_DATA", 32);
  const idKeyDigest = reader.bytes("ID_KEY_DIGEST", 48);
  const authorKeyDigest = reader.bytes("AUTHOR_KEY_DIGEST", 48);
  const reportId = reader.bytes("REPORT_ID", 32);
  reader.bytes("REPORT_ID_MA", 32);
  const reportedTcb = reader.bytes("REPORTED_TCB", 8);
  reader.bytes("reserved", 24);
  const chipId = reader.bytes("CHIP_ID", 64);
  const committedTcb = reader.bytes("COMMITTED_TCB", 8);
  reader.bytes("build numbers", 8);
  const launchTcb = reader.bytes("LAUNCH_TCB", 8);
  const signedRegion = bytes.subarray(0, SNP_SIGNED_LENGTH);
  const signatureReader = new ByteReader(bytes, "SEV-SNP report", SNP_SIGNED_LENGTH);
  const r = signatureReader.bytes("signature R", 72);
  const s = signatureReader.bytes("signature S", 72);
  if (!isAllZero(r.subarray(48)) || !isAllZero(s.subarray(48))) {
    throw new QuoteParseError(
      "Cannot parse SEV-SNP report: the signature's R or S does not fit in 48 bytes",
      { offset: SNP_SIGNED_LENGTH },
    );
  }
  return {
    raw: bytes,
    version,
    guestSvn,
    policy,
    familyId,
    imageId,
    vmpl,
    signatureAlgorithm,
    currentTcb,
    platformInfo,
    reportData,
    measurement,
    hostData,
    idKeyDigest,
    authorKeyDigest,
    reportId,
    reportedTcb,
    chipId,
    committedTcb,
    launchTcb,
    signedRegion,
    signature: concat(reversed(r.subarray(0, 48)), reversed(s.subarray(0, 48))),
  };
}

/** Options of {@linkcode verifySnpReport}. */
export interface VerifySnpReportOptions {
  /** The VCEK certificate (DER) that signed the report. */
  vcek: Uint8Array;
  /** The time at which the certificates must be valid. */
  now: Date;
  /**
   * The roots to trust.
   *
   * @default {PINNED_ROOTS}
   */
  roots?: TrustRoots;
}

/** The TCB a VCEK certifies, by component. */
export interface SnpTcb {
  /** Boot loader SPL. */
  readonly bootloader: number;
  /** PSP OS (TEE) SPL. */
  readonly tee: number;
  /** SNP firmware SPL. */
  readonly snp: number;
  /** Microcode SPL. */
  readonly microcode: number;
  /** FMC SPL (Turin and later), else `null`. */
  readonly fmc: number | null;
}

/** The result of a successful SEV-SNP verification. */
export interface SnpVerification {
  /** The parsed report. */
  readonly report: SnpReport;
  /** The AMD product line whose roots certified the VCEK, e.g. `"Milan"`. */
  readonly product: string;
  /** The TCB the VCEK certifies (equal to the report's REPORTED_TCB). */
  readonly tcb: SnpTcb;
  /** Earliest `notAfter` of the VCEK, ASK and ARK. */
  readonly validUntil: Date;
}

const AMD_OID = "1.3.6.1.4.1.3704.1";

function refuse(
  check: "vcek_chain" | "vcek_tcb" | "report_signature" | "guest_policy",
  message: string,
): never {
  throw new AttestationError("untrusted", check, `Cannot verify attestation: ${message}`);
}

function splOf(vcek: Certificate, oid: string, name: string): number | null {
  const extension = vcek.extensions.get(`${AMD_OID}.${oid}`);
  if (!extension) return null;
  let value: number;
  try {
    value = readSmallInteger(readRoot(extension.value), `the VCEK's ${name} SPL`);
  } catch (cause) {
    if (!(cause instanceof DerError)) throw cause;
    if (/out of range/.test(cause.message)) return -1;
    throw new AttestationError(
      "malformed",
      "vcek_chain",
      `Cannot verify attestation: the VCEK's ${name} SPL extension is not an INTEGER`,
      { cause },
    );
  }
  return value <= 255 ? value : -1;
}

function vcekTcb(vcek: Certificate, turin: boolean): SnpTcb {
  const need = (oid: string, name: string): number => {
    const value = splOf(vcek, oid, name);
    if (value === null || value < 0) {
      throw new AttestationError(
        "malformed",
        "vcek_chain",
        `Cannot verify attestation: the VCEK has no valid ${name} SPL extension (${AMD_OID}.${oid})`,
      );
    }
    return value;
  };
  return {
    bootloader: need("3.1", "boot loader"),
    tee: need("3.2", "TEE"),
    snp: need("3.3", "SNP"),
    microcode: need("3.8", "microcode"),
    fmc: turin ? need("3.9", "FMC") : null,
  };
}

function reportedTcbOf(bytes: Uint8Array, turin: boolean): SnpTcb {
  return turin
    ? { fmc: bytes[0], bootloader: bytes[1], tee: bytes[2], snp: bytes[3], microcode: bytes[7] }
    : { fmc: null, bootloader: bytes[0], tee: bytes[1], snp: bytes[6], microcode: bytes[7] };
}

/**
 * Verifies an SEV-SNP report: VCEK chain to a pinned ARK (via that product's ASK), validity at
 * `now`, the report signature, the VCEK's TCB and hardware id against the report, and the
 * guest policy (bit 19 DEBUG clear, bit 17 set).
 *
 * @throws {AttestationError} `malformed` (report or VCEK does not parse), `untrusted`, or
 * `stale` (a certificate outside its validity).
 */
export async function verifySnpReport(
  input: SnpReport | Uint8Array,
  options: VerifySnpReportOptions,
): Promise<SnpVerification> {
  const now = checkNow(options.now, "verifySnpReport");
  let report: SnpReport;
  try {
    report = input instanceof Uint8Array ? parseSnpReport(input) : input;
  } catch (cause) {
    if (!(cause instanceof QuoteParseError)) throw cause;
    throw new AttestationError("malformed", "quote", cause.shortMessage, { cause });
  }
  const anchors = resolveAnchors(options.roots ?? PINNED_ROOTS);
  const vcek = parseCertificate(options.vcek, { check: "vcek_chain", label: "the VCEK" });

  // 1. Chain: VCEK ← ASK ← ARK of the product whose ASK issued it.
  const product: AmdAnchors | undefined = anchors.amd.find((entry) =>
    equalBytes(entry.ask.subject, vcek.issuer)
  );
  if (!product) {
    refuse(
      "vcek_chain",
      `the VCEK is issued by "${vcek.issuerCn}", which is none of the pinned AMD keys ` +
        `(${anchors.amd.map((entry) => `"${entry.ask.subjectCn}"`).join(", ") || "none"})`,
    );
  }
  const chain = await verifyChain([vcek, product.ask], {
    check: "vcek_chain",
    label: "the VCEK chain",
    anchors: [product.ark],
    now,
  });
  if (!vcek.subjectCn.includes("VCEK") || vcek.publicKey.kind !== "ec") {
    refuse("vcek_chain", `the report is certified by "${vcek.subjectCn}", expected a VCEK`);
  }
  if (vcek.publicKey.curve !== "P-384") {
    refuse("vcek_chain", `the VCEK key is ${vcek.publicKey.curve}, expected P-384`);
  }

  // 2. Report signature.
  if (report.signatureAlgorithm !== 1) {
    refuse(
      "report_signature",
      `the report's signature algorithm is ${report.signatureAlgorithm}, expected 1 (ECDSA P-384)`,
    );
  }
  if (
    !await verifyEcdsa(vcek.publicKey, report.signedRegion, report.signature, {
      hash: "SHA-384",
      format: "compact",
    })
  ) {
    refuse("report_signature", "the report signature does not verify with the VCEK");
  }

  // 3. The VCEK certifies this chip at this TCB.
  const turin = product.product.toLowerCase() === "turin";
  const certified = vcekTcb(vcek, turin);
  const reported = reportedTcbOf(report.reportedTcb, turin);
  for (const key of ["bootloader", "tee", "snp", "microcode", "fmc"] as const) {
    if (certified[key] !== reported[key]) {
      refuse(
        "vcek_tcb",
        `the report's REPORTED_TCB has ${key} SPL ${reported[key]}, the VCEK certifies ` +
          `${certified[key]}`,
      );
    }
  }
  const hwid = vcek.extensions.get(`${AMD_OID}.4`)?.value;
  const expectedLength = turin ? 8 : 64;
  if (
    !hwid || hwid.length !== expectedLength ||
    !equalBytes(hwid, report.chipId.subarray(0, expectedLength)) ||
    (turin && !isAllZero(report.chipId.subarray(8)))
  ) {
    refuse(
      "vcek_tcb",
      `the report's CHIP_ID ${toHex(report.chipId.subarray(0, 8))}… is not the VCEK's hardware ` +
        `id ${hwid ? toHex(hwid.subarray(0, 8)) + "…" : "(missing)"}`,
    );
  }

  // 4. Guest policy.
  if ((report.policy & SNP_POLICY_DEBUG) !== 0n) {
    refuse("guest_policy", "the guest policy allows debugging (bit 19 DEBUG is set)");
  }
  if ((report.policy & SNP_POLICY_RESERVED_ONE) === 0n) {
    refuse("guest_policy", "the guest policy has reserved bit 17 clear (it must be one)");
  }
  return { report, product: product.product, tcb: certified, validUntil: chain.notAfter };
}
