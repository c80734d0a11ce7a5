/**
 * The `/health` body (`GET /health`), by a pure function of the indexer's state, the clock and
 * the RPC endpoints' state: whether the data endpoints serve, the snapshot and the settlement
 * history, every RPC endpoint, and **every problem by its code** — a refresh that failed while
 * the last snapshot is still served, a history waiting at a block no endpoint returns logs for
 * (`rpc_range_limited`), an endpoint that rate-limits us (`rpc_rate_limited`), one that serves
 * another chain (`rpc_wrong_chain`), … (`docs/indexer.md`, "Health codes").
 *
 * @module
 */

import type { z } from "zod";
import type { RpcEndpointStatus } from "../chain/client.ts";
import type { HistorySync } from "./_history_data.ts";
import type { HealthSchema, Problem, PROBLEM_CODES, RpcEndpointSchema } from "./_schemas_health.ts";
import type { IndexerRequestError } from "./errors.ts";
import type { IndexerState } from "./state.ts";
import { historyView, snapshotView } from "./views.ts";

/** The `/health` body. */
export type HealthView = z.infer<typeof HealthSchema>;
/** One problem of `/health`. */
export type HealthProblem = z.infer<typeof Problem>;
/** A problem's code. */
export type ProblemCode = (typeof PROBLEM_CODES)[number];

const KNOWN: ReadonlySet<string> = new Set([
  "chain_unreachable",
  "rpc_rate_limited",
  "rpc_range_limited",
  "rpc_error",
  "chain_error",
  "routers_unreachable",
  "store_unavailable",
  "store_error",
  "internal",
]);

/** A failure code as a problem code (an unknown one is `internal`). */
function asCode(code: string): ProblemCode {
  return (KNOWN.has(code) ? code : "internal") as ProblemCode;
}

/** The problem an endpoint's state is, or `undefined` when it is fine. */
function endpointProblem(endpoint: RpcEndpointStatus): HealthProblem | undefined {
  const error = endpoint.lastError;
  const since = error ? error.at.toISOString() : null;
  switch (endpoint.state) {
    case "refused":
      return { code: "rpc_wrong_chain", source: "rpc", message: error?.message ?? "", since };
    case "rate_limited":
      return {
        code: "rpc_rate_limited",
        source: "rpc",
        message: `${endpoint.url} asked us to wait until ${endpoint.waitUntil?.toISOString()}: ${
          error?.message ?? "rate limited"
        }`,
        since,
      };
    case "lagging":
      return {
        code: "rpc_lagging",
        source: "rpc",
        message: `${endpoint.url} is at block ${endpoint.head}, behind the other endpoints: ` +
          "it is asked only when no other can answer",
        since: null,
      };
    case "failing":
      return {
        code: error?.kind === "rate"
          ? "rpc_rate_limited"
          : error?.kind === "unreachable"
          ? "chain_unreachable"
          : "rpc_error",
        source: "rpc",
        message: `${endpoint.url}: ${error?.message ?? "its last call failed"}`,
        since,
      };
    default:
      return undefined;
  }
}

/** Everything wrong now: the refresh, the settlement history, each RPC endpoint. */
export function problemsOf(
  state: IndexerState,
  rpc: readonly RpcEndpointStatus[],
): HealthProblem[] {
  const problems: HealthProblem[] = [];
  if (state.failing && state.lastError) {
    problems.push({
      code: asCode(state.lastError.code),
      source: "refresh",
      message: state.lastError.message,
      since: state.lastError.at.toISOString(),
    });
  }
  const history = state.history;
  if (history.stopped) {
    problems.push({
      code: "history_stopped",
      source: "settlements",
      message: history.stopped,
      since: null,
    });
  }
  if (history.unreadable) {
    problems.push({
      code: "rpc_range_limited",
      source: "settlements",
      message: history.unreadable.message,
      since: history.unreadable.since.toISOString(),
    });
  }
  if (history.failing && history.lastError) {
    problems.push({
      code: asCode(history.lastError.code),
      source: "settlements",
      message: history.lastError.message,
      since: history.lastError.at.toISOString(),
    });
  }
  for (const endpoint of rpc) {
    const problem = endpointProblem(endpoint);
    if (problem) problems.push(problem);
  }
  return problems;
}

/** One endpoint as `/health` shows it. */
function endpointView(endpoint: RpcEndpointStatus): z.infer<typeof RpcEndpointSchema> {
  return {
    url: endpoint.url,
    state: endpoint.state,
    calls: endpoint.calls,
    failures: endpoint.failures,
    rate_limited: endpoint.rateLimited,
    wait_until: endpoint.waitUntil ? endpoint.waitUntil.toISOString() : null,
    latency_ms: endpoint.latencyMs,
    head: endpoint.head === null ? null : String(endpoint.head),
    max_rps: endpoint.maxRps,
    last_error: endpoint.lastError
      ? {
        kind: endpoint.lastError.kind,
        message: endpoint.lastError.message,
        at: endpoint.lastError.at.toISOString(),
      }
      : null,
  };
}

function healthStatus(
  refused: IndexerRequestError | null,
  problems: readonly HealthProblem[],
): HealthView["status"] {
  if (refused === null) return problems.length > 0 ? "degraded" : "ok";
  if (refused.reason === "stale") return "stale";
  return refused.reason === "no_snapshot" ? "starting" : "unavailable";
}

/**
 * The `/health` body: the state, and why the data paths cannot answer now (`refused`, or
 * `null` when they can).
 */
export function healthView(
  state: IndexerState,
  now: Date,
  refused: IndexerRequestError | null,
  sync: HistorySync,
  rpc: readonly RpcEndpointStatus[] = [],
): HealthView {
  const serving = refused === null ? state.snapshot : null;
  const problems = problemsOf(state, rpc);
  const iso = (date: Date | null) => (date ? date.toISOString() : null);
  const { lastError } = state;
  const history = state.history;
  const { rescans } = history;
  return {
    status: healthStatus(refused, problems),
    live: true,
    serving: refused === null,
    error: refused ? { code: refused.code, message: refused.shortMessage } : null,
    last_snapshot_at: iso(state.lastSnapshotAt),
    last_attempt_at: iso(state.lastAttemptAt),
    last_error: lastError
      ? { code: lastError.code, message: lastError.message, at: lastError.at.toISOString() }
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
      ...historyView(sync),
      last_block: history.lastBlock ? String(history.lastBlock.number) : null,
      role: history.role,
      store: history.store ? { ...history.store } : null,
      unreadable_block: history.unreadable
        ? {
          block: String(history.unreadable.block),
          message: history.unreadable.message,
          since: history.unreadable.since.toISOString(),
        }
        : null,
      failing: history.failing,
      last_error: history.lastError
        ? {
          code: history.lastError.code,
          message: history.lastError.message,
          at: history.lastError.at.toISOString(),
        }
        : null,
      stopped: history.stopped,
      rescans: rescans.count,
      last_rescan: rescans.last
        ? { at: rescans.last.at.toISOString(), reason: rescans.last.reason }
        : null,
    },
    problems,
    rpc: rpc.map(endpointView),
  };
}
