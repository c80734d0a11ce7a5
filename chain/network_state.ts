/**
 * `readNetworkState`: everything the indexer needs from chain — providers with their stake
 * and bonded flag, validators, routers, approved TEE measurements, emission and staking
 * totals — read at one block with a constant number of round trips.
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { emissionAbi, registryAbi, stakingAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import { ChainReadError } from "./errors.ts";
import {
  callBudget,
  checkAddress,
  checkInteger,
  itemsPerCall,
  lower,
  lowerHex,
  pinBlock,
  type PinnedCall,
  type PinnedContext,
  providerFromChain,
  type RawProvider,
  runPinned,
} from "./_pinned.ts";
import {
  type BlockSelector,
  type ChainContracts,
  isBonded,
  type NetworkState,
  type ProviderState,
  type RouterRecord,
} from "./types.ts";

/** Options of {@linkcode readNetworkState}. */
export interface ReadNetworkStateOptions {
  /**
   * The block to read at. A tag is resolved once; every value then comes from that block.
   *
   * @default {"latest"}
   */
  block?: BlockSelector;
  /**
   * Most items per paged getter call. Each set's page is also capped so that its results fit
   * one batch (with deployless multicall: about 120 providers, 9 routers, 600 addresses).
   *
   * @default {250}
   */
  pageSize?: number;
  /**
   * Estimated gas budget of one `eth_call`; batches of calls are split to stay under it.
   * RPC providers cap `eth_call` gas (often at 30–50 M); the estimate is conservative.
   *
   * @default {12_000_000}
   */
  maxGasPerCall?: number;
  /**
   * Address of a Multicall3-compatible contract.
   *
   * @default {the client chain's `contracts.multicall3`, else viem's deployless multicall}
   */
  multicallAddress?: Address;
}

/** Most routers per `routersPage` call with a deployed multicall. */
export const ROUTER_PAGE_SIZE = 32;

// Conservative estimates per returned item: gas, and ABI-encoded size in bytes.
const ITEM = {
  scalar: { gas: 10_000, bytes: 32 },
  provider: { gas: 9_000, bytes: 160 },
  address: { gas: 3_000, bytes: 32 },
  // id, two offsets, length, and a URL of up to 2,048 bytes (the contract's limit).
  router: { gas: 140_000, bytes: 2_176 },
  stake: { gas: 3_000, bytes: 32 },
} as const;

const OPERATION = "read network state";

interface PagedSet {
  name: "providers" | "validators" | "routers" | "measurements";
  count: "providerCount" | "validatorCount" | "routerCount" | "measurementCount";
  page: "providersPage" | "validatorsPage" | "routersPage" | "measurementsPage";
  item: { gas: number; bytes: number };
  pageSize: number;
}

/**
 * Reads the whole network state at one block.
 *
 * Round trips: one `eth_getBlockByNumber`, then three dependent multicall steps — (1) the
 * counts, totals and schedule; (2) every page of every set; (3) the stakes of all providers
 * from the Staking contract (skipped when there are none). Every call is pinned
 * to the block's hash (EIP-1898, canonical required). A step whose calls exceed one
 * `eth_call`'s budget is split into several concurrent `eth_call`s, so the request count
 * grows by one per batch (about 120 providers with deployless multicall, about 1,300 with a
 * deployed one), never per provider.
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed address or option.
 * @throws {ChainReadError} when a request or call fails, or the data breaks an invariant
 * (a page shorter than the count says, a duplicate, an unknown tier).
 */
export async function readNetworkState(
  client: ChainClient,
  contracts: Pick<ChainContracts, "registry" | "staking" | "emission">,
  options: ReadNetworkStateOptions = {},
): Promise<NetworkState> {
  const registry = checkAddress(OPERATION, "registry", contracts.registry);
  const staking = checkAddress(OPERATION, "staking", contracts.staking);
  const emission = checkAddress(OPERATION, "emission", contracts.emission);
  checkInteger(OPERATION, "pageSize", options.pageSize, 1);
  checkInteger(OPERATION, "maxGasPerCall", options.maxGasPerCall, 100_000);
  const pageSize = options.pageSize ?? 250;
  const multicallAddress = options.multicallAddress === undefined
    ? client.chain.contracts?.multicall3?.address
    : checkAddress(OPERATION, "multicallAddress", options.multicallAddress);
  const budget = callBudget(multicallAddress, options.maxGasPerCall ?? 12_000_000);
  const fit = (item: { gas: number; bytes: number }, most: number) =>
    Math.max(
      1,
      Math.min(most, itemsPerCall(budget, item.bytes), Math.floor(budget.gas / 2 / item.gas)),
    );

  const block = await pinBlock(client, options.block ?? "latest", OPERATION);
  const context: PinnedContext = { client, block, multicallAddress, budget, operation: OPERATION };

  const sets: PagedSet[] = [
    { name: "providers", count: "providerCount", page: "providersPage", item: ITEM.provider },
    { name: "validators", count: "validatorCount", page: "validatorsPage", item: ITEM.address },
    { name: "routers", count: "routerCount", page: "routersPage", item: ITEM.router },
    {
      name: "measurements",
      count: "measurementCount",
      page: "measurementsPage",
      item: ITEM.address,
    },
  ].map((set) => ({
    ...set,
    pageSize: fit(
      set.item,
      set.name === "routers" ? Math.min(pageSize, ROUTER_PAGE_SIZE) : pageSize,
    ),
  } as PagedSet));

  const call = (
    address: Address,
    abi: PinnedCall["abi"],
    contract: string,
    functionName: string,
    args: readonly unknown[] = [],
    cost: { gas: number; outBytes: number; inBytes?: number } = {
      gas: ITEM.scalar.gas,
      outBytes: ITEM.scalar.bytes,
    },
  ): PinnedCall => ({
    address,
    abi,
    functionName,
    args,
    label: `${contract}.${functionName}(${
      args.map((a) => Array.isArray(a) ? `[${a.length} items]` : String(a)).join(", ")
    })`,
    gas: cost.gas,
    outBytes: cost.outBytes,
    inBytes: cost.inBytes ?? 4 + 32 * args.length,
  });
  const pageCall = (set: PagedSet, offset: number, size: number) =>
    call(registry, registryAbi, "Registry", set.page, [BigInt(offset), BigInt(size)], {
      gas: ITEM.scalar.gas + size * set.item.gas,
      outBytes: 64 + size * set.item.bytes,
    });
  const stakeSize = fit(ITEM.stake, Number.MAX_SAFE_INTEGER);
  const stakeCalls = (addresses: Address[]) => {
    const calls: PinnedCall[] = [];
    for (let i = 0; i < addresses.length; i += stakeSize) {
      const chunk = addresses.slice(i, i + stakeSize);
      calls.push(call(staking, stakingAbi, "Staking", "stakesOf", [chunk], {
        gas: ITEM.scalar.gas + chunk.length * ITEM.stake.gas,
        outBytes: 64 + chunk.length * ITEM.stake.bytes,
        inBytes: 68 + chunk.length * 32,
      }));
    }
    return calls;
  };

  // Step 1: counts, totals and schedule.
  const emissionFields = [
    "cap",
    "totalEmitted",
    "emittedEpochs",
    "currentEpoch",
    "currentEpochReward",
    "genesisTime",
    "epochLength",
    "initialReward",
    "halvingInterval",
  ] as const;
  const first = await runPinned(context, [
    ...sets.map((set) => call(registry, registryAbi, "Registry", set.count)),
    call(staking, stakingAbi, "Staking", "totalStaked"),
    call(staking, stakingAbi, "Staking", "minProviderBond"),
    ...emissionFields.map((fn) => call(emission, emissionAbi, "Emission", fn)),
  ]);
  const counts = sets.map((set, i) => toCount(first[i] as bigint, set.name));
  const [totalStaked, minProviderBond] = first.slice(sets.length, sets.length + 2) as bigint[];
  const [
    cap,
    totalEmitted,
    emittedEpochs,
    currentEpoch,
    currentEpochReward,
    genesisTime,
    epochLength,
    initialReward,
    halvingInterval,
  ] = first.slice(sets.length + 2) as bigint[];

  // Step 2: every page of every set, sized by the counts.
  const pageCalls: PinnedCall[] = [];
  const owners: number[] = [];
  sets.forEach((set, index) => {
    for (let offset = 0; offset < counts[index]; offset += set.pageSize) {
      pageCalls.push(pageCall(set, offset, Math.min(set.pageSize, counts[index] - offset)));
      owners.push(index);
    }
  });
  const pageResults = await runPinned(context, pageCalls);
  const items: unknown[][] = sets.map(() => []);
  pageResults.forEach((page, i) => items[owners[i]].push(...(page as readonly unknown[])));
  const records = (items[0] as RawProvider[]).map((raw) => providerFromChain(raw, OPERATION));

  // Step 3: the stake of every provider.
  const stakes = (await runPinned(context, stakeCalls(records.map((p) => p.address))))
    .flat() as bigint[];

  if (stakes.length !== records.length) {
    throw new ChainReadError(
      "invalid_data",
      `Cannot ${OPERATION}: Staking.stakesOf returned ${stakes.length} stakes for ${records.length} providers`,
    );
  }
  const all = sets.map((set, i) => {
    if (items[i].length !== counts[i]) {
      throw new ChainReadError(
        "invalid_data",
        `Cannot ${OPERATION}: Registry lists ${items[i].length} ${set.name}, its count says ${
          counts[i]
        }`,
      );
    }
    return items[i];
  });
  const providers: ProviderState[] = records.map((record, i) => ({
    ...record,
    stake: stakes[i],
    bonded: isBonded(record.active, stakes[i], minProviderBond),
  }));
  const validators = (all[1] as Address[]).map(lower);
  const routers: RouterRecord[] = (all[2] as { id: Address; url: string }[]).map((r) => ({
    id: lower(r.id),
    url: r.url,
  }));
  const approvedMeasurements = (all[3] as Hex[]).map(lowerHex);
  unique("providers", providers.map((p) => p.address));
  unique("validators", validators);
  unique("routers", routers.map((r) => r.id));
  unique("measurements", approvedMeasurements);

  return {
    block,
    providers,
    validators,
    routers,
    approvedMeasurements,
    emission: {
      cap,
      totalEmitted,
      emittedEpochs,
      currentEpoch,
      currentEpochReward,
      schedule: { rule: "halving", genesisTime, epochLength, initialReward, halvingInterval },
    },
    staking: { totalStaked, minProviderBond },
  };
}

function toCount(value: bigint, name: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ChainReadError(
      "invalid_data",
      `Cannot ${OPERATION}: Registry reports ${value} ${name}, more than can be read`,
    );
  }
  return Number(value);
}

function unique(name: string, values: string[]): void {
  const seen = new Set<string>();
  for (const value of values) {
    if (seen.has(value)) {
      throw new ChainReadError(
        "invalid_data",
        `Cannot ${OPERATION}: Registry lists ${name} entry ${value} twice`,
      );
    }
    seen.add(value);
  }
}
