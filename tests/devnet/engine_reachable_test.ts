/**
 * A Docker engine on the machine breaks nothing (issue 20: a reachable engine once crashed the
 * demo and cancelled the chain tests), and Ctrl-C ends the demo cleanly.
 *
 * The engine must answer `GET /_ping` in CI (`.ci/run` starts one), so this cannot pass there
 * without one; on a machine without an engine the same steps run and a line says the engine
 * part was not exercised. The demo is started in its own process group and Ctrl-C is what a
 * terminal sends: SIGINT to the whole group (the demo, `deno task`, the indexer, the daemon).
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { startDevnet } from "../../devnet/network.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { describePing, engineUp, inCI, pingEngine } from "../_engine.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Time allowed to the demo to come up, and to stop after Ctrl-C. */
const READY_MS = 240_000;
const STOP_MS = 60_000;

/**
 * A line that reports a failure: what Ctrl-C printed before (viem's `evm_mine` blocks after
 * anvil was gone, the indexer's `chain_unreachable`) and any error or stack trace.
 */
const ERROR_LINE =
  /\b(error|errors|failed|fail|cannot|unreachable|not serving|uncaught|panic|refused|timed out)\b|viem@|Details:|Request body:|^\s+at /i;

/** Reads a stream into `into.text` as it comes. */
async function collect(stream: ReadableStream<Uint8Array>, into: { text: string }): Promise<void> {
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) into.text += chunk;
}

/** Resolves when `into.text` contains `what`, or rejects when the process ends first or time is up. */
async function waitForText(
  into: { text: string },
  what: string,
  exited: Promise<Deno.CommandStatus>,
  timeoutMs: number,
): Promise<void> {
  let ended = false;
  exited.then(() => (ended = true));
  const deadline = Date.now() + timeoutMs;
  while (!into.text.includes(what)) {
    if (ended) throw new Error(`the demo exited before printing ${JSON.stringify(what)}`);
    if (Date.now() > deadline) {
      throw new Error(
        `the demo did not print ${JSON.stringify(what)} within ${timeoutMs / 1000} s`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
async function listening(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return true;
  } catch {
    return false;
  }
}

const ping = await pingEngine();
if (!engineUp(ping) && !inCI()) {
  console.warn(
    `NOTE: ${describePing(ping)}: engine_reachable_test runs without one; CI (CI=true) fails here`,
  );
}

Deno.test("beside a reachable Docker engine: the chain fixture, the devnet and the demo run; Ctrl-C stops the demo with exit 0 and no error output", async (t) => {
  if (inCI()) assert.ok(engineUp(ping), `${describePing(ping)}; .ci/run starts one`);

  await t.step("the chain fixture", async () => {
    await using chain = await startChainFixture({ providers: 3 });
    assert.equal(await chain.client.getChainId(), chain.anvil.chainId);
    assert.ok(await chain.client.getBlockNumber() > chain.deployment.fromBlock);
  });

  await t.step("the devnet", async () => {
    await using devnet = await startDevnet({ gateways: 1, routers: 1, tokenDelayMs: 0 });
    const response = await fetch(`${devnet.gateways[0]}/v1/gateways`);
    const body = await response.text();
    assert.equal(response.status, 200, body);
    assert.ok(Array.isArray(JSON.parse(body).gateways), body);
  });

  await t.step("the demo, then Ctrl-C", async () => {
    const stateDir = await Deno.makeTempDir({ prefix: "net-demo-ctrl-c-" });
    const child = new Deno.Command(Deno.execPath(), {
      args: ["task", "demo", "--ports", "ephemeral", "--state-dir", stateDir],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      // Its own process group, like a shell's foreground job: Ctrl-C signals all of it.
      detached: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stdout = { text: "" };
    const stderr = { text: "" };
    const read = Promise.all([collect(child.stdout, stdout), collect(child.stderr, stderr)]);
    let signalled = false;
    try {
      await waitForText(stdout, "demo: ready", child.status, READY_MS);
      const chainPort = Number(stdout.text.match(/^ {2}chain +http:\/\/127\.0\.0\.1:(\d+)/m)?.[1]);
      assert.ok(chainPort > 0, `the demo printed no chain URL:\n${stdout.text}`);
      assert.ok(await listening(chainPort), "the demo's chain is not listening");
      const before = { out: stdout.text.length, err: stderr.text.length };

      Deno.kill(-child.pid, "SIGINT");
      signalled = true;
      const timer = setTimeout(() => {
        try {
          Deno.kill(-child.pid, "SIGKILL");
        } catch { /* gone */ }
      }, STOP_MS);
      const status = await child.status.finally(() => clearTimeout(timer));
      await read;

      const after = stdout.text.slice(before.out) + stderr.text.slice(before.err);
      const errors = after.split("\n").filter((line) => ERROR_LINE.test(line));
      assert.deepEqual(errors, [], `Ctrl-C printed errors:\n${after}`);
      assert.equal(status.code, 0, `exit code after Ctrl-C\n${after}`);
      assert.match(stdout.text, /demo: stopping…[\s\S]*demo: stopped\n?$/);
      // The chain was stopped by the demo, not left running in its own process group.
      assert.equal(await listening(chainPort), false, "the demo's anvil outlived it");
    } finally {
      if (!signalled) {
        // A failure before Ctrl-C: stop the demo as a user would (it stops its chain too).
        const timer = setTimeout(() => {
          try {
            Deno.kill(-child.pid, "SIGKILL");
          } catch { /* gone */ }
        }, STOP_MS);
        try {
          Deno.kill(-child.pid, "SIGTERM");
        } catch { /* gone */ }
        await child.status.finally(() => clearTimeout(timer));
        await read.catch(() => {});
      }
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  });
});
