/**
 * The measurement id of an NVIDIA GPU (`docs/attestation.md` §7): the 32-byte value an
 * approved set holds for a GPU's firmware, VBIOS, driver and configuration, as the GPU
 * measured them into its SPDM measurement blocks.
 *
 * `gpuMeasurementId = keccak256("net-consumer/gpu-measurements/v1" ‖ 0x00 ‖ measurement
 * record)`, where the measurement record is every block of the signed response exactly as the
 * GPU encoded it (index, specification, size, value type, value size, value). The domain tag
 * keeps it apart from the CPU ids, which hash bare registers.
 *
 * @example
 * ```ts ignore
 * import { gpuMeasurementId, parseGpuReport } from "@net/consumer/tee";
 *
 * console.log(gpuMeasurementId(parseGpuReport(reportBytes)));
 * ```
 *
 * @module
 */

import { keccak_256 } from "@noble/hashes/sha3.js";
import { concat, to0x } from "../../_bytes.ts";
import type { MeasurementId } from "../measurement_id.ts";

/** The domain tag of GPU measurement ids. */
export const GPU_MEASUREMENT_DOMAIN = "net-consumer/gpu-measurements/v1";

/** The measurement id of a GPU from its report's measurement record. */
export function gpuMeasurementId(
  report: { readonly measurementRecord: Uint8Array },
): MeasurementId {
  return to0x(
    keccak_256(
      concat(
        new TextEncoder().encode(GPU_MEASUREMENT_DOMAIN),
        Uint8Array.of(0),
        report.measurementRecord,
      ),
    ),
  );
}
