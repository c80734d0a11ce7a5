/**
 * What every answer of the indexer carries, in one place: `Access-Control-Allow-Origin: *`
 * (read-only public data), `Retry-After` exposed to scripts, `Cache-Control: no-store` unless
 * the answer says otherwise (the data endpoints' 200s and 304s are `public, max-age=N` up to the
 * snapshot's freshness bound, `_serving.ts`; the dashboard's assets have their own) and
 * `nosniff`; and on a CORS preflight (`OPTIONS` on a known
 * path, which the HTTP layer answers 204 with `Allow`) the methods, the headers asked for and
 * a day's `Access-Control-Max-Age`.
 *
 * hono's `cors()` is not used: it answers `OPTIONS` on any path (an unknown one included, which
 * the indexer answers 404) and writes the method list without the spaces clients see today.
 *
 * @module
 */

import type { MiddlewareHandler } from "hono";

/** The methods every route answers. */
export const ALLOWED_METHODS = "GET, HEAD, OPTIONS";

/** The media type of every JSON answer. */
export const JSON_TYPE = "application/json; charset=utf-8";

const BASE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "Retry-After",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
});
// A plain object: the cheapest form for `new Response` to read (this is the hot path of `/stats`).
const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  ...BASE_HEADERS,
  "content-type": JSON_TYPE,
});

/** Sets the headers every answer carries. */
export function setBaseHeaders(headers: Headers): void {
  for (const [name, value] of Object.entries(BASE_HEADERS)) headers.set(name, value);
}

/**
 * A JSON answer from already-serialized bytes or text, with the headers of every answer and
 * `extra` ones (e.g. `retry-after`).
 */
export function jsonResponse(
  body: string | Uint8Array<ArrayBuffer>,
  status: number,
  extra?: Readonly<Record<string, string>>,
): Response {
  return new Response(body, {
    status,
    headers: extra ? { ...JSON_HEADERS, ...extra } : JSON_HEADERS,
  });
}

/** A 304 Not Modified with the headers of every answer and `extra` (`etag`, `cache-control`). */
export function notModifiedResponse(extra: Readonly<Record<string, string>>): Response {
  return new Response(null, { status: 304, headers: { ...BASE_HEADERS, ...extra } });
}

/**
 * The middleware: the headers of every answer (errors, 404 and 405 included, which reach it
 * through the layer's error mapping), and the preflight headers on the layer's `OPTIONS` 204.
 */
export const everyAnswer: MiddlewareHandler = async (c, next) => {
  await next();
  const headers = c.res.headers;
  // The indexer's own answers (jsonResponse) carry them already; the layer's (the OPTIONS 204,
  // the document) get them here. Answers with their own caching (the dashboard's page and
  // assets, the metrics) keep it, and still get CORS: the data is public.
  if (!headers.has("cache-control")) setBaseHeaders(headers);
  else if (!headers.has("access-control-allow-origin")) {
    headers.set("access-control-allow-origin", "*");
    headers.set("access-control-expose-headers", BASE_HEADERS["access-control-expose-headers"]);
  }
  if (c.req.method === "OPTIONS" && c.res.status === 204) {
    headers.set("access-control-allow-methods", headers.get("allow") ?? ALLOWED_METHODS);
    headers.set(
      "access-control-allow-headers",
      c.req.header("access-control-request-headers") ?? "*",
    );
    headers.set("access-control-max-age", "86400");
  }
};
