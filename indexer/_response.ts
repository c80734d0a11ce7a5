/**
 * Response building shared by the handler and the error mapping: every answer carries
 * `Access-Control-Allow-Origin: *` and is never cached (a cached copy would be stale data).
 *
 * @module
 */

/** The methods every route answers. */
export const ALLOWED_METHODS = "GET, HEAD, OPTIONS";

/** Headers on every response. */
export function baseHeaders(): Headers {
  return new Headers({
    "access-control-allow-origin": "*",
    "access-control-expose-headers": "Retry-After",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
}

/** A JSON response from already-serialized bytes or text. */
export function jsonResponse(
  body: string | Uint8Array<ArrayBuffer>,
  status: number,
  headers: Headers = baseHeaders(),
): Response {
  headers.set("content-type", "application/json; charset=utf-8");
  return new Response(body, { status, headers });
}
