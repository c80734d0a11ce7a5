/**
 * A fake indexer for the dashboard's browser tests, on loopback: the real indexer handler
 * (`createIndexerHandler`) over a snapshot built from a devnet plan (60 providers, both tiers,
 * unbonded ones rejected, settlements over four epochs), so `/stats`, `/models`, `/providers`,
 * `/health` and their 503s are today's real bodies. In front of it, what the history issue
 * adds and today's indexer lacks: `GET /epochs` (network-wide per-epoch volume and reward,
 * `limit`/`cursor` pages) and `limit`/`cursor` pages of `/providers` and `/models` with
 * `next_cursor` — each switchable, so the page is tested against both. The page's assets come
 * from `indexer/dashboard/mod.ts`, as the indexer will serve them.
 *
 * @module
 */

import { planNetwork } from "../../../devnet/seed.ts";
import { expectedNetwork } from "../../../devnet/seed.ts";
import { dashboardAsset, dashboardResponse } from "../../../indexer/dashboard/mod.ts";
import { createIndexerHandler } from "../../../indexer/handler.ts";
import type { HistoryFigures } from "../../../indexer/history.ts";
import { buildSnapshot, type Snapshot } from "../../../indexer/snapshot.ts";
import { type IndexerState, initialState } from "../../../indexer/state.ts";
import { figuresOf, handHistory, plannedState, routerEntry } from "../_network.ts";
import { serve } from "../../_http.ts";

/** The refresh interval the fake's `/health` reports: the page refreshes every second. */
export const FAKE_REFRESH_SECS = 1;

/** What the fake serves. */
export interface FakeIndexerOptions {
  /** Serve `GET /epochs`. @default {true} */
  epochs?: boolean;
  /** Page `/providers` and `/models` with `limit`/`cursor` and `next_cursor`. @default {true} */
  paginate?: boolean;
  /**
   * Keep `settled.epochs` in `/providers` rows; without them the history is served only by
   * `GET /providers/{address}` (`{provider, epochs, next_cursor}`). @default {true}
   */
  listHistory?: boolean;
}

/** One epoch of `GET /epochs`. */
export interface FakeEpoch {
  epoch: string;
  amount: string;
  tokens: string;
  settlements: number;
  reward: string;
}

/** A running fake indexer. */
export interface FakeIndexer extends AsyncDisposable {
  /** Its base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Answers 503 (`chain_unreachable`) on every data path from now on, or serves again. */
  setAvailable(available: boolean): void;
  /** Serves the snapshot of another plan (every number changes). */
  nextSnapshot(): void;
  /** Switches `/epochs` and pagination on or off. */
  configure(options: FakeIndexerOptions): void;
  /** The paths asked for so far (with their queries). */
  requests(): string[];
  /** The current whole bodies, straight from the real handler (and the fake `/epochs`). */
  truth(): Promise<
    { stats: Record<string, unknown>; models: unknown[]; providers: unknown[]; epochs: FakeEpoch[] }
  >;
  /** Stops the server. */
  close(): Promise<void>;
}

const TAKEN_AT = new Date("2030-03-17T05:15:00.000Z");
const CHAIN_DOWN = "Cannot reach the chain at http://127.0.0.1:8545: connection refused " +
  "(ECONNREFUSED); expected a JSON-RPC endpoint";

/** A snapshot of a plan and its settlement history (synced: confirmed up to block 4309). */
interface Served {
  snapshot: Snapshot;
  figures: HistoryFigures;
}

/** A snapshot of the plan seeded with `seed`: three routers serving every planned provider. */
function planSnapshot(seed: string, providers: number): Served {
  const plan = planNetwork({ providers, seed, settledEpochs: 6 });
  const chain = plannedState(plan, 4321n);
  const entries = plan.providers.map(routerEntry);
  const snapshot = buildSnapshot({
    takenAt: TAKEN_AT,
    chain,
    routers: chain.routers.map((router, i) => ({
      router,
      entries: i === 0 ? entries : entries.filter((_, j) => j % (i + 2) === 0),
    })),
  });
  const figures = figuresOf(expectedNetwork(plan).settlements, {
    number: 4309n,
    hash: `0x${"43".repeat(32)}`,
  });
  return { snapshot, figures };
}

/** The network-wide `/epochs` rows of a snapshot: every epoch from 0 to the current one. */
function epochsOf({ snapshot, figures }: Served): FakeEpoch[] {
  const emission = snapshot.chain.emission.schedule;
  const rows: FakeEpoch[] = [];
  for (let epoch = 0n; epoch <= snapshot.chain.emission.currentEpoch; epoch++) {
    const totals = figures.epochs.find((e) => e.epoch === epoch);
    const halvings = epoch / emission.halvingInterval;
    rows.push({
      epoch: epoch.toString(),
      amount: (totals?.amount ?? 0n).toString(),
      tokens: (totals?.tokens ?? 0n).toString(),
      settlements: totals?.settlements ?? 0,
      reward: (halvings >= 256n ? 0n : emission.initialReward >> halvings).toString(),
    });
  }
  return rows;
}

/** A page of `items` after the cursor (an opaque base64 offset), with `next_cursor`. */
function page<T>(items: readonly T[], url: URL): { rows: T[]; next_cursor: string | null } {
  const limit = Number(url.searchParams.get("limit") ?? "100");
  const cursor = url.searchParams.get("cursor");
  const start = cursor === null ? 0 : Number(atob(cursor).replace("offset:", ""));
  const end = start + limit;
  return {
    rows: items.slice(start, end),
    next_cursor: end < items.length ? btoa(`offset:${end}`) : null,
  };
}

/** A provider's `settled` in `/providers`. */
interface Settled {
  epochs: unknown[];
  total: unknown;
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  });
}

/** Starts the fake indexer on a free loopback port. */
export function startFakeIndexer(options: FakeIndexerOptions = {}): FakeIndexer {
  const snapshots = [planSnapshot("dashboard-a", 60), planSnapshot("dashboard-b", 45)];
  let current = 0;
  let config = { epochs: true, paginate: true, listHistory: true, ...options };
  let state: IndexerState = serving(snapshots[0]);
  const requests: string[] = [];
  const handler = createIndexerHandler({
    state: () => state,
    clock: () => TAKEN_AT,
    log: () => {},
  });
  const real = (path: string) => handler(new Request(`http://127.0.0.1${path}`));

  function serving({ snapshot, figures }: Served): IndexerState {
    return {
      ...initialState(FAKE_REFRESH_SECS, 60),
      history: { ...handHistory(figures), headBlock: 4321n },
      snapshot,
      lastSnapshotAt: TAKEN_AT,
      lastAttemptAt: TAKEN_AT,
    };
  }

  async function answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    requests.push(url.pathname + url.search);
    const asset = dashboardAsset(url.pathname);
    if (asset) return dashboardResponse(asset, request);
    if (url.pathname === "/epochs" && !config.epochs) {
      return json({ error: { code: "not_found", message: "No such path: /epochs" } }, 404);
    }
    if (url.pathname === "/epochs") {
      const stats = await real("/stats");
      if (stats.status !== 200) return stats;
      const { rows, next_cursor } = page(epochsOf(snapshots[current]), url);
      return json({ epochs: rows, next_cursor });
    }
    const detail = /^\/providers\/(0x[0-9a-f]{40})$/.exec(url.pathname);
    if (detail && !config.listHistory) {
      const whole = await real("/providers");
      if (whole.status !== 200) return whole;
      const rows = (await whole.json()).providers as { provider: string; settled: Settled }[];
      const row = rows.find((p) => p.provider === detail[1]);
      if (!row) return json({ error: { code: "not_found", message: "No such provider" } }, 404);
      const { rows: epochs, next_cursor } = page(row.settled.epochs, url);
      return json({
        provider: { ...row, settled: { total: row.settled.total } },
        epochs,
        next_cursor,
      });
    }
    if ((url.pathname === "/providers" || url.pathname === "/models") && config.paginate) {
      const whole = await real(url.pathname);
      if (whole.status !== 200) return whole;
      const key = url.pathname.slice(1);
      let items = (await whole.json())[key] as { settled?: Partial<Settled> }[];
      if (key === "providers" && !config.listHistory) {
        items = items.map((p) => ({ ...p, settled: { total: p.settled!.total } }));
      }
      const { rows, next_cursor } = page(items, url);
      return json({ [key]: rows, next_cursor });
    }
    if (url.pathname === "/providers" || url.pathname === "/models") {
      // A pre-pagination indexer: the whole list, without next_cursor.
      const whole = await real(url.pathname);
      if (whole.status !== 200) return whole;
      const key = url.pathname.slice(1);
      return json({ [key]: (await whole.json())[key] });
    }
    return await handler(request);
  }

  const server = serve(answer);
  return {
    url: server.url,
    setAvailable(available) {
      state = available ? serving(snapshots[current]) : {
        ...initialState(FAKE_REFRESH_SECS, 60),
        lastSnapshotAt: TAKEN_AT,
        lastAttemptAt: TAKEN_AT,
        failing: true,
        lastError: { code: "chain_unreachable", message: CHAIN_DOWN, at: TAKEN_AT },
      };
    },
    nextSnapshot() {
      current = (current + 1) % snapshots.length;
      state = serving(snapshots[current]);
    },
    configure(next) {
      config = { ...config, ...next };
    },
    requests: () => [...requests],
    async truth() {
      const body = async (path: string) => await (await real(path)).json();
      return {
        stats: await body("/stats"),
        models: (await body("/models")).models,
        providers: (await body("/providers")).providers,
        epochs: epochsOf(snapshots[current]),
      };
    },
    close: () => server.close(),
    [Symbol.asyncDispose]: () => server.close(),
  };
}
