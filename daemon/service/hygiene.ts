/**
 * Local-daemon hygiene: what keeps a web page in the user's browser from using the daemon.
 *
 * - **Host allowlist** against DNS rebinding: a page on `evil.example` whose name is rebound to
 *   127.0.0.1 reaches the daemon with `Host: evil.example:11435`. Only `127.0.0.1:PORT`,
 *   `localhost:PORT` and `[::1]:PORT` (plus hostnames the operator adds) are served.
 * - **Origin refusal**: browsers send `Origin` on cross-origin requests and on every POST. A
 *   request that carries an `Origin` is refused unless the origin matches an allowed pattern
 *   (like `OLLAMA_ORIGINS`); allowed origins get CORS headers and preflight answers.
 *
 * Programs (the OpenAI and Ollama SDKs, curl, Open WebUI's backend) send no `Origin` and pass.
 * Browser requests that omit `Origin` (`<script src>`, `<img src>`) but are marked
 * `Sec-Fetch-Site: cross-site` or `same-site` are refused too.
 *
 * The daemon applies all of it in one place, {@linkcode hygiene}: the middleware that runs
 * before routing, on every request.
 *
 * @example
 * ```ts
 * import { checkHost, checkOrigin, parseOriginPatterns } from "./hygiene.ts";
 *
 * const request = new Request("http://127.0.0.1:11435/api/tags", {
 *   headers: { origin: "http://localhost:3000" },
 * });
 * checkHost(request, { port: 11435 });
 * const allowed = checkOrigin(request, parseOriginPatterns(["http://localhost:*"]));
 * console.assert(allowed === "http://localhost:3000");
 * ```
 *
 * @module
 */

import type { MiddlewareHandler } from "hono";
import { abbreviate, ReasonError } from "../../errors.ts";
import { DaemonError } from "../core/mod.ts";
import { presentedKey } from "./auth.ts";

/** The loopback hostnames always allowed in `Host`. */
export const LOOPBACK_HOSTNAMES: readonly string[] = Object.freeze([
  "127.0.0.1",
  "localhost",
  "[::1]",
]);

/**
 * The origins allowed by default: those Ollama allows out of the box (its `envconfig`), so that
 * editor plug-ins, desktop apps and local pages that work with Ollama work here too. Pages on
 * any other site are refused.
 */
export const DEFAULT_ALLOWED_ORIGINS: readonly string[] = Object.freeze([
  "http://localhost",
  "https://localhost",
  "http://localhost:*",
  "https://localhost:*",
  "http://127.0.0.1",
  "https://127.0.0.1",
  "http://127.0.0.1:*",
  "https://127.0.0.1:*",
  "http://0.0.0.0",
  "https://0.0.0.0",
  "http://0.0.0.0:*",
  "https://0.0.0.0:*",
  "app://*",
  "file://*",
  "tauri://*",
  "vscode-webview://*",
  "vscode-file://*",
]);

/** The response headers that name who served a reply (exposed to allowed origins). */
export const SERVED_BY_HEADERS: readonly string[] = Object.freeze([
  "x-net-provider",
  "x-net-tier",
  "x-net-verdict",
  "x-net-gateway",
  "x-net-receipt",
]);

/** Options of {@linkcode checkHost}. */
export interface HostCheckOptions {
  /** The port the daemon is bound to. */
  port: number;
  /**
   * Further hostnames (no port) to accept, e.g. the address of a non-loopback bind. IPv6
   * addresses in brackets.
   *
   * @default {[]}
   */
  hostnames?: readonly string[];
}

/**
 * Returns the allowed `Host` values for a port: each hostname with `:PORT`, and also without a
 * port when the port is 80.
 */
export function allowedHosts(options: HostCheckOptions): Set<string> {
  const out = new Set<string>();
  for (const name of [...LOOPBACK_HOSTNAMES, ...(options.hostnames ?? [])]) {
    const host = name.toLowerCase();
    out.add(`${host}:${options.port}`);
    if (options.port === 80) out.add(host);
  }
  return out;
}

/**
 * Checks the request's `Host` header (or, when absent, the host of its URL) against the allowed
 * hosts: given as options, or as the set {@linkcode allowedHosts} made of them.
 *
 * @throws {DaemonError} `forbidden_host` naming the host found and the ones expected.
 */
export function checkHost(
  request: Request,
  allowed: HostCheckOptions | ReadonlySet<string>,
): void {
  const host = (request.headers.get("host") ?? new URL(request.url).host).toLowerCase();
  const hosts: ReadonlySet<string> = allowed instanceof Set
    ? allowed
    : allowedHosts(allowed as HostCheckOptions);
  if (hosts.has(host)) return;
  throw new DaemonError(
    "forbidden_host",
    `Host ${JSON.stringify(abbreviate(host, 80))} is not served; expected one of ${
      [...hosts].join(", ")
    } (a web page may be trying DNS rebinding)`,
  );
}

/** A compiled allowed-origin pattern. */
export interface OriginPattern {
  /** The pattern as written, e.g. `http://localhost:*`. */
  readonly source: string;
  /** Whether `origin` (lower case) matches. */
  test(origin: string): boolean;
}

const PATTERN_SYNTAX = /^([a-z][a-z0-9+.-]*:\/\/[^/\s?#@]+|\*|null)$/i;

/**
 * Compiles allowed-origin patterns: `*` (any origin), `null` (the opaque origin of files and
 * sandboxed frames), or `scheme://host[:port]` where `*` in the host or port matches any run of
 * characters other than `/` (e.g. `http://localhost:*`, `https://*.example.com`,
 * `app://*`). Matching ignores case.
 *
 * @throws {OriginPatternError} quoting the bad pattern.
 */
export function parseOriginPatterns(patterns: readonly string[]): OriginPattern[] {
  return patterns.map((raw) => {
    const source = raw.trim();
    if (!PATTERN_SYNTAX.test(source)) {
      throw new OriginPatternError(
        source === "" ? "empty" : "malformed",
        `Cannot use allowed origin ${
          JSON.stringify(abbreviate(raw, 80))
        }: expected *, null, or scheme://host[:port] without a path, e.g. http://localhost:*`,
      );
    }
    const lower = source.toLowerCase();
    if (lower === "*") return { source, test: () => true };
    if (lower === "null") return { source, test: (origin: string) => origin === "null" };
    const regex = new RegExp(`^${compileOrigin(lower)}$`);
    return { source, test: (origin: string) => regex.test(origin) };
  });
}

function escape(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * `scheme://host[:port]` to a regular expression: `*` matches a run of host characters (no
 * `:` or `/`) in the scheme and host, and a run of digits in the port, so
 * `http://localhost:*` cannot match `http://localhost:1.evil.example`.
 */
function compileOrigin(pattern: string): string {
  const [scheme, rest] = pattern.split("://", 2);
  const portAt = rest.lastIndexOf(":");
  const hasPort = portAt > rest.lastIndexOf("]");
  const host = hasPort ? rest.slice(0, portAt) : rest;
  const port = hasPort ? rest.slice(portAt + 1) : null;
  const wild = (part: string, any: string) => part.split("*").map(escape).join(any);
  return `${wild(scheme, "[a-z0-9+.-]*")}://${wild(host, "[^/:]*")}${
    port === null ? "" : `:${wild(port, "[0-9]+")}`
  }`;
}

/** Why an allowed-origin pattern was refused: it is blank, or not of an accepted form. */
export type OriginPatternFailure = "empty" | "malformed";

/** Thrown by {@linkcode parseOriginPatterns} for a malformed pattern. */
export class OriginPatternError extends ReasonError<OriginPatternFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "OriginPatternError" as const;
}

/**
 * Checks the request's `Origin`. Returns `null` when the request has none (a program, not a
 * browser page), or the origin when a pattern allows it. A browser request that carries no
 * `Origin` but says `Sec-Fetch-Site: cross-site` or `same-site` is refused unless `*` is
 * allowed.
 *
 * @throws {DaemonError} `forbidden_origin` naming the origin and how to allow it.
 */
export function checkOrigin(request: Request, allowed: readonly OriginPattern[]): string | null {
  const origin = request.headers.get("origin");
  if (origin === null) {
    // Browsers omit Origin on some cross-site requests (e.g. <script src>, <img src>), but
    // mark them with Sec-Fetch-Site. Only "*" allows those; a user typing the URL sends "none".
    const site = request.headers.get("sec-fetch-site");
    if ((site === "cross-site" || site === "same-site") && !allowed.some((p) => p.source === "*")) {
      throw new DaemonError(
        "forbidden_origin",
        `A ${site} browser request without an Origin is not allowed (Sec-Fetch-Site: ${site})`,
      );
    }
    return null;
  }
  const lower = origin.toLowerCase();
  if (allowed.some((pattern) => pattern.test(lower))) return origin;
  const shown = abbreviate(origin, 80);
  throw new DaemonError(
    "forbidden_origin",
    `Origin ${JSON.stringify(shown)} is not allowed ${
      allowed.length === 0
        ? "(no origins are allowed)"
        : `(allowed: ${allowed.map((p) => p.source).join(", ")})`
    }; start the daemon with --allowed-origins (or NET_ALLOWED_ORIGINS) listing it to allow it`,
    {
      hints: [
        `Start the daemon with --allowed-origins ${shown} (or NET_ALLOWED_ORIGINS) to allow it.`,
      ],
    },
  );
}

/** The CORS headers for a response to an allowed origin. */
export function corsHeaders(origin: string): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-expose-headers": SERVED_BY_HEADERS.join(", "),
    "vary": "Origin",
  };
}

const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/;

/**
 * Answers a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed
 * origin: 204 with the allowed methods, the requested headers (when well-formed) and, for
 * Chrome's Private Network Access, `Access-Control-Allow-Private-Network`.
 */
export function preflightResponse(request: Request, origin: string): Response {
  const headers = new Headers(corsHeaders(origin));
  headers.set("access-control-allow-methods", "GET, HEAD, POST, OPTIONS");
  const requested = request.headers.get("access-control-request-headers");
  headers.set(
    "access-control-allow-headers",
    requested && requested.length <= 1024 && HEADER_LIST.test(requested.trim())
      ? requested.trim()
      : "authorization, content-type",
  );
  headers.set("access-control-max-age", "600");
  if (request.headers.get("access-control-request-private-network") === "true") {
    headers.set("access-control-allow-private-network", "true");
  }
  headers.append("vary", "Access-Control-Request-Method, Access-Control-Request-Headers");
  return new Response(null, { status: 204, headers });
}

/** Options of {@linkcode hygiene}. */
export interface HygieneOptions extends HostCheckOptions {
  /** The allowed origins, compiled ({@linkcode parseOriginPatterns}). @default {[]} */
  origins?: readonly OriginPattern[];
  /**
   * Whether a request that presents an API key is served whatever its `Host` (its key is then
   * checked by the API-key rule, which runs next): for a daemon bound beyond loopback, where
   * the key is required. Clients on other hosts reach it by names no allowlist can foresee,
   * and a web page cannot send the key, so the rebinding the Host rule stops is not possible.
   * A request without a key is held to the Host rule as always.
   *
   * @default {false}
   */
  anyHostWithKey?: boolean;
}

/**
 * The daemon's hygiene as one middleware, run before routing on every request: the `Host`
 * allowlist, then the `Origin` policy (with `Sec-Fetch-Site`); for an allowed origin, its CORS
 * headers on whatever the request is answered with, and the answer to its preflight (an
 * `OPTIONS` with `Access-Control-Request-Method` on a path the daemon serves).
 *
 * @throws {DaemonError} `forbidden_host` or `forbidden_origin`, rendered by the service's error
 * mapping.
 */
export function hygiene(options: HygieneOptions): MiddlewareHandler {
  const hosts = allowedHosts(options);
  const origins = options.origins ?? [];
  return async (c, next) => {
    const request = c.req.raw;
    if (!options.anyHostWithKey || presentedKey(request) === undefined) checkHost(request, hosts);
    const origin = checkOrigin(request, origins);
    if (origin === null) return await next();
    await next();
    // The route table answers OPTIONS on a path it serves with 204 (an unknown path stays a
    // 404): that answer becomes the preflight's.
    if (
      request.method === "OPTIONS" && request.headers.has("access-control-request-method") &&
      c.res.status === 204
    ) {
      c.res = preflightResponse(request, origin);
      return;
    }
    for (const [name, value] of Object.entries(corsHeaders(origin))) {
      if (!c.res.headers.has(name)) c.res.headers.set(name, value);
    }
  };
}
