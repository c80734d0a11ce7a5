/**
 * The template's unpacker (`indexer/store/_untar.ts`): it writes what a ustar archive holds and
 * refuses, with a clear error, what it must not write: a path out of the directory, a damaged
 * header, an entry of another type, an archive cut short.
 */

import assert from "node:assert/strict";
import { untar, untarStream } from "../../../indexer/store/_untar.ts";

/** One ustar header block (`type` "0" file, "5" directory, others as given). */
function header(name: string, size: number, type: string, damage = false): Uint8Array {
  const block = new Uint8Array(512);
  const put = (at: number, text: string) => block.set(new TextEncoder().encode(text), at);
  put(0, name);
  put(100, "0000600\0");
  put(124, size.toString(8).padStart(11, "0") + "\0");
  put(156, type);
  put(257, "ustar\x0000");
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : block[i];
  put(148, (sum + (damage ? 1 : 0)).toString(8).padStart(6, "0") + "\0 ");
  return block;
}

function archive(...entries: [name: string, body: string | null, type?: string][]): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const [name, body, type] of entries) {
    const bytes = new TextEncoder().encode(body ?? "");
    blocks.push(header(name, bytes.length, type ?? (body === null ? "5" : "0")));
    const padded = new Uint8Array(Math.ceil(bytes.length / 512) * 512);
    padded.set(bytes);
    blocks.push(padded);
  }
  blocks.push(new Uint8Array(1024));
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of blocks) (out.set(b, at), at += b.length);
  return out;
}

async function inTemp(work: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "net-untar-" });
  try {
    await work(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("untar: writes directories and files, leading slashes inside the directory", async () => {
  await inTemp(async (dir) => {
    await untar(archive(["/base", null], ["/base/1", "one"], ["/PG_VERSION", "18\n"]), dir);
    assert.equal(await Deno.readTextFile(`${dir}/base/1`), "one");
    assert.equal(await Deno.readTextFile(`${dir}/PG_VERSION`), "18\n");
    assert.equal((await Deno.stat(`${dir}/base/1`)).mode! & 0o777, 0o600);
  });
});

Deno.test("untar: refuses a path out of the directory, a bad checksum, a link, a cut", async () => {
  await inTemp(async (dir) => {
    await assert.rejects(
      untar(archive(["../escape", "x"]), `${dir}/in`),
      /path is "\.\.\/escape", expected one inside the directory/,
    );
    await assert.rejects(untar(archive(["a/../../b", "x"]), dir), /inside the directory/);
    const damaged = archive(["ok", "x"]);
    damaged.set(header("ok", 1, "0", true), 0);
    await assert.rejects(untar(damaged, dir), /checksum is \d+, expected \d+/);
    await assert.rejects(
      untar(archive(["link", "", "2"]), dir),
      /of type "2", expected a file or directory/,
    );
    const whole = archive(["big", "x".repeat(2000)]);
    await assert.rejects(untar(whole.subarray(0, 1024), dir), /holds 2000 bytes, the archive ends/);
    await assert.rejects(untar(archive(["f", "x"]).subarray(0, 1024), dir), /without its end/);
    // Nothing was written out of the directories given.
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["f"]);
  });
});

Deno.test("untar: a stream in chunks of any size writes the same files", async () => {
  const whole = archive(
    ["/base", null],
    ["/base/big", "y".repeat(3000)],
    ["/base/empty", ""],
    ["/PG_VERSION", "18\n"],
  );
  for (const size of [1, 7, 511, 512, 513, 4096]) {
    await inTemp(async (dir) => {
      const chunks = async function* () {
        for (let at = 0; at < whole.length; at += size) yield whole.slice(at, at + size);
      };
      await untarStream(chunks(), dir);
      assert.equal(await Deno.readTextFile(`${dir}/base/big`), "y".repeat(3000), `${size}`);
      assert.equal(await Deno.readTextFile(`${dir}/base/empty`), "");
      assert.equal(await Deno.readTextFile(`${dir}/PG_VERSION`), "18\n");
    });
  }
});
