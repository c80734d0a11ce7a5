/**
 * The embedded store's worker ends when idle and starts again on demand
 * (`indexer/store/_embedded_host.ts`): what the store answers is the same before and after,
 * requests during the restart all answer, the idle timer ends it, and twenty end/restart cycles
 * leave no thread, file or memory behind.
 */

import assert from "node:assert/strict";
import { DEFAULT_IDLE_MS, PgliteHost } from "../../../indexer/store/_embedded_host.ts";
import type { HistoryStore } from "../../../indexer/store/mod.ts";
import { SyntheticChain } from "./_chain.ts";
import { embeddedBackend } from "./_embedded.ts";
import { waitFor } from "../../_wait.ts";
import { allEpochs } from "./_helpers.ts";
import { open } from "./_suite.ts";

/** Everything a history reader asks: the cursor, every epoch, one provider's buckets. */
async function answers(store: HistoryStore): Promise<unknown> {
  const { cursor } = await store.state();
  return { cursor, epochs: await allEpochs(store) };
}

const chain = new SyntheticChain();

Deno.test("embedded idle: after the worker ended, the store answers the same rows and writes", async () => {
  await using backend = embeddedBackend();
  await using store = await open(await backend.fresh());
  await store.commitChunk(chain.chunk(100n, 140n, 200n, 5));
  const before = await answers(store);
  const host = PgliteHost.shared();
  const starts = host.starts;
  await host.endIdle();
  assert.equal(host.running, false);
  assert.deepEqual(await answers(store), before);
  assert.equal(host.starts, starts + 1, "one new worker answered");
  assert.equal(host.running, true);
  // Writes after a restart commit as before (cursor and rows together).
  await host.endIdle();
  const result = await store.commitChunk(chain.chunk(141n, 180n, 200n, 5));
  assert.equal(result.cursor.nextBlock, 181n);
  assert.equal((await store.state()).cursor.nextBlock, 181n);
});

Deno.test("embedded idle: requests during a restart all answer", async () => {
  await using backend = embeddedBackend();
  await using store = await open(await backend.fresh());
  await store.commitChunk(chain.chunk(100n, 140n, 200n, 5));
  const before = await answers(store);
  const host = PgliteHost.shared();
  await host.endIdle();
  const reads = Array.from({ length: 20 }, () => answers(store));
  assert.deepEqual(await Promise.all(reads), reads.map(() => before));
  // A write among reads, all during a restart: each read sees the store before the write or
  // after it, never half of it.
  await host.endIdle();
  const during = Array.from({ length: 10 }, () => store.state());
  const write = store.commitChunk(chain.chunk(141n, 150n, 200n, 5));
  const more = Array.from({ length: 10 }, () => store.state());
  assert.equal((await write).cursor.nextBlock, 151n);
  for (const { cursor } of await Promise.all([...during, ...more])) {
    assert.ok([141n, 151n].includes(cursor.nextBlock), `cursor at ${cursor.nextBlock}`);
  }
  assert.equal((await store.state()).cursor.nextBlock, 151n);
});

Deno.test("embedded idle: closing a store whose worker ended starts no worker", async () => {
  await using backend = embeddedBackend();
  const location = await backend.fresh();
  const store = await open(location);
  await store.commitChunk(chain.chunk(100n, 120n, 200n, 5));
  const host = PgliteHost.shared();
  await host.endIdle();
  const starts = host.starts;
  await store.close();
  assert.equal(host.starts, starts);
  assert.equal(host.running, false);
  // Closed for good: the directory is free, and the store reopens with what it had.
  await using again = await open(location);
  assert.equal((await again.state()).cursor.nextBlock, 121n);
});

Deno.test("embedded idle: the idle timer ends the worker; the next request starts it", async () => {
  await using backend = embeddedBackend();
  await using store = await open(await backend.fresh());
  const host = PgliteHost.shared(50);
  try {
    await store.commitChunk(chain.chunk(100n, 120n, 200n, 5));
    await waitFor("the idle worker ends", () => !host.running || undefined, { everyMs: 20 });
    assert.equal((await store.state()).cursor.nextBlock, 121n);
    await waitFor("the idle worker ends again", () => !host.running || undefined, { everyMs: 20 });
  } finally {
    PgliteHost.shared(DEFAULT_IDLE_MS);
  }
});

Deno.test({
  name: "embedded idle: twenty end/restart cycles leave no process, file or memory behind",
  ignore: Deno.build.os !== "linux",
  async fn() {
    // In a process of its own: its files, memory and children are the cycles' alone.
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./_idle_cycles.ts", import.meta.url).pathname],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const printed = new TextDecoder().decode(stdout);
    assert.equal(code, 0, `the cycles failed:\n${printed}\n${new TextDecoder().decode(stderr)}`);
    const result = JSON.parse(printed.trim().split("\n").at(-1)!) as {
      processes: [number, number];
      files: [number, number];
      rss: number[];
      same: boolean;
    };
    assert.ok(result.same, "every cycle answered the same rows");
    assert.deepEqual(result.processes, [1, 1], "one store process runs, as before");
    const [files, filesAfter] = result.files;
    assert.ok(
      filesAfter <= files + 2,
      `open files: ${files} after 3 cycles, ${filesAfter} after 23`,
    );
    // The first five against the last five, by their medians (one sample can catch a worker's
    // memory not yet given back).
    const median = (values: number[]) => values.toSorted((a, b) => a - b)[2];
    const grown = median(result.rss.slice(-5)) - median(result.rss.slice(0, 5));
    assert.ok(
      grown < 64,
      `resident memory grew ${grown.toFixed(0)} MiB in 20 cycles: ${
        result.rss.map(Math.round).join(" ")
      }`,
    );
  },
});
