/**
 * The GPU step of {@linkcode verifyAttestation} (private): every GPU of a bundle verified
 * against the nonce derived for this request and serving key, the shared revocation
 * collateral, the roots and the approved set; or, for a bundle without GPUs, the policy's
 * `requireGpu`.
 *
 * @module
 */

import type { ApprovedMeasurements } from "./approved_set.ts";
import type { CollateralPolicy } from "./collateral_policy.ts";
import { refuseAttestation as refuse } from "./errors.ts";
import type { HardwareBundle } from "./_format_verifiers.ts";
import { type GpuVerification, verifyGpuEvidence } from "./nvidia/verify_gpu.ts";
import { gpuNonce } from "./report_data.ts";
import type { TrustRoots } from "./roots.ts";

/** What the GPU step needs besides the bundle. */
export interface BundleGpuContext {
  /** The daemon's nonce. */
  readonly nonce: Uint8Array;
  /** The current time. */
  readonly now: Date;
  /** The roots (their `nvidia` list). */
  readonly roots: TrustRoots;
  /** The resolved policy. */
  readonly policy: CollateralPolicy;
  /** The approved set (GPU ids live in it beside the enclave ids). */
  readonly approved: ApprovedMeasurements;
}

/**
 * Verifies every GPU of the bundle (concurrently: WebCrypto checks run on a thread pool); the
 * first GPU that fails, in bundle order, decides the refusal.
 *
 * @throws {AttestationError} `untrusted` `gpu_required` for a bundle without GPUs the policy
 * does not accept, or the first GPU's refusal.
 */
export async function verifyBundleGpus(
  bundle: HardwareBundle,
  context: BundleGpuContext,
): Promise<GpuVerification[]> {
  if (bundle.gpus.length === 0) {
    if (context.policy.requireGpu) {
      refuse(
        "untrusted",
        "gpu_required",
        "the bundle carries no GPU evidence, and the policy requires the GPU that runs the " +
          "model to be attested",
        {
          hints: [
            "A provider running on NVIDIA GPUs must attach each GPU's SPDM report and chain.",
          ],
        },
      );
    }
    return [];
  }
  const nonce = gpuNonce(context.nonce, bundle.servingPublicKey);
  const outcomes = await Promise.allSettled(
    bundle.gpus.map((gpu, i) =>
      verifyGpuEvidence(gpu, {
        nonce,
        now: context.now,
        roots: context.roots,
        collateral: bundle.gpuCollateral,
        allowMissingCollateral: context.policy.allowMissingGpuCollateral,
        approved: context.approved,
        label: `GPU #${i}`,
      })
    ),
  );
  return outcomes.map((outcome) => {
    if (outcome.status === "rejected") throw outcome.reason;
    return outcome.value;
  });
}
