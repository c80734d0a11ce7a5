/**
 * The binding between a TEE quote and the provider's serving key (`docs/protocol.md` §6): the
 * quote's 64-byte report data must equal
 * `SHA-512("net-consumer/tee-report-data/v1" ‖ 0x00 ‖ nonce ‖ serving_public_key)`, where the
 * nonce is the daemon's 32 bytes and the key is the 65-byte uncompressed secp256k1 public key.
 *
 * @example
 * ```ts
 * import { attestationReportData } from "@net/consumer/tee";
 *
 * const nonce = new Uint8Array(32);
 * const servingPublicKey = new Uint8Array(65);
 * servingPublicKey[0] = 4;
 * console.assert(attestationReportData(nonce, servingPublicKey).length === 64);
 * ```
 *
 * @module
 */

import { sha512 } from "@noble/hashes/sha2.js";
import { concat } from "../_bytes.ts";

/** ASCII domain tag that starts the report data preimage. */
export const REPORT_DATA_DOMAIN = "net-consumer/tee-report-data/v1";
/** Length of the daemon's nonce. */
export const ATTESTATION_NONCE_LENGTH = 32;
/** Length of an uncompressed secp256k1 public key. */
export const SERVING_PUBLIC_KEY_LENGTH = 65;

/**
 * Computes the 64-byte report data that binds a nonce and a serving public key.
 *
 * @throws {RangeError} when the nonce is not 32 bytes or the key is not 65 bytes starting
 * with `0x04`.
 */
export function attestationReportData(
  nonce: Uint8Array,
  servingPublicKey: Uint8Array,
): Uint8Array {
  if (!(nonce instanceof Uint8Array) || nonce.length !== ATTESTATION_NONCE_LENGTH) {
    throw new RangeError(
      `attestationReportData: nonce must be ${ATTESTATION_NONCE_LENGTH} bytes, found ${
        nonce instanceof Uint8Array ? nonce.length : typeof nonce
      }`,
    );
  }
  if (
    !(servingPublicKey instanceof Uint8Array) ||
    servingPublicKey.length !== SERVING_PUBLIC_KEY_LENGTH || servingPublicKey[0] !== 4
  ) {
    throw new RangeError(
      `attestationReportData: serving public key must be ${SERVING_PUBLIC_KEY_LENGTH} bytes ` +
        "starting with 0x04 (uncompressed secp256k1)",
    );
  }
  return sha512(
    concat(
      new TextEncoder().encode(REPORT_DATA_DOMAIN),
      Uint8Array.of(0),
      nonce,
      servingPublicKey,
    ),
  );
}
