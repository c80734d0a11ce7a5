/**
 * The indexer's HTTP service, on the project's HTTP layer (`http/`): its routes, each declared
 * once with the schemas of its parameters and answers, from which the OpenAPI 3.1 document at
 * `GET /openapi.json` is generated. The handlers are functions of the current
 * {@linkcode IndexerState} and the clock — only `/providers/{address}` reads the settlement
 * history's store (one provider's whole history); the refresher (`refresher.ts`) replaces the
 * state.
 *
 * | path                   | answer                                                                |
 * | ---------------------- | --------------------------------------------------------------------- |
 * | `/`                    | the dashboard page (and its assets, `dashboard/`)                     |
 * | `/stats`               | the network summary                                                   |
 * | `/models`              | `{"models": [...], "next_cursor", "history"}` (paginated, filters)    |
 * | `/providers`           | `{"providers": [...], "next_cursor", "history"}` (paginated, filters) |
 * | `/providers/{address}` | one provider, live or not, with its per-epoch history (paginated)     |
 * | `/epochs`              | per epoch: settled volume and emission reward (paginated)             |
 * | `/health`              | readiness, `problems` by code, the RPC endpoints (200 serving, else 503) |
 * | `/events`              | the change stream (server-sent events, `Last-Event-ID` replays)        |
 * | `/metrics`             | Prometheus metrics (`metrics.ts`)                                     |
 * | `/openapi.json`        | the generated OpenAPI 3.1 document of these endpoints                 |
 *
 * **Never stale.** The data paths answer 503 (with `Retry-After` and a JSON error that says
 * what is unreachable) before the first snapshot and once the snapshot is older than
 * `staleAfterSecs` (with the failed refresh's code when refreshes fail) — never an older
 * snapshot; a failed refresh alone keeps the fresh snapshot served (`/health` says `degraded`). **Cache-safe**: their 200s
 * carry a strong `ETag` (`If-None-Match` → 304) and `Cache-Control: public, max-age=N` with N
 * never past the snapshot's freshness bound (`_serving.ts`); everything else is `no-store`.
 * Every answer carries `Access-Control-Allow-Origin: *` (`_response.ts`); `OPTIONS` answers
 * preflights with 204; `HEAD` works on every path; other methods are 405, unknown paths 404
 * (`http_error.ts`).
 *
 * Bodies are serialized (and hashed) once per snapshot, history figures and query, and reused.
 *
 * @example
 * ```ts
 * import { createIndexerHandler } from "./handler.ts";
 * import { initialState } from "./state.ts";
 *
 * const handler = createIndexerHandler({ state: () => initialState(30, 60) });
 * const response = await handler(new Request("http://127.0.0.1:8088/stats"));
 * console.assert(response.status === 503); // no snapshot yet
 * console.assert(response.headers.get("access-control-allow-origin") === "*");
 * ```
 *
 * @module
 */

import { createService, defineRoute, json, type Route, type Service } from "../http/mod.ts";
import { VERSION } from "../version.ts";
import { httpMetrics, metricsRoute } from "../http/metrics.ts";
import { z } from "../http/mod.ts";
import type { HistorySync } from "./_history_data.ts";
import { everyAnswer } from "./_response.ts";
import {
  assertServing,
  BodyCache,
  bodyOf,
  cacheableAnswer,
  historySync,
  maxAgeSecs,
} from "./_serving.ts";
import {
  AllowHeaders,
  DEFAULT_EPOCH_PAGE,
  EpochsQuery,
  EpochsSchema,
  ErrorSchema,
  MAX_LIST_PAGE,
  ModelsQuery,
  ModelsSchema,
  ProviderDetailSchema,
  ProviderParams,
  ProviderQuery,
  ProvidersQuery,
  ProvidersSchema,
  RetryAfterHeaders,
  StatsSchema,
} from "./_schemas.ts";
import { IndexerEvents } from "./events.ts";
import { eventsRoute, healthRoute } from "./_routes_live.ts";
import type { TeeEvidence } from "./tee_evidence.ts";
import type { RpcEndpointStatus } from "../chain/client.ts";
import { IndexerRequestError } from "./errors.ts";
import { errorResponse } from "./http_error.ts";
import type { Snapshot } from "./snapshot.ts";
import type { IndexerState } from "./state.ts";
import type { BlockHash, SettlementBucket } from "./store/mod.ts";
import { DASHBOARD_PATHS, dashboardRoutes } from "./dashboard/mod.ts";
import { IndexerMetrics } from "./metrics.ts";
import { type ListPage, modelsView, providersView, statsView, type ViewOptions } from "./views.ts";
import { type EpochPage, epochsView, providerDetailView } from "./views_history.ts";

/** One provider's whole history as the store holds it, read at one confirmed block. */
export interface ProviderHistoryAnswer {
  /** Every bucket of the provider, oldest first. */
  buckets: readonly SettlementBucket[];
  /** The confirmed block they were read at (`null`: nothing confirmed yet). */
  at: BlockHash | null;
}

/** Options of {@linkcode createIndexerService} and {@linkcode createIndexerHandler}. */
export interface IndexerHandlerOptions {
  /** Returns the current state (e.g. `() => refresher.state`). */
  state: () => IndexerState;
  /**
   * The clock, for the freshness check and `/health`.
   *
   * @default {() => new Date()}
   */
  clock?: () => Date;
  /**
   * Options of the views (recent epochs, reputation window).
   *
   * @default {{}}
   */
  views?: ViewOptions;
  /**
   * Receives errors that become a 500.
   *
   * @default {console.error}
   */
  log?: (message: string, error: unknown) => void;
  /**
   * Reads one provider's whole settlement history from the store (`/providers/{address}`),
   * or `null` when the store is not open (e.g. `refresher.readProviderHistory`).
   *
   * @default {undefined} (the history of one provider is never available)
   */
  readProviderHistory?: (address: string) => Promise<ProviderHistoryAnswer | null>;
  /**
   * The change stream `GET /events` serves (the refresher's `events`).
   *
   * @default {a stream nothing is published to}
   */
  events?: IndexerEvents;
  /**
   * The last TEE evidence check of a provider, for `/providers/{address}`'s `tee` (e.g.
   * `(address) => refresher.teeEvidence(address)`).
   *
   * @default {undefined} (never checked)
   */
  teeEvidence?: (address: string) => TeeEvidence | undefined;
  /**
   * Every RPC endpoint's state, for `/health`'s `rpc` and `problems` (e.g.
   * `() => refresher.rpcStatus()`).
   *
   * @default {undefined} (no endpoint shown)
   */
  rpc?: () => readonly RpcEndpointStatus[];
  /**
   * The metrics `GET /metrics` exposes (the refresher records into the same ones); the service
   * adds its request metrics and reads the state gauges from `state`.
   *
   * @default {new IndexerMetrics({ clock })} (request and state metrics only)
   */
  metrics?: IndexerMetrics;
}

const UNAVAILABLE = {
  description: "No fresh snapshot: before the first refresh (`no_snapshot`), after failed " +
    "refreshes once the last snapshot is past its freshness bound (`chain_unreachable`, " +
    "`rpc_rate_limited`, `rpc_error`, `chain_error`, `routers_unreachable`, `internal`), or " +
    "when the snapshot is older than the bound while the loop is stuck (`stale`). Never stale " +
    "data.",
  headers: RetryAfterHeaders,
  content: json(ErrorSchema),
};

/** The answers the layer gives on any path, documented on every operation. */
const COMMON_RESPONSES = {
  404: { description: "No such path.", content: json(ErrorSchema) },
  405: {
    description: "The path exists; only GET, HEAD and OPTIONS do.",
    headers: AllowHeaders,
    content: json(ErrorSchema),
  },
  414: { description: "The URL is too long.", content: json(ErrorSchema) },
  431: { description: "The headers are too large.", content: json(ErrorSchema) },
  500: {
    description: "An unexpected failure, logged; the message is generic.",
    content: json(ErrorSchema),
  },
};

const INFO = {
  title: "net-consumer indexer",
  version: VERSION,
  description: "Read-only statistics of the network: supply, stake, emission, settled volume.\n\n" +
    "Every listed provider is bonded on chain and served by a router with an ad whose " +
    "keccak256(JCS(ad)) equals its on-chain commitment. When no fresh snapshot exists the " +
    "data endpoints answer 503 with `Retry-After`, never stale numbers.\n\n" +
    "Conventions: token amounts, prices, block numbers, epochs and timestamps read from " +
    "chain are decimal strings; counts are JSON numbers; addresses and hashes are lower-case " +
    "0x hex; times are RFC 3339 UTC.\n\n" +
    "Caching: the 200s of `/stats`, `/models`, `/providers`, `/providers/{address}` and " +
    "`/epochs` carry a strong `ETag` (a matching `If-None-Match` is answered 304) and " +
    "`Cache-Control: public, max-age=N`, N never reaching past the snapshot's freshness " +
    "bound, so a shared cache (nginx, a CDN) never serves a snapshot older than it. Every " +
    "other answer, 503s included, is `Cache-Control: no-store`; the dashboard's assets " +
    "(`/`, `/dashboard.*`) have their own (`no-cache`, or immutable when versioned).\n\n" +
    "Every answer carries `Access-Control-Allow-Origin: *` and " +
    "`X-Content-Type-Options: nosniff`. `HEAD` answers like `GET` without a body; `OPTIONS` " +
    "on a known path is a CORS preflight (204). An unknown path is answered with the " +
    "`NotFound` response, another method on a known path with `MethodNotAllowed`.",
};

const INVALID = {
  description: "A query parameter is malformed (`invalid_request`, naming it).",
  content: json(ErrorSchema),
};

function epochPage(query: { cursor?: string; limit?: number; order?: "asc" | "desc" }): EpochPage {
  return {
    cursor: query.cursor === undefined ? undefined : BigInt(query.cursor),
    limit: query.limit ?? DEFAULT_EPOCH_PAGE,
    order: query.order,
  };
}

/** What every route's handler works with. */
interface RouteContext {
  options: IndexerHandlerOptions;
  clock: () => Date;
  viewOptions: ViewOptions;
  /** The served snapshot and the history against it, or throws the 503. */
  serving: () => { state: IndexerState; snapshot: Snapshot; sync: HistorySync };
  /**
   * The cache-safe answer (ETag, 304, `max-age` up to the freshness bound) of a body rendered
   * from the served snapshot and history, once per snapshot, history figures and `key`.
   */
  answer: (
    request: Request,
    key: string,
    render: (snapshot: Snapshot, sync: HistorySync) => unknown,
  ) => Response | Promise<Response>;
}

/** The headers of a data endpoint's 200 and 304. */
const CACHE_HEADERS = z.object({
  ETag: z.string().describe(
    "Strong ETag of the body (its SHA-256): it changes with the snapshot, the settlement " +
      "figures and the query. Send it back in `If-None-Match` for a 304.",
  ),
  "Cache-Control": z.string().regex(/^public, max-age=\d+$/).describe(
    "`public, max-age=N`: N is the whole seconds left until the snapshot reaches the freshness " +
      "bound (`stale_after_secs` after `taken_at`), less one; a shared cache never serves it " +
      "past the bound.",
  ),
});

/** The documented answers of a data route: its 200, 304 and the 503. */
function ok(description: string, schema: z.ZodType) {
  return {
    200: { description, headers: CACHE_HEADERS, content: json(schema) },
    304: {
      description: "Not modified: `If-None-Match` names the current body's ETag (while " +
        "`max-age` is above 0; in the snapshot's last second the whole body is sent).",
      headers: CACHE_HEADERS,
    },
    503: UNAVAILABLE,
  };
}

/** A list page with the default limit. */
function listPage(query: ListPage): ListPage {
  return { ...query, limit: query.limit ?? MAX_LIST_PAGE };
}

/** The cache key of a path and its validated query. */
function key(path: string, query: object): string {
  return `${path}?${JSON.stringify(query)}`;
}

/** The context of the routes, over the state and a per-snapshot body cache. */
function routeContext(options: IndexerHandlerOptions): RouteContext {
  const clock = options.clock ?? (() => new Date());
  const viewOptions = options.views ?? {};
  const cache = new BodyCache();
  /** The served snapshot and the history against it, or the 503. */
  const serving = () => {
    const state = options.state();
    const snapshot = assertServing(state, clock());
    return { state, snapshot, sync: historySync(state, snapshot, viewOptions) };
  };
  const answer: RouteContext["answer"] = (request, key, render) => {
    const { state, snapshot, sync } = serving();
    const body = cache.get(snapshot, sync, key, () => render(snapshot, sync));
    return cacheableAnswer(request, body, maxAgeSecs(snapshot, state.staleAfterSecs, clock()));
  };
  return { options, clock, viewOptions, serving, answer };
}

/** `/stats`, `/models`, `/providers` and `/epochs`: cached views of the snapshot and history. */
function viewRoutes({ answer, viewOptions }: RouteContext): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/stats",
      summary: "Network summary",
      description: "Providers registered, bonded and live-verified; stake; routers and their " +
        "reports; TEE measurements; emission; capacity; rejected ads; settled volume (with the " +
        "settlement history's state: null figures until it has caught up).",
      responses: ok("The current snapshot's view.", StatsSchema),
      handler: (c) => answer(c.req.raw, "/stats", (snapshot, sync) => statsView(snapshot, sync)),
    }),
    defineRoute({
      method: "get",
      path: "/models",
      summary: "Models offered",
      description: "One entry per model id served by live-verified providers, sorted by id, a " +
        "page at a time (`limit`, `cursor`), optionally one `model` or one `tier`'s offers.",
      query: ModelsQuery,
      responses: { ...ok("A page of the current snapshot's models.", ModelsSchema), 400: INVALID },
      handler: (c, { query }) =>
        answer(
          c.req.raw,
          key("/models", query),
          (snapshot, sync) => modelsView(snapshot, sync, viewOptions, listPage(query)),
        ),
    }),
    defineRoute({
      method: "get",
      path: "/providers",
      summary: "Live-verified providers",
      description: "One entry per live-verified provider, sorted by address, a page at a time " +
        "(`limit`, `cursor`), optionally only those serving a `model` or of a `tier`.",
      query: ProvidersQuery,
      responses: {
        ...ok("A page of the current snapshot's providers.", ProvidersSchema),
        400: INVALID,
      },
      handler: (c, { query }) =>
        answer(
          c.req.raw,
          key("/providers", { ...query, cursor: query.cursor?.toLowerCase() }),
          (snapshot, sync) => providersView(snapshot, sync, viewOptions, listPage(query)),
        ),
    }),
    defineRoute({
      method: "get",
      path: "/epochs",
      summary: "Settled volume and emission per epoch",
      description: "Every epoch from 0 to the current one, a page at a time: the network's " +
        "settled amount, tokens, settlements and paid providers (null until the history has " +
        "caught up) and the epoch's emission reward.",
      query: EpochsQuery,
      responses: { ...ok("A page of epochs.", EpochsSchema), 400: INVALID },
      handler: (c, { query }) =>
        answer(
          c.req.raw,
          key("/epochs", query),
          (snapshot, sync) => epochsView(snapshot, sync, epochPage(query)),
        ),
    }),
  ];
}

/** `/providers/{address}`: one provider, its history read from the store. */
function providerRoute({ options, serving, viewOptions, clock }: RouteContext): Route {
  return defineRoute({
    method: "get",
    path: "/providers/{address}",
    summary: "One provider, live or not",
    description: "Its Registry record, its `/providers` entry when live-verified, and its " +
      "whole settlement history (every epoch it was paid in), a page at a time. 404 when " +
      "neither the Registry nor the (synced) history knows the address.",
    params: ProviderParams,
    query: ProviderQuery,
    responses: {
      ...ok("The provider.", ProviderDetailSchema),
      400: INVALID,
      404: { description: "Unknown provider (`unknown_provider`).", content: json(ErrorSchema) },
    },
    handler: async (c, { params, query }) => {
      const { state, snapshot, sync } = serving();
      const address = params.address.toLowerCase();
      // A store that fails now (a lost connection) makes the history unavailable, not a 500.
      const read = sync.synced && options.readProviderHistory
        ? await options.readProviderHistory(address).catch((error) => {
          (options.log ?? ((message, e) => console.error(message, e)))(
            "indexer: cannot read a provider's settlement history",
            error,
          );
          return null;
        })
        : null;
      const history = state.history;
      const target = snapshot.chain.block.number - BigInt(history.confirmations);
      const reaches = read !== null &&
        (target < history.scanFromBlock || (read.at !== null && read.at.number >= target));
      const synced = sync.synced && reaches;
      const detailSync: HistorySync = {
        ...sync,
        synced,
        scannedTo: read?.at?.number ?? sync.scannedTo,
        figures: synced ? sync.figures : null,
      };
      if (
        detailSync.synced && read!.buckets.length === 0 &&
        !snapshot.chain.providers.some((p) => p.address.toLowerCase() === address)
      ) {
        throw new IndexerRequestError(
          "unknown_provider",
          `Unknown provider ${address}: the Registry does not list it and the settlement ` +
            `history holds no settlement for it (up to block ${detailSync.scannedTo})`,
          { retryAfterSecs: state.refreshSecs },
        );
      }
      const body = providerDetailView(
        snapshot,
        detailSync,
        address,
        detailSync.synced ? read : null,
        epochPage(query),
        viewOptions,
        { tee: options.teeEvidence?.(address), now: clock() },
      );
      const maxAge = maxAgeSecs(snapshot, state.staleAfterSecs, clock());
      return await cacheableAnswer(c.req.raw, bodyOf(body), maxAge);
    },
  });
}

/** The routes, in the order the document lists them. */
function indexerRoutes(options: IndexerHandlerOptions, metrics: IndexerMetrics): Route[] {
  const context = routeContext(options);
  const [stats, models, providers, epochs] = viewRoutes(context);
  return [
    ...dashboardRoutes(),
    stats,
    models,
    providers,
    providerRoute(context),
    epochs,
    healthRoute(options, context.clock, context.viewOptions),
    eventsRoute(options.events ?? new IndexerEvents()),
    metricsRoute(metrics.registry),
  ];
}

/** The document's responses for answers no operation owns (unknown paths and methods). */
function registerUnownedResponses(service: Service): void {
  const error = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
  const registry = service.app.openAPIRegistry;
  registry.registerComponent("responses", "NotFound", {
    description: "No such path.",
    content: error,
  });
  registry.registerComponent("responses", "MethodNotAllowed", {
    description: "The path exists; only GET, HEAD and OPTIONS do.",
    headers: {
      Allow: {
        description: "The methods of the path.",
        required: true,
        schema: { type: "string", const: "GET, HEAD, OPTIONS" },
      },
    },
    content: error,
  });
}

/**
 * Builds the indexer's service over the current state: its route table, its generated
 * OpenAPI document and its `fetch`.
 */
export function createIndexerService(options: IndexerHandlerOptions): Service {
  const clock = options.clock ?? (() => new Date());
  const metrics = options.metrics ?? new IndexerMetrics({ clock });
  const views = options.views ?? {};
  metrics.watch(options.state, (state) => historySync(state, state.snapshot, views).synced);
  const routes = indexerRoutes(options, metrics);
  // The paths a 404 names: the API's, then the page (not each of its assets).
  const paths = [
    ...routes.map((route) => route.path).filter((path) => !DASHBOARD_PATHS.includes(path)),
    "/openapi.json",
    "/ (the dashboard page)",
  ];
  const service = createService({
    info: INFO,
    routes,
    middleware: [httpMetrics(metrics.registry), everyAnswer],
    commonResponses: COMMON_RESPONSES,
    renderError: (error, c) => errorResponse(error, c.req.raw, { paths, log: options.log }),
  });
  registerUnownedResponses(service);
  return service;
}

/** Builds the indexer's request handler over the current state. */
export function createIndexerHandler(
  options: IndexerHandlerOptions,
): (req: Request) => Promise<Response> {
  const service = createIndexerService(options);
  return (req) => service.fetch(req);
}
