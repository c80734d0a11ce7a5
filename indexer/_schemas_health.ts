/**
 * The schema of the `/health` body (private to `indexer/`): readiness, the settlement history,
 * the RPC endpoints, and every problem by its code. `handler.ts` declares the route with it,
 * `views_health.ts` renders it.
 *
 * @module
 */

import { z } from "../http/mod.ts";
import {
  count,
  decimal,
  ErrorDetail,
  historyFields,
  nullable,
  snapshotFields,
  time,
} from "./_schemas.ts";

/** Every code a problem may have (`docs/indexer.md`, "Health codes"). */
export const PROBLEM_CODES = [
  "chain_unreachable",
  "rpc_rate_limited",
  "rpc_range_limited",
  "rpc_error",
  "rpc_wrong_chain",
  "rpc_lagging",
  "chain_error",
  "routers_unreachable",
  "store_unavailable",
  "store_error",
  "history_stopped",
  "internal",
] as const;

/** One thing wrong now. */
export const Problem = z.object({
  code: z.enum(PROBLEM_CODES).describe('What is wrong (`docs/indexer.md`, "Health codes").'),
  source: z.enum(["refresh", "settlements", "rpc"]).describe(
    "Where: the snapshot refresh, the settlement history, or one RPC endpoint.",
  ),
  message: z.string().describe("What failed, what was found, what was expected."),
  since: nullable(time("When it was seen (first, or last for a repeated failure).")),
}).strict().openapi("Problem");

/** One RPC endpoint. */
export const RpcEndpointSchema = z.object({
  url: z.string().describe(
    "The endpoint's origin; a path (which may hold an API key) is shown as `/…`.",
  ),
  state: z.enum(["ok", "rate_limited", "failing", "lagging", "unused", "refused"]).describe(
    "`rate_limited`: it asked us to wait (`wait_until`); `failing`: its last call failed; " +
      "`lagging`: its head is behind the others'; `refused`: it serves another chain and is " +
      "never used.",
  ),
  calls: count("JSON-RPC calls sent to it."),
  failures: count("Calls that failed."),
  rate_limited: count("Times it asked us to wait (HTTP 429 or a rate-limit answer)."),
  wait_until: nullable(time("Until when it is not asked, after a `Retry-After`.")),
  latency_ms: nullable(z.number().min(0).describe("Its typical answer time (moving average).")),
  head: nullable(decimal("The chain head it last reported.")),
  max_rps: nullable(z.int().min(1).describe("Its budget: most calls per second.")),
  last_error: nullable(
    z.object({ kind: z.string(), message: z.string(), at: time() }).strict(),
  ),
}).strict().openapi("RpcEndpoint");

/** The `/health` body (the same shape for its 200 and its 503). */
export const HealthSchema = z.object({
  status: z.enum(["ok", "degraded", "starting", "unavailable", "stale"]).describe(
    "`ok`: serving, nothing wrong; `degraded`: serving, and `problems` says what is wrong " +
      "(a failed refresh while the last snapshot is still fresh, an endpoint rate-limiting " +
      "us, …); `starting`, `unavailable`, `stale`: not serving (`error` says why).",
  ),
  live: z.literal(true),
  serving: z.boolean(),
  error: nullable(ErrorDetail),
  last_snapshot_at: nullable(time()),
  last_attempt_at: nullable(time()),
  last_error: nullable(z.object({ code: z.string(), message: z.string(), at: time() }).strict()),
  snapshot: nullable(
    z.object({ ...snapshotFields, age_secs: count("Age of the served snapshot, seconds.") })
      .strict(),
  ),
  routers: nullable(
    z.object({ total: count("Routers."), reachable: count("Reachable.") }).strict(),
  ),
  refresh_secs: z.int().min(1),
  stale_after_secs: z.int().min(1),
  next_refresh_at: nullable(time()),
  refreshing: z.boolean(),
  settlements: z.object({
    ...historyFields,
    last_block: nullable(decimal("The last block scanned, unconfirmed window included.")),
    role: nullable(z.enum(["writer", "reader"])).describe(
      "`writer`: this process scans and writes the history; `reader`: another replica does; " +
        "null while the store is not open.",
    ),
    store: nullable(
      z.object({
        backend: z.enum(["embedded", "postgres"]),
        location: z.string().describe("The data directory, or the database URL without password."),
      }).strict(),
    ),
    unreadable_block: nullable(
      z.object({
        block: decimal("The block no answer could be read for, even alone."),
        message: z.string(),
        since: time(),
      }).strict(),
    ).describe("The block the scan waits at, retrying every pass; null when none."),
    failing: z.boolean().describe("Whether the history's last pass failed."),
    last_error: nullable(z.object({ code: z.string(), message: z.string(), at: time() }).strict()),
    stopped: nullable(z.string()).describe(
      "Why the history stopped for good (the store cannot be used by this process), or null.",
    ),
    rescans: count("Rescans from the start block."),
    last_rescan: nullable(z.object({ at: time(), reason: z.string() }).strict()),
  }).strict(),
  problems: z.array(Problem).describe(
    "Everything wrong now, each with its code; empty when nothing is. The same codes as " +
      "`last_error` and the 503s, and the RPC endpoints' own.",
  ),
  rpc: z.array(RpcEndpointSchema).describe("Every RPC endpoint, in the order configured."),
}).strict().openapi("Health");
