/**
 * No debris, never a corrupt cache: a process that writes `gateways.json` the way the daemon
 * does is killed (SIGKILL, nothing runs after it) at random moments of its writes, 60 times.
 * After every kill the cache is complete and valid; temporary files of the interrupted writes
 * may lie next to it, and the next start of a daemon on that data directory removes them all.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { loadGatewayCache } from "../../../daemon/gateway/gateway_cache.ts";
import { GatewayResolver } from "../../../daemon/gateway/gateway_resolver.ts";

const WRITER = fileURLToPath(new URL("./_cache_writer.ts", import.meta.url));
const KILLS = 60;

/** Starts the writer and resolves once it has written the cache at least once. */
async function startWriter(dir: string): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", WRITER, dir],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("writing")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the writer exited before writing: ${text}`);
    text += value;
  }
  reader.releaseLock();
  return child;
}

const temporaries = (dir: string) =>
  [...Deno.readDirSync(dir)].map((e) => e.name).filter((name) => name.endsWith(".tmp"));

Deno.test(`${KILLS} kills during cache writes: never a corrupt cache, no temporary file after the next start`, async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-kill-" });
  let orphansSeen = 0;
  try {
    for (let kill = 0; kill < KILLS; kill++) {
      const child = await startWriter(dir);
      // Let it write for a random while (each write is open, write, fsync, rename).
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 25)));
      child.kill("SIGKILL");
      await child.stdout.cancel().catch(() => {});
      await child.status;
      const { entries, problem } = await loadGatewayCache(`${dir}/gateways.json`);
      assert.equal(problem, undefined, `after kill ${kill + 1} the cache is corrupt: ${problem}`);
      assert.ok(entries.length > 0, `after kill ${kill + 1} the cache is empty`);
      orphansSeen = Math.max(orphansSeen, temporaries(dir).length);
    }
    // The loop must really have interrupted writes, or it proves nothing.
    assert.ok(orphansSeen > 0, "no kill landed during a write: the test did not test anything");
    console.log(`${orphansSeen} temporary files left by ${KILLS} kills`);

    // The next start of a daemon on this data directory.
    const lines: string[] = [];
    const resolver = new GatewayResolver({
      bootstrap: [],
      cachePath: `${dir}/gateways.json`,
      log: (line) => lines.push(line),
      fetch: () => Promise.reject(new TypeError("no network in this test")),
    });
    await resolver.resolve().catch(() => {}); // the cached gateways are not reachable here
    assert.deepEqual(temporaries(dir), [], "temporary files survived the start");
    assert.match(lines.join("\n"), /removed \d+ temporary file/);
    const { problem } = await loadGatewayCache(`${dir}/gateways.json`);
    assert.equal(problem, undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
