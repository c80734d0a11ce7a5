/**
 * The indexer's request handler: a pure function of the current {@linkcode IndexerState} and
 * the clock. It never fetches anything; the refresher (`refresher.ts`) replaces the state.
 *
 * | path         | answer                                                                |
 * | ------------ | --------------------------------------------------------------------- |
 * | `/stats`     | the network summary ({@linkcode StatsView})                           |
 * | `/models`    | `{"models": [...]}` ({@linkcode ModelView})                           |
 * | `/providers` | `{"providers": [...]}` ({@linkcode ProviderView})                     |
 * | `/health`    | liveness, `last_snapshot_at`, `last_error`, ... (200 serving, else 503) |
 * | `/openapi.json` | the OpenAPI 3.1 document of these endpoints ({@linkcode INDEXER_OPENAPI}) |
 *
 * **Never stale.** The data paths answer 503 (with `Retry-After` and a JSON error that says
 * what is unreachable) before the first snapshot, after a failed refresh, and when the
 * snapshot is older than `staleAfterSecs` — never an older snapshot. Every answer carries
 * `Access-Control-Allow-Origin: *`; `OPTIONS` answers preflights with 204; `HEAD` works on
 * every path; other methods are 405, unknown paths 404.
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

import { ALLOWED_METHODS, baseHeaders, jsonResponse } from "./_response.ts";
import { IndexerRequestError } from "./errors.ts";
import { errorResponse } from "./http_error.ts";
import { INDEXER_OPENAPI } from "./openapi.ts";
import type { Snapshot } from "./snapshot.ts";
import type { IndexerState } from "./state.ts";
import {
  modelsView,
  type ModelView,
  providersView,
  type ProviderView,
  snapshotView,
  type StatsView,
  statsView,
  type ViewOptions,
} from "./views.ts";

/** Options of {@linkcode createIndexerHandler}. */
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

/** The `/health` body. */
export interface HealthView {
  /** `ok` (serving), `starting` (no snapshot yet), `unavailable` (last refresh failed), `stale`. */
  status: "ok" | "starting" | "unavailable" | "stale";
  /** The process answers: always `true`. */
  live: true;
  /** Whether the data endpoints answer 200 now. */
  serving: boolean;
  /** Why they do not (the same code and message as their 503), else `null`. */
  error: { code: string; message: string } | null;
  /** When the last successful snapshot was taken (RFC 3339), even if no longer served. */
  last_snapshot_at: string | null;
  /** When the last refresh started. */
  last_attempt_at: string | null;
  /** The most recent refresh failure, kept after later successes. */
  last_error: { code: string; message: string; at: string } | null;
  /** The snapshot being served, with its age in seconds; `null` when not serving. */
  snapshot: (ReturnType<typeof snapshotView> & { age_secs: number }) | null;
  /** Routers of the served snapshot. */
  routers: { total: number; reachable: number } | null;
  /** The refresh interval, seconds. */
  refresh_secs: number;
  /** The freshness bound, seconds. */
  stale_after_secs: number;
  /** When the next refresh is due, when the loop runs. */
  next_refresh_at: string | null;
  /** Whether a refresh runs now. */
  refreshing: boolean;
  /** The settlement index: last block counted, rescans from the start block. */
  settlements: {
    scanned_to_block: string | null;
    rescans: number;
    last_rescan: { at: string; reason: string } | null;
  };
}

type DataPath = "/stats" | "/models" | "/providers";
const DATA_PATHS: ReadonlySet<string> = new Set(["/stats", "/models", "/providers"]);
const encoder = new TextEncoder();
const OPENAPI_BODY = encoder.encode(JSON.stringify(INDEXER_OPENAPI));

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

function healthView(
  state: IndexerState,
  now: Date,
  refused: IndexerRequestError | null,
): HealthView {
  const serving = refused === null ? state.snapshot : null;
  const iso = (date: Date | null) => (date ? date.toISOString() : null);
  return {
    status: refused === null
      ? "ok"
      : refused.reason === "stale"
      ? "stale"
      : refused.reason === "no_snapshot"
      ? "starting"
      : "unavailable",
    live: true,
    serving: refused === null,
    error: refused ? { code: refused.code, message: refused.shortMessage } : null,
    last_snapshot_at: iso(state.lastSnapshotAt),
    last_attempt_at: iso(state.lastAttemptAt),
    last_error: state.lastError
      ? {
        code: state.lastError.code,
        message: state.lastError.message,
        at: state.lastError.at.toISOString(),
      }
      : null,
    snapshot: serving
      ? {
        ...snapshotView(serving),
        age_secs: Math.max(0, Math.floor((now.getTime() - serving.takenAt.getTime()) / 1000)),
      }
      : null,
    routers: serving
      ? {
        total: serving.routers.length,
        reachable: serving.routers.filter((r) => r.reachable).length,
      }
      : null,
    refresh_secs: state.refreshSecs,
    stale_after_secs: state.staleAfterSecs,
    next_refresh_at: iso(state.nextRefreshAt),
    refreshing: state.refreshing,
    settlements: {
      scanned_to_block: serving?.settlements.scannedTo != null
        ? String(serving.settlements.scannedTo)
        : null,
      rescans: state.rescans.count,
      last_rescan: state.rescans.last
        ? { at: state.rescans.last.at.toISOString(), reason: state.rescans.last.reason }
        : null,
    },
  };
}

/**
 * Builds the indexer's request handler over the current state.
 */
export function createIndexerHandler(
  options: IndexerHandlerOptions,
): (req: Request) => Promise<Response> {
  const clock = options.clock ?? (() => new Date());
  const viewOptions = options.views ?? {};
  const cache = new WeakMap<Snapshot, Map<DataPath, Uint8Array<ArrayBuffer>>>();
  const render = (snapshot: Snapshot, path: DataPath): Uint8Array<ArrayBuffer> => {
    let bodies = cache.get(snapshot);
    if (!bodies) cache.set(snapshot, bodies = new Map());
    let body = bodies.get(path);
    if (!body) {
      const view: StatsView | { models: ModelView[] } | { providers: ProviderView[] } =
        path === "/stats"
          ? statsView(snapshot)
          : path === "/models"
          ? modelsView(snapshot, viewOptions)
          : providersView(snapshot, viewOptions);
      body = encoder.encode(JSON.stringify(view));
      bodies.set(path, body);
    }
    return body;
  };

  const answer = (req: Request): Response => {
    const path = new URL(req.url).pathname;
    const known = path === "/health" || path === "/openapi.json" || DATA_PATHS.has(path);
    if (!known) {
      throw new IndexerRequestError(
        "not_found",
        `No such path: ${path.length > 100 ? `${path.slice(0, 100)}…` : path}; the indexer ` +
          "serves GET /stats, /models, /providers, /health and /openapi.json",
      );
    }
    if (req.method === "OPTIONS") {
      const headers = baseHeaders();
      headers.set("allow", ALLOWED_METHODS);
      headers.set("access-control-allow-methods", ALLOWED_METHODS);
      headers.set(
        "access-control-allow-headers",
        req.headers.get("access-control-request-headers") ?? "*",
      );
      headers.set("access-control-max-age", "86400");
      return new Response(null, { status: 204, headers });
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      throw new IndexerRequestError(
        "method_not_allowed",
        `Method ${req.method} is not allowed on ${path}; use GET`,
      );
    }
    if (path === "/openapi.json") return jsonResponse(OPENAPI_BODY, 200);
    const state = options.state();
    const now = clock();
    const refused = refusal(state, now);
    if (path === "/health") {
      const headers = baseHeaders();
      if (refused) headers.set("retry-after", String(Math.ceil(refused.retryAfterSecs ?? 1)));
      const health = healthView(state, now, refused);
      return jsonResponse(JSON.stringify(health), refused ? 503 : 200, headers);
    }
    if (refused) throw refused;
    return jsonResponse(render(state.snapshot!, path as DataPath), 200);
  };

  return (req: Request): Promise<Response> => {
    let response: Response;
    try {
      response = answer(req);
    } catch (error) {
      response = errorResponse(error, { log: options.log });
    }
    if (req.method === "HEAD" && response.body) {
      void response.body.cancel();
      response = new Response(null, { status: response.status, headers: response.headers });
    }
    return Promise.resolve(response);
  };
}
