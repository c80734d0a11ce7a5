/**
 * Measurement ids (architecture §7, `docs/protocol.md` §6): the 32-byte value the Registry's
 * approved set holds for an enclave image.
 *
 * - TDX: `keccak256(MRTD ‖ RTMR0 ‖ RTMR1 ‖ RTMR2)` (RTMR3 is left out: it is extended at run
 *   time by the workload).
 * - SEV-SNP: `keccak256(MEASUREMENT)`.
 *
 * @example
 * ```ts
 * import { snpMeasurementId } from "@net/consumer/tee";
 *
 * console.assert(snpMeasurementId(new Uint8Array(48)).length === 66);
 * ```
 *
 * @module
 */

import { keccak_256 } from "@noble/hashes/sha3.js";
import { concat, to0x } from "../_bytes.ts";

/** A measurement id: `0x` and 64 lower-case hex digits. */
export type MeasurementId = `0x${string}`;

/**
 * The measurement id of a TDX TD from its MRTD and RTMR0..2 (48 bytes each).
 *
 * @throws {RangeError} when a register is not 48 bytes.
 */
export function tdxMeasurementId(
  body: { readonly mrTd: Uint8Array; readonly rtmrs: readonly Uint8Array[] },
): MeasurementId {
  const parts = [body.mrTd, body.rtmrs[0], body.rtmrs[1], body.rtmrs[2]];
  parts.forEach((part, i) => {
    if (!(part instanceof Uint8Array) || part.length !== 48) {
      throw new RangeError(
        `tdxMeasurementId: ${i === 0 ? "MRTD" : `RTMR${i - 1}`} must be 48 bytes`,
      );
    }
  });
  return to0x(keccak_256(concat(...parts)));
}

/**
 * The measurement id of an SEV-SNP guest from its 48-byte MEASUREMENT.
 *
 * @throws {RangeError} when the measurement is not 48 bytes.
 */
export function snpMeasurementId(measurement: Uint8Array): MeasurementId {
  if (!(measurement instanceof Uint8Array) || measurement.length !== 48) {
    throw new RangeError("snpMeasurementId: MEASUREMENT must be 48 bytes");
  }
  return to0x(keccak_256(measurement));
}
