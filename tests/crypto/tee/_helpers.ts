/**
 * Shared test helpers for the TEE tests: the manifest's shape, hex, bit flips and a refusal
 * assertion.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type AttestationCheck,
  AttestationError,
  type AttestationFailure,
} from "../../../crypto/tee/mod.ts";

/** One case of `tee/manifest.json`. */
export interface ManifestCase {
  file: string;
  kind: "tdx" | "sev-snp";
  version?: number;
  body_type?: number;
  size?: number;
  declared_length?: number;
  tail?: "zeros" | "none" | "nonzero";
  mrtd?: string;
  report_data?: string;
  report_data_prefix?: string;
  td_attributes?: string;
  mr_service_td?: string;
  crypto_now: string;
  crypto: string;
  collateral?: string;
  collateral_now?: string;
  tcb_status?: string;
  advisory_ids?: string[];
  policy: string;
  vcek?: string;
  chain?: string;
  note?: string;
}

/** The manifest. */
export interface Manifest {
  intel_sgx_root_ca_sha256: string;
  cases: ManifestCase[];
}

/** Lower-case hex without 0x. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A copy with bit `bit` of byte `index` flipped. */
export function flipBit(bytes: Uint8Array, index: number, bit = 0): Uint8Array {
  const copy = bytes.slice();
  copy[index] ^= 1 << bit;
  return copy;
}

/** Adds seconds to a date. */
export function plusSeconds(date: Date | string, seconds: number): Date {
  return new Date(new Date(date).getTime() + seconds * 1000);
}

/** Asserts that a promise rejects with an AttestationError of the given reason (and check). */
export async function refused(
  promise: Promise<unknown>,
  reason: AttestationFailure,
  check?: AttestationCheck,
  message?: RegExp,
): Promise<AttestationError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof AttestationError, `expected AttestationError, got ${caught}`);
  assert.equal(caught.reason, reason, caught.message);
  if (check) assert.equal(caught.check, check, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}
