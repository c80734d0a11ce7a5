/**
 * Verification of one NVIDIA GPU's attestation evidence, offline: its SPDM measurement report
 * and the device certificate chain that certifies the key that signed it. `now` is a
 * parameter; nothing reads the clock or the network.
 *
 * Order (each step trusts only what the steps before it verified):
 *
 * 1. Policy: revocation collateral is present unless the caller allows crypto-only.
 * 2. The report parses (`malformed`, `gpu_report`).
 * 3. The chain: names and signatures up to a pinned NVIDIA Device Identity root, CA
 *    constraints, validity at `now` (`gpu_chain`).
 * 4. The attestation key's certificate (the chain's first): it names a SHA-384 FWID in its DICE
 *    `TcbInfo` extension and certifies a P-384 key for signatures (`gpu_fwid`, `gpu_chain`).
 * 5. The report's ECDSA P-384 signature over SHA-384(request ‖ response) with that key
 *    (`gpu_report_signature`).
 * 6. The report's FWID is the certificate's (`gpu_fwid`).
 * 7. The request's nonce is the one expected (`stale`, `gpu_nonce`).
 * 8. Revocation: a signed, fresh "good" OCSP answer or CRL for the chain
 *    (`gpu_collateral`, `gpu_revocation`).
 * 9. The GPU's measurement id is approved, when an approved set is given (`gpu_measurement`).
 *
 * @example
 * ```ts ignore
 * import { verifyGpuEvidence } from "@net/consumer/tee";
 *
 * const gpu = await verifyGpuEvidence(
 *   { report, certificateChain },
 *   { nonce, now: new Date(), collateral, approved },
 * );
 * console.log(gpu.driverVersion, gpu.measurementId);
 * ```
 *
 * @module
 */

import { resolveAnchors } from "../_anchors.ts";
import { equalBytes, toHex } from "../../_bytes.ts";
import { checkNow } from "../../_time.ts";
import { type ValidatedChain, verifyChain } from "../_chain.ts";
import { verifyEcdsa } from "../_signature.ts";
import { type Certificate, parsePemChain } from "../_x509.ts";
import type { ApprovedMeasurements } from "../approved_set.ts";
import { AttestationError, QuoteParseError, refuseAttestation as refuse } from "../errors.ts";
import type { MeasurementId } from "../measurement_id.ts";
import { PINNED_ROOTS, type TrustRoots } from "../roots.ts";
import { readFwid } from "./_fwid.ts";
import { type GpuCollateral, verifyGpuRevocation } from "./gpu_collateral.ts";
import { gpuMeasurementId } from "./gpu_measurement_id.ts";
import { type GpuReport, parseGpuReport, SPDM_NONCE_LENGTH } from "./gpu_report.ts";

/** One GPU's evidence as a bundle carries it. */
export interface GpuEvidence {
  /** The SPDM `GET_MEASUREMENTS` request ‖ signed `MEASUREMENTS` response. */
  readonly report: Uint8Array;
  /** The device chain as PEM, attestation key certificate first, optionally ending at the root. */
  readonly certificateChain: string;
}

/** Options of {@linkcode verifyGpuEvidence}. */
export interface VerifyGpuEvidenceOptions {
  /** The 32-byte nonce the GPU must have signed. */
  nonce: Uint8Array;
  /** The time at which certificates and answers must be valid. */
  now: Date;
  /**
   * The roots to trust (their `nvidia` list).
   *
   * @default {PINNED_ROOTS}
   */
  roots?: TrustRoots;
  /**
   * OCSP answers and CRLs for the chain. Without them the GPU is refused unless
   * `allowMissingCollateral` is set.
   *
   * @default {null}
   */
  collateral?: GpuCollateral | null;
  /**
   * Accept the evidence without revocation collateral (chain and signatures only): the verdict
   * then says `revocation: "unchecked"`.
   *
   * @default {false}
   */
  allowMissingCollateral?: boolean;
  /** When given, the GPU's measurement id must be in it. */
  approved?: ApprovedMeasurements;
  /**
   * Which GPU this is, for messages.
   *
   * @default {"the GPU"}
   */
  label?: string;
}

/** What a successful GPU verification establishes. */
export interface GpuVerification {
  /** The parsed report. */
  readonly report: GpuReport;
  /** The GPU's measurement id. */
  readonly measurementId: MeasurementId;
  /** The driver version the GPU reported, e.g. `550.90.07`. */
  readonly driverVersion: string;
  /** The VBIOS version the GPU reported, e.g. `96.00.9f.00.01`. */
  readonly vbiosVersion: string;
  /** The FWID of the firmware holding the attestation key (hex). */
  readonly fwid: string;
  /** The attestation key certificate's subject common name, e.g. `GH100 A01 GSP FMC LF`. */
  readonly signer: string;
  /** Whether revocation was checked against collateral. */
  readonly revocation: "checked" | "unchecked";
  /** Earliest end of validity of the certificates and revocation answers used. */
  readonly validUntil: Date;
}

/** Largest number of certificates below the NVIDIA root (Hopper chains have four). */
const MAX_CHAIN_DEPTH = 5;

/**
 * Verifies one GPU's evidence; see the module documentation for the steps.
 *
 * @throws {AttestationError} `malformed`, `untrusted` or `stale`, with a `gpu_*` check.
 * @throws {TypeError} when `now` is not a valid `Date` or the nonce is not 32 bytes.
 */
export async function verifyGpuEvidence(
  evidence: GpuEvidence,
  options: VerifyGpuEvidenceOptions,
): Promise<GpuVerification> {
  const now = checkNow(options.now, "verifyGpuEvidence");
  const label = options.label ?? "the GPU";
  if (!(options.nonce instanceof Uint8Array) || options.nonce.length !== SPDM_NONCE_LENGTH) {
    throw new TypeError(`verifyGpuEvidence: "nonce" must be ${SPDM_NONCE_LENGTH} bytes`);
  }
  const collateral = options.collateral ?? null;
  if (!collateral && options.allowMissingCollateral !== true) {
    refuse(
      "untrusted",
      "gpu_collateral",
      `${label} comes without revocation collateral (NVIDIA OCSP answers or CRLs), which the ` +
        "policy requires",
      { hints: ["The provider must attach its GPUs' OCSP answers from ocsp.ndis.nvidia.com."] },
    );
  }
  const report = parseReport(evidence.report, label);
  const anchors = resolveAnchors(options.roots ?? PINNED_ROOTS).nvidia;
  const chainLabel = `${label}'s certificate chain`;
  const certs = parsePemChain(evidence.certificateChain, { check: "gpu_chain", label: chainLabel });
  // The report's signature is checked while the chain is (both on WebCrypto's thread pool); its
  // outcome is read only once the chain and the signing certificate have been judged.
  const signed = reportSigned(report, certs[0]);
  const chain = await verifyChain(certs, {
    check: "gpu_chain",
    label: chainLabel,
    anchors,
    now,
    maxDepth: MAX_CHAIN_DEPTH,
  });
  const signer = chain.path[0];
  const fwid = signerFwid(signer, label);
  if (!await signed) {
    refuse(
      "untrusted",
      "gpu_report_signature",
      `${label}'s report signature does not verify with the key of "${signer.subjectCn}"`,
    );
  }
  if (!equalBytes(report.opaque.fwid, fwid)) {
    refuse(
      "untrusted",
      "gpu_fwid",
      `${label}'s report names FWID ${toHex(report.opaque.fwid).slice(0, 16)}…, its ` +
        `certificate "${signer.subjectCn}" names ${toHex(fwid).slice(0, 16)}…`,
    );
  }
  if (!equalBytes(report.nonce, options.nonce)) {
    refuse(
      "stale",
      "gpu_nonce",
      `${label}'s report answers nonce ${toHex(report.nonce).slice(0, 16)}…, expected ` +
        `${toHex(options.nonce).slice(0, 16)}…`,
    );
  }
  const validUntil = collateral
    ? (await verifyGpuRevocation(chain, collateral, { now, anchors, label })).notAfter
    : chain.notAfter;
  const measurementId = gpuMeasurementId(report);
  if (options.approved && !options.approved.has(measurementId)) {
    refuse(
      "untrusted",
      "gpu_measurement",
      `${label}'s measurement id ${measurementId.slice(0, 12)}… (driver ` +
        `${report.opaque.driverVersion}, VBIOS ${report.opaque.vbiosVersion}) is not in the ` +
        `approved set (${options.approved.size} approved)`,
      { hints: [`Full GPU measurement id: ${measurementId}`] },
    );
  }
  return {
    report,
    measurementId,
    driverVersion: report.opaque.driverVersion,
    vbiosVersion: report.opaque.vbiosVersion,
    fwid: toHex(fwid),
    signer: signer.subjectCn,
    revocation: collateral ? "checked" : "unchecked",
    validUntil: earliest(chain, validUntil),
  };
}

function parseReport(bytes: Uint8Array, label: string): GpuReport {
  try {
    return parseGpuReport(bytes);
  } catch (cause) {
    if (!(cause instanceof QuoteParseError)) throw cause;
    throw new AttestationError(
      "malformed",
      "gpu_report",
      `Cannot verify attestation: ${label}'s report: ${
        cause.shortMessage.replace(/^Cannot parse the GPU report: /, "")
      }`,
      { cause },
    );
  }
}

/** The attestation key certificate names one SHA-384 FWID and certifies a P-384 key. */
function signerFwid(signer: Certificate, label: string): Uint8Array {
  const reading = readFwid(signer);
  if (!reading.ok) {
    refuse(
      "untrusted",
      "gpu_fwid",
      `${label}'s signing certificate "${signer.subjectCn}" ${reading.problem}`,
      { hints: ["The chain must start with the GPU's attestation key certificate (FMC)."] },
    );
  }
  if (signer.publicKey.kind !== "ec" || signer.publicKey.curve !== "P-384") {
    refuse(
      "untrusted",
      "gpu_chain",
      `${label}'s signing certificate "${signer.subjectCn}" does not certify a P-384 key`,
    );
  }
  if (signer.keyUsage !== null && (signer.keyUsage & 1) === 0) {
    refuse(
      "untrusted",
      "gpu_chain",
      `${label}'s signing certificate "${signer.subjectCn}" lacks digitalSignature`,
    );
  }
  return reading.fwid;
}

/** Whether the report is signed by the certificate's key (`false` for a non-EC key). */
async function reportSigned(report: GpuReport, signer: Certificate | undefined): Promise<boolean> {
  if (signer?.publicKey.kind !== "ec") return false;
  return await verifyEcdsa(signer.publicKey, report.signedRegion, report.signature, {
    hash: "SHA-384",
    format: "compact",
  });
}

function earliest(chain: ValidatedChain, other: Date): Date {
  return other < chain.notAfter ? other : chain.notAfter;
}
