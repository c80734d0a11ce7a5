/**
 * The daemon's transparency endpoints:
 *
 * - `GET /v1/gateways` — the daemon's known gateway set, in the gateways' own shape
 *   (`docs/protocol.md` §3): `{"gateways":[{"url":…,"last_seen":…}]}`, so daemons and
 *   gateways can discover gateways through each other.
 * - `GET /v1/verdicts[?limit=N]` — the latest verification verdicts, newest first:
 *   `{"verdicts":[{"at","tier","model","provider","gateway","outcome","verdict","code"}]}`.
 *
 * @module
 */

import { type VerdictLog, verdictToJson } from "../trust/mod.ts";

/** A gateway as listed by `GET /v1/gateways` (the shape of `GatewayEntryJson`). */
export interface ListedGateway {
  /** The gateway's base URL. */
  readonly url: string;
  /** RFC 3339 time it was last reached. */
  readonly last_seen: string;
}

/** Returns the current gateway entries (synchronously or not). */
export type GatewayLister = () => readonly ListedGateway[] | Promise<readonly ListedGateway[]>;

function json(value: unknown): Response {
  return new Response(JSON.stringify(value), {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}

/** Serves `GET /v1/gateways` from the lister's current entries. */
export async function serveGateways(list: GatewayLister): Promise<Response> {
  const entries = await list();
  return json({
    gateways: entries.map((entry) => ({ url: entry.url, last_seen: entry.last_seen })),
  });
}

/** How many verdicts `GET /v1/verdicts` returns without `?limit`. */
export const DEFAULT_VERDICT_LIMIT = 50;

/**
 * Serves `GET /v1/verdicts?limit=N`: the latest `limit` verdicts (validated by the route: 1 to
 * the log's capacity; default 50 or the capacity), newest first.
 */
export function serveVerdicts(log: VerdictLog, limit?: number): Response {
  const count = limit ?? Math.min(DEFAULT_VERDICT_LIMIT, log.capacity);
  return json({ verdicts: log.latest(count).map(verdictToJson) });
}
