/**
 * The indexer's dashboard page, served from inside the module: an HTML page, its script (the
 * page's TypeScript bundled with uPlot), its stylesheet, an icon and the third-party licenses.
 * Nothing is fetched from elsewhere and nothing is built at run time: the assets were built by
 * `deno task dashboard` (`tools/dashboard.ts`) into `_assets.ts`, which is committed. The page
 * reads only the indexer's own API, with relative URLs (`docs/dashboard.md`).
 *
 * Each asset has a strong ETag (the SHA-256 of its bytes), and {@linkcode dashboardResponse}
 * answers `If-None-Match` with 304. The page (`/`) is `Cache-Control: no-cache`: revalidated
 * on every load, so a new version is seen at once. It names its script, stylesheet and icon
 * with their version (`dashboard.js?v=…`, the start of the ETag); asked for with the current
 * version, those are `public, max-age=31536000, immutable` — a browser or a shared cache
 * (nginx, a CDN) keeps them for good — and without it `no-cache`.
 *
 * @example
 * ```ts
 * import { dashboardAsset, dashboardResponse, DASHBOARD_PATHS } from "./mod.ts";
 *
 * console.assert(DASHBOARD_PATHS.includes("/dashboard.js"));
 * const page = dashboardAsset("/")!;
 * console.assert(page.contentType === "text/html; charset=utf-8");
 * const first = dashboardResponse(page, new Request("http://127.0.0.1:8088/"));
 * console.assert(first.status === 200 && first.headers.get("etag") === page.etag);
 * const again = dashboardResponse(
 *   page,
 *   new Request("http://127.0.0.1:8088/", { headers: { "if-none-match": page.etag } }),
 * );
 * console.assert(again.status === 304);
 * ```
 *
 * @module
 */

import { defineRoute, type Route, z } from "../../http/mod.ts";
import { ASSETS } from "./_assets.ts";

/** One asset of the page. */
export interface DashboardAsset {
  /** The path it is served at: `/`, `/dashboard.js`, ... */
  readonly path: string;
  /** Its media type, e.g. `text/javascript; charset=utf-8`. */
  readonly contentType: string;
  /** Its strong ETag: the quoted base64url SHA-256 of its bytes. */
  readonly etag: string;
  /** Its version in the page's URLs (`?v=`): the ETag's first 16 characters. */
  readonly version: string;
  /** Its bytes. */
  readonly body: Uint8Array<ArrayBuffer>;
}

const encoder = new TextEncoder();
const BY_PATH: ReadonlyMap<string, DashboardAsset> = new Map(
  ASSETS.map((asset) => [asset.path, {
    path: asset.path,
    contentType: asset.contentType,
    etag: asset.etag,
    version: asset.etag.slice(1, 17),
    body: encoder.encode(asset.text),
  }]),
);

/** Every path the page's assets are served at, the page (`/`) first. */
export const DASHBOARD_PATHS: readonly string[] = Object.freeze([...BY_PATH.keys()]);

/**
 * The page's Content Security Policy: its own script, styles, images and API only; no
 * framing, no forms, no `<base>`. (uPlot styles its elements through the CSSOM, which
 * `style-src 'self'` allows.)
 */
export const DASHBOARD_CSP: string = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The asset served at `path`, or `undefined` when the page has none there. */
export function dashboardAsset(path: string): DashboardAsset | undefined {
  return BY_PATH.get(path);
}

/** Whether an `If-None-Match` value matches `etag` (weak comparison, RFC 9110 §13.1.2). */
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  if (ifNoneMatch.trim() === "*") return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return ifNoneMatch.split(",").some((tag) => opaque(tag) === etag);
}

/** `Cache-Control` of assets asked for with their current version. */
export const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * The answer to a `GET` or `HEAD` of `asset`: 200 with its bytes, or 304 when the request's
 * `If-None-Match` names its ETag. Headers: `Content-Type`, `ETag`, `Cache-Control`
 * ({@linkcode IMMUTABLE} when the URL's `v` is the asset's version, else `no-cache`),
 * `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, and on the page the
 * {@linkcode DASHBOARD_CSP}.
 */
export function dashboardResponse(asset: DashboardAsset, request: Request): Response {
  const versioned = new URL(request.url).searchParams.get("v") === asset.version;
  const headers: Record<string, string> = {
    etag: asset.etag,
    "cache-control": versioned ? IMMUTABLE : "no-cache",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  if (asset.contentType.startsWith("text/html")) {
    headers["content-security-policy"] = DASHBOARD_CSP;
  }
  if (matches(request.headers.get("if-none-match"), asset.etag)) {
    return new Response(null, { status: 304, headers });
  }
  headers["content-type"] = asset.contentType;
  headers["content-length"] = String(asset.body.byteLength);
  return new Response(request.method === "HEAD" ? null : asset.body, { status: 200, headers });
}

const ETAG_HEADERS = z.object({
  ETag: z.string().describe("Strong ETag of the asset (SHA-256)."),
  "Cache-Control": z.enum(["no-cache", IMMUTABLE]).describe(
    "Immutable when asked for with the asset's current version (`?v=`), else no-cache.",
  ),
});

/**
 * One route per asset, for the indexer's route list (`GET` and, from the layer, `HEAD`):
 * documented in the OpenAPI document like every other route.
 */
export function dashboardRoutes(): Route[] {
  return DASHBOARD_PATHS.map((path) => {
    const asset = BY_PATH.get(path)!;
    const mediaType = asset.contentType.split(";")[0];
    return defineRoute({
      method: "get",
      path,
      summary: path === "/" ? "The dashboard page" : `The dashboard's ${path.slice(1)}`,
      query: z.object({
        v: z.string().optional().describe("The asset's version, as the page names it."),
      }),
      description: path === "/"
        ? "An HTML page that shows the network from this indexer's own API (docs/dashboard.md)."
        : "An asset of the dashboard page, built into the module.",
      responses: {
        200: {
          description: "The asset.",
          headers: ETAG_HEADERS,
          content: { [mediaType]: { schema: z.string() } },
        },
        304: { description: "Not modified: the `If-None-Match` ETag is current." },
      },
      handler: (c) => dashboardResponse(asset, c.req.raw),
    });
  });
}
