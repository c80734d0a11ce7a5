/**
 * The errors the HTTP layer itself raises, before any endpoint runs: no such path, a method the
 * path does not take, a request that fails its route's schema, a body over the limit. Each
 * service renders them in its own error shape in its one mapping function, using
 * {@linkcode HttpRequestError.status}.
 *
 * @example
 * ```ts
 * import { HttpRequestError } from "./errors.ts";
 *
 * const error = new HttpRequestError(
 *   "invalid_request",
 *   "Cannot read the request: messages[0].role must be one of system, user, assistant, tool; found \"hacker\"",
 *   { field: "messages[0].role" },
 * );
 * console.assert(error.status === 400 && error.field === "messages[0].role");
 * ```
 *
 * @module
 */

import { type NetErrorOptions, ReasonError } from "../errors.ts";

/** Why the layer refused a request. */
export type HttpFailure =
  /** No route has this path. */
  | "not_found"
  /** A route has this path, but not for this method (`allow` lists the methods it takes). */
  | "method_not_allowed"
  /** The query, path parameters or body do not match the route's schema (`field` names where). */
  | "invalid_request"
  /** The body is larger than the service's limit. */
  | "request_too_large"
  /** The body is not of the route's media type (a JSON route given text, a form, or no type). */
  | "unsupported_media_type"
  /** The URL is longer than the layer's limit ({@linkcode MAX_URL_LENGTH}). */
  | "url_too_long"
  /** The headers are larger than the layer's limit ({@linkcode MAX_HEADER_BYTES}). */
  | "headers_too_large";

/**
 * The longest URL served, in characters. Longer ones get a 414 in the service's error shape.
 * (Clients refuse URLs past about 64 KiB before sending them.)
 */
export const MAX_URL_LENGTH = 8192;

/**
 * The largest total of header names and values served, in bytes. Larger ones get a 431 in the
 * service's error shape, up to the runtime's own limit (about 64 KiB), past which Deno's
 * server answers a bare 400 before any handler runs.
 */
export const MAX_HEADER_BYTES = 32 * 1024;

/** The HTTP status of each {@linkcode HttpFailure}. */
export const HTTP_FAILURE_STATUS: Readonly<Record<HttpFailure, number>> = Object.freeze({
  not_found: 404,
  method_not_allowed: 405,
  invalid_request: 400,
  request_too_large: 413,
  url_too_long: 414,
  unsupported_media_type: 415,
  headers_too_large: 431,
});

/** Options of {@linkcode HttpRequestError}. */
export interface HttpRequestErrorOptions extends NetErrorOptions {
  /** The request field at fault, e.g. `messages[0].role` or `limit`. @default {null} */
  field?: string | null;
  /** For `method_not_allowed`: the methods the path takes. @default {[]} */
  allow?: readonly string[];
}

/** Thrown by the HTTP layer for a request it refuses before the endpoint runs. */
export class HttpRequestError extends ReasonError<HttpFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "HttpRequestError" as const;
  /** The field at fault, or `null`. */
  readonly field: string | null;
  /** The methods the path takes (for `method_not_allowed`), else empty. */
  readonly allow: readonly string[];

  /** Creates the error. */
  constructor(reason: HttpFailure, shortMessage: string, options: HttpRequestErrorOptions = {}) {
    super(reason, shortMessage, options);
    this.field = options.field ?? null;
    this.allow = options.allow ?? [];
  }

  /** The HTTP status of the refusal. */
  get status(): number {
    return HTTP_FAILURE_STATUS[this.reason];
  }
}
