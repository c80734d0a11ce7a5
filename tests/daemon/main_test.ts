/**
 * `daemon/main.ts` as users run it: a subprocess with flags and environment, against the
 * devnet. It serves, refuses a bad configuration with exit code 2, and on SIGTERM lets an
 * in-flight streamed reply finish before exiting 0. Bound to `0.0.0.0` its start-up lines name
 * addresses clients can use, and its front door closes slow connections.
 */

import assert from "node:assert/strict";
import { startDevnet } from "../../devnet/network.ts";
import { listenUrls } from "../../http/mod.ts";
import { checkFrontDoor } from "../_front_door.ts";
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

Deno.test("bound to 0.0.0.0: real addresses in the start-up lines, and the front door holds", async () => {
  const dataDir = await Deno.makeTempDir();
  const daemon = spawnDaemon(["--bind", "0.0.0.0:0", "--gateway", "http://127.0.0.1:9"], {
    NET_DATA_DIR: dataDir,
    NET_INSECURE_GATEWAY_KEYS: "1",
  });
  try {
    const [, url, port] = await daemon.waitFor(/listening on (http:\/\/127\.0\.0\.1:(\d+))/);
    const [, openai] = await daemon.waitFor(/OpenAI clients: OPENAI_BASE_URL=(\S+)\n/);
    const [, anthropic] = await daemon.waitFor(/Anthropic clients: ANTHROPIC_BASE_URL=(\S+)\n/);
    const [, ollama] = await daemon.waitFor(/Ollama clients: OLLAMA_HOST=(\S+)\n/);
    const usable = listenUrls({ hostname: "0.0.0.0", port: Number(port) });
    // Another host's address when the machine has one, else loopback; never 0.0.0.0.
    const expected = usable.find((u) => !u.startsWith("http://127.")) ?? usable[0];
    assert.equal(openai, `${expected}/v1`);
    assert.equal(anthropic, expected);
    assert.equal(ollama, expected.slice("http://".length));
    const key = (await Deno.readTextFile(`${dataDir}/api-key`)).trim();
    await checkFrontDoor(url, {
      path: "/v1/verdicts",
      headers: { authorization: `Bearer ${key}` },
    });
    daemon.child.kill("SIGTERM");
    const output = await daemon.rest();
    assert.doesNotMatch(output, /0\.0\.0\.0/, "no line suggests an address no client can use");
  } finally {
    try {
      daemon.child.kill("SIGKILL");
    } catch { /* exited */ }
    await daemon.child.status;
    await Deno.remove(dataDir, { recursive: true });
  }
});
