/**
 * The TEE tier's one function: {@linkcode verifyAttestation} takes a parsed attestation
 * bundle and everything the daemon knows (the nonce it issued and its nonce book, the approved
 * measurement set, the trust roots, the collateral policy, `now`), and returns a verdict or
 * throws an {@linkcode AttestationError}. No option disables a check.
 *
 * Checks, in order (nothing is trusted before it is verified):
 *
 * 1. `mock` bundles are refused (`mock`); so is a format without a verifier (`malformed`).
 * 2. An empty approved set refuses everything (`untrusted`, `approved_set`).
 * 3. The bundle answers the nonce the daemon issued, and the nonce book accepts it once,
 *    within its window (`stale`, `nonce*`).
 *
 * Steps 4 to 6 are the format's own, run by the verifier the bundle's `format` names in a
 * table (`_format_verifiers.ts`: `tdx` and `sev-snp`), not by a branch here:
 *
 * 4. Policy: a TDX bundle without collateral is refused unless the policy allows it.
 * 5. The quote or report: every signature and chain to the pinned roots, collateral,
 *    TD or guest policy (`untrusted`, `stale`, `malformed`).
 * 6. The TCB status against the policy (`untrusted`, `tcb_status`).
 * 7. The serving public key is a secp256k1 point; the quote's report data is
 *    SHA-512(domain ‖ 0 ‖ nonce ‖ serving key ‖ evidence digest), the digest covering every
 *    GPU report and the served models (`binding`, `report_data`).
 * 8. The measurement id is approved (`untrusted`, `measurement`).
 * 9. Every GPU: its report signed for the nonce derived from this nonce and serving key, its
 *    chain to the pinned NVIDIA root, revocation, its measurement id approved (`gpu_*`); a
 *    bundle without GPUs only when the policy allows it (`gpu_required`).
 * 10. The HPKE key configuration is endorsed by that serving key, for this nonce, not expired
 *    (`binding` / `stale`, `endorsement*`).
 *
 * @example
 * ```ts ignore
 * import {
 *   ApprovedMeasurements,
 *   attestationBundleFromJson,
 *   NonceBook,
 *   verifyAttestation,
 * } from "@net/consumer/tee";
 *
 * const nonces = new NonceBook();
 * const nonce = nonces.issue(new Date());
 * const bundle = attestationBundleFromJson(await fetchAttestation(nonce));
 * const verdict = await verifyAttestation(bundle, {
 *   nonce,
 *   nonces,
 *   approved: await ApprovedMeasurements.fromFile("measurements.json"),
 *   now: new Date(),
 * });
 * // Seal to verdict.keyConfig only now.
 * ```
 *
 * @module
 */

import { secp256k1 } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { Address } from "viem";
import { abbreviate } from "../../errors.ts";
import {
  type EndorsementError,
  type EndorsementFailure,
  type KeyEndorsement,
  verifyEndorsement,
} from "../endorsement.ts";
import { checkNow, checkPositiveSeconds } from "../_time.ts";
import { equalBytes, to0x, toHex } from "../_bytes.ts";
import type { ApprovedMeasurements } from "./approved_set.ts";
import { verifyBundleGpus } from "./_bundle_gpus.ts";
import type { AttestationBundle } from "./bundle.ts";
import { type CollateralPolicy, resolveCollateralPolicy } from "./collateral_policy.ts";
import {
  type AttestationCheck,
  type AttestationFailure,
  refuseAttestation as refuse,
} from "./errors.ts";
import {
  FORMAT_VERIFIERS,
  type FormatVerifier,
  formatVerifier,
  type HardwareBundle,
} from "./_format_verifiers.ts";
import type { MeasurementId } from "./measurement_id.ts";
import { NonceBook } from "./nonce_book.ts";
import type { GpuVerification } from "./nvidia/verify_gpu.ts";
import {
  ATTESTATION_NONCE_LENGTH,
  attestationReportData,
  type AttestedModel,
  teeEvidenceDigest,
} from "./report_data.ts";
import { PINNED_ROOTS, type TrustRoots } from "./roots.ts";
import type { SnpVerification } from "./sev_snp.ts";
import type { TcbStatus } from "./tcb_status.ts";
import type { TdxVerification } from "./tdx_verify.ts";

/** Options of {@linkcode verifyAttestation}. */
export interface VerifyAttestationOptions {
  /** The 32-byte nonce the daemon issued for this attestation. */
  nonce: Uint8Array;
  /** The book the nonce was issued from; it is consumed here (single use, max age). */
  nonces: NonceBook;
  /** The approved measurement ids. Empty: every bundle is refused. */
  approved: ApprovedMeasurements;
  /** The current time. */
  now: Date;
  /**
   * The roots to trust. Tests pass their own; production uses the pinned ones.
   *
   * @default {PINNED_ROOTS}
   */
  roots?: TrustRoots;
  /**
   * Which TCB statuses are accepted, whether TDX collateral is required, the minimum SNP TCB.
   *
   * @default {DEFAULT_COLLATERAL_POLICY}
   */
  policy?: Partial<CollateralPolicy>;
  /**
   * Largest accepted distance between `now` and the endorsement's expiry, in seconds: a
   * positive integer (`NaN`, `Infinity`, fractions, zero and negatives are a `RangeError`; no
   * value turns the check off).
   *
   * @default {7 days}
   */
  maxEndorsementLifetimeSeconds?: number;
}

/** What a successful verification establishes. */
export interface AttestationVerdict {
  /** `"tdx"` or `"sev-snp"`. */
  readonly format: "tdx" | "sev-snp";
  /** The approved measurement id of the enclave. */
  readonly measurementId: MeasurementId;
  /** The TCB status from collateral, or `"unknown"` (TDX without collateral, SEV-SNP). */
  readonly tcbStatus: TcbStatus | "unknown";
  /** Intel advisories that apply to the platform (empty when unknown). */
  readonly advisoryIds: readonly string[];
  /** The serving key's address, lower case. */
  readonly servingKey: Address;
  /** The endorsed HPKE key configuration (RFC 9458 §3), to seal to. */
  readonly keyConfig: Uint8Array;
  /** When the endorsement expires. */
  readonly endorsementExpiresAt: Date;
  /**
   * When the verdict stops being valid: the earliest of the endorsement's expiry, the
   * certificates' `notAfter` and the collateral's `nextUpdate`.
   */
  readonly expiresAt: Date;
  /** The TDX or SEV-SNP details. */
  readonly evidence: TdxVerification | SnpVerification;
  /** Every GPU, verified, in the bundle's order. */
  readonly gpus: readonly GpuVerification[];
  /** The models the enclave attests it serves, with their weights digests. */
  readonly models: readonly AttestedModel[];
  /** The digests a receipt names: what exactly was verified. */
  readonly digests: AttestationDigests;
}

/** SHA-256 digests of the evidence behind a verdict (`docs/protocol.md` §6). */
export interface AttestationDigests {
  /** Of the CPU quote or report, as the bundle carries it. */
  readonly quote: `0x${string}`;
  /** Of each GPU report, as the bundle carries it. */
  readonly gpus: readonly `0x${string}`[];
  /** The evidence digest the report data binds (GPU reports and models). */
  readonly evidence: `0x${string}`;
}

const ENDORSEMENT_FAILURES: Record<
  EndorsementFailure,
  [AttestationFailure, AttestationCheck]
> = {
  malformed: ["malformed", "endorsement"],
  bad_signature: ["binding", "endorsement"],
  expired: ["stale", "endorsement_expired"],
  lifetime_too_long: ["untrusted", "endorsement"],
  nonce_mismatch: ["binding", "endorsement_nonce"],
  wrong_signer: ["binding", "endorsement_signer"],
};

/**
 * Verifies an attestation bundle for the TEE tier and returns the verdict: only then may the
 * daemon seal to `verdict.keyConfig`.
 *
 * @throws {AttestationError} with a `reason` (`mock`, `stale`, `untrusted`, `binding`,
 * `malformed`) and the failing `check`.
 * @throws {TypeError} when an option is missing or of the wrong type (a programming error),
 * `now` included (an Invalid Date).
 * @throws {RangeError} when `maxEndorsementLifetimeSeconds` is not a positive integer.
 */
export async function verifyAttestation(
  bundle: AttestationBundle,
  options: VerifyAttestationOptions,
): Promise<AttestationVerdict> {
  // Every option is checked before anything is consumed or trusted: an Invalid Date or a NaN
  // bound would otherwise turn a freshness check into a comparison with NaN, which never refuses.
  const { now, roots, policy } = checkOptions(options);
  const { hardware, verify } = formatOf(bundle);
  requireApprovedSet(options.approved);
  consumeNonce(hardware, options.nonce, options.nonces, now);
  // The GPUs are verified while the CPU evidence is (their checks run on WebCrypto's thread
  // pool); their outcome is read only after the CPU's, the binding's and the measurement's.
  const gpuCheck = verifyBundleGpus(hardware, {
    nonce: options.nonce,
    now,
    roots,
    policy,
    approved: options.approved,
  });
  gpuCheck.catch(() => {}); // read below, or dropped with an earlier refusal
  const verified = await verify(hardware, { now, roots, policy });
  const servingKey = checkBinding(hardware, options.nonce, verified.reportData);
  requireApproved(options.approved, verified.measurementId);
  const gpus = await gpuCheck;
  await checkEndorsement(hardware.endorsement, servingKey, options, now);

  const endorsementExpiresAt = new Date(hardware.endorsement.expiresAt * 1000);
  let validUntil = verified.evidence.validUntil;
  for (const gpu of gpus) if (gpu.validUntil < validUntil) validUntil = gpu.validUntil;
  return {
    format: hardware.format,
    measurementId: verified.measurementId,
    tcbStatus: verified.tcbStatus,
    advisoryIds: verified.advisoryIds,
    servingKey,
    keyConfig: hardware.endorsement.keyConfig.slice(),
    endorsementExpiresAt,
    expiresAt: validUntil < endorsementExpiresAt ? validUntil : endorsementExpiresAt,
    evidence: verified.evidence,
    gpus,
    models: hardware.models,
    digests: {
      quote: to0x(sha256(hardware.quote)),
      gpus: hardware.gpus.map((gpu) => to0x(sha256(gpu.report))),
      evidence: to0x(teeEvidenceDigest(boundEvidence(hardware))),
    },
  };
}

/** What the report data binds besides nonce and key. */
function boundEvidence(bundle: HardwareBundle) {
  return { gpuReports: bundle.gpus.map((gpu) => gpu.report), models: bundle.models };
}

/** Checks the options that are programming errors when wrong, and resolves the defaults. */
function checkOptions(
  options: VerifyAttestationOptions,
): { now: Date; roots: TrustRoots; policy: CollateralPolicy } {
  const { nonce, nonces, approved } = options;
  const now = checkNow(options.now, "verifyAttestation");
  if (options.maxEndorsementLifetimeSeconds !== undefined) {
    checkPositiveSeconds(
      options.maxEndorsementLifetimeSeconds,
      "maxEndorsementLifetimeSeconds",
      "verifyAttestation",
    );
  }
  if (!(nonce instanceof Uint8Array) || nonce.length !== ATTESTATION_NONCE_LENGTH) {
    throw new TypeError(`verifyAttestation: "nonce" must be ${ATTESTATION_NONCE_LENGTH} bytes`);
  }
  if (!(nonces instanceof NonceBook)) {
    throw new TypeError(`verifyAttestation: "nonces" must be a NonceBook`);
  }
  if (typeof approved?.has !== "function") {
    throw new TypeError(`verifyAttestation: "approved" must be an ApprovedMeasurements`);
  }
  return {
    now,
    roots: options.roots ?? PINNED_ROOTS,
    policy: resolveCollateralPolicy(options.policy),
  };
}

/**
 * 1. The bundle's format and its verifier, looked up in the seam: `mock` is always refused, a
 * format without a verifier too.
 */
function formatOf(
  bundle: AttestationBundle,
): { hardware: HardwareBundle; verify: FormatVerifier<HardwareBundle> } {
  if (bundle.format === "mock") {
    refuse("mock", "format", "mock attestation bundles are always refused", {
      hints: ["The provider has no TEE hardware; use the verified tier or another provider."],
    });
  }
  const format: unknown = (bundle as { format: unknown }).format;
  const verify = typeof format === "string" ? formatVerifier(format) : undefined;
  if (!verify) {
    refuse(
      "malformed",
      "format",
      `format ${JSON.stringify(format)} is not known (known: ${
        Object.keys(FORMAT_VERIFIERS).join(", ")
      }; mock is always refused)`,
    );
  }
  return { hardware: bundle as HardwareBundle, verify };
}

/** 2. An empty approved set refuses everything. */
function requireApprovedSet(approved: ApprovedMeasurements): void {
  if (approved.size === 0) {
    refuse(
      "untrusted",
      "approved_set",
      "no enclave measurement is approved, so no TEE provider can be trusted",
      {
        hints: [
          "Give the daemon an RPC endpoint and Registry address (NET_EVM_RPC_URL, NET_EVM_REGISTRY) " +
          "or a measurements file.",
        ],
      },
    );
  }
}

/** 3. The bundle answers the nonce just issued, and the book accepts it once, in time. */
function consumeNonce(bundle: HardwareBundle, nonce: Uint8Array, nonces: NonceBook, now: Date) {
  if (!equalBytes(bundle.nonce, nonce)) {
    refuse(
      "stale",
      "nonce",
      `the bundle answers nonce ${abbreviate(toHex(bundle.nonce), 12)}, not the one just issued ` +
        abbreviate(toHex(nonce), 12),
    );
  }
  const outcome = nonces.consume(nonce, now);
  if (outcome === "unknown") {
    refuse("stale", "nonce_unknown", "the nonce was not issued by this daemon (or was forgotten)");
  }
  if (outcome === "reused") {
    refuse("stale", "nonce_reused", "the nonce was already used; nonces are single-use");
  }
  if (outcome === "expired") {
    refuse(
      "stale",
      "nonce_expired",
      `the nonce was issued more than ${nonces.maxAgeSeconds} s before ${now.toISOString()}`,
    );
  }
}

/**
 * 7. The serving public key is a secp256k1 point and the report data binds the nonce, that
 * key, the GPU reports and the models; returns the key's address.
 */
function checkBinding(bundle: HardwareBundle, nonce: Uint8Array, reportData: Uint8Array): Address {
  let servingKey: Address;
  try {
    secp256k1.Point.fromBytes(bundle.servingPublicKey);
    servingKey = to0x(keccak_256(bundle.servingPublicKey.subarray(1)).subarray(12)) as Address;
  } catch (cause) {
    refuse("malformed", "serving_key", "the serving public key is not a secp256k1 point", {
      cause,
    });
  }
  const expected = attestationReportData(nonce, bundle.servingPublicKey, boundEvidence(bundle));
  if (!equalBytes(reportData, expected)) {
    refuse(
      "binding",
      "report_data",
      `the quote's report data ${abbreviate(toHex(reportData), 16)} does not bind this nonce, ` +
        `serving key ${servingKey}, ${bundle.gpus.length} GPU report(s) and ` +
        `${bundle.models.length} model(s) (expected ${abbreviate(toHex(expected), 16)})`,
    );
  }
  return servingKey;
}

/** 8. The measurement id is approved. */
function requireApproved(approved: ApprovedMeasurements, measurementId: MeasurementId): void {
  if (!approved.has(measurementId)) {
    refuse(
      "untrusted",
      "measurement",
      `measurement ${abbreviate(measurementId, 10)} is not in the approved set (${approved.size} ` +
        "approved)",
      { hints: [`Full measurement id: ${measurementId}`] },
    );
  }
}

/** 10. The HPKE key configuration is endorsed by the attested serving key, for this nonce. */
async function checkEndorsement(
  endorsement: KeyEndorsement,
  servingKey: Address,
  options: VerifyAttestationOptions,
  now: Date,
): Promise<void> {
  try {
    await verifyEndorsement(endorsement, {
      now,
      nonce: options.nonce,
      signer: servingKey,
      maxLifetimeSeconds: options.maxEndorsementLifetimeSeconds,
    });
  } catch (cause) {
    const failure = (cause as EndorsementError).reason;
    const mapped = failure ? ENDORSEMENT_FAILURES[failure] : undefined;
    if (!mapped) throw cause;
    refuse(
      mapped[0],
      mapped[1],
      `the HPKE key endorsement is refused: ${
        (cause as EndorsementError).shortMessage.replace(/^Cannot verify endorsement: /, "")
      }`,
      { cause },
    );
  }
}
