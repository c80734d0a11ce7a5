/**
 * The scan's merged steps (`indexer/_history_batch.ts`): consecutive ranges summed per
 * provider, epoch and consumer (and per block in the unconfirmed window), with exactly the
 * hashes a commit needs; a sum that would pass 2^256 starts a new entry; and what it builds
 * commits into a real store to the same figures as the events one by one.
 */

import assert from "node:assert/strict";
import type { SettledEvent, SettledRange } from "../../chain/settlements.ts";
import { SettlementBatch } from "../../indexer/_history_batch.ts";
import { openStore } from "../../indexer/store/mod.ts";
import { providerAddress, SyntheticChain } from "./store/_chain.ts";
import { assertConfirmed, IDENTITY } from "./store/_helpers.ts";
import { freshDataDir } from "./_stores.ts";

const chain = new SyntheticChain();
const [p, q] = [providerAddress(0), providerAddress(1)];
const consumer = providerAddress(7);

function event(block: bigint, provider: `0x${string}`, amount: bigint, extra = {}): SettledEvent {
  return {
    block,
    blockHash: chain.hash(block),
    provider,
    epoch: 3n,
    amount,
    tokens: amount * 2n,
    consumer: null,
    ...extra,
  };
}

/** A range with the hashes a commit needs at `safe` (its window blocks, its confirmed top). */
function range(from: bigint, to: bigint, safe: bigint, events: SettledEvent[]) {
  const hashes = [];
  const top = to < safe ? to : safe;
  if (top >= from) hashes.push({ number: top, hash: chain.hash(top) });
  for (let b = safe + 1n > from ? safe + 1n : from; b <= to; b++) {
    hashes.push({ number: b, hash: chain.hash(b) });
  }
  return { range: { from, to, events } satisfies SettledRange, hashes };
}

Deno.test("steps merged: confirmed sums per key, window sums per block, the hashes a commit needs", async () => {
  const safe = 115n; // head 120, 5 confirmations
  const steps = [
    range(100n, 105n, safe, [event(101n, p, 5n), event(103n, p, 7n), event(104n, q, 1n)]),
    range(106n, 112n, safe, [event(110n, p, 11n, { consumer }), event(112n, p, 2n)]),
    range(113n, 118n, safe, [event(114n, q, 4n), event(117n, p, 3n), event(117n, p, 6n)]),
    range(119n, 120n, safe, [event(120n, q, 9n)]),
  ];
  const batch = new SettlementBatch(100n, safe);
  for (const { range, hashes } of steps) batch.add(range, hashes);
  assert.equal(batch.steps, 4);
  assert.equal(batch.settlements, 9);
  const commit = batch.commit(120n, 40);
  assert.deepEqual([commit.from, commit.to, commit.head, commit.chunkSize], [100n, 120n, 120n, 40]);
  assert.deepEqual(commit.hashes.map((h) => h.number), [115n, 116n, 117n, 118n, 119n, 120n]);
  const sums = commit.settlements.map((s) => [s.provider, s.consumer, s.amount, s.count]);
  assert.deepEqual(sums, [
    [p, null, 5n + 7n + 2n, 3], // confirmed, by trusted settlers
    [q, null, 1n + 4n, 2],
    [p, consumer, 11n, 1], // confirmed, paid by a voucher: its own key
    [p, null, 9n, 2], // block 117, in the window: its own
    [q, null, 9n, 1], // block 120
  ]);
  assert.deepEqual(commit.settlements.slice(3).map((s) => s.block), [117n, 120n]);

  // Committed, it counts what the events one by one count.
  const events = steps.flatMap((s) => s.range.events);
  await using store = await openStore({ dataDir: await freshDataDir() }, {
    ...IDENTITY,
    scanFromBlock: 100n,
    confirmations: 5,
    log: () => {},
  });
  const result = await store.commitChunk(commit);
  assert.deepEqual([result.confirmed, result.windowed], [6, 3]);
  await assertConfirmed(store, events.filter((e) => e.block <= safe));
  const state = await store.state();
  assert.deepEqual([state.window.blocks, state.window.settlements], [5, 3]);
});

Deno.test("a sum that would reach 2^256 starts a new entry; a gap between steps is refused", () => {
  const half = 2n ** 255n;
  const batch = new SettlementBatch(10n, 100n);
  const { range: r, hashes } = range(10n, 12n, 100n, [
    { ...event(10n, p, half), tokens: 1n },
    { ...event(11n, p, half), tokens: 1n },
    { ...event(12n, p, 1n), tokens: 1n },
  ]);
  batch.add(r, hashes);
  const entries = batch.commit(12n, 1).settlements;
  assert.deepEqual(entries.map((e) => [e.amount, e.count]), [[half, 1], [half + 1n, 2]]);
  const late = range(14n, 15n, 100n, []);
  assert.throws(
    () => batch.add(late.range, late.hashes),
    /Cannot merge blocks 14–15 into a batch that ends at 12/,
  );
});
