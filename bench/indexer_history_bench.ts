/**
 * The settlement history at volume, measured in one run against a real anvil chain:
 *
 * 1. **Scan throughput** (settlements/s) of a full scan of N settlements (1,000,000 by default,
 *    5,000 per block: ranges over viem's 10 MiB body limit are split) into each backend — the
 *    embedded store (PGlite) and PostgreSQL (the test fixture, `fsync=on`) — alternated.
 * 2. **Restart**: `indexer/main.ts` started on the store that holds all of it, time to its
 *    first `200` and to a synced history, against the full rescan of the same chain
 *    (`--rebuild-history`) in the same run; both backends, alternated, several rounds.
 * 3. **Store size on disk** after the N settlements (the embedded data directory; the
 *    PostgreSQL schema's tables and indexes).
 * 4. **Refresh at 10,000 providers**: the steady snapshot refresh (goal ≤ 1 s) against the
 *    chain read alone.
 *
 * Run: `deno bench -A bench/indexer_history_bench.ts` (several minutes: sending 1,000,000
 * settlements takes about two and a half). `NET_BENCH_SETTLEMENTS` sets N.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import pgClient from "pg";
import { readNetworkState } from "../chain/network_state.ts";
import { createChainClient } from "../chain/client.ts";
import { startAnvil } from "../devnet/anvil.ts";
import { deployContracts } from "../devnet/deploy.ts";
import { createRouterHandler, type RouterEntry } from "../devnet/router.ts";
import { planNetwork, seedNetwork } from "../devnet/seed.ts";
import { createSigner, devAccounts } from "../devnet/signer.ts";
import { History } from "../indexer/history.ts";
import { Refresher } from "../indexer/refresher.ts";
import { type HistoryStore, openStore, type StoreLocation } from "../indexer/store/mod.ts";
import { startChainFixture } from "../tests/_chain_fixture.ts";
import { startPostgres } from "../tests/_postgres.ts";
import { settleMany } from "../tests/indexer/_settlements.ts";

const SETTLEMENTS = Number(Deno.env.get("NET_BENCH_SETTLEMENTS") ?? 1_000_000);
const RESTART_ROUNDS = 3;
const MAIN = fileURLToPath(new URL("../indexer/main.ts", import.meta.url));
const median = (values: number[]) => {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

// ---- The chain: N settlements, 5,000 per block, over several epochs. ----
const router = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  () => Response.json({ ads: [] }),
);
const chain = await startChainFixture({
  providers: 12,
  routerUrls: [`http://127.0.0.1:${router.addr.port}`],
  anvil: { gasLimit: 2_000_000_000n },
});
const pg = await startPostgres({ fsync: true });
const root = await Deno.makeTempDir({ prefix: "net-history-bench-" });
globalThis.addEventListener("unload", () => {
  void router.shutdown();
  void chain.anvil.stop();
  void pg.stop();
  try {
    Deno.removeSync(root, { recursive: true });
  } catch {
    // gone
  }
});
const providers = chain.expected.state.providers.map((p) => p.address);
let started = performance.now();
await settleMany(chain, { count: SETTLEMENTS, perTx: 5_000, providers, secondsBetween: 1_800 });
await chain.rpc("anvil_mine", ["0xc"]);
const seeded = chain.expected.settlements.reduce((s, b) => s + b.settlements, 0);
const total = SETTLEMENTS + seeded;
console.log(
  `\n${total} settlements on chain (${SETTLEMENTS} sent in ${
    Math.round((performance.now() - started) / 1000)
  } s, 5,000 per block)`,
);

const identity = {
  chainId: chain.anvil.chainId,
  escrow: chain.contracts.escrow,
  scanFromBlock: chain.deployment.fromBlock,
  confirmations: 12,
  log: () => {},
};

/** A full scan into `location` by the history loop; the store is created first (not timed). */
async function fullScan(location: StoreLocation): Promise<{ seconds: number; count: number }> {
  const store: HistoryStore = await openStore(location, { ...identity, rebuild: "always" });
  const history = new History({
    rpcUrl: chain.anvil.rpcUrl,
    client: { retryCount: 0, timeoutMs: 60_000 },
    escrow: chain.contracts.escrow,
    scanFromBlock: chain.deployment.fromBlock,
    confirmations: 12,
    store,
    log: () => {},
  });
  history.fromEpoch = 0n; // read every bucket after the scan (what a restart serves from)
  try {
    const start = performance.now();
    const state = await history.pass();
    const seconds = (performance.now() - start) / 1000;
    if (state.failing) throw new Error(`the scan failed: ${state.lastError?.message}`);
    return { seconds, count: state.figures!.total.settlements };
  } finally {
    await store.close();
  }
}

const embedded: StoreLocation = { dataDir: `${root}/embedded` };
const postgres: StoreLocation = { databaseUrl: await pg.createDatabase("history_bench") };
// Create both stores before timing (PGlite's initdb, the schema).
await (await openStore(embedded, identity)).close();
await (await openStore(postgres, identity)).close();

// ---- 1. Scan throughput, alternated: embedded, PostgreSQL. ----
const scans: Record<string, { seconds: number; count: number }> = {};
for (const [name, location] of [["embedded", embedded], ["postgres", postgres]] as const) {
  scans[name] = await fullScan(location);
  if (scans[name].count !== total) {
    throw new Error(`${name} counted ${scans[name].count} settlements, expected ${total}`);
  }
}
const rate = (name: string) => scans[name].count / scans[name].seconds;
console.log("\nFull scan (the history loop: eth_getLogs split to fit, one commit per chunk):");
console.table({
  "embedded (PGlite)": {
    "seconds": round(scans.embedded.seconds, 1),
    "settlements/s": Math.round(rate("embedded")),
  },
  "PostgreSQL (fsync on)": {
    "seconds": round(scans.postgres.seconds, 1),
    "settlements/s": Math.round(rate("postgres")),
  },
  "ratio embedded / PostgreSQL": {
    "seconds": round(scans.embedded.seconds / scans.postgres.seconds),
    "settlements/s": round(rate("embedded") / rate("postgres")),
  },
});

// ---- 2. Restart to first 200 and to a synced history, against a full rescan. ----

/** Starts `indexer/main.ts`; resolves with the seconds to its first 200 and to synced. */
async function run(
  location: StoreLocation,
  extra: string[] = [],
): Promise<{ first200: number; synced: number }> {
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: Deno.env.get("HOME") ?? "",
    NET_EVM_RPC_URL: chain.anvil.rpcUrl,
    NET_EVM_ESCROW: chain.contracts.escrow,
    NET_EVM_STAKING: chain.contracts.staking,
    NET_EVM_EMISSION: chain.contracts.emission,
    NET_EVM_REGISTRY: chain.contracts.registry,
    NET_STATS_SCAN_FROM_BLOCK: String(chain.deployment.fromBlock),
    NET_STATS_REFRESH_SECS: "1",
    ...("dataDir" in location
      ? { NET_STATS_DATA_DIR: location.dataDir }
      : { NET_STATS_DATABASE_URL: location.databaseUrl }),
  };
  const start = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "--bind", "127.0.0.1:0", ...extra],
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    let url: string | undefined;
    while (!url) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the indexer exited: ${out}`);
      out += value;
      url = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
    }
    void (async () => {
      while (!(await reader.read()).done) { /* drain */ }
    })();
    let first200: number | undefined;
    for (;;) {
      const response = await fetch(`${url}/stats`);
      const body = await response.json();
      if (response.status === 200) {
        first200 ??= (performance.now() - start) / 1000;
        if (body.settlements.synced) {
          if (body.settlements.count !== total) {
            throw new Error(`served ${body.settlements.count} settlements, expected ${total}`);
          }
          return { first200, synced: (performance.now() - start) / 1000 };
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

const restarts: Record<string, { first200: number[]; synced: number[] }> = {
  embedded: { first200: [], synced: [] },
  postgres: { first200: [], synced: [] },
};
for (let r = 0; r < RESTART_ROUNDS; r++) {
  const order = r % 2 === 0 ? ["embedded", "postgres"] : ["postgres", "embedded"];
  for (const name of order) {
    const result = await run(name === "embedded" ? embedded : postgres);
    restarts[name].first200.push(result.first200);
    restarts[name].synced.push(result.synced);
  }
}
// The full rescan, as an operator gets it: the same process, --rebuild-history.
const rescans: Record<string, { first200: number; synced: number }> = {};
for (const name of ["embedded", "postgres"]) {
  rescans[name] = await run(name === "embedded" ? embedded : postgres, ["--rebuild-history"]);
}
console.log(
  `\nindexer/main.ts started on a store holding ${total} settlements (median of ` +
    `${RESTART_ROUNDS}; goal: synced within 5 s), against a full rescan (--rebuild-history):`,
);
const restartRows: Record<string, Record<string, number>> = {};
for (const name of ["embedded", "postgres"]) {
  const restart = median(restarts[name].synced);
  restartRows[name] = {
    "restart: first 200 (s)": round(median(restarts[name].first200)),
    "restart: synced (s)": round(restart),
    "rescan: synced (s)": round(rescans[name].synced, 1),
    "restart / rescan": round(restart / rescans[name].synced, 3),
    "restart / goal of 5 s": round(restart / 5),
  };
}
console.table(restartRows);

// ---- 3. Store size on disk. ----
async function du(path: string): Promise<number> {
  let bytes = 0;
  for await (const entry of Deno.readDir(path)) {
    const info = await Deno.lstat(`${path}/${entry.name}`);
    bytes += entry.isDirectory ? await du(`${path}/${entry.name}`) : info.size;
  }
  return bytes;
}
const embeddedBytes = await du(embedded.dataDir);
const sizeClient = new pgClient.Client({ connectionString: postgres.databaseUrl });
await sizeClient.connect();
const { rows: [row] } = await sizeClient.query(
  `SELECT sum(pg_total_relation_size(c.oid))::text AS bytes FROM pg_class c
   JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'net_history' AND c.relkind = 'r'`,
);
await sizeClient.end();
const history = await openStore(embedded, identity);
const buckets = (await history.buckets({})).length;
await history.close();
const mib = (bytes: number) => round(bytes / 2 ** 20, 1);
console.log(`\nStore size after ${total} settlements (${buckets} provider × epoch buckets):`);
console.table({
  "embedded data directory (MiB)": { size: mib(embeddedBytes) },
  "PostgreSQL schema's tables and indexes (MiB)": { size: mib(Number(row.bytes)) },
});

// ---- 4. The steady refresh at 10,000 providers (goal ≤ 1 s). ----
const anvil = await startAnvil();
const adRouters: Deno.HttpServer<Deno.NetAddr>[] = [];
const entries: RouterEntry[][] = [[], [], []];
for (const list of entries) {
  adRouters.push(Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    createRouterHandler({ source: () => list }),
  ));
}
globalThis.addEventListener("unload", () => {
  void anvil.stop();
  for (const r of adRouters) void r.shutdown();
});
const plan = planNetwork({
  providers: 10_000,
  routerUrls: adRouters.map((r) => `http://127.0.0.1:${r.addr.port}`),
  settledEpochs: 4,
  settlementsPerEpoch: 50,
});
for (const p of plan.providers) {
  entries[p.index % 3].push({
    ad: p.ad,
    capacity: { max_concurrency: 8, available_concurrency: p.index % 9 },
    metrics: { tokens_per_sec: 20 + (p.index % 40) },
  });
}
const owner = createSigner(anvil.rpcUrl, devAccounts().owner, { chainId: anvil.chainId });
const deployment = await deployContracts(owner, plan.deployment);
await seedNetwork({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, deployment }, plan);
const refresher = new Refresher({
  rpcUrl: anvil.rpcUrl,
  contracts: deployment.contracts,
  scanFromBlock: deployment.fromBlock,
  confirmations: 0,
  log: () => {},
  history: { dataDir: `${root}/refresh` },
});
globalThis.addEventListener("unload", () => void refresher.stop());
await refresher.refresh();
await refresher.syncHistory();
const client = await createChainClient(anvil.rpcUrl, {});
const steady: number[] = [];
const chainOnly: number[] = [];
for (let i = 0; i < 8; i++) {
  // Alternated: the chain read alone, the whole refresh.
  started = performance.now();
  await readNetworkState(client, deployment.contracts);
  chainOnly.push(performance.now() - started);
  started = performance.now();
  const state = await refresher.refresh();
  steady.push(performance.now() - started);
  if (state.failing) throw new Error(`refresh failed: ${state.lastError?.message}`);
}
console.log("\nSteady refresh at 10,000 providers (median of 8, alternated with the chain read):");
console.table({
  "chain read alone (ms)": { value: Math.round(median(chainOnly)) },
  "whole refresh (ms)": { value: Math.round(median(steady)) },
  "refresh / chain read": { value: round(median(steady) / median(chainOnly)) },
  "refresh / goal of 1 s": { value: round(median(steady) / 1000) },
});

Deno.bench({
  name: "steady refresh, 10,000 providers",
  n: 5,
  warmup: 1,
  async fn() {
    await refresher.refresh();
  },
});
