/**
 * The settlement history through the real refresher on a real anvil chain, on both store
 * backends: a block no answer can be read for is named on `/health` while `/stats` keeps
 * answering 200 with `synced: false`; a reorg inside the unconfirmed window (anvil's
 * `evm_snapshot`/`evm_revert`) is undone without a rescan; a deeper one discards the history
 * and scans it again; the per-provider history endpoint serves a provider that is not live.
 */

import assert from "node:assert/strict";
import type { Address } from "viem";
import type { StoreLocation } from "../../indexer/store/mod.ts";
import { settleOnChain, startChainFixture } from "../_chain_fixture.ts";
import { countingFetch } from "../_counting_fetch.ts";
import { serve } from "../_http.ts";
import { startPostgres } from "../_postgres.ts";
import { historyIndexer as indexer } from "./_history_indexer.ts";
import { freshDataDir } from "./_stores.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The backends every case runs on. */
const BACKENDS: { name: string; location: () => Promise<StoreLocation & AsyncDisposable> }[] = [
  {
    name: "embedded",
    location: async () => ({
      dataDir: await freshDataDir(),
      [Symbol.asyncDispose]: async () => {},
    }),
  },
  {
    name: "PostgreSQL",
    location: async () => {
      const server = await startPostgres();
      return { databaseUrl: await server.createDatabase(), [Symbol.asyncDispose]: server.stop };
    },
  },
];

for (const backend of BACKENDS) {
  Deno.test(`a block that cannot be read is named on /health; /stats stays 200 (${backend.name})`, async () => {
    await using router = serve(() => Response.json({ ads: [] }));
    await using chain = await startChainFixture({ providers: 12, routerUrls: [router.url] });
    await using location = await backend.location();
    // An endpoint that refuses any range holding the block with the seed's first settlements.
    const first = (await chain.client.getLogs({ address: chain.contracts.escrow, fromBlock: 0n }))
      .map((log) => log.blockNumber!).sort((a, b) => Number(a - b))[0];
    let refuse = true;
    const counter = countingFetch({
      intercept: (request) => {
        if (!refuse || request.method !== "eth_getLogs") return undefined;
        const [f] = request.params as [{ fromBlock: string; toBlock: string }];
        return BigInt(f.fromBlock) <= first && first <= BigInt(f.toBlock)
          ? { code: -32005, message: "query returned more than 10000 results" }
          : undefined;
      },
    });
    const { refresher, get } = indexer(chain, location, {
      confirmations: 0,
      client: { retryCount: 0, fetch: counter.fetch },
    });
    await using _refresher = refresher;
    await refresher.refresh();
    await refresher.syncHistory();
    const health = await get("/health");
    assert.equal(health.status, 200);
    const s = health.body.settlements;
    assert.equal(s.unreadable_block.block, String(first), JSON.stringify(s));
    assert.match(s.unreadable_block.message, /single block \d+: .*more than 10000 results/);
    assert.equal(s.synced, false);
    assert.equal(s.last_block, String(first - 1n), "everything before it is committed");
    const stats = await get("/stats");
    assert.equal(stats.status, 200);
    assert.deepEqual(
      [
        stats.body.settlements.synced,
        stats.body.settlements.amount,
        stats.body.providers.registered,
      ],
      [false, null, chain.expected.state.providers.length],
    );
    // The endpoint relents: the scan goes on from that block and catches up.
    refuse = false;
    await refresher.syncHistory();
    const after = (await get("/health")).body.settlements;
    assert.deepEqual([after.unreadable_block, after.synced], [null, true]);
    const total = chain.expected.settlements.reduce((sum, b) => sum + b.amount, 0n);
    assert.equal((await get("/stats")).body.settlements.amount, String(total));
  });

  Deno.test(`a reorg inside the unconfirmed window is undone; a deeper one rescans (${backend.name})`, async () => {
    await using router = serve(() => Response.json({ ads: [] }));
    await using chain = await startChainFixture({ providers: 12, routerUrls: [router.url] });
    await using location = await backend.location();
    const { refresher, get } = indexer(chain, location, { confirmations: 3 });
    await using _refresher = refresher;
    const [a, b] = chain.expected.state.providers.filter((p) => p.active).map((p) => p.address);
    const seeded = chain.expected.settlements.reduce((sum, x) => sum + x.amount, 0n);
    const amount = async () => BigInt((await get("/stats")).body.settlements.amount);
    const settled = async (provider: Address) =>
      (await get(`/providers/${provider}`)).body.settled.total.amount;
    await chain.rpc("anvil_mine", ["0x3"]);
    await refresher.refresh();
    await refresher.syncHistory();
    assert.equal(await amount(), seeded);
    const before = { a: await settled(a), b: await settled(b) };

    // A branch with a settlement to `a`, scanned into the window, then dropped.
    const id = await chain.rpc("evm_snapshot");
    await settleOnChain(chain, a, 1_111n);
    await chain.rpc("anvil_mine", ["0x1"]);
    await refresher.syncHistory();
    const windowed = refresher.history;
    assert.ok(windowed.lastBlock!.number > windowed.confirmed!.number, "scanned into the window");
    assert.equal(await amount(), seeded, "not confirmed, not counted");
    assert.equal(await chain.rpc("evm_revert", [id]), true);
    // The branch that stays: a settlement to `b`, confirmed.
    await settleOnChain(chain, b, 2_222n);
    await chain.rpc("anvil_mine", ["0x4"]);
    await refresher.refresh();
    await refresher.syncHistory();
    assert.equal(await amount(), seeded + 2_222n);
    assert.equal(await settled(a), before.a, "the dropped branch left nothing behind");
    assert.equal(BigInt(await settled(b)), BigInt(before.b) + 2_222n);
    assert.equal(refresher.history.rescans.count, 0, "undone from the window, no rescan");

    // Deeper than the confirmation depth: the history is discarded and scanned again.
    const deep = await chain.rpc("evm_snapshot");
    await settleOnChain(chain, a, 3_333n);
    await chain.rpc("anvil_mine", ["0x5"]);
    await refresher.refresh();
    await refresher.syncHistory();
    assert.equal(await amount(), seeded + 2_222n + 3_333n);
    assert.equal(await chain.rpc("evm_revert", [deep]), true);
    await settleOnChain(chain, b, 4_444n);
    await chain.rpc("anvil_mine", ["0x8"]);
    await refresher.refresh();
    await refresher.syncHistory();
    assert.equal(await amount(), seeded + 2_222n + 4_444n);
    const health = (await get("/health")).body.settlements;
    assert.equal(health.rescans, 1);
    assert.match(health.last_rescan.reason, /reorg deeper than the confirmation depth/);
    assert.equal(health.role, "writer");
    assert.equal(health.store.backend, "dataDir" in location ? "embedded" : "postgres");
  });
}

Deno.test("/providers/{address}: a provider that is not listed, with its history from the store", async () => {
  await using router = serve(() => Response.json({ ads: [] }));
  await using chain = await startChainFixture({ providers: 12, routerUrls: [router.url] });
  const { refresher, get } = indexer(chain, { dataDir: await freshDataDir() }, {
    confirmations: 0,
  });
  await using _refresher = refresher;
  await refresher.refresh();
  await refresher.syncHistory();
  // No router serves anyone: every paid provider is "not live".
  const paid = chain.expected.settlements[0].provider;
  const buckets = chain.expected.settlements.filter((b) => b.provider === paid);
  const detail = await get(`/providers/${paid}?limit=1`);
  assert.equal(detail.status, 200);
  assert.equal(detail.body.live, null);
  assert.equal(
    detail.body.settled.total.settlements,
    buckets.reduce((s, b) => s + b.settlements, 0),
  );
  assert.deepEqual(detail.body.settled.epochs, [{
    epoch: String(buckets[0].epoch),
    amount: String(buckets[0].amount),
    tokens: String(buckets[0].tokens),
    settlements: buckets[0].settlements,
  }]);
  const pages = [detail.body.settled.epochs];
  for (let cursor = detail.body.settled.next_cursor; cursor !== null;) {
    const page = (await get(`/providers/${paid}?limit=1&cursor=${cursor}`)).body.settled;
    pages.push(page.epochs);
    cursor = page.next_cursor;
  }
  assert.deepEqual(pages.flat().map((e: Json) => e.epoch), buckets.map((b) => String(b.epoch)));
  const nobody = await get(`/providers/0x${"7".repeat(40)}`);
  assert.equal(nobody.status, 404);
  assert.equal(nobody.body.error.code, "unknown_provider");
});
