/**
 * Errors become HTTP answers in exactly this one place. The body is the network's error shape
 * (`docs/protocol.md` §0): `{"error": {"code": "<snake_case>", "message": "…"}}`.
 *
 * | reason               | status | code                                                        |
 * | -------------------- | ------ | ----------------------------------------------------------- |
 * | `not_found`          | 404    | `not_found`                                                 |
 * | `method_not_allowed` | 405    | `method_not_allowed` (with `Allow`)                         |
 * | `no_snapshot`        | 503    | `no_snapshot` (with `Retry-After`)                          |
 * | `unavailable`        | 503    | the refresh failure: `chain_unreachable`, `chain_error`, `routers_unreachable`, `internal` (with `Retry-After`) |
 * | `stale`              | 503    | `stale` (with `Retry-After`)                                |
 *
 * Anything else is logged and becomes a 500 `internal_error` with a generic message:
 * internals never leak.
 *
 * @example
 * ```ts
 * import { IndexerRequestError } from "./errors.ts";
 * import { errorResponse } from "./http_error.ts";
 *
 * const response = errorResponse(
 *   new IndexerRequestError("unavailable", "The chain at http://127.0.0.1:8545 is unreachable", {
 *     code: "chain_unreachable",
 *     retryAfterSecs: 30,
 *   }),
 * );
 * console.assert(response.status === 503 && response.headers.get("retry-after") === "30");
 * ```
 *
 * @module
 */

import { ALLOWED_METHODS, baseHeaders, jsonResponse } from "./_response.ts";
import { IndexerRequestError, type IndexerRequestFailure } from "./errors.ts";

/** The HTTP status of each request failure. */
export const REQUEST_ERROR_STATUS: Readonly<Record<IndexerRequestFailure, number>> = Object
  .freeze({
    not_found: 404,
    method_not_allowed: 405,
    no_snapshot: 503,
    unavailable: 503,
    stale: 503,
  });

/** Options of {@linkcode errorResponse}. */
export interface ErrorResponseOptions {
  /**
   * Receives every error that becomes a 500.
   *
   * @default {console.error}
   */
  log?: (message: string, error: unknown) => void;
}

/** The JSON error body of the network's services. */
export function errorBody(
  code: string,
  message: string,
): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

/** Renders any thrown value as the indexer's HTTP answer (CORS header included). */
export function errorResponse(error: unknown, options: ErrorResponseOptions = {}): Response {
  const headers = baseHeaders();
  if (!(error instanceof IndexerRequestError)) {
    (options.log ?? ((message, e) => console.error(message, e)))(
      "indexer: unexpected failure while answering a request",
      error,
    );
    return jsonResponse(
      JSON.stringify(
        errorBody("internal_error", "The indexer failed unexpectedly; the details are in its log"),
      ),
      500,
      headers,
    );
  }
  if (error.reason === "method_not_allowed") headers.set("allow", ALLOWED_METHODS);
  if (error.retryAfterSecs !== undefined) {
    headers.set("retry-after", String(Math.max(1, Math.ceil(error.retryAfterSecs))));
  }
  return jsonResponse(
    JSON.stringify(errorBody(error.code, error.shortMessage)),
    REQUEST_ERROR_STATUS[error.reason],
    headers,
  );
}
