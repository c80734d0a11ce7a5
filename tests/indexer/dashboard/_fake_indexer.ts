/**
 * An indexer over a planned network, for the dashboard's quick browser tests (layout, contrast,
 * paging, the "not yet synced" states): the real indexer service (`createIndexerService`, the
 * page and its assets included) on loopback, over a snapshot built from a devnet plan (60
 * providers, both tiers, unbonded ones rejected) and the plan's settlements over six epochs as
 * the history's figures — so every body is the real one, with the real pagination, `/epochs` and
 * `/providers/{address}`. What a live chain cannot hold still: the history can be made not
 * synced, the lists can be served without their rows' `settled.epochs` (the page then reads
 * `/providers/{address}`), and the indexer can be made unavailable. The test against a real
 * devnet and `indexer/main.ts` is `page_test.ts`.
 *
 * @module
 */

import { expectedNetwork, planNetwork } from "../../../devnet/seed.ts";
import { IndexerEvents } from "../../../indexer/events.ts";
import { createIndexerService } from "../../../indexer/handler.ts";
import type { HistoryFigures } from "../../../indexer/history.ts";
import { buildSnapshot, type Snapshot } from "../../../indexer/snapshot.ts";
import { type IndexerState, initialState } from "../../../indexer/state.ts";
import { figuresOf, handHistory, plannedState, routerEntry } from "../_network.ts";
import { serve } from "../../_http.ts";

/** The refresh interval the fake's `/health` reports: the page refreshes every second. */
export const FAKE_REFRESH_SECS = 1;

/** What the fake serves. */
export interface FakeIndexerOptions {
  /** Whether the settlement history has caught up with the snapshot. @default {true} */
  synced?: boolean;
  /**
   * Keep `settled.epochs` in `/providers` rows; without them the page reads each row's
   * history from `GET /providers/{address}`. @default {true}
   */
  listHistory?: boolean;
  /**
   * Serve the change stream `/events` (the page then reads again on each event instead of
   * polling); without it `/events` answers 204 (no stream, do not reconnect) and the page
   * polls.
   * @default {false}
   */
  events?: boolean;
}

/** A running fake indexer. */
export interface FakeIndexer extends AsyncDisposable {
  /** Its base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Answers 503 (`chain_unreachable`) on every data path from now on, or serves again. */
  setAvailable(available: boolean): void;
  /** Serves the snapshot of another plan (every number changes). */
  nextSnapshot(): void;
  /** The change stream (published to by the test). */
  readonly events: IndexerEvents;
  /** The paths asked for so far (with their queries). */
  requests(): string[];
  /** The current whole bodies, from the same service. */
  truth(): Promise<{ stats: Record<string, unknown>; models: unknown[]; providers: unknown[] }>;
  /** Stops the server. */
  close(): Promise<void>;
}

const TAKEN_AT = new Date("2030-03-17T05:15:00.000Z");
const CHAIN_DOWN = "Cannot reach the chain at http://127.0.0.1:8545: connection refused " +
  "(ECONNREFUSED); expected a JSON-RPC endpoint";

/** A snapshot of a plan and its settlement history (confirmed up to block 4309). */
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

/** Starts the fake indexer on a free loopback port. */
export function startFakeIndexer(options: FakeIndexerOptions = {}): FakeIndexer {
  const plans = [planSnapshot("dashboard-a", 60), planSnapshot("dashboard-b", 45)];
  const synced = options.synced ?? true;
  let current = 0;
  let available = true;
  const requests: string[] = [];
  const state = (): IndexerState => {
    const { snapshot, figures } = plans[current];
    const base = {
      ...initialState(FAKE_REFRESH_SECS, 60),
      history: { ...handHistory(synced ? figures : null), headBlock: 4321n },
      lastSnapshotAt: TAKEN_AT,
      lastAttemptAt: TAKEN_AT,
    };
    if (available) return { ...base, snapshot };
    return {
      ...base,
      failing: true,
      lastError: { code: "chain_unreachable", message: CHAIN_DOWN, at: TAKEN_AT },
    };
  };
  const events = new IndexerEvents();
  const service = createIndexerService({
    state,
    clock: () => TAKEN_AT,
    log: () => {},
    events,
    // Every TEE-tier provider's evidence verified five minutes before the snapshot.
    teeEvidence: (address) => {
      const live = plans[current].snapshot.liveBy.get(address.toLowerCase());
      if (!live || live.state.tier !== "tee") return undefined;
      return {
        provider: address.toLowerCase(),
        status: "verified",
        checkedAt: new Date(TAKEN_AT.getTime() - 300_000),
        format: "tdx",
        measurementId: `0x${"ab".repeat(32)}`,
        tcbStatus: "UpToDate",
        expiresAt: new Date(TAKEN_AT.getTime() + 3_600_000),
        gpus: [{ measurementId: `0x${"cd".repeat(32)}`, driverVersion: "550.90.07" }],
        message: null,
      };
    },
    readProviderHistory: (address) => {
      const { figures } = plans[current];
      const buckets = [...figures.recent.get(address) ?? []];
      return Promise.resolve({ buckets, at: figures.at });
    },
  });
  const real = (path: string) => service.fetch(new Request(`http://127.0.0.1${path}`));

  async function answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    requests.push(url.pathname + url.search);
    if (url.pathname === "/events" && !options.events) {
      // An indexer without a change stream: 204 tells an EventSource not to reconnect.
      return new Response(null, { status: 204 });
    }
    const response = await service.fetch(request);
    if (options.listHistory !== false || url.pathname !== "/providers" || response.status !== 200) {
      return response;
    }
    // Rows without their recent epochs: the page asks /providers/{address} for them.
    const body = await response.json();
    for (const row of body.providers) if (row.settled) delete row.settled.epochs;
    return Response.json(body, { headers: { "cache-control": "no-store" } });
  }

  const server = serve(answer);
  return {
    url: server.url,
    setAvailable(value) {
      available = value;
    },
    nextSnapshot() {
      current = (current + 1) % plans.length;
    },
    events,
    requests: () => [...requests],
    async truth() {
      const body = async (path: string) => await (await real(path)).json();
      return {
        stats: await body("/stats"),
        models: (await body("/models")).models,
        providers: (await body("/providers")).providers,
      };
    },
    close: async () => {
      events.close();
      await server.close();
    },
    [Symbol.asyncDispose]: async () => {
      events.close();
      await server.close();
    },
  };
}
