import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { resolveNetworkProfile } from "../../chain/network_profile.ts";
import { createChainClient, readNetworkState } from "../../chain/mod.ts";
import { startAnvil } from "../../devnet/anvil.ts";
import { parseDevnetArgs } from "../../devnet/main.ts";
import { startDevnet } from "../../devnet/network.ts";
import { closedPort, okJson, serve } from "../_http.ts";
import { waitFor } from "../_wait.ts";

async function refused(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return false;
  } catch {
    return true;
  }
}

/** Polls `check` until it holds (a wait on a state, `tests/_wait.ts`). */
async function eventually(what: string, check: () => Promise<boolean>) {
  await waitFor(what, async () => (await check()) || undefined);
}

Deno.test("the devnet serves both tiers, its gateways converge by gossip, and it stops cleanly", async () => {
  const devnet = await startDevnet({ gateways: 3, refreshIntervalMs: 200 });
  try {
    const models = await okJson(fetch(`${devnet.gateways[0]}/v1/models`));
    assert.deepEqual(
      models.models.map((
        m: { model: string; tier: string; providers: number },
      ) => [m.model, m.tier, m.providers]),
      [
        ["devnet/echo", "tee", 1],
        ["devnet/echo", "verified", 2],
        ["devnet/embed", "tee", 1],
        ["devnet/embed", "verified", 2],
      ],
    );
    // Each gateway started knowing only the next one; gossip spreads the full set.
    await eventually("three gateways know each other", async () => {
      for (const g of devnet.gateways) {
        const { gateways } = await okJson(fetch(`${g}/v1/gateways`));
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
    const everything = [
      env.NET_EVM_RPC_URL,
      ...gateways,
      ...env.NET_DEVNET_ROUTERS.split(","),
      ...env.NET_DEVNET_PROVIDERS.split(","),
    ];
    assert.equal(env.NET_GATEWAY, gateways[0]);
    assert.equal((await fetch(`${gateways[0]}/v1/models`).then((r) => r.json())).models.length, 4); // echo and embed, two tiers
    // The network profile, for --network: the same chain, contracts and gateways.
    assert.equal(env.NET_NETWORK, `${await Deno.realPath(stateDir)}/network.json`);
    const profile = resolveNetworkProfile(env.NET_NETWORK);
    assert.deepEqual(profile.rpcUrls, [env.NET_EVM_RPC_URL]);
    assert.equal(profile.contracts.registry, env.NET_EVM_REGISTRY);
    assert.equal(profile.contracts.escrow, env.NET_EVM_ESCROW);
    assert.equal(profile.deployedAtBlock, BigInt(env.NET_STATS_SCAN_FROM_BLOCK));
    assert.deepEqual(profile.gateways, gateways);
    assert.match(output, /Network profile: .*network\.json/);
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
    await assert.rejects(Deno.stat(`${stateDir}/network.json`), Deno.errors.NotFound);
    for (const url of everything) {
      assert.ok(await refused(url), `${url} still answers after the devnet stopped`);
    }
  } finally {
    // SIGTERM first even when an assertion failed: `deno task` passes it on to the devnet, whose
    // pipes would otherwise outlive a killed task and hang this test instead of failing it.
    await stopChild(child);
    await stderr;
    await Deno.remove(stateDir, { recursive: true });
  }
});

/** Stops `child`: SIGTERM, and SIGKILL if it has not exited within 15 s. */
async function stopChild(child: Deno.ChildProcess): Promise<void> {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    try {
      child.kill(signal);
    } catch {
      return; // already exited
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const exited = await Promise.race([
      child.status.then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), 15_000)),
    ]);
    clearTimeout(timer);
    if (exited) return;
  }
  await child.status;
}

async function rpc(url: string, method: string): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
  });
  assert.equal(response.status, 200);
  return (await response.json()).result;
}

Deno.test("--host 0.0.0.0 serves every interface; --public-host is what is advertised and registered", async () => {
  await using devnet = await startDevnet({
    hostname: "0.0.0.0",
    publicHost: "localhost",
    gateways: 1,
    tokenDelayMs: 0,
  });
  const port = (url: string) => new URL(url).port;
  // Every advertised URL carries the public host, and it works: the routers poll the
  // providers and the gateway relays through those very URLs.
  for (
    const url of [
      devnet.rpcUrl,
      ...devnet.routers,
      ...devnet.gateways,
      ...devnet.providers.map((p) => p.url),
    ]
  ) {
    assert.match(url, /^http:\/\/localhost:\d+$/);
  }
  assert.equal(devnet.env.NET_EVM_RPC_URL, devnet.rpcUrl);
  for (const p of devnet.providers) assert.equal(p.provider.ad.endpoint, p.url);
  // What the chain says is what the indexer will use: the routers' public URLs.
  const client = await createChainClient(devnet.rpcUrl);
  const state = await readNetworkState(client, devnet.contracts);
  assert.deepEqual(state.routers.map((r) => r.url), devnet.routers);
  // Listening on 0.0.0.0: another loopback address reaches anvil and every server (a server
  // bound to 127.0.0.1 refuses it, see the next assertion).
  assert.equal(await rpc(`http://127.0.0.2:${port(devnet.rpcUrl)}`, "eth_chainId"), "0x7a69");
  const models = await (await fetch(`http://127.0.0.2:${port(devnet.gateways[0])}/v1/models`))
    .json();
  assert.equal(models.models.length, 4); // echo and embed, two tiers
  const ads = await okJson(fetch(`http://127.0.0.2:${port(devnet.routers[0])}/v1/ads`));
  assert.ok(ads.ads.length > 0);
  assert.ok(
    ads.ads.every((e: { ad: { endpoint: string } }) =>
      e.ad.endpoint.startsWith("http://localhost:")
    ),
  );
});

Deno.test("by default the devnet listens on 127.0.0.1 only", async () => {
  await using devnet = await startDevnet({ gateways: 1, verifiedProviders: 1, teeProviders: 0 });
  assert.match(devnet.gateways[0], /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.ok(await refused(`http://127.0.0.2:${new URL(devnet.gateways[0]).port}/v1/models`));
});

Deno.test("--rpc-url deploys onto an existing chain and leaves it running on stop", async () => {
  await using anvil = await startAnvil();
  const first = await startDevnet({ rpcUrl: anvil.rpcUrl, gateways: 1, tokenDelayMs: 0 });
  let second: Awaited<ReturnType<typeof startDevnet>> | undefined;
  try {
    assert.equal(first.rpcUrl, anvil.rpcUrl);
    assert.equal(first.env.NET_EVM_RPC_URL, anvil.rpcUrl);
    const models = await okJson(fetch(`${first.gateways[0]}/v1/models`));
    assert.equal(models.models.length, 4); // echo and embed, two tiers
    const state = await readNetworkState(await createChainClient(anvil.rpcUrl), first.contracts);
    assert.equal(state.routers.length, 2);
    await first.stop();
    // The chain is not the devnet's: it still answers.
    assert.equal(await rpc(anvil.rpcUrl, "eth_chainId"), "0x7a69");
    // A second deployment on a used chain lands at other addresses (the deployer's nonce
    // moved on): only a fresh chain gives the well-known ones.
    second = await startDevnet({ rpcUrl: anvil.rpcUrl, gateways: 1 });
    assert.notEqual(second.contracts.registry, first.contracts.registry);
  } finally {
    await first.stop();
    await second?.stop();
  }
});

Deno.test("--rpc-url refuses a chain that cannot answer or cannot pay for the seeding", async () => {
  await assert.rejects(
    startDevnet({ rpcUrl: `http://127.0.0.1:${closedPort()}` }),
    /Cannot use the chain at http:\/\/127\.0\.0\.1:\d+: it did not answer eth_chainId/,
  );
  await using poor = await startAnvil({ balanceEther: 1000 });
  await assert.rejects(
    startDevnet({ rpcUrl: poor.rpcUrl }),
    /dev account 0xf39F\w+ holds 1000 ether; expected at least 200000/,
  );
});

Deno.test("parseDevnetArgs: --host, --public-host and --rpc-url; every bad value named", () => {
  const parsed = parseDevnetArgs(
    ["--host", "0.0.0.0", "--public-host", "Devnet", "--rpc-url", "http://chain:8545"],
    {},
  );
  assert.ok(!("help" in parsed));
  assert.equal(parsed.hostname, "0.0.0.0");
  assert.equal(parsed.publicHost, "devnet");
  assert.equal(parsed.rpcUrl, "http://chain:8545");
  const v6 = parseDevnetArgs(["--host", "::", "--public-host", "[fd00::1]"], {});
  assert.ok(!("help" in v6));
  assert.equal(v6.hostname, "::");
  assert.equal(v6.publicHost, "fd00::1");
  for (
    const [args, message] of [
      [
        ["--public-host", "devnet:8545"],
        /Cannot use --public-host "devnet:8545": .*; expected a host name or an IP address without a port/,
      ],
      [
        ["--public-host", "http://devnet"],
        /Cannot use --public-host "http:\/\/devnet": .*; expected a host name/,
      ],
      [["--public-host", "..."], /Cannot use --public-host "\.\.\.": .*; expected a host name/],
      [["--host=-x"], /Cannot use --host "-x": .*; expected a host name/],
      [["--host", "a b"], /Cannot use --host "a b": .*; expected a host name/],
      [
        ["--rpc-url", "ws://x:8545"],
        /Cannot use --rpc-url "ws:\/\/x:8545": the scheme ws: is not accepted; expected an http or https URL/,
      ],
      [
        ["--rpc-url", "nope"],
        /Cannot use --rpc-url "nope": not an absolute URL; expected an http or https URL/,
      ],
      [["--ports", "random"], /Cannot use --ports "random": .*; expected one of fixed, ephemeral/],
      [
        ["--gateways", "0"],
        /Cannot use --gateways "0": out of range; expected a whole number, 1 to 64/,
      ],
      [
        ["--verified", "65"],
        /Cannot use --verified "65": out of range; expected a whole number, 0 to 64/,
      ],
      [
        ["--epoch-seconds", "4"],
        /Cannot use --epoch-seconds "4": .*; expected a whole number of seconds, at least 5/,
      ],
      [
        ["--token-delay-ms=-1"],
        /Cannot use --token-delay-ms "-1": .*; expected a whole number of ms/,
      ],
      [
        ["--upstream", "ftp://x"],
        /Cannot use --upstream "ftp:\/\/x": the scheme ftp: is not accepted/,
      ],
    ] as const
  ) {
    assert.throws(() => parseDevnetArgs(args, {}), message);
  }
});

Deno.test("parseDevnetArgs: the defaults, the upstream key from the environment, --help", () => {
  const parsed = parseDevnetArgs([], { NET_UPSTREAM_API_KEY: "sk-test" });
  assert.ok(!("help" in parsed));
  assert.deepEqual(parsed, {
    ports: "fixed",
    stateDir: ".devnet",
    hostname: "127.0.0.1",
    publicHost: undefined,
    rpcUrl: undefined,
    upstream: undefined,
    upstreamApiKey: "sk-test",
    verifiedProviders: 2,
    teeProviders: 1,
    gateways: 2,
    tokenDelayMs: 15,
    epochSeconds: 60,
    payments: "vouchers",
  });
  const help = parseDevnetArgs(["--help"], {});
  assert.ok("help" in help);
  for (
    const flag of [
      "--ports",
      "--state-dir",
      "--host",
      "--public-host",
      "--rpc-url",
      "--upstream",
      "--verified",
      "--tee",
      "--gateways",
      "--token-delay-ms",
      "--payments",
      "--epoch-seconds",
      "NET_UPSTREAM_API_KEY",
    ]
  ) {
    assert.ok(help.help.includes(flag), `--help does not list ${flag}`);
  }
});
