/**
 * `readProvider`: one provider's Registry record (trust root, tier, active flag, ad
 * commitment) at one block — what the daemon checks a serving key against — and, given the
 * Staking address, its stake and whether it is bonded, at the same block.
 *
 * @module
 */

import type { Address } from "viem";
import { registryAbi, stakingAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import {
  callBudget,
  checkAddress,
  pinBlock,
  providerFromChain,
  type RawProvider,
  runPinned,
} from "./_pinned.ts";
import { type BlockRef, type BlockSelector, isBonded, type ProviderRecord } from "./types.ts";

/** Options of {@linkcode readProvider}. */
export interface ReadProviderOptions {
  /**
   * The block to read at.
   *
   * @default {"latest"}
   */
  block?: BlockSelector;
  /**
   * Address of a Multicall3-compatible contract.
   *
   * @default {the client chain's `contracts.multicall3`, else viem's deployless multicall}
   */
  multicallAddress?: Address;
  /**
   * The Staking contract: when given, the provider's stake and the bond minimum are read in
   * the same pinned call, and {@linkcode ProviderReading.bond} is set.
   */
  staking?: Address;
}

/** A provider's bond, read from the Staking contract. */
export interface ProviderBond {
  /** The provider's stake (from Staking only). */
  stake: bigint;
  /** The minimum bond of a provider. */
  minProviderBond: bigint;
  /** Registry-active and stake ≥ the minimum (architecture §3). */
  bonded: boolean;
}

/** The result of {@linkcode readProvider}. */
export interface ProviderReading {
  /** The block the record was read at. */
  block: BlockRef;
  /** The provider's record, or `null` when the Registry does not list it. */
  provider: ProviderRecord | null;
  /** The bond, when `staking` was given; `null` otherwise. */
  bond: ProviderBond | null;
}

const OPERATION = "read provider";

/**
 * Reads one provider's Registry record at one block (two round trips).
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed address.
 * @throws {ChainReadError} when the request or the call fails.
 */
export async function readProvider(
  client: ChainClient,
  registry: Address,
  provider: Address,
  options: ReadProviderOptions = {},
): Promise<ProviderReading> {
  const registryAddress = checkAddress(OPERATION, "registry", registry);
  const providerAddress = checkAddress(OPERATION, "provider", provider);
  const multicallAddress = options.multicallAddress === undefined
    ? client.chain.contracts?.multicall3?.address
    : checkAddress(OPERATION, "multicallAddress", options.multicallAddress);
  const stakingAddress = options.staking === undefined
    ? undefined
    : checkAddress(OPERATION, "staking", options.staking);
  const block = await pinBlock(client, options.block ?? "latest", OPERATION);
  const results = await runPinned(
    {
      client,
      block,
      multicallAddress,
      budget: callBudget(multicallAddress, 1_000_000),
      operation: OPERATION,
    },
    [
      {
        address: registryAddress,
        abi: registryAbi,
        functionName: "getProvider",
        args: [providerAddress],
        label: `Registry.getProvider(${providerAddress.toLowerCase()})`,
        gas: 20_000,
        outBytes: 192,
        inBytes: 36,
      },
      ...(stakingAddress
        ? [
          {
            address: stakingAddress,
            abi: stakingAbi,
            functionName: "stakeOf",
            args: [providerAddress],
            label: `Staking.stakeOf(${providerAddress.toLowerCase()})`,
            gas: 10_000,
            outBytes: 32,
            inBytes: 36,
          },
          {
            address: stakingAddress,
            abi: stakingAbi,
            functionName: "minProviderBond",
            args: [],
            label: "Staking.minProviderBond()",
            gas: 10_000,
            outBytes: 32,
            inBytes: 4,
          },
        ]
        : []),
    ],
  );
  const [registered, record] = results[0] as [boolean, RawProvider];
  const found = registered ? providerFromChain(record, OPERATION) : null;
  let bond: ProviderBond | null = null;
  if (stakingAddress) {
    const stake = results[1] as bigint;
    const minProviderBond = results[2] as bigint;
    bond = {
      stake,
      minProviderBond,
      bonded: isBonded(found?.active ?? false, stake, minProviderBond),
    };
  }
  return { block, provider: found, bond };
}
