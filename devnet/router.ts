/**
 * The devnet router: serves `GET /v1/ads` (`docs/protocol.md` §2) for the providers it
 * carries — each provider's ad as published, its live capacity and its live metrics.
 *
 * The router trusts nothing it relays: it passes each provider's ad through unchanged (the
 * indexer checks it against the on-chain commitment). It learns them by polling each
 * provider's `GET /v1/ad` ({@linkcode pollProviders}), or from any other source a test gives.
 *
 * @module
 */

import { fetchJson } from "../io/fetch_json.ts";

/** One entry of `GET /v1/ads`. */
export interface RouterEntry {
  /** The ad exactly as the provider published it. */
  ad: unknown;
  /** Live advertised supply. */
  capacity: { max_concurrency: number; available_concurrency: number };
  /** Live metrics. */
  metrics: { tokens_per_sec: number };
}

/** Options of {@linkcode createRouterHandler}. */
export interface RouterOptions {
  /** Produces the current entries; called per request. */
  source: () => RouterEntry[] | Promise<RouterEntry[]>;
}

/**
 * Builds the router's request handler.
 *
 * @example
 * ```ts ignore
 * Deno.serve({ port: 9101 }, createRouterHandler({ source: () => [] }));
 * ```
 */
export function createRouterHandler(options: RouterOptions): (req: Request) => Promise<Response> {
  const ads = new URLPattern({ pathname: "/v1/ads" });
  return async (req) => {
    const url = new URL(req.url);
    if (!ads.test(url)) {
      return Response.json(
        { error: { code: "not_found", message: `No route for ${req.method} ${url.pathname}` } },
        { status: 404 },
      );
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return Response.json(
        { error: { code: "method_not_allowed", message: "Use GET /v1/ads" } },
        { status: 405 },
      );
    }
    return Response.json({ ads: await options.source() });
  };
}

/** Options of {@linkcode pollProviders}. */
export interface PollProvidersOptions {
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Time allowed per provider, in ms. @default {2000} */
  timeoutMs?: number;
  /** Called with each provider that could not be polled. */
  onError?: (providerUrl: string, error: unknown) => void;
}

/**
 * Returns a router source that asks each provider's `GET /v1/ad` in parallel and lists those
 * that answered with an `{ad, capacity, metrics}` object; a provider that is down is left
 * out (and reported through `onError`), never invented.
 */
export function pollProviders(
  providerUrls: readonly string[],
  options: PollProvidersOptions = {},
): () => Promise<RouterEntry[]> {
  return async () => {
    const answers = await Promise.all(
      providerUrls.map(async (base): Promise<RouterEntry | undefined> => {
        const url = `${base.replace(/\/+$/, "")}/v1/ad`;
        try {
          const body = await fetchJson(url, {
            fetch: options.fetch,
            timeoutMs: options.timeoutMs ?? 2000,
            maxBytes: 128 * 1024,
          }) as Partial<RouterEntry> | null;
          if (!body || typeof body !== "object" || !body.ad || !body.capacity || !body.metrics) {
            throw new Error(`expected {ad, capacity, metrics} from ${url}`);
          }
          return { ad: body.ad, capacity: body.capacity, metrics: body.metrics };
        } catch (error) {
          options.onError?.(base, error);
          return undefined;
        }
      }),
    );
    return answers.filter((a) => a !== undefined);
  };
}
