/**
 * The project's image run through testcontainers (`_image.ts`): the devnet in one container,
 * an indexer container reading its chain and routers (`/stats` 200 with the devnet's
 * numbers), and the consumer daemon in a third serving a sealed chat through the devnet's
 * gateway to a provider whose key it checked on that chain. Every container uses the host's
 * network on free ports and is removed at the end, also when a step fails.
 *
 * Skipped, with a `SKIPPED:` line, where no Docker engine answers or the image is not built;
 * in CI (`CI=true`) either fails instead (`.ci/run` builds the image before the suite).
 */

import assert from "node:assert/strict";
import { consumerOf, depositCommand } from "../../packaging/_docker.ts";
import { freeHostPort } from "../../packaging/host_port.ts";
import { IMAGE, ImageRun, imageTestPlan } from "./_image.ts";

/** Time allowed to each container to come up on a busy machine. */
const START_MS = 240_000;

/** GETs `url` until `accept` takes its 200 body, or throws with the last answer at the deadline. */
async function until<T>(
  url: string,
  accept: (body: string) => T | undefined,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer yet";
  for (;;) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      const body = await response.text();
      last = `${response.status} ${body.slice(0, 300)}`;
      if (response.status === 200) {
        const value = accept(body);
        if (value !== undefined) return value;
      }
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${url}: not ready in time (last: ${last})`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const plan = await imageTestPlan("tests/packaging/image_test.ts");

Deno.test({
  name:
    `the image (${IMAGE}) through testcontainers: devnet, an indexer reading it, a daemon's sealed chat`,
  ignore: plan.ignore,
  async fn(t) {
    if (plan.reason) throw new Error(`${plan.reason}; CI builds the image before the suite`);
    await using run = new ImageRun();

    const devnet = await run.start("devnet", {
      command: ["devnet", "--ports", "ephemeral"],
      ready: /devnet: ready/,
      timeoutMs: START_MS,
    });
    const read = await devnet.exec(["cat", "/app/.devnet/network.json"]);
    assert.equal(read.exitCode, 0, read.output);
    const profile = JSON.parse(read.stdout) as { gateways: string[]; rpcUrls: string[] };
    const providers = [...run.logs("devnet").matchAll(/provider (0x[0-9a-f]{40}) \((\w+)\)/g)]
      .map(([, address, tier]) => ({ address, tier }));
    assert.equal(providers.length, 3, run.logs("devnet"));
    const files = { "/tmp/network.json": read.stdout };

    await t.step("an indexer container reads the devnet: /stats 200 with its numbers", async () => {
      const port = freeHostPort();
      await run.start("indexer", {
        command: ["indexer", "--network", "/tmp/network.json"],
        env: { NET_STATS_BIND: `127.0.0.1:${port}`, NET_STATS_REFRESH_SECS: "3" },
        files,
        ready: /indexer: listening on/,
        timeoutMs: START_MS,
      });
      const base = `http://127.0.0.1:${port}`;
      await until(`${base}/health`, (body) => JSON.parse(body).snapshot ?? undefined, START_MS);
      const stats = await until(`${base}/stats`, (body) => JSON.parse(body), 60_000);
      // The devnet registers 3 live providers (2 verified, 1 TEE), 2 offline and 1 under-bonded
      // one, 5 validators and 2 routers.
      assert.deepEqual(stats.providers, { registered: 6, bonded: 5, live_verified: 3 });
      assert.equal(stats.validators, 5);
      assert.deepEqual(
        { total: stats.routers.total, reachable: stats.routers.reachable },
        { total: 2, reachable: 2 },
      );
      assert.ok(BigInt(stats.staked_security) > 0n, JSON.stringify(stats));
    });

    await t.step("a daemon container serves a sealed chat through the devnet", async () => {
      const port = freeHostPort();
      await run.start("daemon", {
        command: ["daemon", "--network", "/tmp/network.json"],
        env: { NET_DAEMON_BIND: `127.0.0.1:${port}` },
        files,
        ready: /daemon: listening on/,
        timeoutMs: START_MS,
      });
      const base = `http://127.0.0.1:${port}`;
      await until(`${base}/api/version`, (body) => body, 60_000);
      // The devnet takes payment by vouchers: the daemon's consumer gets a deposit first.
      const consumer = await consumerOf(base);
      const deposit = await devnet.exec(depositCommand("/app/.devnet/network.json", consumer));
      assert.equal(deposit.exitCode, 0, deposit.output);
      const response = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "net/verified/devnet/echo",
          messages: [{ role: "user", content: "Hello from a container" }],
        }),
        signal: AbortSignal.timeout(60_000),
      });
      const body = await response.text();
      assert.equal(response.status, 200, body);
      assert.match(
        JSON.parse(body).choices[0].message.content,
        /^You said: "Hello from a container" — echoed by devnet\/echo/,
      );
      // Served by a verified provider of this devnet, its key and bond checked on its chain.
      assert.equal(response.headers.get("x-net-tier"), "verified");
      const verified = providers.filter((p) => p.tier === "verified").map((p) => p.address);
      assert.ok(
        verified.includes(response.headers.get("x-net-provider")?.toLowerCase() ?? ""),
        `x-net-provider ${response.headers.get("x-net-provider")} is not one of ${verified}`,
      );
      assert.ok(
        profile.gateways.includes(response.headers.get("x-net-gateway") ?? ""),
        `x-net-gateway ${response.headers.get("x-net-gateway")} is not one of ${profile.gateways}`,
      );
    });
  },
});
