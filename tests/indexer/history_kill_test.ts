/**
 * `kill -9` of the indexer process (`indexer/main.ts`) at random points of a settlement scan,
 * 12 times, on one data directory: after every kill the store holds exactly the settlements
 * of the blocks its cursor says it confirmed (an independent recount of the chain's logs, by
 * viem's own decoder), nothing the indexer reported as scanned is lost, and the final run
 * serves per-epoch figures equal to the recount — no loss, no double count; and the indexer's
 * store process (PGlite) exits with it every time.
 *
 * The scan is made long on purpose: an RPC proxy in front of anvil refuses `eth_getLogs`
 * answers of more than 60 results (one block holds 40) and answers each one after 60 ms; and
 * each run may read only 2 to 6 ranges (later reads are held), so every kill lands before the
 * scan is done, however fast or slow the machine.
 */

import assert from "node:assert/strict";
import { openStore, type Settlement } from "../../indexer/store/mod.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { serve } from "../_http.ts";
import { assertConfirmed } from "./store/_helpers.ts";
import { recount } from "./store/_chain.ts";
import { startIndexer } from "./_indexer_process.ts";
import { startRpcProxy, UNLIMITED } from "./_rpc_proxy.ts";
import { settledEvents, settleMany } from "./_settlements.ts";
import { freshDataDir } from "./_stores.ts";
import { waitFor } from "../_wait.ts";
import { alive, storeProcesses } from "./store/_store_process.ts";

const KILLS = 12;
const CONFIRMATIONS = 2;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("kill -9 of the indexer during a scan, 12 times: no loss, no double count", async () => {
  await using router = serve(() => Response.json({ ads: [] }));
  await using chain = await startChainFixture({
    providers: 12,
    routerUrls: [router.url],
    anvil: { gasLimit: 1_000_000_000n },
  });
  const providers = chain.expected.state.providers.map((p) => p.address);
  await settleMany(chain, { count: 12_000, perTx: 40, providers, secondsBetween: 60 });
  // Every Settled event of the chain, decoded by viem: the truth the store is checked against.
  const truth = await settledEvents(chain);
  const head = await chain.client.getBlockNumber();
  assert.ok(truth.length >= 12_000);
  await using proxy = startRpcProxy(chain.anvil.rpcUrl, { maxLogs: 60, getLogsDelayMs: 60 });
  const dataDir = await freshDataDir();
  const env = {
    NET_EVM_RPC_URL: proxy.url,
    NET_EVM_ESCROW: chain.contracts.escrow,
    NET_EVM_STAKING: chain.contracts.staking,
    NET_EVM_EMISSION: chain.contracts.emission,
    NET_EVM_REGISTRY: chain.contracts.registry,
    NET_STATS_SCAN_FROM_BLOCK: String(chain.deployment.fromBlock),
    NET_STATS_CONFIRMATIONS: String(CONFIRMATIONS),
    NET_STATS_DATA_DIR: dataDir,
    NET_STATS_REFRESH_SECS: "1",
  };
  const identity = {
    chainId: chain.anvil.chainId,
    escrow: chain.contracts.escrow,
    scanFromBlock: chain.deployment.fromBlock,
    confirmations: CONFIRMATIONS,
    log: () => {},
  };
  let reported = chain.deployment.fromBlock - 1n;
  let midScan = 0;
  let stores: number[] = [];
  for (let run = 1; run <= KILLS; run++) {
    proxy.allowLogs(2 + Math.floor(Math.random() * 5));
    const indexer = await startIndexer([], env);
    try {
      // Wait for the scan to move past where it was, then kill it anywhere within 0.8 s.
      reported = await waitFor(`run ${run}: the scan to move past ${reported}`, async () => {
        const health = await indexer.get("/health");
        const last = health.body.settlements.last_block;
        return last !== null && BigInt(last) > reported ? BigInt(last) : undefined;
      }, { everyMs: 50, failed: indexer.failure });
      await sleep(Math.random() * 800);
      if (reported < head) midScan++;
    } finally {
      stores = storeProcesses(indexer.pid);
      await indexer.kill();
    }
    // No store process outlives its indexer (it exits when its input ends).
    assert.equal(stores.length, 1, `run ${run}: the indexer ran one store process`);
    await waitFor(`run ${run}: store process ${stores} exits`, () => {
      return stores.every((pid) => !alive(pid)) || undefined;
    }, { everyMs: 20 });
    reported = await checkStore(dataDir, identity, truth, reported, `run ${run}`);
  }
  assert.equal(midScan, KILLS, `only ${midScan} of ${KILLS} kills landed during the scan`);

  // The last run scans to the end and serves the recount.
  proxy.options.getLogsDelayMs = 0;
  proxy.allowLogs(UNLIMITED);
  const indexer = await startIndexer([], env);
  try {
    const stats = await waitFor("the last run to be synced", async () => {
      const got = await indexer.get("/stats");
      return got.status === 200 && got.body.settlements.synced ? got : undefined;
    }, { everyMs: 50, failed: indexer.failure });
    const expected = recount(truth.filter((s) => s.block <= head - BigInt(CONFIRMATIONS)));
    assert.equal(stats.body.settlements.count, expected.settlements);
    const epochs = await waitFor("the epochs", async () => {
      const got = await indexer.get("/epochs?limit=1000");
      return got.status === 200 ? got : undefined;
    }, { failed: indexer.failure });
    assert.deepEqual(
      epochs.body.epochs.filter((e: { settlements: number }) => e.settlements > 0).map((
        e: { epoch: string; amount: string; tokens: string; settlements: number },
      ) => [e.epoch, e.amount, e.tokens, e.settlements]),
      expected.epochs.map((
        e,
      ) => [String(e.epoch), String(e.amount), String(e.tokens), e.settlements]),
    );
    assert.equal(await indexer.stop(), 0);
  } finally {
    await indexer.kill();
  }
});

/**
 * Opens the store after a kill: exactly the confirmed blocks' settlements, each counted once,
 * the window holding the rest of what was scanned, nothing reported lost. Returns its last block.
 */
async function checkStore(
  dataDir: string,
  identity: Parameters<typeof openStore>[1],
  truth: Settlement[],
  reported: bigint,
  label: string,
): Promise<bigint> {
  await using store = await openStore({ dataDir }, identity);
  const { cursor, window } = await store.state();
  const confirmed = cursor.confirmed?.number ?? identity.scanFromBlock - 1n;
  await assertConfirmed(store, truth.filter((s) => s.block <= confirmed));
  const last = cursor.lastBlock!.number;
  assert.ok(last >= reported, `${label}: the store is at ${last}, the indexer said ${reported}`);
  assert.equal(cursor.nextBlock, last + 1n);
  assert.equal(
    window.settlements,
    truth.filter((s) => s.block > confirmed && s.block <= last).length,
    `${label}: the window`,
  );
  return last;
}
