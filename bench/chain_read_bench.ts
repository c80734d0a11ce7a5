/**
 * A full network-state read at 10, 100 and 1,000 providers: `readNetworkState` (pinned
 * multicall steps, JSON-RPC batching) against the naive approach of one `readContract` per
 * value, measured in the same run against real anvil chains.
 *
 * Prints a table of HTTP requests and `eth_call`s per read, then `Deno.bench` reports the
 * wall-time ratios (the naive read is each group's baseline).
 *
 * Run: `deno task bench` (or `deno bench -A bench/chain_read_bench.ts`).
 *
 * @module
 */

import type { Address } from "viem";
import { emissionAbi, registryAbi, stakingAbi } from "../chain/abi.ts";
import { type ChainClient, createChainClient } from "../chain/client.ts";
import { readNetworkState } from "../chain/network_state.ts";
import type { ChainContracts } from "../chain/types.ts";
import { type AnvilInstance, startAnvil } from "../devnet/anvil.ts";
import { deployContracts } from "../devnet/deploy.ts";
import { planNetwork, seedNetwork } from "../devnet/seed.ts";
import { createSigner, devAccounts } from "../devnet/signer.ts";

const SIZES = [10, 100, 1_000];
const NAIVE_CONCURRENCY = 32;

interface Counter {
  requests: number;
  calls: number;
  fetch: typeof fetch;
}

function counter(): Counter {
  const state: Counter = {
    requests: 0,
    calls: 0,
    fetch: (input, init) => {
      state.requests++;
      const body = JSON.parse(String(init?.body ?? "null"));
      state.calls += Array.isArray(body) ? body.length : 1;
      return fetch(input, init);
    },
  };
  return state;
}

interface Network {
  providers: number;
  anvil: AnvilInstance;
  contracts: ChainContracts;
  fast: ChainClient;
  naive: ChainClient;
  fastCount: Counter;
  naiveCount: Counter;
}

/** The naive read: every value through its own `readContract` (and its own HTTP request). */
async function naiveRead(client: ChainClient, contracts: ChainContracts): Promise<number> {
  const { number: blockNumber } = await client.getBlock();
  const read = (address: Address, abi: unknown, functionName: string, args: unknown[] = []) =>
    // deno-lint-ignore no-explicit-any
    client.readContract({ address, abi, functionName, args, blockNumber } as any);
  const inChunks = async <T>(count: number, one: (i: number) => Promise<T>): Promise<T[]> => {
    const out: T[] = [];
    for (let i = 0; i < count; i += NAIVE_CONCURRENCY) {
      const slice = Array.from({ length: Math.min(NAIVE_CONCURRENCY, count - i) }, (_, k) => i + k);
      out.push(...await Promise.all(slice.map(one)));
    }
    return out;
  };
  const { registry, staking, emission } = contracts;
  const counts = await Promise.all(
    ["providerCount", "validatorCount", "routerCount", "measurementCount"].map((fn) =>
      read(registry, registryAbi, fn) as Promise<bigint>
    ),
  );
  const scalars = await Promise.all([
    read(staking, stakingAbi, "totalStaked"),
    read(staking, stakingAbi, "minProviderBond"),
    ...["cap", "totalEmitted", "emittedEpochs", "currentEpoch", "currentEpochReward"]
      .map((fn) => read(emission, emissionAbi, fn)),
    ...["genesisTime", "epochLength", "initialReward", "halvingInterval"]
      .map((fn) => read(emission, emissionAbi, fn)),
  ]);
  const providers = await inChunks(
    Number(counts[0]),
    async (i) =>
      ((await read(registry, registryAbi, "providersPage", [BigInt(i), 1n])) as {
        provider: Address;
      }[])[0],
  );
  const stakes = await inChunks(
    providers.length,
    (i) => read(staking, stakingAbi, "stakeOf", [providers[i].provider]),
  );
  const sets = await Promise.all(
    (["validatorsPage", "routersPage", "measurementsPage"] as const).map((fn, k) =>
      inChunks(Number(counts[k + 1]), (i) => read(registry, registryAbi, fn, [BigInt(i), 1n]))
    ),
  );
  return providers.length + stakes.length + scalars.length + sets.flat().length;
}

async function setUp(providers: number): Promise<Network> {
  const anvil = await startAnvil();
  try {
    const plan = planNetwork({ providers, settledEpochs: 1, settlementsPerEpoch: 2 });
    const owner = createSigner(anvil.rpcUrl, devAccounts().owner, { chainId: anvil.chainId });
    const deployment = await deployContracts(owner, plan.deployment);
    await seedNetwork({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, deployment }, plan);
    const fastCount = counter();
    const naiveCount = counter();
    const fast = await createChainClient(anvil.rpcUrl, { fetch: fastCount.fetch });
    const naive = await createChainClient(anvil.rpcUrl, { fetch: naiveCount.fetch, batchSize: 0 });
    return {
      providers,
      anvil,
      contracts: deployment.contracts,
      fast,
      naive,
      fastCount,
      naiveCount,
    };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

const networks: Network[] = [];
for (const size of SIZES) networks.push(await setUp(size));
globalThis.addEventListener("unload", () => {
  for (const network of networks) void network.anvil.stop();
});

// One measured read of each kind, for the request counts.
const rows: Record<string, string | number>[] = [];
for (const net of networks) {
  net.fastCount.requests = net.fastCount.calls = 0;
  const state = await readNetworkState(net.fast, net.contracts);
  const fast = { ...net.fastCount };
  net.naiveCount.requests = net.naiveCount.calls = 0;
  const values = await naiveRead(net.naive, net.contracts);
  const naive = { ...net.naiveCount };
  if (state.providers.length !== net.providers) throw new Error("read the wrong network");
  rows.push({
    providers: net.providers,
    "values read": values,
    "naive HTTP requests": naive.requests,
    "multicall HTTP requests": fast.requests,
    "multicall eth_calls": fast.calls - 1,
    "HTTP ratio (naive / multicall)": `${(naive.requests / fast.requests).toFixed(0)}×`,
  });
}
console.log("\nRPC cost of one full network-state read (same chains, same run):");
console.table(rows);

for (const net of networks) {
  const group = `${net.providers} providers`;
  Deno.bench({
    name: `naive readContract per value (${net.providers})`,
    group,
    baseline: true,
    n: net.providers >= 1_000 ? 5 : 20,
    warmup: 1,
    async fn() {
      await naiveRead(net.naive, net.contracts);
    },
  });
  Deno.bench({
    name: `readNetworkState (${net.providers})`,
    group,
    n: net.providers >= 1_000 ? 20 : 50,
    warmup: 2,
    async fn() {
      await readNetworkState(net.fast, net.contracts);
    },
  });
}
