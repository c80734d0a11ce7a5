/**
 * The data types the chain reads return. Amounts are `bigint` in the smallest unit (wei);
 * addresses and hashes are lower-case `0x` hex.
 *
 * @module
 */

import type { Address, Hex } from "viem";

/** The addresses of the network's four contracts (`NET_EVM_*`). */
export interface ChainContracts {
  /** The Registry: providers, validators, routers, approved measurements. */
  registry: Address;
  /** The Staking contract: the canonical stake. */
  staking: Address;
  /** The Emission contract: the reward schedule and totals. */
  emission: Address;
  /** The Escrow: deposits and `Settled` events. */
  escrow: Address;
}

/** Which block a pinned read saw. Every value of the read comes from this block's state. */
export interface BlockRef {
  /** Block number. */
  number: bigint;
  /** Block hash. */
  hash: Hex;
  /** Block timestamp, Unix seconds. */
  timestamp: bigint;
}

/** Which block to read at: a number, or a tag resolved once at the start of the read. */
export type BlockSelector = bigint | "latest" | "safe" | "finalized";

/** A provider's service tier: `0` on chain is `verified`, `1` is `tee`. */
export type ProviderTier = "verified" | "tee";

/** A provider as the Registry lists it. */
export interface ProviderRecord {
  /** The provider's address (its Registry key). */
  address: Address;
  /** keccak256 of the provider's canonical ad (`docs/protocol.md` §1); zero when unset. */
  adCommitment: Hex;
  /** Address of the provider's serving key. */
  trustRoot: Address;
  /** The provider's tier. */
  tier: ProviderTier;
  /** Whether governance lists the provider as active. */
  active: boolean;
}

/** A provider with its stake, as {@linkcode readNetworkState} returns it. */
export interface ProviderState extends ProviderRecord {
  /** The provider's stake in the Staking contract. */
  stake: bigint;
  /** `active && stake >= minProviderBond` (see {@linkcode isBonded}). */
  bonded: boolean;
}

/** A router: its id and the URL that serves `GET /v1/ads`. */
export interface RouterRecord {
  /** The router's id (an address). */
  id: Address;
  /** The router's base URL as stored on chain (not validated by the contract beyond length). */
  url: string;
}

/** The emission schedule: `reward(e) = initialReward >> floor(e / halvingInterval)`. */
export interface EmissionSchedule {
  /** The decay rule; the only one the Emission contract implements. */
  rule: "halving";
  /** Start of epoch 0, Unix seconds. */
  genesisTime: bigint;
  /** Epoch length in seconds. */
  epochLength: bigint;
  /** Reward of epoch 0. */
  initialReward: bigint;
  /** The reward halves every this many epochs. */
  halvingInterval: bigint;
}

/** Emission totals and schedule. */
export interface EmissionState {
  /** Upper bound of `totalEmitted`. */
  cap: bigint;
  /** Sum of everything emitted so far. */
  totalEmitted: bigint;
  /** Number of epochs emitted so far (epochs `0 .. emittedEpochs − 1`). */
  emittedEpochs: bigint;
  /** The epoch of the pinned block's timestamp (0 before genesis). */
  currentEpoch: bigint;
  /** The scheduled reward of the current epoch, before the cap. */
  currentEpochReward: bigint;
  /** The schedule parameters. */
  schedule: EmissionSchedule;
}

/** Staking totals. */
export interface StakingState {
  /** Sum of all stakes. */
  totalStaked: bigint;
  /** The minimum stake of a bonded provider. */
  minProviderBond: bigint;
}

/** Everything the indexer reads from chain, at one block. */
export interface NetworkState {
  /** The block every value was read at. */
  block: BlockRef;
  /** Providers in Registry enumeration order, each with its stake. */
  providers: ProviderState[];
  /** Validator addresses in Registry order. */
  validators: Address[];
  /** Routers in Registry order. */
  routers: RouterRecord[];
  /** Approved TEE measurement ids in Registry order. */
  approvedMeasurements: Hex[];
  /** Emission totals and schedule. */
  emission: EmissionState;
  /** Staking totals. */
  staking: StakingState;
}

/**
 * The bonded rule: a provider is bonded when the Registry lists it active and its stake in the
 * Staking contract is at least the minimum provider bond.
 */
export function isBonded(active: boolean, stake: bigint, minProviderBond: bigint): boolean {
  return active && stake >= minProviderBond;
}
