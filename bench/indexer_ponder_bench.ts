/**
 * The settlement history's throughput side by side with Ponder: the same settlements on the
 * same local chain, indexed by `indexer/main.ts` (the embedded store) and by a minimal Ponder
 * app (`bench/ponder/`: Ponder 0.16 with PGlite, summing the same figures per provider per
 * epoch), run in turn, several rounds. Each run is a new process on a new data directory,
 * timed from its start to its first full answer (every settlement counted: `/stats` for ours,
 * the app's `/totals` for Ponder); then the process is stopped and started again on the same
 * directory (the restart: time to the full answer again), its peak and idle resident memory
 * read from `/proc`, its directory's size on disk measured.
 *
 * Memory is the process tree's (ours runs PGlite in processes of its own; Ponder's `node` may
 * start helpers), sampled every 100 ms from the start to the idle reading: the highest sum of
 * the processes' RSS, and of their PSS (a page shared by two processes — the second `deno`'s
 * binary — counted half in each, so once in the sum). The goals are read against PSS: it is
 * what the tree costs the machine; the RSS sum counts shared pages twice.
 *
 * Twice: straight to anvil, and behind the fault-injecting proxy answering like QuickNode with
 * a 2,000-block range limit (`tests/_fault_rpc.ts`). The chain holds N settlements (200,000 by
 * default, `NET_BENCH_SETTLEMENTS`), 1,000 per block with 200 empty blocks between, so a
 * 2,000-block range holds about ten settlement blocks. Ponder is given
 * `ethGetLogsBlockRange: 2000` (with its default it asks the whole chain at once, an answer of
 * hundreds of MB; behind the proxy with 5,000 it retried the refused range for a minute and exited
 * on an unhandled rejection, so it gets the limit it must not pass); ours runs with its defaults
 * and learns the limit from the refusal's words.
 *
 * Run: `deno bench -A bench/indexer_ponder_bench.ts` (the first run installs Ponder with npm;
 * over an hour at the default scale on a loaded 2-core machine). `NET_BENCH_ROUNDS` sets the rounds
 * (default 2); `NET_BENCH_ONLY=ours` runs our indexer alone. `docs/indexer.md` gives runs at the default (about 25 minutes on a quiet machine) and at `NET_BENCH_SETTLEMENTS=50000` (about 12).
 *
 * @module
 */

import { startChainFixture } from "../tests/_chain_fixture.ts";
import { startFaultProxy } from "../tests/_fault_rpc.ts";
import { PROVIDER_REFUSALS } from "../tests/chain/_provider_errors.ts";
import { startIndexer } from "../tests/indexer/_indexer_process.ts";
import { settleMany } from "../tests/indexer/_settlements.ts";
import { DEFAULT_IDLE_MS } from "../indexer/store/_embedded_host.ts";
import {
  diskOf,
  installPonder,
  sampleTree,
  startPonder,
  treeBreakdown,
  treeMemory,
} from "./_ponder.ts";

const SETTLEMENTS = Number(Deno.env.get("NET_BENCH_SETTLEMENTS") ?? 200_000);
const ROUNDS = Number(Deno.env.get("NET_BENCH_ROUNDS") ?? 2);
const PER_BLOCK = 1_000;
const GAP = 200;
/**
 * `NET_BENCH_ONLY=ours`: our indexer alone (no Ponder, no ratios), to iterate on our side.
 */
const ONLY_OURS = Deno.env.get("NET_BENCH_ONLY") === "ours";
/**
 * `NET_BENCH_SMAPS=1`: prints what each process's memory is made of (`_smaps.ts`) at the tree's
 * highest PSS and when idle (reading smaps at each new high costs the sampler time).
 */
const SMAPS = Deno.env.get("NET_BENCH_SMAPS") === "1";
/**
 * How long an indexed process is left alone before its idle memory is read, ms: past the
 * embedded store's idle end (`DEFAULT_IDLE_MS`, after which its worker has exited), the same
 * for both.
 */
const IDLE_MS = DEFAULT_IDLE_MS + 5_000;

const median = (values: number[]) => {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A progress line on stderr (the bench runs for minutes). */
const progress = (line: string) =>
  console.error(`  ${new Date().toISOString().slice(11, 19)} ${line}`);

/** One indexer's run: full sync, restart, memory, disk. */
interface Run {
  syncSecs: number;
  restartSecs: number;
  /** The tree's highest RSS sum, MiB. */
  peakMiB: number;
  /** The tree's highest PSS sum, MiB. */
  peakPssMiB: number;
  /** The tree's RSS sum when idle, MiB. */
  idleMiB: number;
  /** The tree's PSS sum when idle, MiB. */
  idlePssMiB: number;
  diskBytes: number;
}

// ---- The chain: N settlements, 1,000 per block, 200 empty blocks between. ----
const ponderVersion = await installPonder();
const router = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  () => Response.json({ ads: [] }),
);
const chain = await startChainFixture({
  providers: 12,
  routerUrls: [`http://127.0.0.1:${router.addr.port}`],
  anvil: { gasLimit: 2_000_000_000n },
});
const root = await Deno.makeTempDir({ prefix: "net-ponder-bench-" });
globalThis.addEventListener("unload", () => {
  void router.shutdown();
  void chain.anvil.stop();
  try {
    Deno.removeSync(root, { recursive: true });
  } catch {
    // gone
  }
});
const providers = chain.expected.state.providers.map((p) => p.address);
const started = performance.now();
for (let sent = 0; sent < SETTLEMENTS; sent += PER_BLOCK) {
  await settleMany(chain, {
    count: Math.min(PER_BLOCK, SETTLEMENTS - sent),
    perTx: PER_BLOCK,
    providers,
    seed: sent + 1,
    secondsBetween: 60,
  });
  await fetch(chain.anvil.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: [GAP] }),
  }).then((r) => r.json());
}
const head = await chain.client.getBlockNumber();
const total = SETTLEMENTS + chain.expected.settlements.reduce((s, b) => s + b.settlements, 0);
console.log(
  `\n${total} settlements on chain in ${head} blocks (${SETTLEMENTS} sent in ${
    Math.round((performance.now() - started) / 1000)
  } s, ${PER_BLOCK} per block, ${GAP} empty blocks between); Ponder ${ponderVersion}`,
);
const contractsEnv = {
  NET_EVM_ESCROW: chain.contracts.escrow,
  NET_EVM_STAKING: chain.contracts.staking,
  NET_EVM_EMISSION: chain.contracts.emission,
  NET_EVM_REGISTRY: chain.contracts.registry,
};
let runs = 0;

/** Waits until `full()` is true; the seconds since `since`. */
async function untilFull(full: () => Promise<boolean>, since: number, what: string) {
  const deadline = performance.now() + 3_600_000;
  while (!(await full())) {
    if (performance.now() > deadline) throw new Error(`${what}: no full answer in an hour`);
    await sleep(100);
  }
  return (performance.now() - since) / 1000;
}

async function runOurs(rpcUrl: string): Promise<Run> {
  const dataDir = `${root}/ours-${++runs}`;
  const args = [
    "--confirmations",
    "0",
    "--refresh-secs",
    "2",
    "--scan-from-block",
    String(chain.deployment.fromBlock),
    "--data-dir",
    dataDir,
  ];
  const env = { ...contractsEnv, NET_EVM_RPC_URL: rpcUrl };
  const once = async () => {
    const t0 = performance.now();
    const indexer = await startIndexer(args, env);
    const memory = sampleTree(indexer.pid, 100, SMAPS);
    const secs = await untilFull(
      async () => {
        const { status, body } = await indexer.get("/stats");
        return status === 200 && body.settlements.synced && body.settlements.count === total;
      },
      t0,
      "ours",
    );
    return { indexer, secs, memory };
  };
  const first = await once();
  progress(`ours: full answer in ${first.secs.toFixed(1)} s`);
  await sleep(IDLE_MS);
  const peak = first.memory.stop();
  const idle = treeMemory(first.indexer.pid);
  progress(
    `ours: peak ${JSON.stringify(peak)}, idle ${JSON.stringify(idle)} (MiB, processes); stopping`,
  );
  if (SMAPS) {
    progress(`ours at the peak (rss/pss MiB):\n    ${peak.atPeak.join("\n    ")}`);
    progress(`ours idle:\n    ${treeBreakdown(first.indexer.pid).join("\n    ")}`);
  }
  await first.indexer.stop();
  progress(`ours: stopped; restarting`);
  const again = await once();
  await sleep(IDLE_MS);
  again.memory.stop();
  const restartIdle = treeMemory(again.indexer.pid);
  if (SMAPS) {
    progress(
      `ours idle after the restart:\n    ${treeBreakdown(again.indexer.pid).join("\n    ")}`,
    );
  }
  await again.indexer.stop();
  const run = {
    syncSecs: first.secs,
    restartSecs: again.secs,
    peakMiB: peak.rss,
    peakPssMiB: peak.pss,
    idleMiB: idle.rss,
    idlePssMiB: idle.pss,
    diskBytes: await diskOf(dataDir),
  };
  progress(`ours: ${JSON.stringify(run)}; idle after the restart ${JSON.stringify(restartIdle)}`);
  return run;
}

async function runPonder(rpcUrl: string, getLogsRange: number): Promise<Run> {
  const dataDir = `${root}/ponder-${++runs}`;
  const once = async () => {
    const t0 = performance.now();
    const ponder = startPonder({
      rpcUrl,
      chainId: chain.anvil.chainId,
      escrow: chain.contracts.escrow,
      startBlock: chain.deployment.fromBlock,
      dataDir,
      getLogsRange,
    });
    const memory = sampleTree(ponder.pid, 100, SMAPS);
    const secs = await untilFull(
      async () => (await ponder.totals())?.settlements === total,
      t0,
      `ponder (${ponder.output().slice(-2000)})`,
    );
    return { ponder, secs, memory };
  };
  const first = await once();
  progress(`Ponder: full answer in ${first.secs.toFixed(1)} s`);
  await sleep(IDLE_MS);
  const peak = first.memory.stop();
  const idle = treeMemory(first.ponder.pid);
  progress(`Ponder: peak ${JSON.stringify(peak)}, idle ${JSON.stringify(idle)}`);
  if (SMAPS) {
    progress(`Ponder at the peak (rss/pss MiB):\n    ${peak.atPeak.join("\n    ")}`);
    progress(`Ponder idle:\n    ${treeBreakdown(first.ponder.pid).join("\n    ")}`);
  }
  await first.ponder.stop();
  const again = await once();
  again.memory.stop();
  await again.ponder.stop();
  const run = {
    syncSecs: first.secs,
    restartSecs: again.secs,
    peakMiB: peak.rss,
    peakPssMiB: peak.pss,
    idleMiB: idle.rss,
    idlePssMiB: idle.pss,
    diskBytes: await diskOf(dataDir),
  };
  progress(`Ponder: ${JSON.stringify(run)}`);
  return run;
}

/** The table of one setting: medians of each system, and the ratios. */
function table(title: string, ours: Run[], ponder: Run[]): string {
  const m = (runs: Run[], key: keyof Run) => median(runs.map((r) => r[key]));
  const row = (name: string, runs: Run[]) =>
    `| ${name.padEnd(10)} | ${
      Math.round(total / m(runs, "syncSecs")).toLocaleString("en-US").padStart(9)
    } | ${m(runs, "syncSecs").toFixed(1).padStart(7)} | ${
      m(runs, "restartSecs").toFixed(1).padStart(7)
    } | ${(m(runs, "diskBytes") / 2 ** 20).toFixed(1).padStart(7)} | ${
      m(runs, "peakMiB").toFixed(0).padStart(6)
    } | ${m(runs, "peakPssMiB").toFixed(0).padStart(6)} | ${
      m(runs, "idleMiB").toFixed(0).padStart(6)
    } | ${m(runs, "idlePssMiB").toFixed(0).padStart(6)} |`;
  const ratio = (key: keyof Run) => m(ours, key) / m(ponder, key);
  return [
    "",
    `${title} (${total} settlements, medians of ${ROUNDS} alternating rounds):`,
    "| indexer    | events/s  | full, s | restart, s | disk, MiB | peak RSS, MiB | peak PSS, MiB | idle RSS, MiB | idle PSS, MiB |",
    "| ---------- | --------- | ------- | ------- | ------- | ------ | ------ | ------ | ------ |",
    row("ours", ours),
    row(`Ponder`, ponder),
    `ratios ours/Ponder: events/s ${(1 / ratio("syncSecs")).toFixed(2)}× · restart ${
      ratio("restartSecs").toFixed(2)
    }× · disk ${ratio("diskBytes").toFixed(2)}× · peak memory ${
      ratio("peakPssMiB").toFixed(2)
    }× PSS (${ratio("peakMiB").toFixed(2)}× RSS) · idle memory ${
      ratio("idlePssMiB").toFixed(2)
    }× PSS (${
      ratio("idleMiB").toFixed(2)
    }× RSS) (goals: events/s ≥ 10×, peak ≤ 0.5×, ours idle ≤ 150 MiB; memory of the process trees)`,
  ].join("\n");
}

/** The table of our runs alone (`NET_BENCH_ONLY=ours`). */
function oursTable(title: string, ours: Run[]): string {
  const lines = table(title, ours, ours).split("\n");
  return [...lines.slice(0, 5), "(our indexer alone: no Ponder run)"].join("\n");
}

/** The measurement, run once (`deno bench` calls a benchmark's function several times even
 * with `n: 1`, and each call of this one takes minutes). */
let measured: Promise<void> | undefined;

Deno.bench({
  name: `settlement history: ours against Ponder ${ponderVersion} (${total} settlements)`,
  n: 1,
  warmup: 0,
  async fn() {
    await (measured ??= measure());
  },
});

async function measure(): Promise<void> {
  const quicknode = PROVIDER_REFUSALS.find((r) => r.id === "quicknode")!;
  await using proxy = startFaultProxy(chain.anvil.rpcUrl, { refusal: quicknode, limit: 2_000 });
  const settings: [string, string, number][] = [
    ["straight to anvil", chain.anvil.rpcUrl, 2_000],
    ["behind QuickNode's 2,000-block range limit (the fault proxy)", proxy.url, 2_000],
  ];
  const out: string[] = [];
  for (const [title, rpcUrl, ponderRange] of settings) {
    const ours: Run[] = [];
    const ponder: Run[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating, each starting a round in turn.
      if (ONLY_OURS) {
        ours.push(await runOurs(rpcUrl));
      } else if (round % 2 === 0) {
        ours.push(await runOurs(rpcUrl));
        ponder.push(await runPonder(rpcUrl, ponderRange));
      } else {
        ponder.push(await runPonder(rpcUrl, ponderRange));
        ours.push(await runOurs(rpcUrl));
      }
    }
    out.push(ONLY_OURS ? oursTable(title, ours) : table(title, ours, ponder));
    console.log(out.at(-1));
  }
  console.log(out.join("\n") + `\nproxy refusals: ${proxy.stats.refused}\n`);
}
