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

import { DaemonError } from "./daemon_error.ts";
import { type VerdictLog, verdictToJson } from "./verdict_log.ts";

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
 * Serves `GET /v1/verdicts?limit=N` (1 to the log's capacity, default 50), newest first.
 *
 * @throws {DaemonError} `invalid_request_error` for a bad `limit`.
 */
export function serveVerdicts(log: VerdictLog, url: URL): Response {
  const raw = url.searchParams.get("limit");
  let limit = Math.min(DEFAULT_VERDICT_LIMIT, log.capacity);
  if (raw !== null) {
    if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1 || Number(raw) > log.capacity) {
      throw new DaemonError(
        "invalid_request_error",
        `Cannot list verdicts: limit must be an integer in 1–${log.capacity}, found ${
          JSON.stringify(raw.slice(0, 20))
        }`,
        { param: "limit" },
      );
    }
    limit = Number(raw);
  }
  return json({ verdicts: log.latest(limit).map(verdictToJson) });
}
