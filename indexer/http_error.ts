/**
 * Errors become HTTP answers in exactly this one place (the service's `renderError`). The body
 * is the network's error shape (`docs/protocol.md` §0):
 * `{"error": {"code": "<snake_case>", "message": "…"}}`.
 *
 * | error                                       | status | code                                |
 * | ------------------------------------------- | ------ | ----------------------------------- |
 * | `HttpRequestError` `not_found`              | 404    | `not_found` (naming the served paths) |
 * | `HttpRequestError` `method_not_allowed`     | 405    | `method_not_allowed` (with `Allow`) |
 * | `HttpRequestError` `url_too_long`, `headers_too_large`, … | 414, 431, … | the reason |
 * | `IndexerRequestError` `no_snapshot`         | 503    | `no_snapshot` (with `Retry-After`)  |
 * | `IndexerRequestError` `unavailable`         | 503    | the refresh failure: `chain_unreachable`, `rpc_rate_limited`, `rpc_error`, `chain_error`, `routers_unreachable`, `internal` (with `Retry-After`) |
 * | `IndexerRequestError` `stale`               | 503    | `stale` (with `Retry-After`)        |
 * | `IndexerRequestError` `unknown_provider`    | 404    | `unknown_provider`                  |
 * | `IndexerRequestError` `too_many_streams`    | 503    | `too_many_streams` (with `Retry-After`) |
 * | `HttpRequestError` `invalid_request`        | 400    | `invalid_request` (a bad query parameter) |
 *
 * Anything else is logged and becomes a 500 `internal_error` with a generic message:
 * internals never leak. Every answer carries the headers of `_response.ts` (CORS included).
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
 *   new Request("http://127.0.0.1:8088/stats"),
 * );
 * console.assert(response.status === 503 && response.headers.get("retry-after") === "30");
 * ```
 *
 * @module
 */

import { HttpRequestError } from "../http/mod.ts";
import { ALLOWED_METHODS, jsonResponse } from "./_response.ts";
import { IndexerRequestError } from "./errors.ts";

/** Options of {@linkcode errorResponse}. */
export interface ErrorResponseOptions {
  /**
   * The paths the indexer serves, named by the 404 message.
   *
   * @default {["/stats", "/models", "/providers", "/providers/{address}", "/epochs", "/health", "/openapi.json"]}
   */
  paths?: readonly string[];
  /**
   * Receives every error that becomes a 500.
   *
   * @default {console.error}
   */
  log?: (message: string, error: unknown) => void;
}

const PATHS = [
  "/stats",
  "/models",
  "/providers",
  "/providers/{address}",
  "/epochs",
  "/health",
  "/openapi.json",
];

/** The JSON error body of the network's services. */
export function errorBody(
  code: string,
  message: string,
): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

/** `Retry-After` in whole seconds, at least 1. */
export function retryAfter(secs: number): string {
  return String(Math.max(1, Math.ceil(secs)));
}

function shortPath(path: string): string {
  return path.length > 100 ? `${path.slice(0, 100)}…` : path;
}

function served(paths: readonly string[]): string {
  return paths.length > 1
    ? `GET ${paths.slice(0, -1).join(", ")} and ${paths.at(-1)}`
    : `GET ${paths.join("")}`;
}

function layerError(error: HttpRequestError, request: Request, paths: readonly string[]) {
  const path = shortPath(new URL(request.url).pathname);
  const headers: Record<string, string> = {};
  let message = error.shortMessage;
  if (error.reason === "not_found") {
    message = `No such path: ${path}; the indexer serves ${served(paths)}`;
  } else if (error.reason === "method_not_allowed") {
    headers.allow = error.allow.length ? [...error.allow, "OPTIONS"].join(", ") : ALLOWED_METHODS;
    message = `Method ${request.method} is not allowed on ${path}; use GET`;
  }
  return jsonResponse(JSON.stringify(errorBody(error.reason, message)), error.status, headers);
}

/** Renders any thrown value as the indexer's HTTP answer to `request`. */
export function errorResponse(
  error: unknown,
  request: Request,
  options: ErrorResponseOptions = {},
): Response {
  if (error instanceof HttpRequestError) return layerError(error, request, options.paths ?? PATHS);
  if (error instanceof IndexerRequestError) {
    if (error.reason === "unknown_provider") {
      return jsonResponse(JSON.stringify(errorBody(error.code, error.shortMessage)), 404);
    }
    return jsonResponse(JSON.stringify(errorBody(error.code, error.shortMessage)), 503, {
      "retry-after": retryAfter(error.retryAfterSecs),
    });
  }
  (options.log ?? ((message, e) => console.error(message, e)))(
    "indexer: unexpected failure while answering a request",
    error,
  );
  return jsonResponse(
    JSON.stringify(
      errorBody("internal_error", "The indexer failed unexpectedly; the details are in its log"),
    ),
    500,
  );
}
