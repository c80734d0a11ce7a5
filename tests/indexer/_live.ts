/**
 * A live network for the end-to-end tests of the indexer's public face (the page, `/metrics`,
 * the caching proxy): the real devnet (`startDevnet`: contracts, providers, routers, blocks every
 * second, finished epochs emitted) on an anvil this fixture owns, so a test can **stop the chain**
 * and bring it back with its state; a settlement history over several epochs (the Escrow's
 * `settleBatch` from the devnet's settler, the chain's clock moved an epoch at a time); and the
 * real `indexer/main.ts` as a subprocess against it, with its own data directory.
 *
 * @module
 */

import type { Address } from "viem";
import { escrowAbi } from "../../chain/abi.ts";
import { type AnvilInstance, startAnvil } from "../../devnet/anvil.ts";
import { type Devnet, type DevnetOptions, startDevnet } from "../../devnet/network.ts";
import { createSigner, devAccounts, sendAndConfirm } from "../../devnet/signer.ts";
import { waitFor, type WaitOptions } from "../_wait.ts";
import { type IndexerProcess, startIndexer } from "./_indexer_process.ts";
import { xorshift32 } from "../_random.ts";

/** Options of {@linkcode startLiveNetwork}. */
export interface LiveNetworkOptions {
  /** Options of the devnet (its anvil is the fixture's). @default {small: 3 live providers} */
  devnet?: Omit<DevnetOptions, "rpcUrl" | "ports">;
  /** Epochs of settlements to write before the indexer starts. @default {6} */
  settledEpochs?: number;
  /** The devnet's epoch length, seconds. @default {60} */
  epochSeconds?: number;
}

/** A running live network. */
export interface LiveNetwork extends AsyncDisposable {
  /** The devnet. */
  readonly devnet: Devnet;
  /** The chain's JSON-RPC URL. */
  readonly rpcUrl: string;
  /** Stops the chain (the devnet's anvil), keeping its state for {@linkcode startChain}. */
  stopChain(): Promise<void>;
  /** Starts the chain again on the same port, with the state it had when stopped. */
  startChain(): Promise<void>;
  /** Starts `indexer/main.ts` on this network with `args` (plus its data directory). */
  startIndexer(args?: readonly string[]): Promise<IndexerProcess>;
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  if (response.status !== 200) {
    throw new Error(`${method} answered ${response.status}: ${await response.text()}`);
  }
  const body = await response.json();
  if (body.error) throw new Error(`${method} failed: ${JSON.stringify(body.error)}`);
  return body.result;
}

/**
 * Settles `epochs` epochs of usage to the live providers (an uneven amount per provider and
 * epoch, a few tokens each), moving the chain's clock one epoch after each.
 */
async function settleEpochs(devnet: Devnet, epochs: number, epochSeconds: number): Promise<void> {
  const accounts = devAccounts();
  const options = { chainId: devnet.chainId };
  const consumer = createSigner(devnet.rpcUrl, accounts.consumer, options);
  const settler = createSigner(devnet.rpcUrl, accounts.settler, options);
  const next = xorshift32(14);
  const E18 = 10n ** 18n;
  const rounds = Array.from({ length: epochs }, (_, epoch) =>
    devnet.providers.map((p) => ({
      consumer: accounts.consumer.address,
      provider: p.address as Address,
      // 0.5 to 40 tokens, growing with the epoch.
      amount: (BigInt(next() % 40_000) + 500n + BigInt(epoch) * 3_000n) * E18 / 1_000n,
      tokens: BigInt(1_000 + next() % 50_000),
    })).filter((_, i) => (i + epoch) % 4 !== 3));
  await sendAndConfirm(consumer, {
    address: devnet.contracts.escrow,
    abi: escrowAbi,
    functionName: "deposit",
    args: [],
    value: rounds.flat().reduce((sum, s) => sum + s.amount, 0n) + 1n,
  });
  for (const round of rounds) {
    if (round.length > 0) {
      await sendAndConfirm(settler, {
        address: devnet.contracts.escrow,
        abi: escrowAbi,
        functionName: "settleBatch",
        args: [round],
      });
    }
    await rpc(devnet.rpcUrl, "evm_increaseTime", [epochSeconds]);
    await rpc(devnet.rpcUrl, "evm_mine");
  }
}

/** Starts the chain, the devnet on it and its settlement history. */
export async function startLiveNetwork(options: LiveNetworkOptions = {}): Promise<LiveNetwork> {
  let anvil: AnvilInstance | null = await startAnvil({ port: 0 });
  const port = anvil.port;
  const rpcUrl = anvil.rpcUrl;
  const epochSeconds = options.epochSeconds ?? 60;
  let dump: unknown = null;
  const dataDirs: string[] = [];
  const indexers: IndexerProcess[] = [];
  let devnet: Devnet | undefined;
  const stop = async () => {
    for (const indexer of indexers) await indexer.kill();
    await devnet?.stop();
    await anvil?.stop();
    for (const dir of dataDirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    devnet = await startDevnet({
      verifiedProviders: 3,
      teeProviders: 1,
      gateways: 1,
      tokenDelayMs: 0,
      epochSeconds,
      ...options.devnet,
      rpcUrl,
    });
    await settleEpochs(devnet, options.settledEpochs ?? 6, epochSeconds);
  } catch (error) {
    await stop();
    throw error;
  }
  const live = devnet;
  return {
    devnet: live,
    rpcUrl,
    async stopChain() {
      if (!anvil) return;
      dump = await rpc(rpcUrl, "anvil_dumpState");
      await anvil.stop();
      anvil = null;
    },
    async startChain() {
      if (anvil) return;
      anvil = await startAnvil({ port });
      await rpc(rpcUrl, "anvil_loadState", [dump]);
    },
    async startIndexer(args = []) {
      const dataDir = await Deno.makeTempDir({ prefix: "net-live-indexer-" });
      dataDirs.push(dataDir);
      const indexer = await startIndexer(["--data-dir", dataDir, ...args], {
        ...live.env,
        NET_STATS_CONFIRMATIONS: "2",
      });
      indexers.push(indexer);
      return indexer;
    },
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Polls `check` every 100 ms until it returns a value (not `undefined`): a wait on a state,
 * never on a time budget (`tests/_wait.ts`).
 */
export function until<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  options: WaitOptions = {},
): Promise<T> {
  return waitFor(what, check, options);
}
