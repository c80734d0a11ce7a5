/**
 * `/health` latency while the indexer opens its settlement history, against a real anvil chain:
 * `indexer/main.ts` started on a **new** embedded data directory (PGlite creates its store:
 * seconds of CPU), alternated with the same indexer on a PostgreSQL database (the baseline:
 * the same process, the same routes, the same chain and history scan, no PGlite). A probe
 * asks `/health` every 20 ms, one at a time, from the moment the indexer listens until its
 * history is synced (and at least 15 s); the table gives each run's first probe (the process
 * is cold: its first answer compiles the routes), and the worst, 99th percentile and median of
 * the others, split into the probes made before the store was open (`role` still null) and
 * after.
 *
 * The goal is a worst latency under 100 ms throughout, on a busy machine:
 * `NET_BENCH_BUSY=2` starts two busy loops (`yes > /dev/null`), pinned to CPUs 0 and 1 with
 * `taskset` when it is there, for the length of the run.
 *
 * Run: `NET_BENCH_BUSY=2 deno run -A bench/indexer_health_bench.ts` (about a minute a round;
 * `NET_BENCH_ROUNDS`, default 3). `NET_BENCH_INDEXER` runs another checkout's
 * `indexer/main.ts` (to measure the code before a change in the same way).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { startChainFixture } from "../tests/_chain_fixture.ts";
import { startPostgres } from "../tests/_postgres.ts";

const ROUNDS = Number(Deno.env.get("NET_BENCH_ROUNDS") ?? 3);
const BUSY = Number(Deno.env.get("NET_BENCH_BUSY") ?? 0);
const MAIN = Deno.env.get("NET_BENCH_INDEXER") ??
  fileURLToPath(new URL("../indexer/main.ts", import.meta.url));
const PROBE_EVERY_MS = 20;
/** Both runs probe at least this long, so the baseline has as many chances to stall. */
const PROBE_AT_LEAST_MS = 15_000;
const GIVE_UP_MS = 300_000;

const busy: Deno.ChildProcess[] = [];
for (let cpu = 0; cpu < BUSY; cpu++) {
  const pinned = await new Deno.Command("taskset", { args: ["-c", String(cpu), "true"] })
    .output().then((out) => out.success, () => false);
  busy.push(
    new Deno.Command(pinned ? "taskset" : "yes", {
      args: pinned ? ["-c", String(cpu), "yes"] : [],
      stdout: "null",
      stderr: "null",
    }).spawn(),
  );
}
const stopBusy = () => {
  for (const loop of busy.splice(0)) {
    try {
      loop.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
};
globalThis.addEventListener("unload", stopBusy);

const router = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  () => Response.json({ ads: [] }),
);
await using chain = await startChainFixture({
  providers: 4,
  routerUrls: [`http://127.0.0.1:${router.addr.port}`],
});
await using pg = await startPostgres();
const root = await Deno.makeTempDir({ prefix: "net-health-bench-" });

/** One probe: when, how long, and whether the store was open by then. */
interface Probe {
  ms: number;
  storeOpen: boolean;
}

interface Run {
  probes: Probe[];
  syncedAfterMs: number;
}

async function measure(location: Record<string, string>): Promise<Run> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "--bind", "127.0.0.1:0", "--refresh-secs", "1"],
    env: {
      ...location,
      NET_EVM_RPC_URL: chain.anvil.rpcUrl,
      NET_EVM_ESCROW: chain.contracts.escrow,
      NET_EVM_STAKING: chain.contracts.staking,
      NET_EVM_EMISSION: chain.contracts.emission,
      NET_EVM_REGISTRY: chain.contracts.registry,
      NET_STATS_SCAN_FROM_BLOCK: String(chain.deployment.fromBlock),
      NET_STATS_CONFIRMATIONS: "0",
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the indexer exited before listening:\n${stdout}\n${await stderr}`);
    stdout += value;
    url = stdout.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
  }
  const draining = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) stdout += r.value;
  })();
  const started = performance.now();
  const probes: Probe[] = [];
  let syncedAfterMs = NaN;
  while (performance.now() - started < GIVE_UP_MS) {
    const sent = performance.now();
    const response = await fetch(`${url}/health`);
    const body = await response.json();
    probes.push({ ms: performance.now() - sent, storeOpen: body.settlements.role !== null });
    if (body.settlements.synced && body.settlements.role !== null) {
      if (Number.isNaN(syncedAfterMs)) syncedAfterMs = performance.now() - started;
      if (performance.now() - started >= PROBE_AT_LEAST_MS) break;
    }
    await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
  }
  child.kill("SIGTERM");
  await child.status;
  await draining;
  await stderr;
  return { probes, syncedAfterMs };
}

function summary(probes: readonly Probe[]) {
  const ms = probes.map((p) => p.ms).toSorted((a, b) => a - b);
  const at = (q: number) => ms.length ? ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] : 0;
  return { n: ms.length, worst: ms.at(-1) ?? 0, p99: at(0.99), median: at(0.5) };
}

const rows: Record<string, Record<string, number>> = {};
const worst: Record<string, number[]> = { embedded: [], postgres: [] };
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const backend of ["embedded", "postgres"] as const) {
      const location: Record<string, string> = backend === "embedded"
        ? { NET_STATS_DATA_DIR: `${root}/store-${round}` }
        : { NET_STATS_DATABASE_URL: await pg.createDatabase() };
      const run = await measure(location);
      const [first, ...rest] = run.probes;
      const opening = summary(rest.filter((p) => !p.storeOpen));
      const open = summary(rest.filter((p) => p.storeOpen));
      const all = summary(rest);
      worst[backend].push(all.worst);
      const r = (value: number) => Math.round(value * 10) / 10;
      rows[`${backend} #${round}`] = {
        "first ms": r(first.ms),
        "probes": all.n,
        "opening: probes": opening.n,
        "opening: worst ms": r(opening.worst),
        "open: worst ms": r(open.worst),
        "all: p99 ms": r(all.p99),
        "all: median ms": r(all.median),
        "synced after s": r(run.syncedAfterMs / 1000),
      };
    }
  }
} finally {
  stopBusy();
  await router.shutdown();
  await Deno.remove(root, { recursive: true }).catch(() => {});
}
console.log(
  `\n/health while the indexer opens its history (${BUSY} busy loops, probe every ` +
    `${PROBE_EVERY_MS} ms; embedded = a new data directory, postgres = the baseline):`,
);
console.table(rows);
const max = (values: number[]) => Math.max(...values);
console.log(
  `worst /health latency: embedded ${max(worst.embedded).toFixed(1)} ms, PostgreSQL ${
    max(worst.postgres).toFixed(1)
  } ms, embedded/PostgreSQL ${(max(worst.embedded) / max(worst.postgres)).toFixed(2)} ` +
    `(goal: under 100 ms)`,
);
