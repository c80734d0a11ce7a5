/**
 * The indexer behind endpoints that answer like QuickNode, dRPC, Blast and Alchemy (the
 * fault-injecting proxy in front of a real anvil): the settlement history starts and catches up
 * with the exact totals; a block no request can read is named on `/health` as
 * `rpc_range_limited`, an endpoint that rate-limits everything as `rpc_rate_limited` — never as
 * `chain_unreachable`, which would send the operator to look at the network.
 */

import assert from "node:assert/strict";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { Refresher } from "../../indexer/refresher.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { type FaultPlan, startFaultProxy } from "../_fault_rpc.ts";
import { PROVIDER_REFUSALS } from "../chain/_provider_errors.ts";
import { serve } from "../_http.ts";
import { settleMany } from "./_settlements.ts";
import { freshDataDir } from "./_stores.ts";

const refusal = (id: string) => PROVIDER_REFUSALS.find((r) => r.id === id)!;

Deno.test("the settlement history behind providers' range limits, and /health naming what is wrong", async (t) => {
  await using router = serve(() => Response.json({ ads: [] }));
  await using chain = await startChainFixture({
    providers: 6,
    routerUrls: [router.url],
    settlementsPerEpoch: 2,
  });
  const providers = chain.expected.state.providers.map((p) => p.address);
  let settled = chain.expected.settlements.reduce((s, b) => s + b.settlements, 0);
  // 6 blocks of 8 settlements, 400 empty blocks before each.
  for (let i = 0; i < 6; i++) {
    await chain.rpc("anvil_mine", ["0x190"]);
    settled += (await settleMany(chain, { count: 8, perTx: 8, providers, seed: i + 1 })).length;
  }

  const indexerBehind = async (plan: FaultPlan) => {
    const proxy = startFaultProxy(chain.anvil.rpcUrl, plan);
    const refresher = new Refresher({
      rpcUrl: proxy.url,
      contracts: chain.contracts,
      confirmations: 0,
      scanFromBlock: chain.deployment.fromBlock,
      client: { retryCount: 0, timeoutMs: 5_000 },
      history: { dataDir: await freshDataDir() },
      log: () => {},
    });
    const handle = createIndexerHandler({
      state: () => refresher.state,
      rpc: () => refresher.rpcStatus(),
      log: () => {},
    });
    const health = async () => {
      const response = await handle(new Request("http://127.0.0.1:8088/health"));
      return await response.json();
    };
    return {
      proxy,
      refresher,
      health,
      [Symbol.asyncDispose]: async () => {
        await refresher.stop();
        await proxy.close();
      },
    };
  };

  for (const id of ["quicknode", "drpc", "blast-paid", "alchemy-free"]) {
    await t.step(`behind ${refusal(id).provider}: the history starts, totals exact`, async () => {
      await using indexer = await indexerBehind({ refusal: refusal(id), limit: 300 });
      assert.equal((await indexer.refresher.refresh()).failing, false);
      const history = await indexer.refresher.syncHistory();
      assert.equal(history.failing, false, history.lastError?.message);
      assert.ok(history.figures, "figures read");
      assert.equal(history.figures.total.settlements, settled);
      assert.ok(indexer.proxy.stats.refused >= 1, "the limit was hit");
      const body = await indexer.health();
      assert.equal(body.status, "ok", JSON.stringify(body.problems));
      assert.equal(body.settlements.synced, true);
    });
  }

  await t.step("a block over the result limit, even alone: rpc_range_limited", async () => {
    await using indexer = await indexerBehind({ refusal: refusal("geth-results"), limit: 5 });
    await indexer.refresher.refresh();
    const history = await indexer.refresher.syncHistory();
    assert.ok(history.unreadable, "the history waits at a block");
    const body = await indexer.health();
    assert.equal(body.status, "degraded");
    const problem = body.problems.find((p: { code: string }) => p.code === "rpc_range_limited");
    assert.ok(problem, JSON.stringify(body.problems));
    assert.equal(problem.source, "settlements");
    assert.match(problem.message, /single block \d+.*more than 5 results/);
    assert.equal(body.settlements.unreadable_block.block, String(history.unreadable.block));
    assert.ok(!body.problems.some((p: { code: string }) => p.code === "chain_unreachable"));
  });

  await t.step("an endpoint that rate-limits everything: rpc_rate_limited", async () => {
    await using indexer = await indexerBehind({});
    assert.equal((await indexer.refresher.refresh()).failing, false);
    indexer.proxy.plan = { rateLimited: 1, retryAfterSecs: 0 };
    const failed = await indexer.refresher.refresh();
    assert.equal(failed.lastError?.code, "rpc_rate_limited", failed.lastError?.message);
    const history = await indexer.refresher.syncHistory();
    assert.equal(history.lastError?.code, "rpc_rate_limited", history.lastError?.message);
    const body = await indexer.health();
    assert.equal(body.status, "degraded", "the snapshot is still fresh");
    assert.deepEqual(
      body.problems.map((p: { code: string; source: string }) => `${p.source}:${p.code}`).sort(),
      ["refresh:rpc_rate_limited", "rpc:rpc_rate_limited", "settlements:rpc_rate_limited"],
    );
    assert.equal(body.rpc[0].state, "failing");
    assert.ok(body.rpc[0].rate_limited >= 1);
  });
});
