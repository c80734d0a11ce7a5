/** The store suite's pagination cases: stable, complete, no duplicates, both orders. */

import assert from "node:assert/strict";
import type { EpochTotals, SettlementBucket } from "../../../indexer/store/mod.ts";
import { providerAddress, recount, SyntheticChain } from "./_chain.ts";
import { open, rejectsWith, type SuiteBackend } from "./_suite.ts";

/** Two blocks per epoch, three providers: many epochs, many buckets per provider. */
const chain = new SyntheticChain({ seed: 5, blocksPerEpoch: 2, providers: 3, maxPerBlock: 3 });

async function pages<T extends { epoch: bigint }>(
  read: (after: bigint | undefined) => Promise<{ items: T[]; next: bigint | null }>,
  between: () => Promise<void> = () => Promise.resolve(),
): Promise<T[][]> {
  const out: T[][] = [];
  let after: bigint | undefined;
  do {
    const page = await read(after);
    out.push(page.items);
    after = page.next ?? undefined;
    await between();
  } while (after !== undefined);
  return out;
}

function epochsOf<T extends { epoch: bigint }>(items: T[]): bigint[] {
  return items.map((i) => i.epoch);
}

/** The pagination cases, as steps of `t`. */
export async function paginationCases(t: Deno.TestContext, backend: SuiteBackend): Promise<void> {
  await t.step(
    "epochs: pages are complete, ordered and never overlap, in both orders",
    async () => {
      await using store = await open(await backend.fresh());
      await store.commitChunk(chain.chunk(100n, 699n, 800n, 5));
      const expected = recount(chain.range(100n, 699n)).epochs;
      assert.ok(expected.length > 250, `only ${expected.length} epochs`);
      for (const limit of [1, 7, 100, 10_000]) {
        if (limit === 1) {
          // One item per page: only the first few pages, to keep the test quick.
          const first = await store.epochs({ limit: 1 });
          const second = await store.epochs({ limit: 1, after: first.next! });
          assert.deepEqual([...first.items, ...second.items], expected.slice(0, 2));
          continue;
        }
        const asc = await pages((after) => store.epochs({ after, limit }));
        assert.ok(asc.slice(0, -1).every((p) => p.length === limit));
        assert.deepEqual(asc.flat(), expected);
        const desc = await pages((after) => store.epochs({ after, limit, order: "desc" }));
        assert.deepEqual(desc.flat(), [...expected].reverse());
      }
      const last = await store.epochs({ after: expected[expected.length - 1].epoch });
      assert.deepEqual(last, { items: [], next: null });
    },
  );

  await t.step("epochs: paging while chunks are committed skips and repeats nothing", async () => {
    await using store = await open(await backend.fresh());
    await store.commitChunk(chain.chunk(100n, 299n, 400n, 5));
    const before = recount(chain.range(100n, 299n)).epochs;
    let next = 300n;
    const seen = await pages(
      (after) => store.epochs({ after, limit: 9 }),
      async () => {
        if (next > 500n) return;
        await store.commitChunk(chain.chunk(next, next + 19n, next + 100n, 5));
        next += 20n;
      },
    );
    const flat = seen.flat();
    const epochs = epochsOf(flat);
    assert.deepEqual(
      epochs,
      [...new Set(epochs)].sort((a, b) => (a < b ? -1 : 1)),
      "duplicates or disorder",
    );
    for (const e of before) assert.ok(epochs.includes(e.epoch), `epoch ${e.epoch} was skipped`);
    // Epochs complete before paging began read the same as a recount.
    const complete = flat.filter((e: EpochTotals) => e.epoch <= 149n);
    assert.deepEqual(complete, before.filter((e) => e.epoch <= 149n));
  });

  await t.step("a provider's history: complete, ordered, no duplicates, both orders", async () => {
    await using store = await open(await backend.fresh());
    await store.commitChunk(chain.chunk(100n, 599n, 700n, 5));
    const all = recount(chain.range(100n, 599n)).buckets;
    for (let i = 0; i < 3; i++) {
      const p = providerAddress(i);
      const expected = all.filter((b: SettlementBucket) => b.provider === p);
      assert.ok(expected.length > 100);
      const asc = await pages((after) => store.providerHistory(p, { after, limit: 13 }));
      assert.deepEqual(asc.flat(), expected);
      const desc = await pages((after) =>
        store.providerHistory(p, { after, limit: 50, order: "desc" })
      );
      assert.deepEqual(desc.flat(), [...expected].reverse());
    }
    const nobody = await store.providerHistory(providerAddress(99));
    assert.deepEqual(nobody, { items: [], next: null });
  });

  await t.step("bad page options are refused", async () => {
    await using store = await open(await backend.fresh());
    await rejectsWith(
      store.epochs({ limit: 0 }),
      "invalid_input",
      /limit is 0, expected an integer from 1 to 10000/,
    );
    await rejectsWith(store.epochs({ limit: 10_001 }), "invalid_input", /limit is 10001/);
    await rejectsWith(store.epochs({ after: -1n }), "invalid_input", /after is -1/);
    await rejectsWith(
      store.providerHistory("0xnope" as `0x${string}`),
      "invalid_input",
      /provider is 0xnope/,
    );
    await rejectsWith(
      store.buckets({ fromEpoch: 1 as unknown as bigint }),
      "invalid_input",
      /fromEpoch is 1/,
    );
  });
}
