/**
 * The one error the daemon's clients ever see. Validation in the client-facing surface and the
 * network backend (gateway resolution, attestation, sealing, failover) both throw
 * {@linkcode DaemonError} with a {@linkcode DaemonErrorCode}; `http_error.ts` renders it in the
 * dialect of the endpoint (OpenAI or Ollama). The codes and statuses follow
 * `../shared/design/clients.md`; `docs/daemon.md` lists them for users.
 *
 * @example The backend refuses a mock attestation
 * ```ts
 * import { DaemonError } from "./daemon_error.ts";
 *
 * const error = new DaemonError(
 *   "attestation_mock",
 *   "Cannot use provider 0x5b38…: its attestation is a mock",
 * );
 * console.assert(error.status === 403 && error.code === "attestation_mock");
 * ```
 *
 * @module
 */

import { NetError } from "../../errors.ts";

/**
 * Every error code a client can receive, with its default HTTP status.
 *
 * Raised by the surface itself: `invalid_request_error` (400), `invalid_api_key` (401: a key
 * is required and none or a wrong one was sent), `too_many_auth_failures` (429: this address
 * sent too many wrong keys; wait `Retry-After`), `forbidden_host` (403),
 * `forbidden_origin` (403), `not_found` (404), `method_not_allowed` (405), `request_too_large`
 * (413), `url_too_long` (414), `unsupported_media_type` (415: a body that is not JSON),
 * `headers_too_large` (431), `internal_error` (500).
 *
 * Money (`docs/daemon.md`, "Money"), each a 402 a retry cannot fix: `budget_exceeded` (a spend
 * cap has less left than the request's worst case; nothing was sealed), `insufficient_deposit`
 * (the consumer's available Escrow deposit cannot cover it, as the provider found),
 * `payment_refused` (every provider refused the daemon's voucher). `chain_unreachable` (503): the
 * chain could not be read (`GET /v1/account`).
 *
 * Raised by the network backend: `model_not_found` (404: the network offers no such model);
 * `no_matching_provider` (404: the client's routing preferences exclude every provider of the
 * model; the message names the preference);
 * the refusals of trust, which a retry cannot fix (403: the provider could not be verified;
 * nothing was sent): `attestation_failed`, `attestation_mock`, `attestation_stale`,
 * `measurement_not_approved`, `key_not_vouched`, `tier_mismatch`, and in the TEE tier
 * `attestation_binding_failed`, `gpu_not_attested`, `gpu_attestation_failed`,
 * `gpu_measurement_not_approved`, `model_not_attested`; `decryption_failed`,
 * `stream_truncated` (502: the sealed reply could not be opened or ended before its final
 * chunk), `receipt_invalid` (502: a TEE reply's receipt is missing or does not verify; in a
 * stream, its last event), `provider_error` (502 unless the backend passes the provider's own
 * status: the provider answered with an error), `no_gateway`, `no_provider`, `overloaded` (503,
 * the last two with `Retry-After`), `timeout` (504).
 */
export const DAEMON_ERROR_STATUS: Readonly<Record<DaemonErrorCode, number>> = Object.freeze({
  invalid_request_error: 400,
  invalid_api_key: 401,
  budget_exceeded: 402,
  insufficient_deposit: 402,
  payment_refused: 402,
  forbidden_host: 403,
  forbidden_origin: 403,
  not_found: 404,
  model_not_found: 404,
  no_matching_provider: 404,
  method_not_allowed: 405,
  request_too_large: 413,
  url_too_long: 414,
  unsupported_media_type: 415,
  too_many_auth_failures: 429,
  headers_too_large: 431,
  internal_error: 500,
  attestation_failed: 403,
  attestation_mock: 403,
  attestation_stale: 403,
  measurement_not_approved: 403,
  key_not_vouched: 403,
  tier_mismatch: 403,
  attestation_binding_failed: 403,
  gpu_not_attested: 403,
  gpu_attestation_failed: 403,
  gpu_measurement_not_approved: 403,
  model_not_attested: 403,
  decryption_failed: 502,
  receipt_invalid: 502,
  stream_truncated: 502,
  provider_error: 502,
  no_gateway: 503,
  no_provider: 503,
  chain_unreachable: 503,
  overloaded: 503,
  timeout: 504,
});

/** A client-visible error code; see {@linkcode DAEMON_ERROR_STATUS} for the meaning of each. */
export type DaemonErrorCode =
  | "invalid_request_error"
  | "invalid_api_key"
  | "budget_exceeded"
  | "insufficient_deposit"
  | "payment_refused"
  | "forbidden_host"
  | "forbidden_origin"
  | "not_found"
  | "model_not_found"
  | "no_matching_provider"
  | "method_not_allowed"
  | "request_too_large"
  | "url_too_long"
  | "unsupported_media_type"
  | "too_many_auth_failures"
  | "headers_too_large"
  | "internal_error"
  | "attestation_failed"
  | "attestation_mock"
  | "attestation_stale"
  | "measurement_not_approved"
  | "key_not_vouched"
  | "tier_mismatch"
  | "attestation_binding_failed"
  | "gpu_not_attested"
  | "gpu_attestation_failed"
  | "gpu_measurement_not_approved"
  | "model_not_attested"
  | "decryption_failed"
  | "receipt_invalid"
  | "stream_truncated"
  | "provider_error"
  | "no_gateway"
  | "no_provider"
  | "chain_unreachable"
  | "overloaded"
  | "timeout";

/**
 * The refusals of trust: the provider could not be verified, so nothing was sent. They are
 * 403s, because a retry cannot fix them (an SDK does not retry a 403, so the user sees the
 * reason at once).
 */
export const TRUST_REFUSAL_CODES: ReadonlySet<DaemonErrorCode> = new Set<DaemonErrorCode>([
  "attestation_failed",
  "attestation_mock",
  "attestation_stale",
  "measurement_not_approved",
  "key_not_vouched",
  "tier_mismatch",
  "attestation_binding_failed",
  "gpu_not_attested",
  "gpu_attestation_failed",
  "gpu_measurement_not_approved",
  "model_not_attested",
]);

/**
 * Codes whose failure lies in the cryptographic checks: the refusals of trust, and the sealed
 * exchange's own failures. Their client-facing message is fixed per code (see
 * `http_error.ts`): the daemon never tells a client which step failed beyond the code; the full
 * error goes to the daemon's log and the verdict log.
 */
export const CRYPTO_ERROR_CODES: ReadonlySet<DaemonErrorCode> = new Set<DaemonErrorCode>([
  ...TRUST_REFUSAL_CODES,
  "decryption_failed",
  "stream_truncated",
  "receipt_invalid",
]);

/** Options of {@linkcode DaemonError}. */
export interface DaemonErrorOptions {
  /**
   * HTTP status, 400–599. Meant for `provider_error`, to pass on the status the provider
   * answered inside the sealed exchange (e.g. 400 for a request it refused).
   *
   * @default {DAEMON_ERROR_STATUS[code]}
   */
  status?: number;
  /** The request field at fault (OpenAI's `param`), e.g. `"model"`. @default {null} */
  param?: string | null;
  /**
   * When the client may try again, in whole seconds: sent as `Retry-After` (`no_provider`,
   * `overloaded`).
   */
  retryAfterSeconds?: number;
  /** More detail; logged, never sent for the cryptographic codes. */
  details?: string;
  /**
   * Fields added to the OpenAI error object (e.g. `budget` of `budget_exceeded`); plain JSON
   * values. The Ollama dialect has only the message.
   */
  data?: Readonly<Record<string, unknown>>;
  /** What to do next. */
  hints?: readonly string[];
  /** The underlying error. */
  cause?: unknown;
}

/** Thrown by the daemon's surface and its network backend for anything a client should see. */
export class DaemonError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "DaemonError" as const;
  /** Machine-readable code, sent to the client. */
  readonly code: DaemonErrorCode;
  /** HTTP status used when the error happens before the reply has started. */
  readonly status: number;
  /** The request field at fault, or `null`. */
  readonly param: string | null;
  /** When the client may try again (`Retry-After`), in whole seconds, if said. */
  readonly retryAfterSeconds: number | undefined;
  /** Fields added to the OpenAI error object, if any. */
  readonly data: Readonly<Record<string, unknown>> | undefined;

  /**
   * Creates the error.
   *
   * @throws {RangeError} when `code` is unknown or `status` is not an integer in 400–599.
   */
  constructor(code: DaemonErrorCode, shortMessage: string, options: DaemonErrorOptions = {}) {
    super(shortMessage, options);
    if (!Object.hasOwn(DAEMON_ERROR_STATUS, code)) {
      throw new RangeError(`Cannot create DaemonError: unknown code ${JSON.stringify(code)}`);
    }
    const status = options.status ?? DAEMON_ERROR_STATUS[code];
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new RangeError(
        `Cannot create DaemonError: status must be an integer in 400–599, found ${status}`,
      );
    }
    const retry = options.retryAfterSeconds;
    if (retry !== undefined && (!Number.isSafeInteger(retry) || retry < 0)) {
      throw new RangeError(
        `Cannot create DaemonError: retryAfterSeconds must be a whole number of seconds, found ${retry}`,
      );
    }
    this.code = code;
    this.status = status;
    this.param = options.param ?? null;
    this.retryAfterSeconds = retry;
    this.data = options.data;
  }
}
