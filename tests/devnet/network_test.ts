import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startDevnet } from "../../devnet/network.ts";
import { serve } from "../_http.ts";

async function refused(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return false;
  } catch {
    return true;
  }
}

/** Polls `check` until it holds; fails with `what` after `ms` (a liveness bound, not a timing claim). */
async function eventually(what: string, check: () => Promise<boolean>, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test("the devnet serves both tiers, its gateways converge by gossip, and it stops cleanly", async () => {
  const devnet = await startDevnet({ gateways: 3, refreshIntervalMs: 200 });
  try {
    const models = await (await fetch(`${devnet.gateways[0]}/v1/models`)).json();
    assert.deepEqual(
      models.models.map((
        m: { model: string; tier: string; providers: number },
      ) => [m.model, m.tier, m.providers]),
      [["devnet/echo", "tee", 1], ["devnet/echo", "verified", 2]],
    );
    // Each gateway started knowing only the next one; gossip spreads the full set.
    await eventually("three gateways know each other", async () => {
      for (const g of devnet.gateways) {
        const { gateways } = await (await fetch(`${g}/v1/gateways`)).json();
        const urls = new Set(gateways.map((e: { url: string }) => e.url));
        if (!devnet.gateways.every((u) => urls.has(u))) return false;
      }
      return true;
    });
    assert.equal(devnet.env.NET_EVM_REGISTRY, devnet.contracts.registry);
  } finally {
    await devnet.stop();
  }
  for (
    const url of [
      devnet.rpcUrl,
      ...devnet.gateways,
      ...devnet.routers,
      ...devnet.providers.map((p) => p.url),
    ]
  ) {
    assert.ok(await refused(url), `${url} still answers after stop`);
  }
});

Deno.test("a gateway that advertises junk cannot flood a devnet gateway's peer set", async () => {
  await using junk = serve(() =>
    Response.json({
      gateways: [
        // Just under the 256 KiB answer limit, so the per-answer cap is what stops the flood.
        ...Array.from({ length: 3000 }, (_, i) => ({
          url: `http://junk-${i}.invalid`,
          last_seen: new Date().toISOString(),
        })),
        ...["ftp://x", "javascript:alert(1)", "http://u:p@x"].map((url) => ({
          url,
          last_seen: new Date().toISOString(),
        })),
      ],
    })
  );
  await using devnet = await startDevnet({ gateways: 2, refreshIntervalMs: 100 });
  devnet.gatewayPeers[0].add(junk.url);
  await eventually(
    "the junk peer is asked",
    () => Promise.resolve(devnet.gatewayPeers[0].size > 2),
  );
  await new Promise((r) => setTimeout(r, 500));
  const set = devnet.gatewayPeers[0];
  assert.ok(set.size <= 256, `set grew to ${set.size}`);
  assert.ok(set.has(devnet.gateways[1]), "the real peer is kept");
  assert.ok(set.entries().every((e) => e.url.startsWith("http")), "only http(s) URLs");
});

Deno.test("`deno task devnet` starts, writes devnet.env, and stops on SIGTERM without leaks", async () => {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const stateDir = await Deno.makeTempDir();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "task",
      "devnet",
      "--ports",
      "ephemeral",
      "--state-dir",
      stateDir,
      "--token-delay-ms",
      "0",
    ],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stderr = new Response(child.stderr).text();
  try {
    while (!output.includes("devnet: ready")) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`devnet exited before ready:\n${output}\n${await stderr}`);
      output += value;
    }
    const env = Object.fromEntries(
      (await Deno.readTextFile(`${stateDir}/devnet.env`)).split("\n")
        .filter((l) => l && !l.startsWith("#")).map((l) => l.split("=", 2)),
    );
    for (
      const name of [
        "NET_EVM_RPC_URL",
        "NET_EVM_REGISTRY",
        "NET_EVM_STAKING",
        "NET_EVM_EMISSION",
        "NET_EVM_ESCROW",
      ]
    ) {
      assert.ok(env[name], `${name} missing from devnet.env`);
    }
    const gateways = env.NET_DEVNET_GATEWAYS.split(",");
    assert.equal((await fetch(`${gateways[0]}/v1/models`).then((r) => r.json())).models.length, 2);
    child.kill("SIGTERM");
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      output += value;
    }
    const status = await child.status;
    assert.equal(status.code, 0, output);
    assert.match(output, /devnet: stopped/);
    await assert.rejects(Deno.stat(`${stateDir}/devnet.env`), Deno.errors.NotFound);
    for (const url of [env.NET_EVM_RPC_URL, ...gateways]) {
      assert.ok(await refused(url), `${url} still answers after the devnet stopped`);
    }
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already exited */ }
    await child.status;
    await stderr;
    await Deno.remove(stateDir, { recursive: true });
  }
});
