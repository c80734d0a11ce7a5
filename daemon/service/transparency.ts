/**
 * The daemon's transparency endpoints:
 *
 * - `GET /v1/gateways` — the daemon's known gateway set, in the gateways' own shape
 *   (`docs/protocol.md` §3): `{"gateways":[{"url":…,"last_seen":…}]}`, so daemons and
 *   gateways can discover gateways through each other.
 * - `GET /v1/verdicts[?limit=N]` — the latest verification verdicts, newest first:
 *   `{"verdicts":[{"at","tier","model","provider","gateway","outcome","verdict","code"}]}`.
 * - `GET /v1/verdicts/{id}` — a TEE reply's verified receipt with its attestation (the reply's
 *   `x-net-receipt` header names the id), or `404 not_found`.
 *
 * @module
 */

import { DaemonError } from "../core/mod.ts";
import { type ReceiptLog, type VerdictLog, verdictToJson } from "../trust/mod.ts";

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

/**
 * Serves `GET /v1/verdicts/{id}`: the verified receipt record of a TEE reply.
 *
 * @throws {DaemonError} `not_found` when the id is unknown, not verified (yet) or forgotten.
 */
export function serveReceipt(log: ReceiptLog, id: string): Response {
  const record = log.get(id);
  if (!record) {
    throw new DaemonError(
      "not_found",
      `No verified receipt ${id}: the id is unknown, its reply has not ended, its receipt did ` +
        "not verify, or it was forgotten (the daemon keeps the latest 1000)",
    );
  }
  return json(record);
}
