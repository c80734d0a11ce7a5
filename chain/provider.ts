/**
 * `readProvider`: one provider's Registry record (trust root, tier, active flag, ad
 * commitment) at one block — what the daemon checks a serving key against.
 *
 * @module
 */

import type { Address } from "viem";
import { registryAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import {
  callBudget,
  checkAddress,
  pinBlock,
  providerFromChain,
  type RawProvider,
  runPinned,
} from "./_pinned.ts";
import type { BlockRef, BlockSelector, ProviderRecord } from "./types.ts";

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
}

/** The result of {@linkcode readProvider}. */
export interface ProviderReading {
  /** The block the record was read at. */
  block: BlockRef;
  /** The provider's record, or `null` when the Registry does not list it. */
  provider: ProviderRecord | null;
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
  const block = await pinBlock(client, options.block ?? "latest", OPERATION);
  const [result] = await runPinned(
    {
      client,
      block,
      multicallAddress,
      budget: callBudget(multicallAddress, 1_000_000),
      operation: OPERATION,
    },
    [{
      address: registryAddress,
      abi: registryAbi,
      functionName: "getProvider",
      args: [providerAddress],
      label: `Registry.getProvider(${providerAddress.toLowerCase()})`,
      gas: 20_000,
      outBytes: 192,
      inBytes: 36,
    }],
  );
  const [registered, record] = result as [boolean, RawProvider];
  return { block, provider: registered ? providerFromChain(record, OPERATION) : null };
}
