import assert from "node:assert/strict";
import {
  AtomicWriteError,
  removeStaleTemporaryFiles,
  writeFileAtomic,
} from "../../io/atomic_write.ts";

Deno.test("writes, replaces, creates the directory and leaves no temporary file", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/nested/state.json`;
  await writeFileAtomic(path, "first");
  await writeFileAtomic(path, new TextEncoder().encode("second"));
  assert.equal(await Deno.readTextFile(path), "second");
  const names = [...Deno.readDirSync(`${dir}/nested`)].map((e) => e.name);
  assert.deepEqual(names, ["state.json"]);
  if (Deno.build.os !== "windows") {
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a failed write keeps the old file and reports the path", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/state.json`;
  await writeFileAtomic(path, "old");
  // The target is now a directory: rename over it must fail, and the temp file must go.
  const blocked = `${dir}/blocked`;
  await Deno.mkdir(`${blocked}/child`, { recursive: true });
  await assert.rejects(
    writeFileAtomic(blocked, "new"),
    (e: unknown) => e instanceof AtomicWriteError && e.message.includes(blocked),
  );
  assert.equal(await Deno.readTextFile(path), "old");
  const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  assert.deepEqual(names, ["blocked", "state.json"]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("stale temporary files of a path are removed, nothing else", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/gateways.json`;
  await writeFileAtomic(path, "kept");
  const stale = [".gateways.json.0123456789ab.tmp", ".gateways.json.a1b2c3d4e5f6.tmp"];
  const others = [
    ".api-key.0123456789ab.tmp", // another file's: removed only when that file is cleaned
    ".gateways.json.0123.tmp", // not the pattern
    "gateways.json.0123456789ab.tmp",
  ];
  for (const name of [...stale, ...others]) await Deno.writeTextFile(`${dir}/${name}`, "x");
  const removed = await removeStaleTemporaryFiles(path);
  assert.deepEqual(removed.map((p) => p.slice(dir.length + 1)).sort(), stale.toSorted());
  const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  assert.deepEqual(names, [...others, "gateways.json"].sort());
  assert.equal(await Deno.readTextFile(path), "kept");
  // A directory that does not exist has nothing to clean.
  assert.deepEqual(await removeStaleTemporaryFiles(`${dir}/missing/state.json`), []);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a write that fails after creating its temporary file removes it", async () => {
  if (Deno.build.os === "windows") return;
  const dir = await Deno.makeTempDir();
  // The target is a non-empty directory: the rename fails after the temporary file was written.
  const target = `${dir}/target`;
  await Deno.mkdir(`${target}/inside`, { recursive: true });
  for (let i = 0; i < 5; i++) {
    await assert.rejects(writeFileAtomic(target, `attempt ${i}`), AtomicWriteError);
  }
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["target"]);
  await Deno.remove(dir, { recursive: true });
});
