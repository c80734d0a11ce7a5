/**
 * The embedded store (PGlite in a data directory): the shared suite, plus what only a data
 * directory has — its creation, its lock, and corrupt files.
 */

import assert from "node:assert/strict";
import { PGlite } from "@electric-sql/pglite";
import type { StoreLocation } from "../../../indexer/store/mod.ts";
import { SyntheticChain } from "./_chain.ts";
import { assertConfirmed } from "./_helpers.ts";
import { spawnChild } from "./_spawn.ts";
import { open, rejectsWith, storeSuite, type SuiteBackend } from "./_suite.ts";

function dataDirOf(location: StoreLocation): string {
  if (!("dataDir" in location)) throw new Error("not an embedded location");
  return location.dataDir;
}

/**
 * Fresh data directories under one temporary root, removed at the end. PGlite's `initdb` takes
 * seconds, so the suite's fresh stores start from a copy of one PGlite data directory made
 * once (exactly what the store itself makes on first start); the creation itself is tested on
 * its own below.
 */
async function embeddedBackend(): Promise<SuiteBackend & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "net-store-" });
  const template = `${root}/template`;
  await (await PGlite.create(template)).close();
  let n = 0;
  return {
    async fresh() {
      const dataDir = `${root}/store-${++n}`;
      await Deno.mkdir(dataDir, { mode: 0o700 });
      const copy = await new Deno.Command("cp", { args: ["-a", template, `${dataDir}/pgdata`] })
        .output();
      if (!copy.success) throw new Error(new TextDecoder().decode(copy.stderr));
      return { dataDir };
    },
    async raw(location, statement) {
      const db = await PGlite.create(`${dataDirOf(location)}/pgdata`);
      try {
        await db.exec(statement);
      } finally {
        await db.close();
      }
    },
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

Deno.test("embedded store: the shared store suite", async (t) => {
  await using backend = await embeddedBackend();
  await storeSuite(t, backend);
});

Deno.test("embedded store: a missing data directory is created, mode 0700", async () => {
  await using backend = await embeddedBackend();
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

Deno.test("embedded store: one process per data directory, released when it dies", async () => {
  await using backend = await embeddedBackend();
  const location = await backend.fresh();
  {
    await using child = spawnChild("hold", location);
    await child.waitFor(/^ready writer=true$/);
    const error = await rejectsWith(
      open(location),
      "locked",
      new RegExp(
        `another process \\(pid ${child.pid}\\) has it open; expected one process per data directory`,
      ),
    );
    assert.match(error.message, /--database-url/);
    await child.kill();
  }
  // kill -9 released the lock: the store opens, and in this process a second open fails too.
  await using store = await open(location);
  await rejectsWith(open(location), "locked", new RegExp(`pid ${Deno.pid}`));
  await store.commitChunk(new SyntheticChain().chunk(100n, 110n, 200n, 5));
});

Deno.test("embedded store: corrupt files are a clear error, rebuilt only when asked", async (t) => {
  await using backend = await embeddedBackend();
  const damage: [string, (dir: string) => Promise<void>, RegExp][] = [
    [
      "pg_control overwritten",
      (dir) => Deno.writeFile(`${dir}/pgdata/global/pg_control`, new Uint8Array(8192).fill(7)),
      /incompatible with server/,
    ],
    [
      "the database directory deleted",
      (dir) => Deno.remove(`${dir}/pgdata/base`, { recursive: true }),
      /database subdirectory "base\/\d+" is missing/,
    ],
    ["the WAL overwritten", async (dir) => {
      for (const f of Deno.readDirSync(`${dir}/pgdata/pg_wal`)) {
        if (f.isFile) {
          await Deno.writeFile(`${dir}/pgdata/pg_wal/${f.name}`, new Uint8Array(1000).fill(9));
        }
      }
    }, /could not locate a valid checkpoint record/],
    [
      "another PostgreSQL version",
      (dir) => Deno.writeTextFile(`${dir}/pgdata/PG_VERSION`, "99\n"),
      /initialized by PostgreSQL version 99/,
    ],
  ];
  for (const [name, harm, reason] of damage) {
    await t.step(name, async () => {
      const location = await backend.fresh();
      {
        await using store = await open(location);
        await store.commitChunk(new SyntheticChain().chunk(100n, 120n, 200n, 5));
      }
      await harm(dataDirOf(location));
      const error = await rejectsWith(open(location), "corrupt", /PGlite cannot start on .*pgdata/);
      assert.match(error.details ?? "", reason);
      assert.match(error.message, /Rebuild it/);
      if (name !== "pg_control overwritten") return; // initdb takes seconds: rebuild once
      await using rebuilt = await open(location, { rebuild: "always" });
      assert.equal((await rebuilt.state()).cursor.nextBlock, 100n);
    });
  }
});

Deno.test("embedded store: a data directory that is a file, and a half-made store", async () => {
  await using backend = await embeddedBackend();
  const { dataDir } = await backend.fresh() as { dataDir: string };
  await Deno.remove(dataDir, { recursive: true });
  await Deno.writeTextFile(dataDir, "not a directory");
  await rejectsWith(open({ dataDir }), "unreachable", /it is a file, expected a directory/);
  const location = await backend.fresh();
  const dir = dataDirOf(location);
  // A process killed while creating the store leaves pgdata.new behind: it is discarded.
  await Deno.remove(`${dir}/pgdata`, { recursive: true });
  await Deno.mkdir(`${dir}/pgdata.new`, { recursive: true });
  await Deno.writeTextFile(`${dir}/pgdata.new/PG_VERSION`, "half");
  await using store = await open(location);
  await store.commitChunk(new SyntheticChain().chunk(100n, 130n, 200n, 5));
  await assertConfirmed(store, new SyntheticChain().range(100n, 130n));
  assert.ok(!(await Deno.stat(`${dir}/pgdata.new`).then(() => true, () => false)));
});

Deno.test("embedded store: the WAL stays bounded however much is committed", async () => {
  await using backend = await embeddedBackend();
  // A store the store made itself (not the suite's template): its WAL settings are the store's.
  const dir = `${dataDirOf(await backend.fresh())}-own`;
  const wide = new SyntheticChain({
    seed: 2,
    providers: 1000,
    maxPerBlock: 100,
    blocksPerEpoch: 200,
  });
  await using store = await open({ dataDir: dir }, { confirmations: 0 });
  let next = 100n;
  let settlements = 0;
  while (settlements < 200_000) { // about 64 MiB of WAL: 80 MiB in pg_wal without checkpoints
    const chunk = wide.chunk(next, next + 39n, next + 39n, 0);
    await store.commitChunk(chunk);
    settlements += chunk.settlements.length;
    next += 40n;
  }
  let wal = 0;
  for (const entry of Deno.readDirSync(`${dir}/pgdata/pg_wal`)) {
    if (entry.isFile) wal += (await Deno.stat(`${dir}/pgdata/pg_wal/${entry.name}`)).size;
  }
  assert.ok(wal <= 64 * 2 ** 20, `pg_wal holds ${wal} bytes after ${settlements} settlements`);
  await assertConfirmed(store, wide.range(100n, next - 1n));
});

/** CPU time a thread of this process has used, in clock ticks (Linux `/proc`). */
function threadCpu(task: string): number {
  const stat = Deno.readTextFileSync(`/proc/self/task/${task}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

/** The threads running Web Workers now (Deno names them `worker-<n>`), by task id. */
function workerThreads(): Map<string, number> {
  const threads = new Map<string, number>();
  for (const task of Deno.readDirSync("/proc/self/task")) {
    const name = Deno.readTextFileSync(`/proc/self/task/${task.name}/comm`).trim();
    if (name.startsWith("worker-")) threads.set(task.name, threadCpu(task.name));
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
