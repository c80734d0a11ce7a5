/**
 * The indexer's HTTP service, on the project's HTTP layer (`http/`): four routes, each declared
 * once with the schemas of its answers, from which the OpenAPI 3.1 document at
 * `GET /openapi.json` is generated. The handlers are pure functions of the current
 * {@linkcode IndexerState} and the clock: they never fetch anything; the refresher
 * (`refresher.ts`) replaces the state.
 *
 * | path            | answer                                                                |
 * | --------------- | --------------------------------------------------------------------- |
 * | `/stats`        | the network summary                                                   |
 * | `/models`       | `{"models": [...]}`                                                   |
 * | `/providers`    | `{"providers": [...]}`                                                |
 * | `/health`       | liveness, `last_snapshot_at`, `last_error`, ... (200 serving, else 503) |
 * | `/openapi.json` | the generated OpenAPI 3.1 document of these endpoints                 |
 *
 * **Never stale.** The data paths answer 503 (with `Retry-After` and a JSON error that says
 * what is unreachable) before the first snapshot, after a failed refresh, and when the
 * snapshot is older than `staleAfterSecs` — never an older snapshot. Every answer carries
 * `Access-Control-Allow-Origin: *` (`_response.ts`); `OPTIONS` answers preflights with 204;
 * `HEAD` works on every path; other methods are 405, unknown paths 404 (`http_error.ts`).
 *
 * Bodies are serialized once per snapshot and reused.
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

import { createService, defineRoute, json, type Route, type Service, type z } from "../http/mod.ts";
import { VERSION } from "../version.ts";
import { everyAnswer, jsonResponse } from "./_response.ts";
import {
  AllowHeaders,
  ErrorSchema,
  HealthSchema,
  ModelsSchema,
  ProvidersSchema,
  RetryAfterHeaders,
  StatsSchema,
} from "./_schemas.ts";
import { IndexerRequestError } from "./errors.ts";
import { errorResponse, retryAfter } from "./http_error.ts";
import type { Snapshot } from "./snapshot.ts";
import type { IndexerState } from "./state.ts";
import { healthView, modelsView, providersView, statsView, type ViewOptions } from "./views.ts";

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
}

/** Why the data endpoints cannot answer now, or `null` when they can. */
function refusal(state: IndexerState, now: Date): IndexerRequestError | null {
  const retryAfterSecs = state.nextRefreshAt
    ? Math.max(1, (state.nextRefreshAt.getTime() - now.getTime()) / 1000)
    : state.refreshing
    ? 1
    : state.refreshSecs;
  if (state.snapshot === null) {
    if (state.failing && state.lastError) {
      return new IndexerRequestError("unavailable", state.lastError.message, {
        code: state.lastError.code,
        retryAfterSecs,
      });
    }
    return new IndexerRequestError(
      "no_snapshot",
      "No snapshot yet: the first refresh has not finished",
      { retryAfterSecs },
    );
  }
  const ageMs = now.getTime() - state.snapshot.takenAt.getTime();
  if (ageMs > state.staleAfterSecs * 1000) {
    return new IndexerRequestError(
      "stale",
      `The last snapshot (block ${state.snapshot.chain.block.number}, taken at ${state.snapshot.takenAt.toISOString()}) is ${
        Math.floor(ageMs / 1000)
      } s old, older than the freshness bound of ${state.staleAfterSecs} s: the refresh loop is stuck`,
      { retryAfterSecs },
    );
  }
  return null;
}

const UNAVAILABLE = {
  description: "No fresh snapshot: before the first refresh (`no_snapshot`), after a failed " +
    "refresh (`chain_unreachable`, `chain_error`, `routers_unreachable`, `internal`) or when " +
    "the snapshot is older than the freshness bound (`stale`). Never stale data.",
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
    "Every answer carries `Access-Control-Allow-Origin: *`, `Cache-Control: no-store` and " +
    "`X-Content-Type-Options: nosniff`. `HEAD` answers like `GET` without a body; `OPTIONS` " +
    "on a known path is a CORS preflight (204). An unknown path is answered with the " +
    "`NotFound` response, another method on a known path with `MethodNotAllowed`.",
};

type DataPath = "/stats" | "/models" | "/providers";

/** The routes, over the state and a per-snapshot body cache. */
function indexerRoutes(options: IndexerHandlerOptions): Route[] {
  const clock = options.clock ?? (() => new Date());
  const viewOptions = options.views ?? {};
  const encoder = new TextEncoder();
  const cache = new WeakMap<Snapshot, Map<DataPath, Uint8Array<ArrayBuffer>>>();
  const body = (snapshot: Snapshot, path: DataPath, view: (s: Snapshot) => unknown) => {
    let bodies = cache.get(snapshot);
    if (!bodies) cache.set(snapshot, bodies = new Map());
    let bytes = bodies.get(path);
    if (!bytes) bodies.set(path, bytes = encoder.encode(JSON.stringify(view(snapshot))));
    return bytes;
  };
  // The view's type is the declared schema's: the document and the body cannot drift.
  const data = <S extends z.ZodType>(
    path: DataPath,
    text: { summary: string; description: string },
    schema: S,
    view: (snapshot: Snapshot) => z.infer<S>,
  ) =>
    defineRoute({
      method: "get",
      path,
      ...text,
      responses: {
        200: { description: "The current snapshot's view.", content: json(schema) },
        503: UNAVAILABLE,
      },
      handler: () => {
        const state = options.state();
        const refused = refusal(state, clock());
        if (refused) throw refused;
        return jsonResponse(body(state.snapshot!, path, view), 200);
      },
    });
  return [
    data(
      "/stats",
      {
        summary: "Network summary",
        description: "Providers registered, bonded and live-verified; stake; routers and their " +
          "reports; TEE measurements; emission; capacity; rejected ads; settled volume.",
      },
      StatsSchema,
      statsView,
    ),
    data(
      "/models",
      {
        summary: "Models offered",
        description: "One entry per model id served by live-verified providers, sorted by id.",
      },
      ModelsSchema,
      (snapshot) => modelsView(snapshot, viewOptions),
    ),
    data(
      "/providers",
      {
        summary: "Live-verified providers",
        description: "One entry per live-verified provider, sorted by address.",
      },
      ProvidersSchema,
      (snapshot) => providersView(snapshot, viewOptions),
    ),
    defineRoute({
      method: "get",
      path: "/health",
      summary: "Readiness",
      description: "200 when the data endpoints would answer 200, 503 (with `Retry-After`) " +
        "when not. The body is the same shape either way; `live: true` says the process is up.",
      responses: {
        200: { description: "Serving fresh data.", content: json(HealthSchema) },
        503: {
          description: "Not serving now; the body says why.",
          headers: RetryAfterHeaders,
          content: json(HealthSchema),
        },
      },
      handler: () => {
        const state = options.state();
        const now = clock();
        const refused = refusal(state, now);
        const health = JSON.stringify(healthView(state, now, refused));
        if (!refused) return jsonResponse(health, 200);
        return jsonResponse(health, 503, { "retry-after": retryAfter(refused.retryAfterSecs) });
      },
    }),
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
  const routes = indexerRoutes(options);
  const paths = [...routes.map((route) => route.path), "/openapi.json"];
  const service = createService({
    info: INFO,
    routes,
    middleware: [everyAnswer],
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
