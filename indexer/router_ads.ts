/**
 * `fetchRouterAds`: one router's `GET /v1/ads` (`docs/protocol.md` §2), bounded in time and
 * size, with the envelope checked. The entries themselves are checked one by one later
 * ({@linkcode verifyEntry}), so one bad entry never hides the good ones.
 *
 * @example
 * ```ts ignore
 * import { fetchRouterAds } from "./router_ads.ts";
 *
 * const entries = await fetchRouterAds("http://127.0.0.1:9101", { timeoutMs: 2_000 });
 * console.log(`${entries.length} entries`);
 * ```
 *
 * @module
 */

import { abbreviate } from "../errors.ts";
import { fetchJson, FetchJsonError } from "../io/fetch_json.ts";
import { RouterAdsError } from "./errors.ts";

/** Largest router body accepted, in bytes (8 MiB, `docs/protocol.md` §2). */
export const MAX_ROUTER_BODY_BYTES: number = 8 * 1024 * 1024;
/** Most entries one router may list (`docs/protocol.md` §2). */
export const MAX_ROUTER_ENTRIES = 10_000;
/** Longest router URL accepted, in characters. */
export const MAX_ROUTER_URL_LENGTH = 2048;

/** Options of {@linkcode fetchRouterAds}. */
export interface FetchRouterAdsOptions {
  /**
   * The fetch implementation.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /**
   * Time allowed for the whole exchange, body included, in milliseconds.
   *
   * @default {5_000}
   */
  timeoutMs?: number;
  /**
   * Largest accepted body, in bytes.
   *
   * @default {MAX_ROUTER_BODY_BYTES}
   */
  maxBytes?: number;
  /**
   * Cancels the request.
   *
   * @default {undefined}
   */
  signal?: AbortSignal;
}

/**
 * The `GET /v1/ads` URL of a router whose base URL is stored on chain: an absolute `http:` or
 * `https:` URL without credentials, query or fragment, at most 2,048 characters.
 *
 * @throws {RouterAdsError} `invalid_url`, naming the URL and what was expected.
 */
export function routerAdsUrl(base: string): string {
  const fail = (why: string): never => {
    throw new RouterAdsError(
      "invalid_url",
      `Cannot use router URL ${JSON.stringify(abbreviate(base, 80))}: ${why}; expected an ` +
        "absolute http: or https: URL without credentials, query or fragment",
    );
  };
  if (base.length > MAX_ROUTER_URL_LENGTH) fail(`it has ${base.length} characters`);
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return fail("it is not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") fail(`its scheme is ${url.protocol}`);
  if (url.username || url.password) fail("it has credentials");
  if (url.search || base.includes("?")) fail("it has a query");
  if (url.hash || base.includes("#")) fail("it has a fragment");
  return `${url.href.replace(/\/+$/, "")}/v1/ads`;
}

/**
 * The innermost message of a network error, without the request preamble: Deno's `fetch`
 * says only "fetch failed"; its cause says "… client error (Connect): tcp connect error:
 * Connection refused (os error 111)".
 */
function rootCause(error: unknown): string | undefined {
  let message: string | undefined;
  const seen = new Set<unknown>();
  for (let e = error; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    message = e.message;
  }
  if (!message) return undefined;
  const at = message.lastIndexOf("): ");
  return (at >= 0 ? message.slice(at + 3) : message).split("\n")[0].slice(0, 200);
}

/**
 * Fetches a router's ads and checks the envelope: a JSON object whose only field `ads` is an
 * array of at most {@linkcode MAX_ROUTER_ENTRIES} entries. Returns the entries unchecked.
 *
 * @throws {RouterAdsError} with the reason of the failure (`invalid_url`, `unreachable`,
 * `timeout`, `aborted`, `status`, `too_large`, `invalid_json`, `invalid_envelope`).
 */
export async function fetchRouterAds(
  baseUrl: string,
  options: FetchRouterAdsOptions = {},
): Promise<unknown[]> {
  const url = routerAdsUrl(baseUrl);
  let body: unknown;
  try {
    body = await fetchJson(url, {
      fetch: options.fetch,
      timeoutMs: options.timeoutMs ?? 5_000,
      maxBytes: options.maxBytes ?? MAX_ROUTER_BODY_BYTES,
      signal: options.signal,
    });
  } catch (cause) {
    if (!(cause instanceof FetchJsonError)) throw cause;
    const why = cause.reason === "unreachable" ? rootCause(cause) : undefined;
    throw new RouterAdsError(
      cause.reason,
      why && !cause.shortMessage.includes(why)
        ? `${cause.shortMessage} (${why})`
        : cause.shortMessage,
      { cause, details: cause.details },
    );
  }
  const invalid = (why: string): never => {
    throw new RouterAdsError(
      "invalid_envelope",
      `Cannot use the answer of ${url}: ${why}; expected {"ads": [...]} with at most ` +
        `${MAX_ROUTER_ENTRIES} entries`,
    );
  };
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return invalid(
      `it is ${Array.isArray(body) ? "an array" : body === null ? "null" : typeof body}`,
    );
  }
  const keys = Object.keys(body);
  const unknown = keys.filter((key) => key !== "ads");
  if (unknown.length > 0) invalid(`it has the unknown field ${JSON.stringify(unknown[0])}`);
  const ads = (body as { ads?: unknown }).ads;
  if (!Array.isArray(ads)) {
    return invalid(`"ads" is ${ads === undefined ? "missing" : "not an array"}`);
  }
  if (ads.length > MAX_ROUTER_ENTRIES) invalid(`"ads" has ${ads.length} entries`);
  return ads;
}
