/**
 * `daemon/main.ts` as users run it: a subprocess with flags and environment, against the
 * devnet. It serves, refuses a bad configuration with exit code 2, and on SIGTERM lets an
 * in-flight streamed reply finish before exiting 0.
 */

import assert from "node:assert/strict";
import { startDevnet } from "../../devnet/network.ts";
import { spawnDaemon } from "./_spawn.ts";

Deno.test("a bad configuration stops the daemon with exit code 2 and names the setting", async () => {
  const { child, rest } = spawnDaemon(["--gateway", "http://169.254.169.254"], {});
  const status = await child.status;
  const output = await rest();
  assert.equal(status.code, 2, output);
  assert.match(output, /--gateway/);
});

Deno.test("SIGTERM lets an in-flight streamed reply finish, then the daemon exits 0", async () => {
  const stateDir = await Deno.makeTempDir();
  await using devnet = await startDevnet({
    tokenDelayMs: 40,
    verifiedProviders: 1,
    teeProviders: 0,
    stateDir,
  });
  const dataDir = await Deno.makeTempDir();
  // The devnet's own profile: trust is checked on its chain, as by default.
  const daemon = spawnDaemon(["--bind", "127.0.0.1:0", "--network", devnet.profilePath!], {
    NET_GATEWAY: devnet.gateways[0],
    NET_DATA_DIR: dataDir,
  });
  try {
    const [, url] = await daemon.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "net/verified/devnet/echo",
        messages: [{ role: "user", content: "one two three four five six seven eight" }],
        stream: true,
      }),
    });
    assert.equal(response.status, 200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    // The reply has started; now the daemon is asked to stop.
    daemon.child.kill("SIGTERM");
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    assert.match(text, /data: \[DONE\]/, "the reply in flight was cut short");
    const status = await daemon.child.status;
    const output = await daemon.rest();
    assert.equal(status.code, 0, output);
    assert.match(output, /daemon: stopped/);
    await assert.rejects(fetch(`${url}/`), "the daemon still accepts connections");
  } finally {
    try {
      daemon.child.kill("SIGKILL");
    } catch { /* exited */ }
    await daemon.child.status;
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(stateDir, { recursive: true });
  }
});
