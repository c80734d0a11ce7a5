/**
 * `readEscrowAccount`: a consumer's account in the Escrow at one block — its deposit, the part
 * it asked to withdraw (`reserved`: still payable to providers until withdrawn), what new
 * spending can count on (`available = deposit − reserved`), when its withdrawal unlocks — and,
 * given providers, what each was already paid through the consumer's vouchers.
 *
 * @example
 * ```ts ignore
 * import { createChainClient, readEscrowAccount } from "@net/consumer/chain";
 *
 * const client = await createChainClient("http://127.0.0.1:8545");
 * const account = await readEscrowAccount(client, "0x…escrow", "0x…consumer");
 * console.log(`${account.available} wei available at block ${account.block.number}`);
 * ```
 *
 * @module
 */

import type { Address } from "viem";
import { escrowAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import { ChainReadError } from "./errors.ts";
import { callBudget, checkAddress, lower, pinBlock, runPinned } from "./_pinned.ts";
import type { BlockRef, BlockSelector } from "./types.ts";

/** Options of {@linkcode readEscrowAccount}. */
export interface ReadEscrowAccountOptions {
  /**
   * The block to read at.
   *
   * @default {"latest"}
   */
  block?: BlockSelector;
  /**
   * Providers whose voucher totals to read (`Escrow.settledOf(consumer, provider)`).
   *
   * @default {[]}
   */
  providers?: readonly Address[];
  /**
   * Address of a Multicall3-compatible contract.
   *
   * @default {the client chain's `contracts.multicall3`, else viem's deployless multicall}
   */
  multicallAddress?: Address;
}

/** A consumer's Escrow account at one block; amounts in the chain's smallest unit. */
export interface EscrowAccount {
  /** The block read. */
  block: BlockRef;
  /** The consumer (lower case). */
  consumer: Address;
  /** Everything held for the consumer. */
  deposit: bigint;
  /** The part the consumer asked to withdraw (at most the deposit). */
  reserved: bigint;
  /** `deposit − reserved`: what new spending can count on. */
  available: bigint;
  /** When the requested withdrawal unlocks (Unix seconds; 0 when none was requested). */
  unlockAt: bigint;
  /** Per provider asked for (lower case): the total it was paid through vouchers. */
  settled: ReadonlyMap<Address, bigint>;
}

const OPERATION = "read escrow account";

/**
 * Reads a consumer's Escrow account at one block (two round trips).
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed address.
 * @throws {ChainReadError} when the request or a call fails, or the Escrow answers amounts that
 * break its invariants (`reserved + available ≠ deposit`).
 */
export async function readEscrowAccount(
  client: ChainClient,
  escrow: Address,
  consumer: Address,
  options: ReadEscrowAccountOptions = {},
): Promise<EscrowAccount> {
  const escrowAddress = checkAddress(OPERATION, "escrow", escrow);
  const consumerAddress = checkAddress(OPERATION, "consumer", consumer);
  const providers = (options.providers ?? []).map((p) => checkAddress(OPERATION, "provider", p));
  const multicallAddress = options.multicallAddress === undefined
    ? client.chain.contracts?.multicall3?.address
    : checkAddress(OPERATION, "multicallAddress", options.multicallAddress);
  const block = await pinBlock(client, options.block ?? "latest", OPERATION);
  const results = await runPinned({
    client,
    block,
    multicallAddress,
    budget: callBudget(multicallAddress, 1_000_000),
    operation: OPERATION,
  }, [
    {
      address: escrowAddress,
      abi: escrowAbi,
      functionName: "accountOf",
      args: [consumerAddress],
      label: `Escrow.accountOf(${lower(consumerAddress)})`,
      gas: 20_000,
      outBytes: 128,
      inBytes: 36,
    },
    ...providers.map((provider) => ({
      address: escrowAddress,
      abi: escrowAbi,
      functionName: "settledOf",
      args: [consumerAddress, provider],
      label: `Escrow.settledOf(${lower(consumerAddress)}, ${lower(provider)})`,
      gas: 10_000,
      outBytes: 32,
      inBytes: 68,
    })),
  ]);
  const [deposit, reserved, available, unlockAt] = results[0] as readonly bigint[];
  if (reserved + available !== deposit) {
    throw new ChainReadError(
      "invalid_data",
      `Cannot ${OPERATION}: Escrow ${
        lower(escrowAddress)
      } answered deposit ${deposit}, reserved ${reserved}, available ${available}; expected ` +
        "reserved + available = deposit",
    );
  }
  const settled = new Map<Address, bigint>();
  providers.forEach((provider, i) => settled.set(lower(provider), results[i + 1] as bigint));
  return {
    block,
    consumer: lower(consumerAddress),
    deposit,
    reserved,
    available,
    unlockAt,
    settled,
  };
}
