/**
 * The scan's settlement budget on a real anvil chain and a real embedded store: a range whose
 * logs are over the budget is committed in steps (each one transaction with its cursor), a
 * crash between two steps (the pass aborted after a step's commit, the store closed and opened
 * again) resumes at the next step's first block, and the store then holds exactly the chain's
 * settlements, checked against an independent decoding of its logs by viem.
 */

import assert from "node:assert/strict";
import { scanPass, type ScanProgress } from "../../indexer/_history_scan.ts";
import { openStore, type StoreCursor } from "../../indexer/store/mod.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { assertConfirmed } from "./store/_helpers.ts";
import { settledHistory } from "./_settled_history.ts";
import { freshDataDir } from "./_stores.ts";

const BUDGET = 50;

Deno.test("a range over the settlement budget is committed in steps; a crash between steps resumes", async () => {
  await using chain = await startChainFixture({ providers: 6 });
  // 30 blocks of 20 settlements: steps of 2 blocks (40) under a budget of 50.
  const { truth, head, client, identity } = await settledHistory(chain);
  const dataDir = await freshDataDir();
  const commits: { cursor: StoreCursor; settlements: number }[] = [];
  const progress = (onCommit: ScanProgress["onCommit"]): ScanProgress => ({
    onHead: () => {},
    onCommit,
    onRescan: (reason) => assert.fail(`no rescan expected: ${reason}`),
  });
  const options = {
    escrow: chain.contracts.escrow,
    confirmations: 0,
    maxChunkSize: 10_000,
    maxSettlements: BUDGET,
  };

  // The first pass ends (a crash) right after its second step's commit.
  const crash = new AbortController();
  {
    await using store = await openStore({ dataDir }, identity);
    assert.ok(await store.tryBecomeWriter());
    await assert.rejects(
      scanPass(store, client, {
        ...options,
        signal: crash.signal,
        progress: progress((cursor, settlements) => {
          commits.push({ cursor, settlements });
          if (commits.length === 2) crash.abort(new Error("crash between two steps"));
        }),
      }),
      /crash between two steps/,
    );
  }
  assert.equal(commits.length, 2);
  const crashedAt = commits[1].cursor;
  assert.ok(crashedAt.nextBlock <= head, "the crash came before the end of the range");
  // The steps were of one answer (the first request covered the whole chain); the next request
  // is sized to hold about the budget (a few blocks of 20, from the density of the first
  // answer, empty blocks included), and the cursor keeps that size.
  assert.equal(commits[0].cursor.chunkSize, commits[1].cursor.chunkSize);
  assert.ok(crashedAt.chunkSize < 10, `chunk ${crashedAt.chunkSize}`);

  // The second pass resumes at the step after the crash and reaches the head.
  const resumed: { cursor: StoreCursor; settlements: number }[] = [];
  {
    await using store = await openStore({ dataDir }, identity);
    assert.ok(await store.tryBecomeWriter());
    const { cursor } = await store.state();
    assert.equal(cursor.nextBlock, crashedAt.nextBlock, "the crash kept both steps");
    await assertConfirmed(store, truth.filter((s) => s.block < cursor.nextBlock));
    const pass = await scanPass(store, client, {
      ...options,
      signal: new AbortController().signal,
      progress: progress((cursor, settlements) => resumed.push({ cursor, settlements })),
    });
    assert.equal(pass.head, head);
    await assertConfirmed(store, truth);
  }
  const steps = [...commits, ...resumed];
  assert.ok(steps.length >= Math.ceil(truth.length / BUDGET), `${steps.length} steps`);
  for (const step of steps) assert.ok(step.settlements <= BUDGET, `${step.settlements}`);
  assert.equal(steps.reduce((sum, s) => sum + s.settlements, 0), truth.length);
});
