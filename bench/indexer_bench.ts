/**
 * The indexer's costs, measured in one run against real anvil chains and real router servers:
 *
 * 1. **Snapshot refresh** at 100, 1,000 and 10,000 providers (seeded with the batch
 *    functions): wall time and RPC requests of a steady-state refresh, against the chain read
 *    alone (`readNetworkState`, each group's baseline), so the ratio is what the routers' ads
 *    and their verification add. The settlement history runs beside the snapshots (its own
 *    loop, its own store): a table shows the first (cold) refresh, which verifies every ad,
 *    and the history's first pass, which scans the whole settlement history.
 * 2. **`GET /stats` throughput** of the real handler (on the HTTP layer: request id, timing,
 *    size limits, CORS middleware, route table) served as `indexer/main.ts` serves it
 *    (`http/serve.ts`), against the same server returning the same bytes (the baseline), and
 *    that baseline against a bare `Deno.serve` returning them (the cost of the server with
 *    header and idle timeouts): each server runs in a Worker, the same load generator
 *    (concurrent keep-alive fetch loops on the main thread) drives them in rotating rounds
 *    (A B C, B C A, …) and prints the median of the per-round ratios.
 *
 * Run: `deno task bench` (or `deno bench -A bench/indexer_bench.ts`). Seeding 10,000
 * providers takes about half a minute.
 *
 * @module
 */

import { readNetworkState } from "../chain/network_state.ts";
import { createChainClient } from "../chain/client.ts";
import { type AnvilInstance, startAnvil } from "../devnet/anvil.ts";
import { deployContracts, type Deployment } from "../devnet/deploy.ts";
import { createRouterHandler, type RouterEntry } from "../devnet/router.ts";
import { expectedNetwork, planNetwork, seedNetwork } from "../devnet/seed.ts";
import { createSigner, devAccounts } from "../devnet/signer.ts";
import { Refresher } from "../indexer/refresher.ts";
import type { IndexerState } from "../indexer/state.ts";
import type { StatsServerRequest } from "./_stats_server.ts";

const SIZES = [100, 1_000, 10_000];
const ROUTERS = 3;
const LOAD = { concurrency: 32, requests: 2_000 };
/** Alternating rounds of the `GET /stats` comparison (each round loads both servers once). */
const ROUNDS = 12;

interface Counter {
  requests: number;
  calls: Record<string, number>;
  fetch: typeof fetch;
}

function counter(): Counter {
  const state: Counter = {
    requests: 0,
    calls: {},
    fetch: (input, init) => {
      state.requests++;
      const body = JSON.parse(String(init?.body ?? "null"));
      for (const call of Array.isArray(body) ? body : [body]) {
        state.calls[call.method] = (state.calls[call.method] ?? 0) + 1;
      }
      return fetch(input, init);
    },
  };
  return state;
}

interface Network {
  providers: number;
  anvil: AnvilInstance;
  deployment: Deployment;
  routers: Deno.HttpServer<Deno.NetAddr>[];
  refresher: Refresher;
  count: Counter;
  bonded: number;
}

function listen(entries: RouterEntry[]): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createRouterHandler({ source: () => entries }),
  );
}

async function setUp(providers: number): Promise<Network> {
  const anvil = await startAnvil();
  const routers: Deno.HttpServer<Deno.NetAddr>[] = [];
  try {
    // Router i carries the providers with index % ROUTERS === i; each is verified once.
    const buckets: RouterEntry[][] = Array.from({ length: ROUTERS }, () => []);
    for (let i = 0; i < ROUTERS; i++) routers.push(listen(buckets[i]));
    const plan = planNetwork({
      providers,
      routerUrls: routers.map((r) => `http://127.0.0.1:${r.addr.port}`),
      settledEpochs: 4,
      settlementsPerEpoch: 50,
    });
    for (const p of plan.providers) {
      buckets[p.index % ROUTERS].push({
        ad: p.ad,
        capacity: { max_concurrency: 8, available_concurrency: p.index % 9 },
        metrics: { tokens_per_sec: 20 + (p.index % 40) },
      });
    }
    const owner = createSigner(anvil.rpcUrl, devAccounts().owner, { chainId: anvil.chainId });
    const deployment = await deployContracts(owner, plan.deployment);
    await seedNetwork({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, deployment }, plan);
    const count = counter();
    const refresher = new Refresher({
      rpcUrl: anvil.rpcUrl,
      contracts: deployment.contracts,
      scanFromBlock: deployment.fromBlock,
      confirmations: 0,
      client: { fetch: count.fetch },
      log: () => {},
      // A temporary embedded store, deleted when the refresher stops.
    });
    const bonded = expectedNetwork(plan).state.providers.filter((p) => p.bonded).length;
    return { providers, anvil, deployment, routers, refresher, count, bonded };
  } catch (error) {
    await Promise.all(routers.map((r) => r.shutdown()));
    await anvil.stop();
    throw error;
  }
}

async function refreshOnce(net: Network): Promise<{ ms: number; state: IndexerState }> {
  const start = performance.now();
  const state = await net.refresher.refresh();
  const ms = performance.now() - start;
  if (state.failing) throw new Error(`refresh failed: ${state.lastError?.message}`);
  if (state.snapshot!.live.length !== net.bonded) {
    throw new Error(`listed ${state.snapshot!.live.length} providers, ${net.bonded} are bonded`);
  }
  return { ms, state };
}

const networks: Network[] = [];
for (const size of SIZES) networks.push(await setUp(size));
globalThis.addEventListener("unload", () => {
  for (const net of networks) {
    void net.refresher.stop();
    for (const r of net.routers) void r.shutdown();
    void net.anvil.stop();
  }
});

// One measured refresh of each kind, for the request counts.
const rows: Record<string, string | number>[] = [];
let served: IndexerState | undefined;
for (const net of networks) {
  net.count.requests = 0;
  net.count.calls = {};
  const cold = await refreshOnce(net);
  const coldRequests = net.count.requests;
  const historyStarted = performance.now();
  const history = await net.refresher.syncHistory();
  const historyMs = performance.now() - historyStarted;
  if (history.failing) throw new Error(`history failed: ${history.lastError?.message}`);
  net.count.requests = 0;
  net.count.calls = {};
  const warm = await refreshOnce(net);
  const requests = net.count.requests;
  const calls = Object.values(net.count.calls).reduce((s, n) => s + n, 0);
  const ethCalls = net.count.calls.eth_call ?? 0;
  // The steady time: the median of three (the shared machine is noisy).
  const times = [warm.ms, (await refreshOnce(net)).ms, (await refreshOnce(net)).ms];
  const steadyMs = times.toSorted((a, b) => a - b)[1];
  rows.push({
    providers: net.providers,
    "live-verified": warm.state.snapshot!.live.length,
    "cold refresh ms": Math.round(cold.ms),
    "cold HTTP requests": coldRequests,
    "history first pass ms": Math.round(historyMs),
    "steady refresh ms": Math.round(steadyMs),
    "steady HTTP requests": requests,
    "steady JSON-RPC calls": calls,
    "eth_call": ethCalls,
  });
  if (net.providers === 1_000) served = warm.state;
}
console.log(
  `\nSnapshot refresh (real anvil, ${ROUTERS} loopback routers, deployless multicall, ` +
    "JSON-RPC batching; steady = the ads seen before; the history beside it):",
);
console.table(rows);

for (const net of networks) {
  const group = `refresh, ${net.providers} providers`;
  const client = await createChainClient(net.anvil.rpcUrl, {});
  const n = net.providers >= 10_000 ? 3 : net.providers >= 1_000 ? 10 : 30;
  Deno.bench({
    name: `chain read alone: readNetworkState (${net.providers})`,
    group,
    baseline: true,
    n,
    warmup: 1,
    async fn() {
      await readNetworkState(client, net.deployment.contracts);
    },
  });
  Deno.bench({
    name: `full snapshot refresh (${net.providers})`,
    group,
    n,
    warmup: 1,
    async fn() {
      await refreshOnce(net);
    },
  });
}

// ---- GET /stats throughput: the real handler against a bare server, same bytes. ----

interface WorkerServer {
  url: string;
  bytes: number;
  stop(): Promise<void>;
}

async function startWorker(mode: StatsServerRequest["mode"], state: IndexerState) {
  const worker = new Worker(new URL("./_stats_server.ts", import.meta.url), { type: "module" });
  const ready = new Promise<{ port: number; bytes: number }>((resolve) => {
    worker.onmessage = (event) => resolve(event.data);
  });
  worker.postMessage({ mode, state } satisfies StatsServerRequest);
  const { port, bytes } = await ready;
  return {
    url: `http://127.0.0.1:${port}/stats`,
    bytes,
    stop: async () => {
      const stopped = new Promise((resolve) => worker.onmessage = resolve);
      worker.postMessage("stop");
      await stopped;
      worker.terminate();
    },
  } satisfies WorkerServer;
}

/** `concurrency` keep-alive fetch loops sharing `requests` GETs; returns requests/second. */
async function load(url: string): Promise<number> {
  let left = LOAD.requests;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: LOAD.concurrency }, async () => {
      while (left-- > 0) {
        const response = await fetch(url);
        if (response.status !== 200) throw new Error(`status ${response.status}`);
        await response.arrayBuffer();
      }
    }),
  );
  return LOAD.requests / ((performance.now() - start) / 1000);
}

// Serve the 1,000-provider snapshot; it must stay fresh for the whole run.
const state: IndexerState = { ...served!, staleAfterSecs: 86_400 };
const bare = await startWorker("bare", state);
const indexer = await startWorker("indexer", state);
const deno = await startWorker("deno", state);
globalThis.addEventListener("unload", () => {
  void bare.stop();
  void indexer.stop();
  void deno.stop();
});
const median = (values: number[]) => {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const servers = { bare, indexer, deno };
const names = Object.keys(servers) as (keyof typeof servers)[];
for (const name of names) await load(servers[name].url); // warm-up: connections, JIT
const rounds: Record<keyof typeof servers, number>[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // A B C, then B C A, then C A B: a drift of the shared machine weighs on each alike.
  const measured = {} as Record<keyof typeof servers, number>;
  for (let i = 0; i < names.length; i++) {
    const name = names[(round + i) % names.length];
    measured[name] = await load(servers[name].url);
  }
  rounds.push(measured);
}
const ratios = rounds.map((r) => r.indexer / r.bare);
const serverRatios = rounds.map((r) => r.bare / r.deno);
const row = (value: number) => ({ "requests/s (median)": value });
console.log(
  `\nGET /stats (${indexer.bytes} bytes), ${LOAD.concurrency} concurrent keep-alive loops, ` +
    `${LOAD.requests} requests per load, ${ROUNDS} rotating rounds, servers in Workers:`,
);
console.table({
  "bare Deno.serve, same bytes": row(Math.round(median(rounds.map((r) => r.deno)))),
  "serveHttp, same bytes (baseline)": row(Math.round(median(rounds.map((r) => r.bare)))),
  "indexer handler on serveHttp": row(Math.round(median(rounds.map((r) => r.indexer)))),
  "ratio indexer / baseline (median of rounds)": row(Number(median(ratios).toFixed(2))),
  "ratio, lowest round": row(Number(Math.min(...ratios).toFixed(2))),
  "ratio, highest round": row(Number(Math.max(...ratios).toFixed(2))),
  "ratio serveHttp / Deno.serve (median)": row(Number(median(serverRatios).toFixed(2))),
});

Deno.bench({
  name: `serveHttp, same bytes (${LOAD.requests} GETs)`,
  group: "GET /stats",
  baseline: true,
  n: 10,
  warmup: 2,
  async fn() {
    await load(bare.url);
  },
});
Deno.bench({
  name: `indexer handler GET /stats (${LOAD.requests} GETs)`,
  group: "GET /stats",
  n: 10,
  warmup: 2,
  async fn() {
    await load(indexer.url);
  },
});
