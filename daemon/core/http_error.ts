/**
 * Errors become HTTP in exactly this one place. Any thrown value is first resolved to a
 * {@linkcode DaemonError} ({@linkcode toDaemonError}); then it is rendered in the dialect of
 * the endpoint the client called:
 *
 * - OpenAI (`/v1/…`): status + `{"error":{"message","type","param","code"}}`; after a stream
 *   has started, one SSE event `data: {"error":{…}}` (the OpenAI SDKs raise on it).
 * - Ollama (`/api/…`, `/`): status + `{"error":"…"}`; after a stream has started, one NDJSON
 *   line `{"error":"…"}`.
 * - Anthropic (`/v1/messages…`): status + `{"type":"error","error":{"type","message"}}` with the
 *   type Anthropic gives the status (`invalid_request_error`, `authentication_error`,
 *   `permission_error`, `not_found_error`, `request_too_large`, `rate_limit_error`,
 *   `api_error`, `overloaded_error`, `timeout_error`); after a stream has started, one
 *   `event: error` with that body. The daemon's code is not part of Anthropic's shape: the
 *   message says it.
 *
 * The HTTP layer's own refusals ({@linkcode HttpRequestError}: no such path, wrong method, a
 * request that fails its route's schema, size limits) become the matching codes, with `param`
 * the field at fault and `Allow` for a wrong method. Unknown errors (anything that is not a
 * `DaemonError`, a {@linkcode ModelIdError} or an `HttpRequestError` anywhere in the `cause`
 * chain) are logged and become a generic `internal_error` 500. For the cryptographic codes the
 * message is fixed per code: the client learns the code, never which step failed; the full
 * error goes to the log. A `no_provider` or `overloaded` answer carries `Retry-After`.
 *
 * @example
 * ```ts
 * import { DaemonError } from "./daemon_error.ts";
 * import { errorResponse } from "./http_error.ts";
 *
 * const response = errorResponse(
 *   new DaemonError("no_provider", "No provider serves devnet/tiny-chat in tier tee"),
 *   "ollama",
 * );
 * console.assert(response.status === 503);
 * console.assert((await response.json()).error === "No provider serves devnet/tiny-chat in tier tee");
 * ```
 *
 * @module
 */

import { findCause } from "../../errors.ts";
import { type HttpFailure, HttpRequestError } from "../../http/errors.ts";
import { CRYPTO_ERROR_CODES, DaemonError, type DaemonErrorCode } from "./daemon_error.ts";
import { ModelIdError } from "./model_id.ts";

/** The API dialect of an endpoint: it decides the shape of bodies and errors. */
export type Dialect = "openai" | "ollama" | "anthropic";

/**
 * The dialect of a path: `/v1/messages…` speaks Anthropic, the rest of `/v1/…` OpenAI,
 * everything else Ollama.
 */
export function dialectOf(pathname: string): Dialect {
  if (pathname === "/v1/messages" || pathname.startsWith("/v1/messages/")) return "anthropic";
  return pathname === "/v1" || pathname.startsWith("/v1/") ? "openai" : "ollama";
}

/** The error `type` Anthropic's API gives a status. */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return status < 500 ? "invalid_request_error" : "api_error";
  }
}

/** Receives errors the daemon could not classify, with a one-line context. */
export type ErrorLogger = (message: string, error: unknown) => void;

/** Options shared by the rendering functions. */
export interface RenderErrorOptions {
  /**
   * Receives every error that becomes a 500 (and the full text of cryptographic errors, whose
   * client message is generic).
   *
   * @default {console.error}
   */
  log?: ErrorLogger;
}

/** What a client is told about a cryptographic failure: the code, not the step. */
const CRYPTO_MESSAGES: Readonly<Partial<Record<DaemonErrorCode, string>>> = {
  attestation_failed:
    "The provider's attestation or key endorsement could not be verified; the request was not sent",
  attestation_mock:
    "The provider offered a mock attestation, which is never accepted; the request was not sent",
  attestation_stale:
    "The provider's attestation is not fresh (nonce, expiry or collateral); the request was not sent",
  measurement_not_approved:
    "The provider's enclave measurement is not in the approved set; the request was not sent",
  key_not_vouched:
    "The provider's key is not vouched for by its serving key or the chain; the request was not sent",
  tier_mismatch:
    "The provider is not registered in the tier that was asked for; the request was not sent",
  attestation_binding_failed: "The provider's enclave does not vouch for its key, GPUs and " +
    "models for this request; the request was not sent",
  gpu_not_attested:
    "The provider offered no attestation of the GPU that runs the model; the request was not sent",
  gpu_attestation_failed:
    "The provider's GPU attestation could not be verified; the request was not sent",
  gpu_measurement_not_approved: "The provider's GPU firmware and driver are not in the " +
    "approved set; the request was not sent",
  model_not_attested: "The provider's enclave does not attest the model weights its ad " +
    "names; the request was not sent",
  decryption_failed: "The provider's sealed reply could not be opened",
  stream_truncated: "The provider's sealed reply ended before its final chunk",
  receipt_invalid: "The provider's receipt for this reply is missing or does not verify",
};

const INTERNAL_MESSAGE = "The daemon failed unexpectedly; the details are in its log";

const defaultLog: ErrorLogger = (message, error) => console.error(message, error);

/** The code of each of the HTTP layer's refusals. */
const LAYER_CODES: Readonly<Record<HttpFailure, DaemonErrorCode>> = {
  not_found: "not_found",
  method_not_allowed: "method_not_allowed",
  invalid_request: "invalid_request_error",
  request_too_large: "request_too_large",
  unsupported_media_type: "unsupported_media_type",
  url_too_long: "url_too_long",
  headers_too_large: "headers_too_large",
};

/**
 * One of the HTTP layer's refusals as the daemon's error. A body that is JSON but not an
 * object is worded as the other unreadable bodies are (`Cannot parse the request body: …`),
 * without a `param`.
 */
function fromRequestError(error: HttpRequestError): DaemonError {
  const message = error.shortMessage.replace(
    /^Cannot read the request: the body must be an object/,
    "Cannot parse the request body: expected a JSON object",
  );
  return new DaemonError(LAYER_CODES[error.reason], message, {
    param: error.field,
    hints: error.hints,
    cause: error,
  });
}

/**
 * Resolves any thrown value to the {@linkcode DaemonError} a client is shown: a `DaemonError`,
 * `ModelIdError` or the HTTP layer's `HttpRequestError` found in the `cause` chain (the first
 * one wins), else a logged, generic `internal_error`.
 */
export function toDaemonError(error: unknown, options: RenderErrorOptions = {}): DaemonError {
  const log = options.log ?? defaultLog;
  const found = findCause(
    error,
    (link) =>
      link instanceof DaemonError || link instanceof ModelIdError ||
      link instanceof HttpRequestError,
  );
  if (found instanceof HttpRequestError) return fromRequestError(found);
  if (found instanceof DaemonError) {
    if (CRYPTO_ERROR_CODES.has(found.code)) log(`daemon: refused (${found.code})`, found);
    return found;
  }
  if (found instanceof ModelIdError) {
    return new DaemonError("invalid_request_error", found.shortMessage, {
      param: "model",
      cause: found,
    });
  }
  log("daemon: unexpected error", error);
  return new DaemonError("internal_error", INTERNAL_MESSAGE, { cause: error });
}

/** The message a client sees for `error`. */
export function publicMessage(error: DaemonError): string {
  return CRYPTO_MESSAGES[error.code] ?? error.shortMessage;
}

/** The OpenAI error `type` for a status: what the official API uses for the same class. */
export function openaiErrorType(status: number): string {
  if (status === 402) return "insufficient_quota";
  if (status === 403) return "permission_error";
  if (status < 500) return "invalid_request_error";
  return "server_error";
}

/** The JSON error body of `error` in `dialect` (the same object is used in-stream). */
export function errorBody(error: DaemonError, dialect: Dialect): Record<string, unknown> {
  const message = publicMessage(error);
  if (dialect === "ollama") return { error: message };
  if (dialect === "anthropic") {
    return { type: "error", error: { type: anthropicErrorType(error.status), message } };
  }
  return {
    error: {
      message,
      type: openaiErrorType(error.status),
      param: error.param,
      code: error.code,
      ...error.data,
    },
  };
}

/**
 * Renders any thrown value as a complete error response in `dialect`, with the status of its
 * code (see {@linkcode toDaemonError}).
 */
export function errorResponse(
  error: unknown,
  dialect: Dialect,
  options: RenderErrorOptions = {},
): Response {
  const resolved = toDaemonError(error, options);
  const headers = new Headers({
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  const layer = resolved.cause;
  if (layer instanceof HttpRequestError && layer.allow.length > 0) {
    headers.set("allow", layer.allow.join(", "));
  }
  if (resolved.retryAfterSeconds !== undefined) {
    headers.set("retry-after", String(resolved.retryAfterSeconds));
  }
  return new Response(JSON.stringify(errorBody(resolved, dialect)), {
    status: resolved.status,
    headers,
  });
}

/**
 * Renders any thrown value as the in-stream error of a reply that has already started: one SSE
 * event (`data: {"error":{…}}` and a blank line) for OpenAI, `event: error` for Anthropic, one
 * NDJSON line for Ollama.
 */
export function streamErrorText(
  error: unknown,
  dialect: Dialect,
  options: RenderErrorOptions = {},
): string {
  const body = JSON.stringify(errorBody(toDaemonError(error, options), dialect));
  if (dialect === "anthropic") return `event: error\ndata: ${body}\n\n`;
  return dialect === "openai" ? `data: ${body}\n\n` : `${body}\n`;
}
