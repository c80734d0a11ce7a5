/**
 * The two errors of TEE attestation: {@linkcode QuoteParseError} when the bytes of a quote or
 * report are not what the layout says, and {@linkcode AttestationError} when an attestation is
 * refused. An `AttestationError` carries a coarse `reason` that maps onto the daemon's client
 * codes and a fine `check` that names the step that failed.
 *
 * @module
 */

import { NetError, type NetErrorOptions, ReasonError } from "../../errors.ts";

/**
 * Why an attestation was refused, coarse enough for a client to act on it:
 *
 * - `mock`: the bundle is a `mock` bundle (always refused) → `attestation_mock`.
 * - `stale`: the nonce was not the one just issued, was reused or is too old; a certificate,
 *   CRL or collateral item is outside its validity at `now`; the endorsement expired →
 *   `attestation_stale`.
 * - `untrusted`: a signature, the chain to the pinned root, revocation, the QE identity, the TCB
 *   level, the TD or guest policy, or the approved measurement set refused it →
 *   `attestation_failed`.
 * - `binding`: the quote does not bind the serving key and nonce (`report_data`), or the HPKE
 *   key is not endorsed by that serving key → `attestation_failed`.
 * - `malformed`: the bundle, quote, report, certificate or collateral could not be parsed →
 *   `attestation_failed`.
 */
export type AttestationFailure = "mock" | "stale" | "untrusted" | "binding" | "malformed";

/** The step of the verification that refused an attestation. */
export type AttestationCheck =
  | "bundle"
  | "format"
  | "approved_set"
  | "nonce"
  | "nonce_unknown"
  | "nonce_reused"
  | "nonce_expired"
  | "quote"
  | "qe_vendor"
  | "pck_chain"
  | "qe_report_signature"
  | "qe_report_data"
  | "qe_identity"
  | "quote_signature"
  | "collateral"
  | "revocation"
  | "tcb_status"
  | "td_policy"
  | "vcek_chain"
  | "report_signature"
  | "vcek_tcb"
  | "guest_policy"
  | "gpu_report"
  | "gpu_chain"
  | "gpu_fwid"
  | "gpu_report_signature"
  | "gpu_nonce"
  | "gpu_collateral"
  | "gpu_revocation"
  | "gpu_measurement"
  | "gpu_required"
  | "serving_key"
  | "report_data"
  | "measurement"
  | "endorsement"
  | "endorsement_signer"
  | "endorsement_nonce"
  | "endorsement_expired";

/** Options of {@linkcode AttestationError}: those of every {@linkcode NetError}. */
export type AttestationErrorOptions = NetErrorOptions;

/**
 * Thrown when an attestation is refused or cannot be verified. `reason` is for callers that map
 * failures to client codes; `check` names the exact step.
 *
 * @example
 * ```ts
 * import { AttestationError } from "@net/consumer/tee";
 *
 * const error = new AttestationError("mock", "format", "Cannot verify attestation: mock bundles are refused");
 * console.assert(error.reason === "mock" && error.check === "format");
 * ```
 */
export class AttestationError extends ReasonError<AttestationFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "AttestationError" as const;
  /** The step that failed. */
  readonly check: AttestationCheck;

  /** Creates the error with its reason, the failing check and a one-line message. */
  constructor(
    reason: AttestationFailure,
    check: AttestationCheck,
    shortMessage: string,
    options: AttestationErrorOptions = {},
  ) {
    super(reason, shortMessage, options);
    this.check = check;
  }
}

/**
 * Thrown by the quote and report parsers when the bytes do not follow the layout: too short,
 * a length field out of bounds, an unsupported version or type, or non-zero bytes after the
 * declared end. Parsers never throw anything else.
 */
export class QuoteParseError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "QuoteParseError" as const;
  /** Byte offset where parsing failed, when known. */
  readonly offset: number | undefined;

  /** Creates the error with a one-line message and the failing offset. */
  constructor(shortMessage: string, options: { offset?: number; details?: string } = {}) {
    super(shortMessage, { details: options.details });
    this.offset = options.offset;
  }
}

/**
 * Throws the {@linkcode AttestationError} of a refused attestation; the message is
 * `Cannot verify attestation: <message>`.
 */
export function refuseAttestation(
  reason: AttestationFailure,
  check: AttestationCheck,
  message: string,
  options: AttestationErrorOptions = {},
): never {
  throw new AttestationError(reason, check, `Cannot verify attestation: ${message}`, options);
}
