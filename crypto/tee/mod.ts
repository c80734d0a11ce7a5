/**
 * TEE attestation for the TEE tier: Intel TDX quotes (v4, v5) with optional Intel collateral,
 * AMD SEV-SNP reports, the pinned vendor roots, and {@linkcode verifyAttestation}, the one
 * function the daemon calls before it seals anything to a TEE provider.
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
 * const bundle = attestationBundleFromJson(json);
 * const verdict = await verifyAttestation(bundle, {
 *   nonce,
 *   nonces,
 *   approved: ApprovedMeasurements.fromList(registryIds),
 *   now: new Date(),
 * });
 * ```
 *
 * @module
 */

export * from "./errors.ts";
export * from "./roots.ts";
export * from "./tdx_quote.ts";
export * from "./tdx_verify.ts";
export * from "./tcb_status.ts";
export * from "./collateral.ts";
export * from "./sev_snp.ts";
export * from "./report_data.ts";
export * from "./measurement_id.ts";
export * from "./nonce_book.ts";
export * from "./approved_set.ts";
export * from "./collateral_policy.ts";
export * from "./bundle.ts";
export * from "./verify_attestation.ts";
// Types that the verification results and options above mention.
export type { PckPlatform } from "./_pck_extension.ts";
export type { ValidatedChain } from "./_chain.ts";
