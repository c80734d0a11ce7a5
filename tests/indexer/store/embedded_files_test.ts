/**
 * The embedded store's data directory: one process per directory (released when it dies),
 * corrupt files, a directory that is a file or half-made, and a WAL that stays bounded.
 */

import assert from "node:assert/strict";
import { SyntheticChain } from "./_chain.ts";
import { dataDirOf, embeddedBackend } from "./_embedded.ts";
import { assertConfirmed } from "./_helpers.ts";
import { spawnChild } from "./_spawn.ts";
import { open, rejectsWith } from "./_suite.ts";

Deno.test("embedded store: one process per data directory, released when it dies", async () => {
  await using backend = embeddedBackend();
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
  await using backend = embeddedBackend();
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
  await using backend = embeddedBackend();
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
  await using backend = embeddedBackend();
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
