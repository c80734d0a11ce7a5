// The real entry point as a subprocess: start-up errors, --help, and a full run against a
// real anvil chain and a real router, stopped with SIGTERM.
import assert from "node:assert/strict";
import { checkFrontDoor } from "../_front_door.ts";
import { fileURLToPath } from "node:url";
import { createRouterHandler, type RouterEntry } from "../../devnet/router.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { serve } from "../_http.ts";
import { openStore } from "../../indexer/store/mod.ts";
import { routerEntry } from "./_network.ts";
import { emptyDataDir, freshDataDir } from "./_stores.ts";
import { waitFor } from "../_wait.ts";

const MAIN = fileURLToPath(new URL("../../indexer/main.ts", import.meta.url));
const CONTRACTS = {
  NET_EVM_ESCROW: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
  NET_EVM_STAKING: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
  NET_EVM_EMISSION: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
  NET_EVM_REGISTRY: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
};

/** `indexer/main.ts` with `env` only; its data directory a new empty one unless `env` names one. */
function command(args: string[], env: Record<string, string>): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    env: { NET_STATS_DATA_DIR: emptyDataDir(), ...env, NO_COLOR: "1" },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

async function run(args: string[], env: Record<string, string>) {
  const { code, stdout, stderr } = await command(args, {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: Deno.env.get("HOME") ?? "",
    ...env,
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code, stdout: decode(stdout), stderr: decode(stderr) };
}

Deno.test("main: missing contract addresses stop start-up with a message naming them", async () => {
  const { code, stderr } = await run([], { NET_EVM_STAKING: CONTRACTS.NET_EVM_STAKING });
  assert.equal(code, 2);
  assert.match(
    stderr,
    /NET_EVM_ESCROW, NET_EVM_EMISSION, NET_EVM_REGISTRY are not set; expected the escrow, emission, registry contract addresses/,
  );
  assert.match(stderr, /--help/);
});

Deno.test("main: a bad flag or value stops start-up with a message naming it", async () => {
  const bad = await run(["--refresh-secs", "often"], CONTRACTS);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /Cannot use --refresh-secs "often": not a whole number; expected a whole number of seconds/,
  );
  const unknown = await run(["--port", "1"], CONTRACTS);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Cannot parse the command line: .*--port/);
  const env = await run([], { ...CONTRACTS, NET_EVM_REGISTRY: "registry" });
  assert.equal(env.code, 2);
  assert.match(env.stderr, /Cannot use NET_EVM_REGISTRY "registry"/);
});

Deno.test("main: --help prints every option and exits 0", async () => {
  const { code, stdout } = await run(["--help"], {});
  assert.equal(code, 0);
  assert.match(stdout, /Usage: deno run -A indexer\/main.ts/);
  assert.match(stdout, /NET_EVM_REGISTRY/);
});

Deno.test("main: serves the chain's figures, then shuts down on SIGTERM", async () => {
  let entries: RouterEntry[] = [];
  await using router = serve(createRouterHandler({ source: () => entries }));
  await using chain = await startChainFixture({ providers: 12, routerUrls: [router.url] });
  entries = chain.plan.providers.map(routerEntry);
  const bonded = chain.expected.state.providers.filter((p) => p.bonded).length;
  const dataDir = await freshDataDir();
  const child = command(["--bind", "127.0.0.1:0", "--refresh-secs", "1", "--confirmations", "0"], {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: Deno.env.get("HOME") ?? "",
    NET_STATS_DATA_DIR: dataDir,
    NET_EVM_RPC_URL: chain.anvil.rpcUrl,
    NET_EVM_ESCROW: chain.contracts.escrow,
    NET_EVM_STAKING: chain.contracts.staking,
    NET_EVM_EMISSION: chain.contracts.emission,
    NET_EVM_REGISTRY: chain.contracts.registry,
    NET_STATS_SCAN_FROM_BLOCK: String(chain.deployment.fromBlock),
  }).spawn();
  let exited = false;
  child.status.then(() => (exited = true));
  const stderr = new Response(child.stderr).text();
  let stdout = "";
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let url: string | undefined;
    while (!url) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the indexer exited before listening:\n${stdout}\n${await stderr}`);
      stdout += value;
      url = stdout.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
    }
    const rest = (async () => {
      for (let r = await reader.read(); !r.done; r = await reader.read()) stdout += r.value;
    })();
    // Wait for the first snapshot (the loop refreshes every second); on a busy machine a
    // snapshot may go stale again (503) before the next one, so every read checks its status.
    const stats = async () => {
      const response = await fetch(`${url}/stats`);
      const body = await response.json();
      if (response.status !== 200) return undefined;
      assert.equal(response.headers.get("access-control-allow-origin"), "*");
      return body;
    };
    const failed = () => exited ? `the indexer exited:\n${stdout}` : undefined;
    const body = await waitFor("a snapshot", stats, { failed });
    assert.equal(body.providers.live_verified, bonded);
    assert.equal(body.staked_security, String(chain.expected.state.staking.totalStaked));
    // The settlement history catches up beside the snapshots, in the data directory.
    const { settlements } = await waitFor("the history to be synced", async () => {
      const later = await stats();
      return later?.settlements.synced ? later : undefined;
    }, { failed });
    const total = chain.expected.settlements.reduce((sum, b) => sum + b.settlements, 0);
    assert.equal(settlements.count, total);
    assert.ok((await Deno.stat(`${dataDir}/pgdata`)).isDirectory);
    // The page and the metrics are public data too; the front door closes slow connections.
    for (const path of ["/", "/metrics"]) {
      const page: Response = await fetch(`${url}${path}`);
      assert.equal(page.status, 200, path);
      assert.equal(page.headers.get("access-control-allow-origin"), "*", path);
      await page.body?.cancel();
    }
    await checkFrontDoor(url, { path: "/health" });
    child.kill("SIGTERM");
    const status = await child.status;
    await rest;
    assert.equal(status.code, 0, `${stdout}\n${await stderr}`);
    assert.match(stdout, /SIGTERM received, shutting down/);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await child.status;
    await stderr;
  }
});

Deno.test("main: contracts that are not the network's stop start-up, naming the address", async () => {
  await using chain = await startChainFixture({ empty: true });
  const { registry, staking, emission, escrow } = chain.contracts;
  const env = (contracts: Partial<Record<keyof typeof CONTRACTS, string>>) => ({
    NET_EVM_RPC_URL: chain.anvil.rpcUrl,
    NET_EVM_REGISTRY: registry,
    NET_EVM_STAKING: staking,
    NET_EVM_EMISSION: emission,
    NET_EVM_ESCROW: escrow,
    ...contracts,
  });
  const args = ["--bind", "127.0.0.1:0"];

  // One address swapped with another.
  const swapped = await run(args, env({ NET_EVM_STAKING: emission, NET_EVM_EMISSION: staking }));
  assert.equal(swapped.code, 2, swapped.stdout + swapped.stderr);
  assert.match(
    swapped.stderr,
    new RegExp(
      `Cannot start: .*NET_EVM_STAKING ${emission} is not a Staking contract: .* reverted; it ` +
        "answers as the Emission contract",
    ),
  );
  assert.doesNotMatch(swapped.stdout, /listening on/, "it never served");

  // An address with no code behind it (a plain account).
  const account = chain.accounts.consumer.address.toLowerCase();
  const empty = await run(args, env({ NET_EVM_ESCROW: account }));
  assert.equal(empty.code, 2, empty.stdout + empty.stderr);
  assert.match(empty.stderr, new RegExp(`NET_EVM_ESCROW ${account} has no code`));

  // A typo: an address nothing was ever deployed at.
  const other = await run(args, env({ NET_EVM_REGISTRY: `0x${"0".repeat(39)}1` }));
  assert.equal(other.code, 2);
  assert.match(other.stderr, /NET_EVM_REGISTRY 0x0{39}1 has no code/);
});

Deno.test("main: with the chain down at start it serves 503, then refuses wrong contracts once it answers", async () => {
  await using chain = await startChainFixture({ empty: true });
  const { registry, staking, emission, escrow } = chain.contracts;
  // A proxy that refuses connections until it is opened: the chain is "down" at start.
  let open = false;
  await using proxy = serve(async (req) => {
    if (!open) return new Response("down", { status: 503 });
    return await fetch(chain.anvil.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: await req.text(),
    });
  });
  const child = command(["--bind", "127.0.0.1:0", "--refresh-secs", "1"], {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: Deno.env.get("HOME") ?? "",
    NET_EVM_RPC_URL: proxy.url,
    NET_EVM_REGISTRY: registry,
    NET_EVM_STAKING: escrow, // wrong
    NET_EVM_EMISSION: emission,
    NET_EVM_ESCROW: staking, // wrong
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the indexer exited before listening:\n${stdout}\n${await stderr}`);
    stdout += value;
    url = stdout.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
  }
  const rest = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) stdout += r.value;
  })();
  const health = await fetch(`${url}/health`);
  assert.equal(health.status, 503);
  await health.body?.cancel();
  open = true;
  const status = await child.status;
  await rest;
  const errors = await stderr;
  assert.equal(status.code, 2, stdout + errors);
  assert.match(errors, /cannot check the contracts yet/);
  assert.match(
    errors,
    /Cannot continue: .*NET_EVM_STAKING 0x[0-9a-f]{40} is not a Staking contract/,
  );
});

Deno.test("main: a store of another chain stops start-up (exit 2); --rebuild-history rebuilds it", async () => {
  await using router = serve(createRouterHandler({ source: () => [] }));
  await using chain = await startChainFixture({ providers: 4, routerUrls: [router.url] });
  const dataDir = await freshDataDir();
  const other = await openStore({ dataDir }, {
    chainId: 1,
    escrow: chain.contracts.escrow,
    scanFromBlock: chain.deployment.fromBlock,
    log: () => {},
  });
  await other.close();
  const env = {
    NET_EVM_RPC_URL: chain.anvil.rpcUrl,
    NET_EVM_ESCROW: chain.contracts.escrow,
    NET_EVM_STAKING: chain.contracts.staking,
    NET_EVM_EMISSION: chain.contracts.emission,
    NET_EVM_REGISTRY: chain.contracts.registry,
    NET_STATS_SCAN_FROM_BLOCK: String(chain.deployment.fromBlock),
    NET_STATS_DATA_DIR: dataDir,
  };
  const refused = await run(["--bind", "127.0.0.1:0"], env);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(
    refused.stderr,
    /Cannot use the settlement history: .*belongs to chain id 1, expected 31337/,
  );
  // Rebuilt on request: the store is replaced and the indexer serves (stopped by SIGTERM).
  const child = command(["--bind", "127.0.0.1:0", "--rebuild-history", "--confirmations", "0"], {
    PATH: Deno.env.get("PATH") ?? "",
    HOME: Deno.env.get("HOME") ?? "",
    ...env,
  }).spawn();
  const errors = new Response(child.stderr).text();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let stdout = "";
    let url: string | undefined;
    while (!url) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the indexer exited before listening:\n${stdout}\n${await errors}`);
      stdout += value;
      url = stdout.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
    }
    const rest = (async () => {
      for (let r = await reader.read(); !r.done; r = await reader.read()) stdout += r.value;
    })();
    await waitFor("the rebuilt history to be synced", async () => {
      const response = await fetch(`${url}/stats`);
      const body = await response.json();
      return response.status === 200 && body.settlements.synced ? true : undefined;
    });
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0, await errors);
    await rest;
    assert.match(await errors, /history store: rebuilt/);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await child.status;
  }
});
