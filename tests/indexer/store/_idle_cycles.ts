/**
 * Twenty end/restart cycles of the embedded store's worker, run as a process of its own by
 * `embedded_idle_test.ts`: threads, open files and resident memory are the process's, and the
 * test runner runs other files' workers in its own process beside the test. Prints one JSON line:
 * the worker threads and open files before and after, resident memory after each cycle (MiB),
 * and whether every cycle answered the same rows.
 */

import { isDeepStrictEqual } from "node:util";
import { PgliteHost } from "../../../indexer/store/_embedded_host.ts";
import type { HistoryStore } from "../../../indexer/store/mod.ts";
import { SyntheticChain } from "./_chain.ts";
import { embeddedBackend } from "./_embedded.ts";
import { waitFor } from "../../_wait.ts";
import { allEpochs } from "./_helpers.ts";
import { open } from "./_suite.ts";

/** Threads of this process running workers now (Deno names them `worker-<n>`). */
function workerThreads(): number {
  let count = 0;
  for (const task of Deno.readDirSync("/proc/self/task")) {
    try {
      const name = Deno.readTextFileSync(`/proc/self/task/${task.name}/comm`).trim();
      if (name.startsWith("worker-")) count++;
    } catch {
      // the thread ended while listed
    }
  }
  return count;
}

async function answers(store: HistoryStore): Promise<unknown> {
  const { cursor } = await store.state();
  return { cursor, epochs: await allEpochs(store) };
}

const openFiles = () => [...Deno.readDirSync("/proc/self/fd")].length;

await using backend = embeddedBackend();
await using store = await open(await backend.fresh());
await store.commitChunk(new SyntheticChain().chunk(100n, 140n, 200n, 5));
const before = await answers(store);
const host = PgliteHost.shared();
const threads = workerThreads();
let same = true;
const cycle = async () => {
  await host.endIdle();
  await waitFor("the ended worker's thread exits", () => workerThreads() < threads || undefined, {
    everyMs: 20,
  });
  same &&= isDeepStrictEqual(await answers(store), before);
};
for (let i = 0; i < 3; i++) await cycle();
const files = openFiles();
const rss: number[] = [];
for (let i = 0; i < 20; i++) {
  await cycle();
  rss.push(Deno.memoryUsage().rss / 2 ** 20);
}
console.log(JSON.stringify({
  threads: [threads, workerThreads()],
  files: [files, openFiles()],
  rss,
  same,
}));
