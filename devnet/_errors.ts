/**
 * How the devnet's router, gateway and provider fail: {@linkcode ServiceError} for their own
 * refusals, and {@linkcode renderNetworkError}, the one place where any error (the HTTP
 * layer's {@linkcode HttpRequestError} included) becomes an answer in the network's shape
 * `{"error":{"code","message"}}` (`docs/protocol.md` §0).
 *
 * @module
 */

import type { Context } from "hono";
import { ReasonError } from "../errors.ts";
import { HttpRequestError, type ResponseSpec, z } from "../http/mod.ts";
import { errorAnswer } from "./_wire.ts";

/** Why a devnet service refused or failed a request (each its `error.code`). */
export type ServiceFailure =
  /** The gateway's directory has no such provider (404). */
  | "unknown_provider"
  /** The relay's body is not `message/ohttp-chunked-req` (415). */
  | "unsupported_media_type"
  /** The provider answered something unusable: a redirect, not JSON, an error (502). */
  | "provider_error"
  /** The provider could not be reached (502). */
  | "provider_unreachable"
  /** The provider did not start answering in time (504). */
  | "provider_timeout"
  /** The provider is in the verified tier: it has no attestation (404). */
  | "not_tee"
  /** The sealed request is larger than the provider reads (413). */
  | "too_large"
  /** The sealed request could not be opened (400). */
  | "cannot_open";

/** The HTTP status of each {@linkcode ServiceFailure}. */
export const SERVICE_FAILURE_STATUS: Readonly<Record<ServiceFailure, number>> = Object.freeze({
  unknown_provider: 404,
  unsupported_media_type: 415,
  provider_error: 502,
  provider_unreachable: 502,
  provider_timeout: 504,
  not_tee: 404,
  too_large: 413,
  cannot_open: 400,
});

/** A refusal of one of the devnet's services, answered as its reason and short message. */
export class ServiceError extends ReasonError<ServiceFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ServiceError" as const;

  /** The HTTP status of the refusal. */
  get status(): number {
    return SERVICE_FAILURE_STATUS[this.reason];
  }
}

/**
 * Request fields whose refusal has a code of its own, `invalid_<field>` (e.g. `invalid_nonce`);
 * any other field is `invalid_request`.
 */
const FIELD_CODES: ReadonlySet<string> = new Set(["provider", "model", "tier", "nonce"]);

function errorBody(status: number, code: string, message: string, headers?: HeadersInit) {
  return Response.json({ error: { code, message } }, { status, headers });
}

/**
 * The one error mapping of a devnet service: a {@linkcode ServiceError} answers its reason; the
 * layer's {@linkcode HttpRequestError} its status (405 with `Allow`; a bad `provider`, `model`,
 * `tier` or `nonce` is `invalid_<field>`); anything else is logged and becomes a 500
 * `internal_error` that says nothing of the cause.
 */
export function renderNetworkError(
  service: string,
  log: (message: string) => void,
): (error: unknown, c: Context) => Response {
  return (error, c) => {
    if (error instanceof ServiceError) {
      return errorBody(error.status, error.reason, error.shortMessage);
    }
    if (error instanceof HttpRequestError) {
      const code = error.reason === "invalid_request" && FIELD_CODES.has(error.field ?? "")
        ? `invalid_${error.field}`
        : error.reason;
      const headers = error.allow.length > 0 ? { allow: error.allow.join(", ") } : undefined;
      return errorBody(error.status, code, error.shortMessage, headers);
    }
    log(
      `${service} failed to answer ${c.req.method} ${c.req.path}: ${
        error instanceof Error ? error.stack : String(error)
      }`,
    );
    return errorBody(500, "internal_error", `The ${service} failed to answer`);
  };
}

/** The refusals every operation of a devnet service can answer, for its document. */
export const COMMON_RESPONSES: Readonly<Record<number, ResponseSpec>> = Object.freeze({
  404: errorAnswer("No such endpoint (`not_found`)"),
  405: {
    ...errorAnswer("The path does not take this method (`method_not_allowed`)"),
    headers: z.object({ allow: z.string().openapi({ description: "The methods it takes" }) }),
  },
  414: errorAnswer("The URL is too long (`url_too_long`)"),
  431: errorAnswer("The headers are too large (`headers_too_large`)"),
  500: errorAnswer("The service failed (`internal_error`); the cause is logged, not told"),
});
