import assert from "node:assert/strict";
import { AtomicWriteError, writeFileAtomic } from "../../io/atomic_write.ts";

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
