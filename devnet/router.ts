/**
 * The devnet router: serves `GET /v1/ads` (`docs/protocol.md` §2) for the providers it
 * carries — each provider's ad as published, its live capacity and its live metrics — and its
 * OpenAPI document at `GET /openapi.json`.
 *
 * The router trusts nothing it relays: it passes each provider's ad through unchanged (the
 * indexer checks it against the on-chain commitment). It learns them by polling each
 * provider's `GET /v1/ad` ({@linkcode pollProviders}), or from any other source a test gives.
 *
 * @module
 */

import { createService, defineRoute, json, type Service, z } from "../http/mod.ts";
import { fetchJson } from "../io/fetch_json.ts";
import { VERSION } from "../version.ts";
import { COMMON_RESPONSES, renderNetworkError } from "./_errors.ts";
import { RouterEntry as RouterEntrySchema } from "./_wire.ts";

/** One entry of `GET /v1/ads`. */
export interface RouterEntry {
  /** The ad exactly as the provider published it. */
  ad: unknown;
  /** Live advertised supply. */
  capacity: { max_concurrency: number; available_concurrency: number };
  /** Live metrics. */
  metrics: { tokens_per_sec: number };
}

/** Options of {@linkcode createRouterService}. */
export interface RouterOptions {
  /** Produces the current entries; called per request. */
  source: () => RouterEntry[] | Promise<RouterEntry[]>;
  /** Where unexpected failures are reported. @default {console.warn} */
  log?: (message: string) => void;
}

/**
 * Builds the router as a service of the HTTP layer: `GET /v1/ads` and its generated
 * `GET /openapi.json`.
 *
 * @example
 * ```ts ignore
 * Deno.serve({ port: 9101 }, createRouterService({ source: () => [] }).fetch);
 * ```
 */
export function createRouterService(options: RouterOptions): Service {
  const log = options.log ?? ((message: string) => console.warn(message));
  return createService({
    info: {
      title: "devnet router",
      version: VERSION,
      description: "Lists the ads of the providers it carries (docs/protocol.md §2).",
    },
    renderError: renderNetworkError("router", log),
    commonResponses: COMMON_RESPONSES,
    routes: [defineRoute({
      method: "get",
      path: "/v1/ads",
      summary: "The ads of the providers this router carries, with live capacity and metrics",
      description: "Each ad is passed on exactly as its provider published it: readers check it " +
        "(protocol §1) against the provider's on-chain commitment.",
      responses: {
        200: {
          description: "The entries",
          content: json(z.object({ ads: z.array(RouterEntrySchema).max(10_000) }).strict()),
        },
      },
      handler: async (c) => c.json({ ads: await options.source() }),
    })],
  });
}

/** The router's request handler: {@linkcode createRouterService}'s `fetch`. */
export function createRouterHandler(options: RouterOptions): (req: Request) => Promise<Response> {
  const service = createRouterService(options);
  return (req) => service.fetch(req);
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
