/**
 * The history leaves the embedded store alone while the chain does not move: a pass that finds
 * the same head (number and hash) reads nothing from the store, so the store's worker, once ended
 * for idleness, stays ended (`indexer/store/_embedded_host.ts`); a new block, or another block at
 * the same height (a reorg), is read as before.
 */

import assert from "node:assert/strict";
import { PgliteHost } from "../../indexer/store/_embedded_host.ts";
import { settleOnChain, startChainFixture } from "../_chain_fixture.ts";
import { serve } from "../_http.ts";
import { historyIndexer } from "./_history_indexer.ts";
import { freshDataDir } from "./_stores.ts";

Deno.test("history: a quiet chain leaves the ended store worker ended; a new block or a reorg is read", async () => {
  await using router = serve(() => Response.json({ ads: [] }));
  await using chain = await startChainFixture({ providers: 3, routerUrls: [router.url] });
  const { refresher, get } = historyIndexer(chain, { dataDir: await freshDataDir() }, {
    confirmations: 0,
  });
  await using _refresher = refresher;
  const amount = async () => {
    const { status, body } = await get("/stats");
    assert.equal(status, 200);
    return BigInt(body.settlements.amount);
  };
  await refresher.refresh();
  await refresher.syncHistory();
  const seeded = await amount();
  const [a, b] = chain.expected.state.providers.map((p) => p.address);

  const host = PgliteHost.shared();
  await refresher.syncHistory(); // the pass that learns the head it is caught up with
  await host.endIdle();
  const starts = host.starts;
  for (let i = 0; i < 3; i++) await refresher.syncHistory();
  assert.equal(host.running, false, "a quiet pass did not start the store's worker");
  assert.equal(host.starts, starts);
  assert.equal(await amount(), seeded);

  // A new block: read.
  const snapshot = await chain.rpc("evm_snapshot");
  await settleOnChain(chain, a, 1_111n);
  await refresher.refresh();
  await refresher.syncHistory();
  assert.equal(await amount(), seeded + 1_111n);
  assert.equal(host.starts, starts + 1, "the new block started the worker");

  // Another block at the same height (the settlement replaced): the hash differs, read again.
  await host.endIdle();
  assert.equal(await chain.rpc("evm_revert", [snapshot]), true);
  await settleOnChain(chain, b, 2_222n);
  await refresher.refresh();
  await refresher.syncHistory();
  assert.equal(await amount(), seeded + 2_222n);
});
