/**
 * The scan's pipeline on a real anvil chain and a real embedded store
 * (`indexer/_history_pipeline.ts`): the next steps are read while one is committed and merged
 * into the next commit; a crash after any commit resumes at the next block, exactly; a new
 * store's scan begins while the store is being created and commits what it read once it is
 * open (and a scan begun on a store that turns out to hold history is dropped, not counted
 * twice); a reorg while the pipeline reads ahead of its commits is caught by the next pass.
 * The truth is viem's decoding of every `Settled` log of the chain.
 */

import assert from "node:assert/strict";
import { createChainClient } from "../../chain/client.ts";
import { History } from "../../indexer/history.ts";
import { scanPass, type ScanProgress } from "../../indexer/_history_scan.ts";
import {
  type HistoryStore,
  openStore,
  type StoreCursor,
  type StoreIdentity,
} from "../../indexer/store/mod.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { waitFor } from "../_wait.ts";
import { assertConfirmed } from "./store/_helpers.ts";
import { startRpcProxy } from "./_rpc_proxy.ts";
import { settledHistory } from "./_settled_history.ts";
import { settledEvents, settleMany } from "./_settlements.ts";
import { freshDataDir } from "./_stores.ts";

const BUDGET = 50;

const progress = (onCommit: ScanProgress["onCommit"], onRescan?: (r: string) => void) => ({
  onHead: () => {},
  onCommit,
  onRescan: onRescan ?? ((reason: string) => assert.fail(`no rescan expected: ${reason}`)),
});

Deno.test("merged commits: a crash after each commit resumes at the next block, exactly", async () => {
  await using chain = await startChainFixture({ providers: 6 });
  // 30 blocks of 20 settlements: steps of 2 blocks (40) under a budget of 50.
  const { truth, client, identity } = await settledHistory(chain);
  const options = {
    escrow: chain.contracts.escrow,
    confirmations: 0,
    maxChunkSize: 10_000,
    maxSettlements: BUDGET,
    commitSteps: 3,
  };

  // The commits of a whole pass: more than one step merged into some of them.
  const whole: number[] = [];
  {
    await using store = await openStore({ dataDir: await freshDataDir() }, identity);
    await scanPass(store, client, {
      ...options,
      signal: new AbortController().signal,
      progress: progress((_, settlements) => whole.push(settlements)),
    });
    await assertConfirmed(store, truth);
  }
  assert.ok(whole.some((n) => n > BUDGET), `steps merged: ${whole.join(", ")}`);
  assert.ok(whole.every((n) => n <= 3 * BUDGET), `at most 3 steps a commit: ${whole.join(", ")}`);
  assert.equal(whole.reduce((a, b) => a + b, 0), truth.length);

  // A crash right after commit k, for every k: the store holds exactly the blocks before its
  // cursor, and the next pass completes it.
  for (let k = 1; k < whole.length; k++) {
    const dataDir = await freshDataDir();
    const crash = new AbortController();
    let crashedAt: StoreCursor | undefined;
    let commits = 0;
    {
      await using store = await openStore({ dataDir }, identity);
      await assert.rejects(
        scanPass(store, client, {
          ...options,
          signal: crash.signal,
          progress: progress((cursor) => {
            if (++commits === k) {
              crashedAt = cursor;
              crash.abort(new Error(`crash after commit ${k}`));
            }
          }),
        }),
        new RegExp(`crash after commit ${k}`),
      );
    }
    assert.equal(commits, k, "nothing committed after the crash");
    await using store = await openStore({ dataDir }, identity);
    const { cursor } = await store.state();
    assert.equal(cursor.nextBlock, crashedAt!.nextBlock, `commit ${k} kept, none after`);
    await assertConfirmed(store, truth.filter((s) => s.block < cursor.nextBlock));
    await scanPass(store, client, {
      ...options,
      signal: new AbortController().signal,
      progress: progress(() => {}),
    });
    await assertConfirmed(store, truth);
  }
});

/** A history over `rpcUrl` whose store is opened by `open` and said to be new. */
function historyOf(
  chain: Awaited<ReturnType<typeof startChainFixture>>,
  rpcUrl: string,
  open: (identity: StoreIdentity) => Promise<HistoryStore>,
): History {
  return new History({
    rpcUrl,
    client: { retryCount: 0 },
    escrow: chain.contracts.escrow,
    scanFromBlock: chain.deployment.fromBlock,
    confirmations: 0,
    maxSettlements: BUDGET,
    store: open,
    storeIsNew: () => Promise.resolve(true),
    log: () => {},
  });
}

Deno.test("a new store: the scan reads while the store is created, then commits what it read", async () => {
  await using chain = await startChainFixture({ providers: 6 });
  const { truth, head } = await settledHistory(chain);
  await using proxy = startRpcProxy(chain.anvil.rpcUrl);
  const dataDir = await freshDataDir();
  let store: HistoryStore | undefined;
  let readBeforeOpen = 0;
  const history = historyOf(chain, proxy.url, async (identity) => {
    // The store is opened only once the scan has read the whole chain: the race, decided.
    await waitFor(
      "the early scan to the head",
      () => proxy.getLogs.some((r) => r.to === head) || undefined,
      { everyMs: 10 },
    );
    readBeforeOpen = proxy.getLogs.length;
    store = await openStore({ dataDir }, { ...identity, confirmations: 0, log: () => {} });
    return store;
  });
  try {
    const state = await history.pass();
    assert.equal(state.failing, false, state.lastError?.message);
    assert.equal(state.confirmed?.number, head);
    assert.ok(readBeforeOpen > 0);
    assert.equal(proxy.getLogs.length, readBeforeOpen, "nothing read again once the store opened");
    // Every block read once, in order, from the first.
    assert.equal(proxy.getLogs[0].from, chain.deployment.fromBlock);
    for (let i = 1; i < proxy.getLogs.length; i++) {
      assert.equal(proxy.getLogs[i].from, proxy.getLogs[i - 1].to + 1n);
    }
    await assertConfirmed(store!, truth);
  } finally {
    await history.stop();
    await store?.close();
  }
});

Deno.test("a store said to be new that holds history: the early scan is dropped, nothing counted twice", async () => {
  await using chain = await startChainFixture({ providers: 6 });
  const { truth, head, client, identity } = await settledHistory(chain);
  const dataDir = await freshDataDir();
  // Half the history committed, then a crash.
  const crash = new AbortController();
  let kept: StoreCursor | undefined;
  {
    await using store = await openStore({ dataDir }, identity);
    await assert.rejects(
      scanPass(store, client, {
        escrow: chain.contracts.escrow,
        confirmations: 0,
        maxChunkSize: 10_000,
        maxSettlements: BUDGET,
        signal: crash.signal,
        progress: progress((cursor) => {
          if (cursor.nextBlock > (chain.deployment.fromBlock + head) / 2n && !kept) {
            kept = cursor;
            crash.abort(new Error("crash"));
          }
        }),
      }),
      /crash/,
    );
  }
  await using proxy = startRpcProxy(chain.anvil.rpcUrl);
  let store: HistoryStore | undefined;
  const history = historyOf(chain, proxy.url, async () => {
    await waitFor("the early scan to begin", () => proxy.getLogs.length > 0 || undefined, {
      everyMs: 10,
    });
    store = await openStore({ dataDir }, identity);
    return store;
  });
  try {
    const state = await history.pass();
    assert.equal(state.failing, false, state.lastError?.message);
    assert.equal(state.confirmed?.number, head);
    assert.equal(proxy.getLogs[0].from, chain.deployment.fromBlock, "the early scan read");
    assert.ok(
      proxy.getLogs.some((r) => r.from === kept!.nextBlock),
      "then the scan resumed at the store's next block",
    );
    await assertConfirmed(store!, truth);
  } finally {
    await history.stop();
    await store?.close();
  }
});

Deno.test("a reorg while the pipeline reads ahead of its commits: the next pass undoes it", async () => {
  await using chain = await startChainFixture({ providers: 6 });
  const [a, b] = chain.expected.state.providers.map((p) => p.address);
  await settleMany(chain, { count: 200, perTx: 20, providers: [a, b], secondsBetween: 600 });
  const fork = await chain.rpc("evm_snapshot");
  // The branch the pipeline reads: 10 blocks paying `a`.
  await settleMany(chain, { count: 200, perTx: 20, providers: [a], seed: 7 });
  const head = await chain.client.getBlockNumber();
  const client = await createChainClient(chain.anvil.rpcUrl, { retryCount: 0 });
  await using store = await openStore({ dataDir: await freshDataDir() }, {
    chainId: chain.anvil.chainId,
    escrow: chain.contracts.escrow,
    scanFromBlock: chain.deployment.fromBlock,
    confirmations: 0,
    log: () => {},
  });
  // The first commit waits until the chain was reorganized: the pipeline has read ahead on
  // the dropped branch meanwhile, and commits it.
  let reorged = false;
  const gated = new Proxy(store, {
    get(target, key) {
      if (key === "commitChunk") {
        return async (...args: Parameters<HistoryStore["commitChunk"]>) => {
          if (!reorged) {
            reorged = true;
            assert.equal(await chain.rpc("evm_revert", [fork]), true);
            // The branch that stays, as high as the dropped one: 10 blocks paying `b`.
            await settleMany(chain, { count: 200, perTx: 20, providers: [b], seed: 9 });
            assert.equal(await chain.client.getBlockNumber(), head);
          }
          return await target.commitChunk(...args);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const rescans: string[] = [];
  const options = {
    escrow: chain.contracts.escrow,
    confirmations: 0,
    maxChunkSize: 10_000,
    maxSettlements: BUDGET,
    commitSteps: Infinity,
    progress: progress(() => {}, (reason) => rescans.push(reason)),
  };
  const first = await scanPass(gated, client, {
    ...options,
    signal: new AbortController().signal,
  }).catch((error) => error);
  assert.ok(reorged);
  const truth = await settledEvents(chain);
  // The next passes (as the history runs them, with the head the last one left) find the
  // dropped branch and count the chain's.
  let lastHead = first instanceof Error ? undefined : first.caughtUp;
  for (let pass = 0; pass < 3; pass++) {
    const result = await scanPass(store, client, {
      ...options,
      lastHead,
      signal: new AbortController().signal,
    });
    assert.equal(result.quiet && pass === 0, false, "the first pass after the reorg reads");
    lastHead = result.caughtUp;
  }
  assert.equal(lastHead?.number, head);
  assert.equal(rescans.length, 1, "deeper than 0 confirmations: one rescan");
  await assertConfirmed(store, truth);
});
