/**
 * What the TEE tier accepts beyond the checks that are never optional: which TCB statuses of
 * Intel's collateral, whether a TDX bundle without collateral is acceptable, a minimum
 * SEV-SNP TCB, whether GPU evidence is required and whether it needs revocation collateral.
 * `UpToDate` is always accepted; `Revoked` and "no matching TCB level" (`NotSupported`) are
 * always refused and cannot be listed. The defaults and why they were
 * chosen are in `docs/attestation.md`.
 *
 * @example Also accept out-of-date platforms
 * ```ts
 * import { DEFAULT_COLLATERAL_POLICY, type CollateralPolicy } from "@net/consumer/tee";
 *
 * const lenient: CollateralPolicy = {
 *   ...DEFAULT_COLLATERAL_POLICY,
 *   acceptTcbStatuses: [...DEFAULT_COLLATERAL_POLICY.acceptTcbStatuses, "OutOfDate"],
 * };
 * console.assert(lenient.acceptTcbStatuses.includes("OutOfDate"));
 * ```
 *
 * @module
 */

import type { SnpTcb } from "./sev_snp.ts";
import type { TcbStatus } from "./tcb_status.ts";

/** The TCB statuses a policy may choose to accept (everything but the fixed ones). */
export type AcceptableTcbStatus = Exclude<TcbStatus, "UpToDate" | "Revoked" | "NotSupported">;

/** The statuses a policy may list. */
export const ACCEPTABLE_TCB_STATUSES: readonly AcceptableTcbStatus[] = Object.freeze(
  [
    "SWHardeningNeeded",
    "ConfigurationNeeded",
    "ConfigurationAndSWHardeningNeeded",
    "OutOfDate",
    "OutOfDateConfigurationNeeded",
    "TDRelaunchAdvised",
    "TDRelaunchAdvisedConfigurationNeeded",
  ] as const,
);

/** The collateral policy of the TEE tier. */
export interface CollateralPolicy {
  /**
   * TCB statuses accepted besides `UpToDate`.
   *
   * @default {["SWHardeningNeeded"]}
   */
  readonly acceptTcbStatuses: readonly AcceptableTcbStatus[];
  /**
   * Whether a TDX bundle without collateral (TCB status unknown: signatures and chain only,
   * no revocation, no TCB level) is accepted.
   *
   * @default {false}
   */
  readonly allowMissingCollateral: boolean;
  /**
   * Lowest accepted SEV-SNP TCB, per component; a component left out is not checked.
   *
   * @default {{}}
   */
  readonly snpMinimumTcb: Readonly<Partial<Record<keyof SnpTcb, number>>>;
  /**
   * Lowest accepted TCB evaluation data number of a TDX bundle's collateral, for both the TCB
   * info and the QE identity: collateral that reflects an older TCB recovery event is refused
   * (`stale`), and with a minimum above 0 a bundle without collateral is refused too. Intel
   * keeps serving freshly signed collateral for older numbers (PCS `tcbEvaluationDataNumber`,
   * `update=standard`), in which a platform the latest recovery marks `OutOfDate` can still be
   * `UpToDate`; a minimum closes that window (`docs/attestation.md` §6). 0 accepts every number.
   *
   * @default {0}
   */
  readonly minTcbEvaluationDataNumber: number;
  /**
   * Whether a bundle must carry at least one GPU's evidence. The TEE tier attests the GPU
   * that runs the model: a CPU enclave alone does not prove that its GPU is in confidential
   * mode or runs the expected firmware (`docs/attestation.md` §6). Set it to `false` only for
   * providers whose approved image runs inference on the CPU inside the enclave.
   *
   * @default {true}
   */
  readonly requireGpu: boolean;
  /**
   * Whether GPU evidence without revocation collateral (NVIDIA OCSP answers or CRLs) is
   * accepted; its verdict then says `revocation: "unchecked"`.
   *
   * @default {false}
   */
  readonly allowMissingGpuCollateral: boolean;
}

/**
 * The default policy: accept `UpToDate` and `SWHardeningNeeded`, require TDX collateral, at
 * least one GPU and its revocation collateral.
 */
export const DEFAULT_COLLATERAL_POLICY: CollateralPolicy = Object.freeze({
  acceptTcbStatuses: Object.freeze(["SWHardeningNeeded"] as const),
  allowMissingCollateral: false,
  snpMinimumTcb: Object.freeze({}),
  minTcbEvaluationDataNumber: 0,
  requireGpu: true,
  allowMissingGpuCollateral: false,
});

/**
 * Completes a partial policy with the defaults and rejects invalid values.
 *
 * @throws {TypeError} when a status cannot be accepted, an SNP minimum is not a byte, or
 * `minTcbEvaluationDataNumber` is not an integer from 0 to 2^32 − 1.
 */
export function resolveCollateralPolicy(policy: Partial<CollateralPolicy> = {}): CollateralPolicy {
  const accept = policy.acceptTcbStatuses ?? DEFAULT_COLLATERAL_POLICY.acceptTcbStatuses;
  for (const status of accept) {
    if (!(ACCEPTABLE_TCB_STATUSES as readonly string[]).includes(status)) {
      throw new TypeError(
        `CollateralPolicy: "${status}" cannot be accepted; acceptable statuses are ` +
          ACCEPTABLE_TCB_STATUSES.join(", ") + " (UpToDate is always accepted, Revoked and " +
          "NotSupported never)",
      );
    }
  }
  const allowMissing = policy.allowMissingCollateral ??
    DEFAULT_COLLATERAL_POLICY.allowMissingCollateral;
  if (typeof allowMissing !== "boolean") {
    throw new TypeError(`CollateralPolicy: allowMissingCollateral must be a boolean`);
  }
  const minimum = policy.snpMinimumTcb ?? DEFAULT_COLLATERAL_POLICY.snpMinimumTcb;
  for (const [key, value] of Object.entries(minimum)) {
    if (!["bootloader", "tee", "snp", "microcode", "fmc"].includes(key)) {
      throw new TypeError(`CollateralPolicy: snpMinimumTcb has an unknown component "${key}"`);
    }
    if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 255) {
      throw new TypeError(
        `CollateralPolicy: snpMinimumTcb.${key} must be 0 to 255, found ${value}`,
      );
    }
  }
  const minEvaluation = policy.minTcbEvaluationDataNumber ??
    DEFAULT_COLLATERAL_POLICY.minTcbEvaluationDataNumber;
  if (!Number.isInteger(minEvaluation) || minEvaluation < 0 || minEvaluation > 0xffffffff) {
    throw new TypeError(
      `CollateralPolicy: minTcbEvaluationDataNumber must be an integer from 0 to 4294967295, ` +
        `found ${minEvaluation}`,
    );
  }
  const flag = (name: "requireGpu" | "allowMissingGpuCollateral"): boolean => {
    const value = policy[name] ?? DEFAULT_COLLATERAL_POLICY[name];
    if (typeof value !== "boolean") {
      throw new TypeError(`CollateralPolicy: ${name} must be a boolean`);
    }
    return value;
  };
  return {
    acceptTcbStatuses: [...accept],
    allowMissingCollateral: allowMissing,
    snpMinimumTcb: { ...minimum },
    minTcbEvaluationDataNumber: minEvaluation,
    requireGpu: flag("requireGpu"),
    allowMissingGpuCollateral: flag("allowMissingGpuCollateral"),
  };
}
