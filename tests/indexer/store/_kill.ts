/**
 * `kill -9` of a writing process at random points, 15 times per backend (`kill_embedded_test.ts`,
 * `kill_postgres_test.ts`): after each kill the store reopens and its confirmed figures equal an
 * independent recount of exactly the blocks its cursor says were confirmed, its window holds exactly the blocks above them, and nothing
 * the writer reported as committed is missing — no loss, no double count. A last commit then
 * folds the whole window and the totals equal a recount of everything scanned.
 *
 * Four kills in five land in the commit loop, chosen by progress (after 1 to 4 commits, then
 * within the next ones), so the store moves on by whole commits whatever the machine's speed;
 * every fifth lands anywhere from start-up on.
 */

import assert from "node:assert/strict";
import type { HistoryStore, StoreLocation } from "../../../indexer/store/mod.ts";
import { SyntheticChain } from "./_chain.ts";
import { assertConfirmed } from "./_helpers.ts";
import { spawnChild } from "./_spawn.ts";
import { open } from "./_suite.ts";

/** Kills per backend. */
export const KILLS = 15;
const CONFIRMATIONS = 6;
const SEED = 21;
/** The child's chain (`_child.ts`): the same seed and settlements per block. */
const chain = new SyntheticChain({ seed: SEED, maxPerBlock: 8 });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Checks the store against the recount; returns its next block. */
async function verify(store: HistoryStore, label: string): Promise<bigint> {
  const { cursor, window } = await store.state();
  const confirmedTo = cursor.confirmed?.number ?? 99n;
  await assertConfirmed(store, chain.range(100n, confirmedTo));
  const last = cursor.lastBlock?.number ?? 99n;
  assert.equal(cursor.nextBlock, last + 1n, label);
  if (cursor.lastBlock) assert.equal(cursor.lastBlock.hash, chain.hash(last), label);
  if (cursor.confirmed) assert.equal(cursor.confirmed.hash, chain.hash(confirmedTo), label);
  assert.equal(BigInt(window.blocks), last - confirmedTo, `${label}: window blocks`);
  assert.equal(window.settlements, chain.range(confirmedTo + 1n, last).length, `${label}: window`);
  return cursor.nextBlock;
}

/**
 * Kills a writer of the store at `location` {@linkcode KILLS} times, checking it after each
 * kill; `takeLock` makes the last store opened the writer.
 */
export async function killRepeatedly(
  location: StoreLocation,
  takeLock: (s: HistoryStore) => Promise<void>,
) {
  let committed = 100n;
  let midRun = 0;
  for (let run = 1; run <= KILLS; run++) {
    const child = spawnChild("write", location, {
      seed: SEED,
      confirmations: CONFIRMATIONS,
      lastBlock: String(1n << 40n),
      run,
    });
    // Mostly while it commits; every fifth kill anywhere from start-up on.
    if (run % 5 === 0) await sleep(Math.random() * 1500);
    else {
      await child.waitFor(/^committed /, 1 + Math.floor(Math.random() * 4));
      await sleep(Math.random() * 50);
    }
    await child.kill();
    const printed = child.lines.filter((l) => l.startsWith("committed ")).map((l) =>
      BigInt(l.slice(10))
    );
    if (printed.length > 0) midRun++;
    const reported = printed.length > 0 ? printed[printed.length - 1] : committed;
    await using store = await open(location, { confirmations: CONFIRMATIONS });
    const next = await verify(store, `after kill ${run}`);
    assert.ok(
      next >= reported,
      `kill ${run}: the store is at ${next}, the writer reported ${reported} committed`,
    );
    assert.ok(
      next <= reported + 30n,
      `kill ${run}: the store is at ${next}, more than one chunk past ${reported}`,
    );
    committed = next;
  }
  assert.ok(midRun >= (KILLS * 4) / 5, `only ${midRun} of ${KILLS} kills landed after a commit`);
  assert.ok(committed > 100n, `the writers never committed (the store is at ${committed})`);
  await using store = await open(location, { confirmations: CONFIRMATIONS });
  await takeLock(store);
  const { cursor } = await store.state();
  await store.commitChunk(
    chain.chunk(cursor.nextBlock, cursor.nextBlock, cursor.nextBlock + 100n, CONFIRMATIONS),
  );
  await assertConfirmed(store, chain.range(100n, cursor.nextBlock));
  assert.equal((await store.state()).window.blocks, 0);
}
