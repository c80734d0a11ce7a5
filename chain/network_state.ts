/**
 * `readNetworkState`: everything the indexer needs from chain — providers with their stake
 * and bonded flag, validators, routers, approved TEE measurements, emission and staking
 * totals — read at one block with a constant number of round trips.
 *
 * @module
 */

import type { Abi, AbiParameter, Address, Hex } from "viem";
import { emissionAbi, registryAbi, stakingAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import { ChainReadError } from "./errors.ts";
import {
  type CallBudget,
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
  type EmissionState,
  isBonded,
  type NetworkState,
  type ProviderState,
  type RouterRecord,
  type StakingState,
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

/** Every `address` of `params` (nested tuples included) as `uint160`. */
function addressesAsUint160(params: readonly AbiParameter[]): AbiParameter[] {
  return params.map((param) => {
    const components = (param as { components?: readonly AbiParameter[] }).components;
    if (components) return { ...param, components: addressesAsUint160(components) };
    return param.type === "address" ? { ...param, type: "uint160" } : param;
  });
}

/**
 * The ABI with `address` read as `uint160` in one function's outputs: the same encoding (and
 * the same selector: outputs are not part of it), decoded to a bigint instead of a checksummed
 * string. viem checksums (keccak256) every address it decodes, behind a cache of 8,192 entries
 * that a network of more than about 4,000 providers cycles through on every read: at 10,000
 * providers that was a third of the whole read. The addresses are lower-cased hex anyway.
 */
function uint160Outputs(abi: Abi, functionName: string): Abi {
  return abi.map((item) =>
    item.type === "function" && item.name === functionName
      ? { ...item, outputs: addressesAsUint160(item.outputs) }
      : item
  ) as Abi;
}

const PROVIDERS_PAGE_ABI = uint160Outputs(registryAbi, "providersPage");
const ADDRESS_LIMIT = 1n << 160n;

/** A `uint160` read in place of an address, as a lower-case address. */
function uint160Address(value: unknown, what: string): Address {
  if (typeof value !== "bigint" || value < 0n || value >= ADDRESS_LIMIT) {
    throw new ChainReadError(
      "invalid_data",
      `Cannot ${OPERATION}: ${what} is not a 20-byte address`,
    );
  }
  return `0x${value.toString(16).padStart(40, "0")}` as Address;
}

interface PagedSet {
  name: "providers" | "validators" | "routers" | "measurements";
  count: "providerCount" | "validatorCount" | "routerCount" | "measurementCount";
  page: "providersPage" | "validatorsPage" | "routersPage" | "measurementsPage";
  item: { gas: number; bytes: number };
  pageSize: number;
}

const EMISSION_FIELDS = [
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

/** The contracts, checked, and how many items one call may return. */
interface Plan {
  registry: Address;
  staking: Address;
  emission: Address;
  sets: PagedSet[];
  /** Most providers per `Staking.stakesOf` call. */
  stakeBatch: number;
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
  const multicallAddress = options.multicallAddress === undefined
    ? client.chain.contracts?.multicall3?.address
    : checkAddress(OPERATION, "multicallAddress", options.multicallAddress);
  const budget = callBudget(multicallAddress, options.maxGasPerCall ?? 12_000_000);
  const plan = planCalls(registry, staking, emission, budget, options.pageSize ?? 250);

  const block = await pinBlock(client, options.block ?? "latest", OPERATION);
  const context: PinnedContext = { client, block, multicallAddress, budget, operation: OPERATION };
  const totals = await readTotals(context, plan);
  const items = await readPages(context, plan, totals.counts);
  const records = (items[0] as RawProviderWords[]).map((raw) =>
    providerFromChain({
      ...raw,
      provider: uint160Address(raw.provider, "a provider's address"),
      trustRoot: uint160Address(raw.trustRoot, "a provider's trust root"),
    }, OPERATION)
  );
  const stakes = await readStakes(context, plan, records.map((p) => p.address));
  plan.sets.forEach((set, i) => {
    if (items[i].length !== totals.counts[i]) {
      throw new ChainReadError(
        "invalid_data",
        `Cannot ${OPERATION}: Registry lists ${items[i].length} ${set.name}, its count says ${
          totals.counts[i]
        }`,
      );
    }
  });
  const providers: ProviderState[] = records.map((record, i) => ({
    ...record,
    stake: stakes[i],
    bonded: isBonded(record.active, stakes[i], totals.staking.minProviderBond),
  }));
  const validators = (items[1] as Address[]).map(lower);
  const routers: RouterRecord[] = (items[2] as { id: Address; url: string }[]).map((r) => ({
    id: lower(r.id),
    url: r.url,
  }));
  const approvedMeasurements = (items[3] as Hex[]).map(lowerHex);
  unique("providers", providers.map((p) => p.address));
  unique("validators", validators);
  unique("routers", routers.map((r) => r.id));
  unique("measurements", approvedMeasurements);
  const { emission: emissionState, staking: stakingState } = totals;
  return {
    block,
    providers,
    validators,
    routers,
    approvedMeasurements,
    emission: emissionState,
    staking: stakingState,
  };
}

/** A `providersPage` record as read with {@linkcode PROVIDERS_PAGE_ABI}. */
type RawProviderWords = Omit<RawProvider, "provider" | "trustRoot"> & {
  provider: bigint;
  trustRoot: bigint;
};

/** The page size of each set and the stake batch, within the page size and one call's budget. */
function planCalls(
  registry: Address,
  staking: Address,
  emission: Address,
  budget: CallBudget,
  pageSize: number,
): Plan {
  const fit = (item: { gas: number; bytes: number }, most: number) =>
    Math.max(
      1,
      Math.min(most, itemsPerCall(budget, item.bytes), Math.floor(budget.gas / 2 / item.gas)),
    );
  const sets = [
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
  return {
    registry,
    staking,
    emission,
    sets,
    stakeBatch: fit(ITEM.stake, Number.MAX_SAFE_INTEGER),
  };
}

/** One call of a batch, labelled for messages, with its estimated cost. */
function contractCall(
  address: Address,
  abi: PinnedCall["abi"],
  contract: string,
  functionName: string,
  args: readonly unknown[] = [],
  cost: { gas: number; outBytes: number; inBytes?: number } = {
    gas: ITEM.scalar.gas,
    outBytes: ITEM.scalar.bytes,
  },
): PinnedCall {
  return {
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
  };
}

/** Step 1: the four set counts, the staking totals, the emission values and schedule. */
async function readTotals(
  context: PinnedContext,
  { registry, staking, emission, sets }: Plan,
): Promise<{ counts: number[]; staking: StakingState; emission: EmissionState }> {
  const first = await runPinned(context, [
    ...sets.map((set) => contractCall(registry, registryAbi, "Registry", set.count)),
    contractCall(staking, stakingAbi, "Staking", "totalStaked"),
    contractCall(staking, stakingAbi, "Staking", "minProviderBond"),
    ...EMISSION_FIELDS.map((fn) => contractCall(emission, emissionAbi, "Emission", fn)),
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
  return {
    counts,
    staking: { totalStaked, minProviderBond },
    emission: {
      cap,
      totalEmitted,
      emittedEpochs,
      currentEpoch,
      currentEpochReward,
      schedule: { rule: "halving", genesisTime, epochLength, initialReward, halvingInterval },
    },
  };
}

/** Step 2: every page of every set, sized by the counts. */
async function readPages(
  context: PinnedContext,
  { registry, sets }: Plan,
  counts: number[],
): Promise<unknown[][]> {
  const pageCalls: PinnedCall[] = [];
  const owners: number[] = [];
  sets.forEach((set, index) => {
    for (let offset = 0; offset < counts[index]; offset += set.pageSize) {
      const size = Math.min(set.pageSize, counts[index] - offset);
      const abi = set.page === "providersPage" ? PROVIDERS_PAGE_ABI : registryAbi;
      pageCalls.push(
        contractCall(registry, abi, "Registry", set.page, [BigInt(offset), BigInt(size)], {
          gas: ITEM.scalar.gas + size * set.item.gas,
          outBytes: 64 + size * set.item.bytes,
        }),
      );
      owners.push(index);
    }
  });
  const pageResults = await runPinned(context, pageCalls);
  const items: unknown[][] = sets.map(() => []);
  pageResults.forEach((page, i) => items[owners[i]].push(...(page as readonly unknown[])));
  return items;
}

/** Step 3: the stake of every provider, in batches; one stake per provider. */
async function readStakes(
  context: PinnedContext,
  { staking, stakeBatch }: Plan,
  addresses: Address[],
): Promise<bigint[]> {
  const calls: PinnedCall[] = [];
  for (let i = 0; i < addresses.length; i += stakeBatch) {
    const chunk = addresses.slice(i, i + stakeBatch);
    calls.push(contractCall(staking, stakingAbi, "Staking", "stakesOf", [chunk], {
      gas: ITEM.scalar.gas + chunk.length * ITEM.stake.gas,
      outBytes: 64 + chunk.length * ITEM.stake.bytes,
      inBytes: 68 + chunk.length * 32,
    }));
  }
  const stakes = (await runPinned(context, calls)).flat() as bigint[];
  if (stakes.length !== addresses.length) {
    throw new ChainReadError(
      "invalid_data",
      `Cannot ${OPERATION}: Staking.stakesOf returned ${stakes.length} stakes for ${addresses.length} providers`,
    );
  }
  return stakes;
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
