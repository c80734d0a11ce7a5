/**
 * TEE attestation for the TEE tier: Intel TDX quotes (v4, v5) with Intel collateral, AMD
 * SEV-SNP reports, NVIDIA GPU evidence with its revocation collateral, the pinned vendor
 * roots, and {@linkcode verifyAttestation}, the one function a client calls before it seals
 * anything to a TEE provider.
 *
 * - {@linkcode verifyAttestation}: a bundle, the nonce just issued from a
 *   {@linkcode NonceBook}, the {@linkcode ApprovedMeasurements} and `now` → an
 *   {@linkcode AttestationVerdict} (the key configuration to seal to) or an
 *   {@linkcode AttestationError} with a `reason` and the failing `check`. The bundle's
 *   `format` picks its verifier (`tdx`, `sev-snp`); `mock` is always refused. No option
 *   disables a check.
 * - {@linkcode attestationBundleFromJson}, {@linkcode tdxCollateralFromJson}: the wire forms.
 * - {@linkcode parseTdxQuote}, {@linkcode verifyTdxQuote}, {@linkcode parseSnpReport},
 *   {@linkcode verifySnpReport}: one format on its own; {@linkcode tdxMeasurementId},
 *   {@linkcode snpMeasurementId}: the ids an operator approves.
 * - {@linkcode attestationReportData}, {@linkcode gpuNonce}: what a provider's enclave puts into
 *   its report and asks its GPUs to sign.
 * - {@linkcode verifyGpuEvidence}: one NVIDIA GPU's SPDM report and device chain on its own.
 * - {@linkcode checkReceipt}, {@linkcode verifyReceiptRecord}: a reply's receipt against its
 *   verdict, and a saved receipt re-verified offline down to the vendor roots.
 *
 * Every check, its order and the policy defaults are described in `docs/attestation.md`.
 *
 * @example Issue a nonce, verify the provider's answer, seal only to the verdict's key
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
 * const bundle = attestationBundleFromJson(await fetchAttestation(provider, nonce));
 * const verdict = await verifyAttestation(bundle, {
 *   nonce,
 *   nonces,
 *   approved: ApprovedMeasurements.fromList(registryIds),
 *   now: new Date(),
 * });
 * // seal to verdict.keyConfig, until verdict.expiresAt
 * ```
 *
 * @example Compute the measurement id an operator approves
 * ```ts
 * import { ApprovedMeasurements, snpMeasurementId } from "@net/consumer/tee";
 *
 * const id = snpMeasurementId(new Uint8Array(48)); // SEV-SNP MEASUREMENT of an image
 * const approved = ApprovedMeasurements.fromList([id]);
 * console.assert(approved.has(id) && approved.size === 1);
 * ```
 *
 * @module
 */

export {
  type AttestationCheck,
  AttestationError,
  type AttestationFailure,
  QuoteParseError,
} from "./errors.ts";
export {
  type AttestationDigests,
  type AttestationVerdict,
  verifyAttestation,
  type VerifyAttestationOptions,
} from "./verify_attestation.ts";
export {
  type AttestationBundle,
  attestationBundleFromJson,
  type AttestationBundleJson,
  attestationBundleToJson,
  type AttestationFormat,
  type BundleCommon,
  type MockBundle,
  type SnpBundle,
  type TdxBundle,
} from "./bundle.ts";
export { NonceBook, type NonceBookOptions, type NonceOutcome } from "./nonce_book.ts";
export { ApprovedMeasurements, MeasurementSetError } from "./approved_set.ts";
export { type MeasurementId, snpMeasurementId, tdxMeasurementId } from "./measurement_id.ts";
export {
  type AcceptableTcbStatus,
  type CollateralPolicy,
  DEFAULT_COLLATERAL_POLICY,
} from "./collateral_policy.ts";
export { type AmdProductRoots, PINNED_ROOTS, type TrustRoots } from "./roots.ts";
export {
  ATTESTATION_NONCE_LENGTH,
  attestationReportData,
  type AttestedModel,
  type BoundEvidence,
  gpuNonce,
  teeEvidenceDigest,
  WEIGHTS_DIGEST_LENGTH,
} from "./report_data.ts";
export {
  parseTdxQuote,
  type QeReport,
  type TdReportBody,
  type TdxQuote,
  type TdxQuoteHeader,
} from "./tdx_quote.ts";
export {
  type PckPlatform,
  type TdxVerification,
  verifyTdxQuote,
  type VerifyTdxQuoteOptions,
} from "./tdx_verify.ts";
export {
  type TdxCollateral,
  tdxCollateralFromJson,
  type TdxCollateralJson,
  tdxCollateralToJson,
} from "./collateral.ts";
export type { TcbEvaluation, TcbStatus } from "./tcb_status.ts";
export {
  GPU_MEASUREMENT_DOMAIN,
  type GpuCollateral,
  gpuCollateralFromJson,
  type GpuCollateralJson,
  gpuCollateralToJson,
  type GpuEvidence,
  type GpuMeasurementBlock,
  gpuMeasurementId,
  type GpuOpaqueData,
  type GpuReport,
  type GpuRevocation,
  type GpuVerification,
  parseGpuReport,
  verifyGpuEvidence,
  type VerifyGpuEvidenceOptions,
} from "./nvidia/mod.ts";
export {
  checkReceipt,
  type ExpectedReceipt,
  type ReceiptRecord,
  receiptRecordFromJson,
  type ReceiptRecordJson,
  receiptRecordToJson,
  type ReceiptVerification,
  verifyReceiptRecord,
  type VerifyReceiptRecordOptions,
} from "./verify_receipt.ts";
export {
  parseSnpReport,
  type SnpReport,
  type SnpTcb,
  type SnpVerification,
  verifySnpReport,
  type VerifySnpReportOptions,
} from "./sev_snp.ts";
