/**
 * The per-format seam of {@linkcode verifyAttestation} (private): a table from a bundle's
 * `format` to the function that verifies that format's hardware evidence and applies the
 * policy the vendor leaves to the relying party. What every format shares — the nonce, the
 * binding of nonce and serving key, the approved measurement, the endorsement — stays in
 * `verify_attestation.ts`.
 *
 * Adding a format means one verifier here (returning a {@linkcode FormatVerification}) and one
 * entry in {@linkcode FORMAT_VERIFIERS}; `mock` never gets one.
 *
 * @module
 */

import type { SnpBundle, TdxBundle } from "./bundle.ts";
import type { CollateralPolicy } from "./collateral_policy.ts";
import { refuseAttestation as refuse } from "./errors.ts";
import { type MeasurementId, snpMeasurementId, tdxMeasurementId } from "./measurement_id.ts";
import type { TrustRoots } from "./roots.ts";
import { type SnpVerification, verifySnpReport } from "./sev_snp.ts";
import type { TcbStatus } from "./tcb_status.ts";
import { type TdxVerification, verifyTdxQuote } from "./tdx_verify.ts";

/** What a format verifier is given besides the bundle. */
export interface FormatContext {
  /** The current time, already checked. */
  readonly now: Date;
  /** The roots to trust. */
  readonly roots: TrustRoots;
  /** The resolved collateral policy. */
  readonly policy: CollateralPolicy;
}

/** What a format verifier establishes: the facts the format-independent checks need. */
export interface FormatVerification {
  /** The verified TDX or SEV-SNP details. */
  readonly evidence: TdxVerification | SnpVerification;
  /** The 64 bytes the enclave put into its report (checked against nonce and serving key). */
  readonly reportData: Uint8Array;
  /** The enclave's measurement id (checked against the approved set). */
  readonly measurementId: MeasurementId;
  /** The TCB status the policy accepted, or `"unknown"`. */
  readonly tcbStatus: TcbStatus | "unknown";
  /** The advisories that apply (empty when unknown). */
  readonly advisoryIds: readonly string[];
}

/** Verifies one format's evidence and its policy, or throws an `AttestationError`. */
export type FormatVerifier<Bundle> = (
  bundle: Bundle,
  context: FormatContext,
) => Promise<FormatVerification>;

/** The bundles that carry hardware evidence. */
export type HardwareBundle = TdxBundle | SnpBundle;

/** The seam: one verifier per hardware format. */
export const FORMAT_VERIFIERS: {
  readonly [Format in HardwareBundle["format"]]: FormatVerifier<
    Extract<HardwareBundle, { format: Format }>
  >;
} = Object.freeze({ tdx: verifyTdxEvidence, "sev-snp": verifySnpEvidence });

/**
 * The verifier of a format, or `undefined` when the format has none (`mock`, or a name this
 * verifier does not know — including inherited property names such as `constructor`).
 */
export function formatVerifier(format: string): FormatVerifier<HardwareBundle> | undefined {
  if (!Object.hasOwn(FORMAT_VERIFIERS, format)) return undefined;
  // The table pairs each format with the verifier of that format's bundle.
  return FORMAT_VERIFIERS[format as HardwareBundle["format"]] as FormatVerifier<HardwareBundle>;
}

/**
 * Intel TDX: collateral as the policy requires, the quote and its collateral, the TCB
 * evaluation data number, and the TCB status.
 */
async function verifyTdxEvidence(
  bundle: TdxBundle,
  { now, roots, policy }: FormatContext,
): Promise<FormatVerification> {
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
  const tcbStatus = verified.tcb?.status ?? "unknown";
  const advisoryIds = verified.tcb?.advisoryIds ?? [];
  if (
    tcbStatus !== "unknown" && tcbStatus !== "UpToDate" &&
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
  return {
    evidence: verified,
    reportData: verified.quote.body.reportData,
    measurementId: tdxMeasurementId(verified.quote.body),
    tcbStatus,
    advisoryIds,
  };
}

/** AMD SEV-SNP: the report and its VCEK chain, then the policy's minimum TCB. */
async function verifySnpEvidence(
  bundle: SnpBundle,
  { now, roots, policy }: FormatContext,
): Promise<FormatVerification> {
  const verified = await verifySnpReport(bundle.quote, {
    vcek: bundle.collateral.vcek,
    now,
    roots,
  });
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
  return {
    evidence: verified,
    reportData: verified.report.reportData,
    measurementId: snpMeasurementId(verified.report.measurement),
    tcbStatus: "unknown",
    advisoryIds: [],
  };
}
