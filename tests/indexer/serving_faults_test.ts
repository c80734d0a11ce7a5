/**
 * `/stats` under RPC trouble (`_fault_run.ts`): the only endpoint answering like a busy free tier
 * (10 % 429, 10 % 502/503, slow answers, Infura's result limit) while settlements keep coming and
 * two reorgs happen — alone, so every request meets the faults (beside a healthy endpoint the
 * pool sends it little). What must always hold, whatever the load: no 503 while a snapshot
 * within its freshness bound exists, every 503 about the bound, and the settled totals exact (no
 * settlement lost, none counted twice, the reorganized ones dropped). The share of 200s is
 * printed; `bench/indexer_faults_bench.ts` measures it with and without a healthy second endpoint.
 */

import assert from "node:assert/strict";
import { runFaultMix } from "./_fault_run.ts";

Deno.test("under the fault mix, /stats is refused only past the freshness bound; totals exact", async () => {
  const result = await runFaultMix({ durationMs: 15_000, healthySecond: false });
  const refused = result.answers.filter((a) => a.status !== 200);
  console.log(
    `/stats: ${result.answers.length} answers, ${
      (100 * result.share200).toFixed(1)
    } % 200; faulty endpoint: ${result.faulty.rateLimited} × 429, ${result.faulty.badGateway} × 5xx, ${result.faulty.slow} slow, ${result.faulty.refused} getLogs refused; ${result.failedRefreshes} failed refreshes; ${result.reorgs} reorgs`,
  );
  assert.deepEqual(result.unjustified, [], "a 503 while the snapshot was fresh");
  for (const answer of refused) {
    assert.ok(
      answer.code === "stale" || /past the freshness bound/.test(answer.message ?? ""),
      `a 503 that is not about the bound: ${JSON.stringify(answer)}`,
    );
  }
  assert.ok(result.faulty.rateLimited > 0 && result.faulty.badGateway > 0, "faults were injected");
  assert.equal(result.reorgs, 2);
  assert.deepEqual(result.indexed, result.truth, "settled totals: none lost, none twice");
});
