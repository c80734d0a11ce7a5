/**
 * The embedded store (PGlite in a data directory): the shared suite, its creation, and where
 * PGlite's work happens. Its lock, corrupt files and the WAL are in `embedded_files_test.ts`.
 */

import assert from "node:assert/strict";
import { embeddedBackend } from "./_embedded.ts";
import { open, storeSuite } from "./_suite.ts";
import { alive, cpuTicks, storeProcesses } from "./_store_process.ts";
import { storeProcessCommand } from "../../../indexer/store/_embedded_child.ts";
import { PgliteHost } from "../../../indexer/store/_embedded_host.ts";

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

/**
 * CPU time spent by this process's store processes (`_embedded_process.ts`), clock ticks: the
 * ones running now, and (in `cutime`/`cstime`) every child that ended and was waited for.
 */
function storeCpu(): number {
  let ticks = cpuTicks("self", true);
  for (const pid of storeProcesses()) ticks += cpuTicks(pid);
  return ticks;
}

Deno.test({
  name: "embedded store: PGlite's work happens off the caller's thread (creating a store)",
  ignore: Deno.build.os !== "linux",
  async fn() {
    // Creating a store is seconds of CPU (PGlite's initdb): it must be spent by the store's
    // processes, never by the thread that called it (the indexer's, which answers /health).
    // Measured as CPU time per thread, which load does not change.
    const root = await Deno.makeTempDir({ prefix: "net-store-thread-" });
    try {
      const self = Deno.readLinkSync("/proc/thread-self").split("/").pop()!;
      const before = storeCpu();
      const selfBefore = threadCpu(self);
      await using store = await open({ dataDir: `${root}/store` });
      const selfSpent = threadCpu(self) - selfBefore;
      const workersSpent = storeCpu() - before;
      assert.equal((await store.state()).cursor.nextBlock, 100n);
      assert.ok(
        workersSpent > 4 * selfSpent,
        `creating the store cost this thread ${selfSpent} CPU ticks and the store's processes ` +
          `${workersSpent}; expected the store's processes to do the work`,
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "embedded store: the store process may touch the stores' directories only",
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using backend = embeddedBackend();
    const first = await backend.fresh() as { dataDir: string };
    const second = await backend.fresh() as { dataDir: string };
    await using one = await open(first);
    const host = PgliteHost.shared();
    const flags = () => Deno.readTextFileSync(`/proc/${host.pid}/cmdline`).split("\0");
    const allowed = (name: string) =>
      flags().find((flag) => flag.startsWith(`${name}=`))?.slice(name.length + 1).split(",");
    assert.ok(allowed("--allow-write")!.includes(first.dataDir), flags().join(" "));
    assert.ok(!allowed("--allow-write")!.includes(second.dataDir), flags().join(" "));
    for (const flag of flags()) {
      assert.ok(
        !/^(-A|--allow-all|--allow-(net|env|run|ffi|sys|import))(=|$)/.test(flag),
        `the store process was given ${flag}`,
      );
    }
    for (const dir of [...allowed("--allow-write")!, ...allowed("--allow-read")!]) {
      assert.ok(dir.startsWith("/") && dir !== "/", `an allowed directory: ${dir}`);
    }
    // A store in another directory: the process is started again, allowed both; the first
    // store answers as before.
    const starts = host.starts;
    await using two = await open(second);
    assert.equal(host.starts, starts + 1);
    assert.ok(allowed("--allow-write")!.includes(second.dataDir), flags().join(" "));
    assert.ok(allowed("--allow-write")!.includes(first.dataDir), flags().join(" "));
    assert.equal((await one.state()).cursor.nextBlock, 100n);
    assert.equal((await two.state()).cursor.nextBlock, 100n);
  },
});

Deno.test({
  name: "embedded store: Ctrl-C (SIGINT, SIGTERM to the group) does not end the store process",
  ignore: Deno.build.os !== "linux",
  async fn() {
    // A terminal's Ctrl-C reaches the whole process group; the indexer, shutting down, still
    // needs its store, whose process ends when the indexer has (its input ends).
    await using backend = embeddedBackend();
    await using store = await open(await backend.fresh());
    const host = PgliteHost.shared();
    const pid = host.pid!;
    const starts = host.starts;
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      Deno.kill(pid, signal);
      assert.equal((await store.state()).cursor.nextBlock, 100n, `after ${signal}`);
    }
    assert.equal(host.pid, pid, "the same store process answered");
    assert.equal(host.starts, starts);
    assert.ok(alive(pid));
  },
});

Deno.test({
  name: "embedded store: its process starts from a local copy only, and says so otherwise",
  ignore: Deno.build.os === "windows",
  fn: () => {
    const local = storeProcessCommand("file:///opt/net/indexer/store/_embedded_child.ts");
    assert.equal(local.script, "/opt/net/indexer/store/_embedded_process.ts");
    assert.equal(local.cwd, "/opt/net/");
    assert.throws(
      () =>
        storeProcessCommand("https://jsr.io/@net/consumer/0.1.0/indexer/store/_embedded_child.ts"),
      /Cannot start the embedded store's process from https:\/\/jsr\.io\/.*_embedded_process\.ts: expected a local copy/,
    );
  },
});
