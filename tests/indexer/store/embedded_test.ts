/**
 * The embedded store (PGlite in a data directory): the shared suite, its creation, and where
 * PGlite's work happens. Its lock, corrupt files and the WAL are in `embedded_files_test.ts`.
 */

import assert from "node:assert/strict";
import { embeddedBackend } from "./_embedded.ts";
import { open, storeSuite } from "./_suite.ts";

Deno.test("embedded store: the shared store suite", async (t) => {
  await using backend = embeddedBackend();
  await storeSuite(t, backend);
});

Deno.test("embedded store: a missing data directory is created, mode 0700", async () => {
  await using backend = embeddedBackend();
  const { dataDir } = await backend.fresh() as { dataDir: string };
  const nested = `${dataDir}-new/a/b`;
  await using store = await open({ dataDir: nested });
  assert.equal(store.backend, "embedded");
  assert.equal(store.location, nested);
  assert.equal((await Deno.stat(nested)).mode! & 0o777, 0o700);
  assert.ok((await Deno.stat(`${nested}/pgdata/PG_VERSION`)).isFile);
  assert.deepEqual(
    [...Deno.readDirSync(nested)].map((e) => e.name).sort(),
    ["LOCK", "pgdata"],
  );
});

/** CPU time a thread of this process has used, in clock ticks (Linux `/proc`). */
function threadCpu(task: string): number {
  const stat = Deno.readTextFileSync(`/proc/self/task/${task}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

/** The threads running workers now (Deno names them `worker-<n>`), by task id. */
function workerThreads(): Map<string, number> {
  const threads = new Map<string, number>();
  for (const task of Deno.readDirSync("/proc/self/task")) {
    try {
      const name = Deno.readTextFileSync(`/proc/self/task/${task.name}/comm`).trim();
      if (name.startsWith("worker-")) threads.set(task.name, threadCpu(task.name));
    } catch (error) {
      // a thread that ended while listed (the runner's other files start and end workers)
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return threads;
}

Deno.test({
  name: "embedded store: PGlite's work happens off the caller's thread (creating a store)",
  ignore: Deno.build.os !== "linux",
  async fn() {
    // Creating a store is seconds of CPU (PGlite's initdb): it must be spent by the store's
    // worker, never by the thread that called it (the indexer's, which answers /health).
    // Measured as CPU time per thread, which load does not change.
    const root = await Deno.makeTempDir({ prefix: "net-store-thread-" });
    try {
      const self = Deno.readLinkSync("/proc/thread-self").split("/").pop()!;
      const before = workerThreads();
      const selfBefore = threadCpu(self);
      await using store = await open({ dataDir: `${root}/store` });
      const selfSpent = threadCpu(self) - selfBefore;
      let workersSpent = 0;
      for (const [task, cpu] of workerThreads()) workersSpent += cpu - (before.get(task) ?? 0);
      assert.equal((await store.state()).cursor.nextBlock, 100n);
      assert.ok(
        workersSpent > 4 * selfSpent,
        `creating the store cost this thread ${selfSpent} CPU ticks and workers ${workersSpent}; ` +
          "expected the workers to do the work",
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
