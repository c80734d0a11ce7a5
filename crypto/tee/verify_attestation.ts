/**
 * The TEE tier's one function: {@linkcode verifyAttestation} takes a parsed attestation
 * bundle and everything the daemon knows (the nonce it issued and its nonce book, the approved
 * measurement set, the trust roots, the collateral policy, `now`), and returns a verdict or
 * throws an {@linkcode AttestationError}. No option disables a check.
 *
 * Checks, in order (nothing is trusted before it is verified):
 *
 * 1. `mock` bundles are refused (`mock`).
 * 2. An empty approved set refuses everything (`untrusted`, `approved_set`).
 * 3. The bundle answers the nonce the daemon issued, and the nonce book accepts it once,
 *    within its window (`stale`, `nonce*`).
 * 4. Policy: a TDX bundle without collateral is refused unless the policy allows it.
 * 5. The quote or report: every signature and chain to the pinned roots, collateral,
 *    TD or guest policy (`untrusted`, `stale`, `malformed`).
 * 6. The TCB status against the policy (`untrusted`, `tcb_status`).
 * 7. The serving public key is a secp256k1 point; the quote's report data is
 *    SHA-512(domain ‖ 0 ‖ nonce ‖ serving key) (`binding`, `report_data`).
 * 8. The measurement id is approved (`untrusted`, `measurement`).
 * 9. The HPKE key configuration is endorsed by that serving key, for this nonce, not expired
 *    (`binding` / `stale`, `endorsement*`).
 *
 * @example
 * ```ts ignore
 * import {
 *   ApprovedMeasurements,
 *   attestationBundleFromJson,
 *   NonceBook,
 *   verifyAttestation,
 * } from "@net/consumer/crypto";
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
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { Address } from "viem";
import { abbreviate } from "../../errors.ts";
import {
  type EndorsementError,
  type EndorsementFailure,
  verifyEndorsement,
} from "../endorsement.ts";
import { checkNow, checkPositiveSeconds } from "../_time.ts";
import { equalBytes, to0x, toHex } from "../_bytes.ts";
import type { ApprovedMeasurements } from "./approved_set.ts";
import type { AttestationBundle } from "./bundle.ts";
import { type CollateralPolicy, resolveCollateralPolicy } from "./collateral_policy.ts";
import { type AttestationCheck, AttestationError, type AttestationFailure } from "./errors.ts";
import { type MeasurementId, snpMeasurementId, tdxMeasurementId } from "./measurement_id.ts";
import { NonceBook } from "./nonce_book.ts";
import { ATTESTATION_NONCE_LENGTH, attestationReportData } from "./report_data.ts";
import { PINNED_ROOTS, type TrustRoots } from "./roots.ts";
import { type SnpVerification, verifySnpReport } from "./sev_snp.ts";
import type { TcbStatus } from "./tcb_status.ts";
import { type TdxVerification, verifyTdxQuote } from "./tdx_verify.ts";

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
}

function refuse(
  reason: AttestationFailure,
  check: AttestationCheck,
  message: string,
  options: { cause?: unknown; hints?: string[] } = {},
): never {
  throw new AttestationError(reason, check, `Cannot verify attestation: ${message}`, options);
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
  const { nonce, nonces, approved } = options;
  // Every option is checked before anything is consumed or trusted: an Invalid Date or a NaN
  // bound would otherwise turn a freshness check into a comparison with NaN, which never refuses.
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
  const policy = resolveCollateralPolicy(options.policy);
  const roots = options.roots ?? PINNED_ROOTS;

  // 1. Mock.
  if (bundle.format === "mock") {
    refuse("mock", "format", "mock attestation bundles are always refused", {
      hints: ["The provider has no TEE hardware; use the verified tier or another provider."],
    });
  }
  if (bundle.format !== "tdx" && bundle.format !== "sev-snp") {
    refuse(
      "malformed",
      "format",
      `format ${JSON.stringify((bundle as { format: unknown }).format)} is not known`,
    );
  }

  // 2. Approved set.
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

  // 3. Nonce.
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

  // 4 – 6. The quote or report, then the TCB policy.
  let evidence: TdxVerification | SnpVerification;
  let reportData: Uint8Array;
  let measurementId: MeasurementId;
  let tcbStatus: TcbStatus | "unknown" = "unknown";
  let advisoryIds: readonly string[] = [];
  if (bundle.format === "tdx") {
    if (!bundle.collateral && !policy.allowMissingCollateral) {
      refuse(
        "untrusted",
        "collateral",
        "the TDX bundle carries no collateral, and the policy requires it (revocation and TCB " +
          "level cannot be checked without it)",
        { hints: ["The provider must attach Intel collateral (PCS/PCCS) to its bundle."] },
      );
    }
    if (!bundle.collateral && policy.minTcbEvaluationDataNumber > 0) {
      refuse(
        "untrusted",
        "collateral",
        "the TDX bundle carries no collateral, and the policy requires TCB evaluation data " +
          `number ${policy.minTcbEvaluationDataNumber} or later`,
      );
    }
    const verified = await verifyTdxQuote(bundle.quote, {
      now,
      roots,
      collateral: bundle.collateral,
    });
    evidence = verified;
    reportData = verified.quote.body.reportData;
    measurementId = tdxMeasurementId(verified.quote.body);
    const numbers = verified.evaluationDataNumbers;
    const minimum = policy.minTcbEvaluationDataNumber;
    if (numbers && (numbers.tcbInfo < minimum || numbers.qeIdentity < minimum)) {
      refuse(
        "stale",
        "collateral",
        `the collateral reflects TCB evaluation data number ${numbers.tcbInfo} (TCB info) and ` +
          `${numbers.qeIdentity} (QE identity), the policy requires ${minimum} or later`,
        {
          hints: [
            "The provider must attach collateral of the latest TCB recovery (Intel PCS with " +
            "update=early, or the newest tcbEvaluationDataNumber).",
          ],
        },
      );
    }
    if (verified.tcb) {
      tcbStatus = verified.tcb.status;
      advisoryIds = verified.tcb.advisoryIds;
      if (
        tcbStatus !== "UpToDate" &&
        !(policy.acceptTcbStatuses as readonly string[]).includes(tcbStatus)
      ) {
        refuse(
          "untrusted",
          "tcb_status",
          `the platform's TCB status is ${tcbStatus}${
            advisoryIds.length ? ` (${advisoryIds.join(", ")})` : ""
          }, and the policy accepts only UpToDate${
            policy.acceptTcbStatuses.length ? ", " + policy.acceptTcbStatuses.join(", ") : ""
          }`,
        );
      }
    }
  } else {
    const verified = await verifySnpReport(bundle.quote, {
      vcek: bundle.collateral.vcek,
      now,
      roots,
    });
    evidence = verified;
    reportData = verified.report.reportData;
    measurementId = snpMeasurementId(verified.report.measurement);
    for (const [key, minimum] of Object.entries(policy.snpMinimumTcb)) {
      const value = verified.tcb[key as keyof typeof verified.tcb];
      if (minimum !== undefined && (value === null || value < minimum)) {
        refuse(
          "untrusted",
          "tcb_status",
          `the SEV-SNP ${key} SPL is ${value}, the policy requires at least ${minimum}`,
        );
      }
    }
  }

  // 7. Binding of nonce and serving key.
  let servingKey: Address;
  try {
    secp256k1.Point.fromBytes(bundle.servingPublicKey);
    servingKey = to0x(keccak_256(bundle.servingPublicKey.subarray(1)).subarray(12)) as Address;
  } catch (cause) {
    refuse("malformed", "serving_key", "the serving public key is not a secp256k1 point", {
      cause,
    });
  }
  const expected = attestationReportData(nonce, bundle.servingPublicKey);
  if (!equalBytes(reportData, expected)) {
    refuse(
      "binding",
      "report_data",
      `the quote's report data ${abbreviate(toHex(reportData), 16)} does not bind this nonce and ` +
        `serving key ${servingKey} (expected ${abbreviate(toHex(expected), 16)})`,
    );
  }

  // 8. Measurement.
  if (!approved.has(measurementId)) {
    refuse(
      "untrusted",
      "measurement",
      `measurement ${abbreviate(measurementId, 10)} is not in the approved set (${approved.size} ` +
        "approved)",
      { hints: [`Full measurement id: ${measurementId}`] },
    );
  }

  // 9. Endorsement of the HPKE key by the attested serving key.
  try {
    await verifyEndorsement(bundle.endorsement, {
      now,
      nonce,
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

  const endorsementExpiresAt = new Date(bundle.endorsement.expiresAt * 1000);
  const expiresAt = evidence.validUntil < endorsementExpiresAt
    ? evidence.validUntil
    : endorsementExpiresAt;
  return {
    format: bundle.format,
    measurementId,
    tcbStatus,
    advisoryIds,
    servingKey,
    keyConfig: bundle.endorsement.keyConfig.slice(),
    endorsementExpiresAt,
    expiresAt,
    evidence,
  };
}
