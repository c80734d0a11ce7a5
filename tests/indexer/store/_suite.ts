/**
 * The store suite: one set of cases, run against the embedded store (`embedded_test.ts`) and
 * PostgreSQL (`postgres_test.ts`). Every figure is compared with an independent recount of the
 * synthetic chain's settlements (`_chain.ts`).
 */

import assert from "node:assert/strict";
import {
  type HistoryStore,
  openStore,
  type OpenStoreOptions,
  SCHEMA_VERSION,
  StoreError,
  type StoreLocation,
} from "../../../indexer/store/mod.ts";
import { providerAddress, recount, SyntheticChain } from "./_chain.ts";
import { allEpochs, assertConfirmed, IDENTITY } from "./_helpers.ts";
import { paginationCases } from "./_suite_pages.ts";
import { reorgCases } from "./_suite_reorg.ts";

/** What the suite needs from a backend. */
export interface SuiteBackend {
  /** A fresh location no store has used. */
  fresh(): Promise<StoreLocation>;
  /** Runs one statement directly on the location's database (the store must be closed). */
  raw(location: StoreLocation, statement: string): Promise<void>;
}

/** Opens a store with the suite's identity, confirmations 5 and no log lines. */
export function open(
  location: StoreLocation,
  options: Partial<OpenStoreOptions> = {},
): Promise<HistoryStore> {
  return openStore(location, { ...IDENTITY, confirmations: 5, log: () => {}, ...options });
}

/** Asserts `promise` rejects with a `StoreError` of `reason` whose message matches `pattern`. */
export async function rejectsWith(
  promise: Promise<unknown>,
  reason: StoreError["reason"],
  pattern?: RegExp,
): Promise<StoreError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(
    caught instanceof StoreError,
    `expected a StoreError (${reason}), got ${String(caught)}`,
  );
  assert.equal(caught.reason, reason, caught.message);
  if (pattern) assert.match(caught.message, pattern);
  return caught;
}

const chain = new SyntheticChain({ seed: 7 });

async function lifecycleCases(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await t.step("a new store: meta, schema version, empty cursor at the first block", async () => {
    await using store = await open(await backend.fresh());
    const state = await store.state();
    assert.deepEqual(state.identity, IDENTITY);
    assert.equal(state.schemaVersion, SCHEMA_VERSION);
    assert.deepEqual(state.cursor, {
      nextBlock: 100n,
      lastBlock: null,
      confirmed: null,
      head: null,
      chunkSize: 2000,
    });
    assert.deepEqual(state.window, { blocks: 0, settlements: 0, from: null, to: null });
    assert.equal(store.writer, true);
    assert.deepEqual(await allEpochs(store), []);
    assert.deepEqual(await store.providerTotals(), []);
  });

  await t.step("commits chunks and reads back confirmed figures only", async () => {
    await using store = await open(await backend.fresh());
    const first = await store.commitChunk(chain.chunk(100n, 149n, 160n, 5, 50));
    assert.equal(first.confirmed, chain.range(100n, 149n).length);
    assert.equal(first.windowed, 0);
    const second = await store.commitChunk(chain.chunk(150n, 199n, 201n, 5));
    assert.equal(second.windowed, chain.range(197n, 199n).length);
    assert.deepEqual(second.cursor, {
      nextBlock: 200n,
      lastBlock: { number: 199n, hash: chain.hash(199n) },
      confirmed: { number: 196n, hash: chain.hash(196n) },
      head: 201n,
      chunkSize: 50,
    });
    const state = await store.state();
    assert.deepEqual(state.window, {
      blocks: 3,
      settlements: chain.range(197n, 199n).length,
      from: 197n,
      to: 199n,
    });
    await assertConfirmed(store, chain.range(100n, 196n));
    const expected = recount(chain.range(100n, 196n));
    const ranged = expected.buckets.filter((b) => b.epoch >= 2n && b.epoch <= 3n);
    assert.deepEqual(await store.buckets({ fromEpoch: 2n, toEpoch: 3n }), ranged);
    const totals = await store.providerTotals({ fromEpoch: 2n, toEpoch: 3n });
    assert.deepEqual(
      totals,
      recount(chain.range(100n, 196n).filter((s) => s.epoch >= 2n && s.epoch <= 3n)).providers,
    );
  });

  await t.step("folds window blocks into the buckets once they are deep enough", async () => {
    await using store = await open(await backend.fresh());
    await store.commitChunk(chain.chunk(100n, 199n, 199n, 5));
    assert.equal((await store.state()).window.blocks, 5);
    // The head moves by two: two window blocks fold, the new block joins the window.
    const moved = await store.commitChunk(chain.chunk(200n, 200n, 201n, 5));
    assert.equal(moved.folded, 2);
    assert.deepEqual(moved.cursor.confirmed, { number: 196n, hash: chain.hash(196n) });
    await assertConfirmed(store, chain.range(100n, 196n));
    // Far ahead: everything folds, and the new range is confirmed at once.
    const far = await store.commitChunk(chain.chunk(201n, 240n, 300n, 5));
    assert.equal(far.folded, 4);
    assert.equal((await store.state()).window.blocks, 0);
    await assertConfirmed(store, chain.range(100n, 240n));
  });

  await t.step("keeps everything across a reopen", async () => {
    const location = await backend.fresh();
    {
      await using store = await open(location);
      await store.commitChunk(chain.chunk(100n, 180n, 182n, 5, 81));
    }
    await using store = await open(location);
    const state = await store.state();
    assert.deepEqual(state.cursor.lastBlock, { number: 180n, hash: chain.hash(180n) });
    assert.equal(state.cursor.chunkSize, 81);
    assert.equal(state.window.blocks, 3);
    await assertConfirmed(store, chain.range(100n, 177n));
    await store.commitChunk(chain.chunk(181n, 200n, 260n, 5));
    await assertConfirmed(store, chain.range(100n, 200n));
  });

  await t.step("never counts a chunk twice: a chunk must start at the cursor", async () => {
    await using store = await open(await backend.fresh());
    const chunk = chain.chunk(100n, 150n, 200n, 5);
    await store.commitChunk(chunk);
    await rejectsWith(
      store.commitChunk(chunk),
      "conflict",
      /starts at block 100, the store's next block is 151/,
    );
    await rejectsWith(
      store.commitChunk(chain.chunk(152n, 160n, 200n, 5)),
      "conflict",
      /next block is 151/,
    );
    await assertConfirmed(store, chain.range(100n, 150n));
  });

  await t.step("a closed store refuses every call", async () => {
    const store = await open(await backend.fresh());
    await store.close();
    await store.close();
    assert.equal(store.writer, false);
    await rejectsWith(store.state(), "closed", /is closed/);
    await rejectsWith(store.commitChunk(chain.chunk(100n, 100n, 200n, 5)), "closed");
  });
}

async function inputCases(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await t.step("refuses malformed chunks, naming what is wrong", async () => {
    await using store = await open(await backend.fresh());
    const good = chain.chunk(100n, 120n, 122n, 5);
    const p = providerAddress(0);
    const cases: [string, object, RegExp][] = [
      ["backwards range", { to: 99n }, /ends at 99 before it starts at 100/],
      ["beyond the head", { head: 110n }, /ends at 120, above the head 110/],
      ["negative block", { from: -1n }, /from is -1, expected a bigint/],
      ["number instead of bigint", { to: 120 }, /to is 120, expected a bigint/],
      ["settlement outside", {
        settlements: [{ block: 121n, provider: p, epoch: 1n, amount: 1n, tokens: 1n }],
      }, /settlements\[0\] is in block 121, outside the range 100–120/],
      ["bad provider", {
        settlements: [{ block: 101n, provider: "0x12", epoch: 1n, amount: 1n, tokens: 1n }],
      }, /settlements\[0\]\.provider is 0x12/],
      ["amount over uint256", {
        settlements: [{ block: 101n, provider: p, epoch: 1n, amount: 2n ** 256n, tokens: 1n }],
      }, /settlements\[0\]\.amount is .*2\^256 − 1/],
      ["negative tokens", {
        settlements: [{ block: 101n, provider: p, epoch: 1n, amount: 1n, tokens: -1n }],
      }, /tokens is -1/],
      [
        "missing window hash",
        { hashes: good.hashes.slice(0, -1) },
        /hashes of block 120 are missing/,
      ],
      [
        "extra hash",
        { hashes: [...good.hashes, { number: 101n, hash: chain.hash(101n) }] },
        /lists block 101, which is neither in the window/,
      ],
      [
        "hash outside",
        { hashes: [...good.hashes, { number: 99n, hash: chain.hash(99n) }] },
        /block 99, outside the range/,
      ],
      ["malformed hash", {
        hashes: good.hashes.map((h, i) => (i === 0 ? { ...h, hash: "0x1234" } : h)),
      }, /hashes\[0\]\.hash is 0x1234/],
      ["duplicate hash", { hashes: [good.hashes[0], ...good.hashes] }, /lists block 117 twice/],
      ["chunk size 0", { chunkSize: 0 }, /chunkSize is 0/],
      ["count 0", {
        settlements: [{ block: 101n, provider: p, epoch: 1n, amount: 1n, tokens: 1n, count: 0 }],
      }, /settlements\[0\]\.count is 0, expected a whole number of at least 1/],
      ["fractional count", {
        settlements: [{ block: 101n, provider: p, epoch: 1n, amount: 1n, tokens: 1n, count: 1.5 }],
      }, /settlements\[0\]\.count is 1\.5/],
    ];
    for (const [name, change, pattern] of cases) {
      await rejectsWith(store.commitChunk({ ...good, ...change }), "invalid_input", pattern).catch(
        (error) => {
          throw new Error(`case "${name}": ${error.message}`);
        },
      );
    }
    assert.equal((await store.state()).cursor.nextBlock, 100n);
    await store.commitChunk(good);
  });

  await t.step("an entry that sums several settlements counts each of them", async () => {
    await using store = await open(await backend.fresh());
    const p = providerAddress(2);
    const one = { provider: p, epoch: 4n, amount: 10n, tokens: 2n };
    const result = await store.commitChunk({
      from: 100n,
      to: 110n,
      head: 200n,
      settlements: [
        { ...one, block: 104n, amount: 30n, tokens: 6n, count: 3 },
        { ...one, block: 109n },
      ],
      hashes: [{ number: 110n, hash: chain.hash(110n) }],
    });
    assert.equal(result.confirmed, 4);
    await assertConfirmed(store, [104n, 105n, 106n, 109n].map((block) => ({ ...one, block })));
  });

  await t.step(
    "sums amounts far beyond 2^64 exactly; an overflow of 78 digits fails loudly",
    async () => {
      await using store = await open(await backend.fresh());
      const max = 2n ** 256n - 1n;
      const p = providerAddress(3);
      const big = (block: bigint, n: number) =>
        Array.from(
          { length: n },
          () => ({ block, provider: p, epoch: 9n, amount: max, tokens: max }),
        );
      const hashes = (block: bigint) => [{ number: block, hash: chain.hash(block) }];
      await store.commitChunk({
        from: 100n,
        to: 100n,
        head: 200n,
        settlements: big(100n, 5),
        hashes: hashes(100n),
      });
      await store.commitChunk({
        from: 101n,
        to: 101n,
        head: 200n,
        settlements: big(101n, 3),
        hashes: hashes(101n),
      });
      const [epoch] = (await store.epochs()).items;
      assert.equal(epoch.amount, 8n * max);
      assert.equal(epoch.tokens, 8n * max);
      assert.equal(epoch.settlements, 8);
      assert.equal((await store.providerTotals())[0].amount, 8n * max);
      // 9 × (2^256 − 1) has 79 digits: numeric(78,0) refuses it, the whole chunk is rolled back.
      await rejectsWith(
        store.commitChunk({
          from: 102n,
          to: 102n,
          head: 200n,
          settlements: big(102n, 1),
          hashes: hashes(102n),
        }),
        "failed",
        /numeric field overflow.*SQLSTATE 22003/,
      );
      assert.equal((await store.state()).cursor.nextBlock, 102n);
      assert.equal((await store.epochs()).items[0].amount, 8n * max);
    },
  );
}

async function openingCases(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await t.step(
    "refuses another chain, Escrow or first block, naming both; rebuilds only when asked",
    async () => {
      const location = await backend.fresh();
      {
        await using store = await open(location);
        await store.commitChunk(chain.chunk(100n, 150n, 200n, 5));
      }
      const other = `0x${"ee".repeat(20)}` as const;
      await rejectsWith(
        open(location, { chainId: 1 }),
        "mismatch",
        /belongs to chain id 31337, expected 1\n/,
      );
      await rejectsWith(
        open(location, { escrow: other }),
        "mismatch",
        new RegExp(`Escrow ${IDENTITY.escrow.slice(0, 20)}.*expected ${other}`),
      );
      await rejectsWith(
        open(location, { scanFromBlock: 5n }),
        "mismatch",
        /first block 100, expected 5/,
      );
      const lines: string[] = [];
      {
        await using rebuilt = await open(location, {
          chainId: 1,
          rebuild: "if_unusable",
          log: (l) => lines.push(l),
        });
        assert.equal((await rebuilt.state()).identity.chainId, 1);
        assert.deepEqual(await allEpochs(rebuilt), []);
      }
      assert.match(lines.join("\n"), /rebuilt .*chain id 31337, expected 1/);
      {
        await using same = await open(location, { chainId: 1, rebuild: "if_unusable" });
        await same.commitChunk(chain.chunk(100n, 110n, 200n, 5));
      }
      await using always = await open(location, { chainId: 1, rebuild: "always" });
      assert.equal((await always.state()).cursor.nextBlock, 100n);
    },
  );

  await t.step(
    "refuses a store of a newer schema version; rebuilds it only when asked",
    async () => {
      const location = await backend.fresh();
      await (await open(location)).close();
      await backend.raw(
        location,
        `UPDATE net_history.meta SET schema_version = ${SCHEMA_VERSION + 1}`,
      );
      await rejectsWith(
        open(location),
        "newer_schema",
        new RegExp(
          `schema version is ${SCHEMA_VERSION + 1}, newer than this code's ${SCHEMA_VERSION}`,
        ),
      );
      await using store = await open(location, { rebuild: "if_unusable" });
      assert.equal((await store.state()).schemaVersion, SCHEMA_VERSION);
    },
  );

  await t.step(
    "a version-1 store is migrated: voucher figures added, the history scanned again",
    async () => {
      const location = await backend.fresh();
      {
        await using store = await open(location);
        await store.commitChunk(chain.chunk(100n, 160n, 200n, 5));
      }
      // Back to what version 1 had: no voucher tables or columns, and figures without consumers.
      for (
        const statement of [
          "DROP TABLE net_history.window_consumer_deltas",
          "DROP TABLE net_history.consumer_buckets",
          "ALTER TABLE net_history.epoch_totals DROP COLUMN signed_amount, " +
          "DROP COLUMN signed_settlements, DROP COLUMN consumers",
          "UPDATE net_history.meta SET schema_version = 1",
        ]
      ) await backend.raw(location, statement);
      await using store = await open(location);
      const state = await store.state();
      assert.equal(state.schemaVersion, SCHEMA_VERSION);
      assert.equal(state.cursor.nextBlock, 100n, "the history is scanned again");
      await assertConfirmed(store, []);
      await store.commitChunk(chain.chunk(100n, 160n, 200n, 5));
      await assertConfirmed(store, chain.range(100n, 160n));
      assert.ok(
        (await allEpochs(store)).some((e) => e.consumers > 0 && e.signedAmount > 0n),
        "the rescan counted paying consumers",
      );
    },
  );

  await t.step("refuses a corrupt store: missing rows, missing tables", async () => {
    const location = await backend.fresh();
    await (await open(location)).close();
    await backend.raw(location, "DELETE FROM net_history.cursor");
    await rejectsWith(open(location), "corrupt", /cursor table holds 0 rows, expected 1/);
    await backend.raw(location, "DROP TABLE net_history.meta");
    await rejectsWith(open(location), "corrupt", /schema net_history exists but has no meta table/);
    await using store = await open(location, { rebuild: "if_unusable" });
    assert.equal((await store.state()).cursor.nextBlock, 100n);
  });

  await t.step("refuses bad options at the door", async () => {
    const location = await backend.fresh();
    await rejectsWith(open(location, { chainId: 0 }), "invalid_input", /chainId is 0/);
    await rejectsWith(
      open(location, { escrow: "0x1" as `0x${string}` }),
      "invalid_input",
      /escrow is 0x1/,
    );
    await rejectsWith(
      open(location, { confirmations: -1 }),
      "invalid_input",
      /confirmations is -1/,
    );
    await rejectsWith(
      open(location, { schema: "Bad-Name" }),
      "invalid_input",
      /schema is "Bad-Name"/,
    );
    await rejectsWith(
      open(location, { rebuild: "sometimes" as "never" }),
      "invalid_input",
      /rebuild is "sometimes"/,
    );
  });
}

/** Runs every case of the suite as steps of `t`. */
export async function storeSuite(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await lifecycleCases(t, backend);
  await inputCases(t, backend);
  await openingCases(t, backend);
  await reorgCases(t, backend);
  await paginationCases(t, backend);
}
