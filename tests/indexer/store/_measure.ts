/**
 * A quick measurement, not a test: commit throughput (settlements/s) of the embedded store and
 * of PostgreSQL (a fixture server with fsync on), alternated A, B, A, B in one process, and the
 * embedded store's size on disk after 100,000 settlements.
 *
 * `deno run -A tests/indexer/store/_measure.ts [settlements=100000] [rounds=2]`
 */

import { type HistoryStore, openStore, type StoreLocation } from "../../../indexer/store/mod.ts";
import { startPostgres } from "../../_postgres.ts";
import { SyntheticChain } from "./_chain.ts";
import { IDENTITY } from "./_helpers.ts";

const total = Number(Deno.args[0] ?? 100_000);
const rounds = Number(Deno.args[1] ?? 2);
/** About 50 settlements per block, 1,000 providers, 200 blocks per epoch. */
const chain = new SyntheticChain({
  seed: 1,
  providers: 1000,
  maxPerBlock: 100,
  blocksPerEpoch: 200,
});

interface Mode {
  name: string;
  /** Blocks per commit. */
  blocks: bigint;
  /** How far the head is ahead of each chunk's end (backfill: far; at the tip: 0). */
  lead: bigint;
}

const MODES: Mode[] = [
  { name: "backfill, 20 blocks (~1,000 settlements) per commit", blocks: 20n, lead: 10_000n },
  { name: "at the tip, 2 blocks per commit, 12 in the window", blocks: 2n, lead: 0n },
];

async function fill(
  store: HistoryStore,
  mode: Mode,
): Promise<{ settlements: number; ms: number; commits: number }> {
  let next = 100n;
  let settlements = 0;
  let commits = 0;
  const started = performance.now();
  while (settlements < total) {
    const to = next + mode.blocks - 1n;
    const chunk = chain.chunk(next, to, to + mode.lead, 12);
    await store.commitChunk(chunk);
    settlements += chunk.settlements.length;
    commits++;
    next = to + 1n;
  }
  return { settlements, ms: performance.now() - started, commits };
}

async function duBytes(path: string): Promise<number> {
  const out = await new Deno.Command("du", { args: ["-sb", path] }).output();
  return Number(new TextDecoder().decode(out.stdout).split("\t")[0]);
}

async function relationBytes(store: HistoryStore): Promise<string> {
  // The store has no raw SQL; the buckets count tells the shape.
  const buckets = (await store.buckets({})).length;
  const epochs = (await store.epochs({ limit: 10_000 })).items.length;
  return `${buckets} buckets, ${epochs} epochs`;
}

/** Times the reads a snapshot would make: one epochs page, all-time totals, 8 epochs of buckets. */
async function timeReads(store: HistoryStore): Promise<string> {
  const time = async (work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    return `${(performance.now() - started).toFixed(1)} ms`;
  };
  const last = (await store.epochs({ limit: 1, order: "desc" })).items[0].epoch;
  return [
    `epochs page of 100 ${await time(() => store.epochs({ limit: 100, order: "desc" }))}`,
    `providerTotals() ${await time(() => store.providerTotals())}`,
    `buckets(8 epochs) ${await time(() => store.buckets({ fromEpoch: last - 7n, toEpoch: last }))}`,
    `state() ${await time(() => store.state())}`,
  ].join(", ");
}

await using server = await startPostgres({ fsync: true });
const root = await Deno.makeTempDir({ prefix: "net-store-measure-" });
const open = (location: StoreLocation) =>
  openStore(location, { ...IDENTITY, confirmations: 12, log: () => {} });
const rates: Record<string, number[]> = {};
let sizeLine = "";
for (const mode of MODES) {
  for (let round = 1; round <= rounds; round++) {
    for (const backend of ["embedded", "postgres"] as const) {
      const location: StoreLocation = backend === "embedded"
        ? { dataDir: `${root}/${mode.lead}-${round}` }
        : { databaseUrl: await server.createDatabase() };
      const store = await open(location);
      const result = await fill(store, mode);
      const rate = result.settlements / (result.ms / 1000);
      (rates[`${mode.name} | ${backend}`] ??= []).push(rate);
      console.log(
        `${mode.name} | ${backend} | round ${round}: ${result.settlements} settlements in ${result.commits} commits, ` +
          `${(result.ms / 1000).toFixed(2)} s, ${Math.round(rate)} settlements/s, ${
            (result.ms / result.commits).toFixed(1)
          } ms/commit`,
      );
      if (mode.lead > 0n && round === 1) {
        console.log(`  ${backend} reads: ${await timeReads(store)}`);
      }
      if (backend === "embedded" && mode.lead > 0n && round === 1) {
        const shape = await relationBytes(store);
        await store.close();
        const started = performance.now();
        await (await open(location)).close();
        console.log(
          `  embedded reopen (restart) with ${result.settlements} settlements: ${
            Math.round(performance.now() - started)
          } ms`,
        );
        const bytes = await duBytes((location as { dataDir: string }).dataDir);
        const wal = await duBytes(`${(location as { dataDir: string }).dataDir}/pgdata/pg_wal`);
        sizeLine =
          `embedded store after ${result.settlements} settlements (${shape}): ${
            (bytes / 2 ** 20).toFixed(1)
          } MiB on disk, ` +
          `of which ${(wal / 2 ** 20).toFixed(1)} MiB WAL`;
      } else {
        await store.close();
      }
    }
  }
}
const empty = `${root}/empty`;
await (await open({ dataDir: empty })).close();
console.log(sizeLine);
console.log(
  `an empty embedded store: ${((await duBytes(empty)) / 2 ** 20).toFixed(1)} MiB on disk`,
);
for (const mode of MODES) {
  const e = rates[`${mode.name} | embedded`];
  const p = rates[`${mode.name} | postgres`];
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(
    `${mode.name}: embedded ${Math.round(mean(e))}/s, PostgreSQL ${Math.round(mean(p))}/s, ` +
      `embedded/PostgreSQL ${(mean(e) / mean(p)).toFixed(2)}`,
  );
}
await Deno.remove(root, { recursive: true });
