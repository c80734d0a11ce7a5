/**
 * The ledger is the chain's truth, even through a `kill -9`: `daemon/main.ts` runs as users run
 * it, in its own process, against the devnet (vouchers, real Escrow); 500 mixed requests go
 * through it — streamed, whole, cancelled mid-stream, Ollama's — while one of the two providers
 * fails every fourth request it gets (the daemon fails over to the other), and the daemon is
 * killed with SIGKILL halfway and started again on the same data directory. Once the bills of
 * the cut replies are looked up, the ledger's totals — per provider and in all — equal what the
 * providers redeem at the Escrow, no attempt is recorded without its cost, and none twice.
 */

import assert from "node:assert/strict";
import type { Address } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createChainClient, readEscrowAccount } from "../../../chain/mod.ts";
import {
  type ChatBody,
  type ChatChunk,
  EchoEngine,
  type InferenceEngine,
} from "../../../devnet/engine.ts";
import { EngineError } from "../../../devnet/engine_error.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { okJson } from "../../_http.ts";
import { waitFor } from "../../_wait.ts";
import { spawnDaemon, type SpawnedDaemon } from "../_spawn.ts";

const MODEL = "net/verified/devnet/echo";
const TOTAL = 500;
const CONCURRENCY = 8;
const KILL_AT = 250;

/** The dev model, failing every `every`-th request before its first token (a sealed 502). */
class FlakyEngine implements InferenceEngine {
  #count = 0;
  constructor(readonly inner: EchoEngine, readonly every: number) {}
  models() {
    return this.inner.models();
  }
  complete(body: ChatBody, signal: AbortSignal): AsyncIterable<ChatChunk> {
    if (++this.#count % this.every !== 0) return this.inner.complete(body, signal);
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.reject(new EngineError("upstream", "the flaky engine failed")),
      }),
    };
  }
}

async function started(daemon: SpawnedDaemon): Promise<string> {
  const [, url] = await daemon.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
  return url;
}

/** One request of kind `i % 4`; resolves with what happened to it. */
async function one(url: string, i: number): Promise<string> {
  const content = `request ${i}: ${"word ".repeat(5 + (i % 7))}`;
  const kind = i % 4;
  try {
    if (kind === 3) {
      const response = await fetch(`${url}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: MODEL,
          stream: false,
          messages: [{ role: "user", content }],
        }),
      });
      await response.arrayBuffer();
      return response.status === 200 ? "ollama" : `status ${response.status}`;
    }
    const controller = new AbortController();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        stream: kind !== 1,
        messages: [{ role: "user", content }],
      }),
      signal: controller.signal,
    });
    if (response.status !== 200) {
      await response.arrayBuffer();
      return `status ${response.status}`;
    }
    if (kind === 2) {
      // Cancelled: the first piece read, then the client goes away.
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.cancel().catch(() => {});
      return "cancelled";
    }
    await response.arrayBuffer();
    return kind === 0 ? "streamed" : "whole";
  } catch {
    return "connection lost"; // the daemon was killed under it
  }
}

Deno.test("ledger = chain: 500 mixed requests, failovers, cancels and a kill -9", async () => {
  const stateDir = await Deno.makeTempDir({ prefix: "net-ledger-chain-" });
  await using devnet = await startDevnet({
    tokenDelayMs: 2,
    verifiedProviders: 2,
    teeProviders: 0,
    payments: "vouchers",
    settleIntervalMs: 3_600_000, // settled by hand at the end
    stateDir,
    engine: (label, index) => {
      const echo = new EchoEngine({ tokenDelayMs: 2, servedBy: label });
      return index === 0 ? new FlakyEngine(echo, 4) : echo;
    },
  });
  const key = generatePrivateKey();
  const keyFile = `${stateDir}/consumer-key`;
  await Deno.writeTextFile(keyFile, `${key}\n`, { mode: 0o600 });
  const consumer = privateKeyToAccount(key).address.toLowerCase() as Address;
  await devnet.fundConsumer(consumer, 10n ** 16n);
  const dataDir = `${stateDir}/daemon`;
  const spawn = () =>
    spawnDaemon(["--bind", "127.0.0.1:0", "--network", devnet.profilePath!], {
      NET_DATA_DIR: dataDir,
      NET_CONSUMER_KEY_FILE: keyFile,
    });
  let daemon = spawn();
  const outcomes: string[] = [];
  try {
    // Every request waits for a running daemon: while it restarts, none is sent.
    let running: Promise<string> = started(daemon);
    let next = 0;
    const worker = async () => {
      while (next < TOTAL) {
        const i = next++;
        if (i === KILL_AT) {
          // The kill lands with requests of the other workers in flight.
          running = (async () => {
            daemon.child.kill("SIGKILL");
            await daemon.child.status;
            await daemon.rest();
            daemon = spawn();
            return await started(daemon);
          })();
        }
        outcomes.push(await one(await running, i));
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const served = outcomes.filter((o) => ["streamed", "whole", "ollama"].includes(o)).length;
    assert.ok(served > TOTAL * 0.6, `only ${served} of ${TOTAL} served: ${count(outcomes)}`);
    assert.ok(outcomes.includes("cancelled"));
    // The kill cut requests in flight: their attempts were left open in the ledger.
    assert.ok(outcomes.includes("connection lost"), count(outcomes));

    // Every bill known: the cut replies' (and the ones the kill left open) looked up.
    type Totals = { provider: string; cost: string };
    type Usage = { total: { pending: string; cost: string }; by_provider: Totals[] };
    const url = await running;
    const usage = await waitFor("every bill to be known", async () => {
      const usage = await okJson<Usage>(fetch(`${url}/v1/usage`));
      return usage.total.pending === "0" ? usage : undefined;
    });
    await devnet.settleNow();
    const chain = await createChainClient(devnet.rpcUrl);
    const providers = devnet.providers.map((p) => p.address);
    const account = await readEscrowAccount(chain, devnet.contracts.escrow, consumer, {
      providers,
    });
    let onChain = 0n;
    for (const provider of providers) {
      const settled = account.settled.get(provider) ?? 0n;
      onChain += settled;
      const row = usage.by_provider.find((p) => p.provider === provider);
      assert.equal(String(settled), row?.cost ?? "0", `provider ${provider}`);
    }
    assert.equal(String(onChain), usage.total.cost, "the ledger's total is the chain's");
    assert.ok(onChain > 0n);

    // Each attempt opened once, costed once; both providers were paid (failover happened).
    const opened = new Map<string, number>();
    const costed = new Map<string, number>();
    for await (const entry of Deno.readDir(`${dataDir}/ledger`)) {
      const text = await Deno.readTextFile(`${dataDir}/ledger/${entry.name}`);
      for (const line of text.split("\n").filter(Boolean)) {
        const record = JSON.parse(line);
        const map = record.t === "open" ? opened : costed;
        map.set(record.id, (map.get(record.id) ?? 0) + 1);
      }
    }
    assert.ok(opened.size >= served, `${opened.size} attempts for ${served} served`);
    assert.deepEqual([...opened.values()].filter((n) => n !== 1), [], "an attempt opened twice");
    assert.deepEqual([...costed.values()].filter((n) => n !== 1), [], "an attempt costed twice");
    assert.deepEqual([...opened.keys()].filter((id) => !costed.has(id)), [], "a cost is missing");
    assert.ok(
      usage.by_provider.every((p) => BigInt(p.cost) > 0n) &&
        usage.by_provider.length === 2,
      "both providers were paid",
    );
  } finally {
    try {
      daemon.child.kill("SIGKILL");
    } catch { /* exited */ }
    await daemon.child.status;
    await daemon.rest();
    await Deno.remove(stateDir, { recursive: true });
  }
});

function count(outcomes: string[]): string {
  const counts = new Map<string, number>();
  for (const o of outcomes) counts.set(o, (counts.get(o) ?? 0) + 1);
  return JSON.stringify(Object.fromEntries(counts));
}
