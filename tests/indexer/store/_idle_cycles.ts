/**
 * Twenty end/restart cycles of the embedded store's process, run as a process of its own by
 * `embedded_idle_test.ts`: its children, open files and resident memory are the cycles' alone.
 * Prints one JSON line: the store processes and open files before and after, resident memory
 * after each cycle (MiB), and whether every cycle answered the same rows.
 */

import { isDeepStrictEqual } from "node:util";
import { PgliteHost } from "../../../indexer/store/_embedded_host.ts";
import type { HistoryStore } from "../../../indexer/store/mod.ts";
import { SyntheticChain } from "./_chain.ts";
import { embeddedBackend } from "./_embedded.ts";
import { waitFor } from "../../_wait.ts";
import { allEpochs } from "./_helpers.ts";
import { open } from "./_suite.ts";
import { alive, storeProcesses } from "./_store_process.ts";

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
const processes = storeProcesses().length;
let same = true;
const cycle = async () => {
  const pid = host.pid!;
  await host.endIdle();
  await waitFor("the ended store process exits", () => !alive(pid) || undefined, {
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
  processes: [processes, storeProcesses().length],
  files: [files, openFiles()],
  rss,
  same,
}));
