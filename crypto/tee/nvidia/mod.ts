/**
 * NVIDIA GPU attestation, verified offline: the SPDM measurement report a GPU signs
 * ({@linkcode parseGpuReport}), its device chain to the pinned NVIDIA Device Identity CA with
 * the FWID of the signing firmware, the nonce, revocation through OCSP answers and CRLs the
 * provider attaches ({@linkcode GpuCollateral}), and the GPU's measurement id
 * ({@linkcode gpuMeasurementId}) against an approved set — all in
 * {@linkcode verifyGpuEvidence}.
 *
 * @example
 * ```ts ignore
 * import { verifyGpuEvidence } from "@net/consumer/tee";
 *
 * const gpu = await verifyGpuEvidence({ report, certificateChain }, { nonce, now, collateral });
 * console.log(gpu.signer, gpu.driverVersion, gpu.vbiosVersion);
 * ```
 *
 * @module
 */

export {
  GPU_SIGNATURE_LENGTH,
  type GpuMeasurementBlock,
  type GpuReport,
  MAX_GPU_REPORT_LENGTH,
  parseGpuReport,
  SPDM_NONCE_LENGTH,
} from "./gpu_report.ts";
export { type GpuOpaqueData, OPAQUE_TYPES } from "./opaque_data.ts";
export {
  type GpuCollateral,
  gpuCollateralFromJson,
  type GpuCollateralJson,
  gpuCollateralToJson,
  type GpuRevocation,
} from "./gpu_collateral.ts";
export { GPU_MEASUREMENT_DOMAIN, gpuMeasurementId } from "./gpu_measurement_id.ts";
export {
  type GpuEvidence,
  type GpuVerification,
  verifyGpuEvidence,
  type VerifyGpuEvidenceOptions,
} from "./verify_gpu.ts";
