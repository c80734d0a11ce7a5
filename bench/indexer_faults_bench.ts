/**
 * `/stats` under RPC trouble, measured: the share of 200s while the chain moves (settlements
 * every second, two reorgs) and an endpoint answers like a busy free tier — 10 % 429 with
 * `Retry-After: 1`, 10 % 502/503, 10 % answers after 1.5 s (over the 1 s timeout), Infura's
 * result limit on `eth_getLogs` (`tests/indexer/_fault_run.ts`). The indexer refreshes every
 * second and serves a snapshot for 4 s (its freshness bound).
 *
 * Three runs of the same length, in one process: no faults (the baseline), the faulty endpoint
 * beside a healthy one (the goal: ≥ 95 % 200s), and the faulty endpoint alone. Each prints the
 * share of 200s, the 503s, and whether the settled totals equal an independent count of what
 * stayed on chain (none lost, none twice, the reorganized ones dropped).
 *
 * Run: `deno bench -A bench/indexer_faults_bench.ts` (about 3 minutes);
 * `NET_BENCH_FAULT_SECS` sets each run's length (default 40).
 *
 * @module
 */

import {
  type FaultRunOptions,
  type FaultRunResult,
  runFaultMix,
} from "../tests/indexer/_fault_run.ts";

const SECONDS = Number(Deno.env.get("NET_BENCH_FAULT_SECS") ?? 40);

function line(name: string, result: FaultRunResult): string {
  const refused = result.answers.filter((a) => a.status !== 200);
  const codes = [...new Set(refused.map((a) => a.code))].join(", ") || "none";
  const exact = JSON.stringify(result.indexed, (_, v) => typeof v === "bigint" ? String(v) : v) ===
    JSON.stringify(result.truth, (_, v) => typeof v === "bigint" ? String(v) : v);
  return `| ${name.padEnd(34)} | ${String(result.answers.length).padStart(6)} | ${
    (100 * result.share200).toFixed(1).padStart(6)
  } % | ${String(refused.length).padStart(5)} (${codes}) | ${
    String(result.failedRefreshes).padStart(4)
  } | ${result.faulty.rateLimited} / ${result.faulty.badGateway} / ${result.faulty.slow} / ${result.faulty.refused} | ${
    exact ? "exact" : "WRONG"
  } (${result.indexed.settlements} settlements) |`;
}

const runs: [string, FaultRunOptions][] = [
  ["no faults (baseline)", { durationMs: SECONDS * 1000, healthySecond: false, faults: false }],
  ["faulty endpoint + a healthy one", { durationMs: SECONDS * 1000, healthySecond: true }],
  ["faulty endpoint alone", { durationMs: SECONDS * 1000, healthySecond: false }],
];

/** The measurement, run once (`deno bench` calls a benchmark's function several times even
 * with `n: 1`, and each call of this one takes minutes). */
let measured: Promise<void> | undefined;

Deno.bench({
  name: `/stats 200-share under the fault mix (${SECONDS} s per run)`,
  n: 1,
  warmup: 0,
  async fn() {
    await (measured ??= measure());
  },
});

async function measure(): Promise<void> {
  const lines: string[] = [];
  for (const [name, options] of runs) {
    const result = await runFaultMix(options);
    lines.push(line(name, result));
    if (result.unjustified.length > 0) {
      throw new Error(`${name}: ${result.unjustified.length} 503s while a snapshot was fresh`);
    }
  }
  console.log(
    [
      "",
      `/stats under RPC faults, ${SECONDS} s each (refresh 1 s, freshness bound 4 s):`,
      "| run                                | asked  |   200s   | 503s (codes) | failed refreshes | 429 / 5xx / slow / getLogs refused | settled totals |",
      "| ---------------------------------- | ------ | -------- | ------------ | ---- | --- | --- |",
      ...lines,
      "",
    ].join("\n"),
  );
}
