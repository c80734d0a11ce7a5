/** The store suite's reorg cases: undo inside the window, a fork below it reported. */

import assert from "node:assert/strict";
import type { Hex } from "../../../indexer/store/mod.ts";
import { SyntheticChain } from "./_chain.ts";
import { assertConfirmed } from "./_helpers.ts";
import { open, rejectsWith, type SuiteBackend } from "./_suite.ts";

const chain = new SyntheticChain({ seed: 11, maxPerBlock: 6 });

/** A canonical-hash callback that records what it was asked. */
function asking(target: SyntheticChain, head: bigint) {
  const asked: bigint[][] = [];
  const canonical = (blocks: readonly bigint[]): Promise<(Hex | null)[]> => {
    asked.push([...blocks]);
    return target.canonical(head)(blocks);
  };
  return { asked, canonical };
}

/** The reorg cases, as steps of `t`. */
export async function reorgCases(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await windowCases(t, backend);
  await edgeCases(t, backend);
}

/** Reconcile on an unchanged chain, and a fork inside the window. */
async function windowCases(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await t.step(
    "reconcile on an unchanged chain asks for one hash and changes nothing",
    async () => {
      await using store = await open(await backend.fresh());
      const empty = asking(chain, 0n);
      assert.equal((await store.reconcile(empty.canonical)).kind, "unchanged");
      assert.deepEqual(empty.asked, []);
      await store.commitChunk(chain.chunk(100n, 150n, 150n, 5));
      const { asked, canonical } = asking(chain, 150n);
      const result = await store.reconcile(canonical);
      assert.equal(result.kind, "unchanged");
      assert.deepEqual(asked, [[150n]]);
    },
  );

  await t.step("undoes a reorg inside the window from the stored deltas", async () => {
    await using store = await open(await backend.fresh());
    await store.commitChunk(chain.chunk(100n, 140n, 150n, 5));
    await store.commitChunk(chain.chunk(141n, 150n, 150n, 5)); // window 146–150
    const fork = chain.forked(148n, 1);
    const { asked, canonical } = asking(fork, 152n);
    const result = await store.reconcile(canonical);
    assert.deepEqual(asked, [[150n], [145n, 146n, 147n, 148n, 149n]]);
    assert.equal(result.kind, "rewound");
    assert.ok(result.kind === "rewound");
    assert.equal(result.forkBlock, 147n);
    assert.equal(result.blocks, 3);
    assert.equal(result.settlements, chain.range(148n, 150n).length);
    assert.deepEqual(result.cursor.lastBlock, { number: 147n, hash: chain.hash(147n) });
    assert.equal(result.cursor.nextBlock, 148n);
    const state = await store.state();
    assert.deepEqual(state.window, {
      blocks: 2,
      settlements: chain.range(146n, 147n).length,
      from: 146n,
      to: 147n,
    });
    await assertConfirmed(store, chain.range(100n, 145n));
    // Scan the new fork, then let everything confirm: the figures are the fork's alone.
    await store.commitChunk(fork.chunk(148n, 152n, 152n, 5));
    assert.equal((await store.reconcile(fork.canonical(152n))).kind, "unchanged");
    await store.commitChunk(fork.chunk(153n, 160n, 170n, 5));
    await assertConfirmed(store, fork.range(100n, 160n));
    assert.notDeepEqual(fork.range(148n, 150n), chain.range(148n, 150n));
  });
}

/** Forks at the edges: right above the confirmed block, before anything is confirmed, below
 * the window, with no confirmations, and a callback that answers wrongly. */
async function edgeCases(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await t.step("a fork right above the confirmed block undoes the whole window", async () => {
    await using store = await open(await backend.fresh());
    await store.commitChunk(chain.chunk(100n, 150n, 150n, 5));
    const fork = chain.forked(146n, 2);
    const result = await store.reconcile(fork.canonical(149n)); // the fork is shorter, too
    assert.ok(result.kind === "rewound", result.kind);
    assert.equal(result.forkBlock, 145n);
    assert.equal(result.blocks, 5);
    assert.equal((await store.state()).window.blocks, 0);
    await store.commitChunk(fork.chunk(146n, 149n, 149n, 5));
    await store.commitChunk(fork.chunk(150n, 155n, 165n, 5));
    await assertConfirmed(store, fork.range(100n, 155n));
  });

  await t.step(
    "with nothing confirmed yet, a fork sends the scan back to its first block",
    async () => {
      await using store = await open(await backend.fresh());
      await store.commitChunk(chain.chunk(100n, 103n, 104n, 5)); // all in the window
      const result = await store.reconcile(chain.forked(100n, 3).canonical(104n));
      assert.ok(result.kind === "rewound", result.kind);
      assert.equal(result.forkBlock, 99n);
      assert.equal(result.cursor.nextBlock, 100n);
      assert.equal(result.cursor.lastBlock, null);
      assert.equal((await store.state()).window.blocks, 0);
    },
  );

  await t.step("reports a fork below the window and changes nothing", async () => {
    await using store = await open(await backend.fresh());
    await store.commitChunk(chain.chunk(100n, 150n, 150n, 5));
    const before = await store.state();
    const fork = chain.forked(140n, 4);
    const result = await store.reconcile(fork.canonical(150n));
    assert.deepEqual(result, {
      kind: "deep_reorg",
      block: 145n,
      stored: chain.hash(145n),
      found: fork.hash(145n),
    });
    assert.deepEqual(await store.state(), before);
    await assertConfirmed(store, chain.range(100n, 145n));
    // A chain that lost the confirmed block altogether (restarted from scratch).
    const gone = await store.reconcile(fork.canonical(120n));
    assert.deepEqual(gone, {
      kind: "deep_reorg",
      block: 145n,
      stored: chain.hash(145n),
      found: null,
    });
  });

  await t.step(
    "reset discards the whole history; a rescan of the new fork counts it alone",
    async () => {
      await using store = await open(await backend.fresh());
      await store.commitChunk(chain.chunk(100n, 150n, 150n, 5));
      const fork = chain.forked(140n, 6);
      assert.equal((await store.reconcile(fork.canonical(160n))).kind, "deep_reorg");
      const cursor = await store.reset();
      assert.deepEqual(cursor, {
        nextBlock: 100n,
        lastBlock: null,
        confirmed: null,
        head: null,
        chunkSize: cursor.chunkSize,
      });
      const state = await store.state();
      assert.deepEqual(state.window, { blocks: 0, settlements: 0, from: null, to: null });
      await assertConfirmed(store, []);
      await store.commitChunk(fork.chunk(100n, 160n, 160n, 5));
      await assertConfirmed(store, fork.range(100n, 155n));
    },
  );

  await t.step("with no confirmations, a changed last block is a deep reorg", async () => {
    await using store = await open(await backend.fresh(), { confirmations: 0 });
    await store.commitChunk(chain.chunk(100n, 120n, 120n, 0));
    assert.equal((await store.state()).window.blocks, 0);
    const result = await store.reconcile(chain.forked(120n, 5).canonical(120n));
    assert.equal(result.kind, "deep_reorg");
  });

  await t.step(
    "a reconcile callback that answers the wrong number of hashes is refused",
    async () => {
      await using store = await open(await backend.fresh());
      await store.commitChunk(chain.chunk(100n, 150n, 150n, 5));
      await rejectsWith(
        store.reconcile(() => Promise.resolve([])),
        "invalid_input",
        /asked for 1 block hashes, the callback returned 0/,
      );
    },
  );
}
