/**
 * Private helpers of the pinned reads: resolve one block, then run batches of contract calls
 * against exactly that block (EIP-1898 `blockHash`, canonical required) through multicall.
 *
 * @module
 */

import { type Abi, type Address, getAddress, type Hex } from "viem";
import { abbreviate } from "../errors.ts";
import type { ChainClient } from "./client.ts";
import { ChainConfigError, ChainReadError } from "./errors.ts";
import type { BlockRef, BlockSelector, ProviderRecord, ProviderTier } from "./types.ts";

/** One contract call of a batch. */
export interface PinnedCall {
  /** Contract address. */
  address: Address;
  /** The contract's ABI. */
  abi: Abi;
  /** Function to call. */
  functionName: string;
  /** Its arguments. */
  args?: readonly unknown[];
  /** Name for error messages, e.g. `Registry.providersPage(0, 250)`. */
  label: string;
  /** Estimated gas of the call, used to split batches. */
  gas: number;
  /** Estimated size of the ABI-encoded result, in bytes. */
  outBytes: number;
  /** Size of the ABI-encoded call data, in bytes (estimate). */
  inBytes: number;
}

/** Limits of one `eth_call` that carries a batch of calls. */
export interface CallBudget {
  /** Estimated gas. */
  gas: number;
  /** Encoded results, in bytes. */
  outBytes: number;
  /** Encoded call data, in bytes. */
  inBytes: number;
}

/**
 * The budget of one batch. A deployed Multicall has only the gas limit. viem's deployless
 * multicall runs Multicall3 inside a contract-creation call and returns the results as the
 * created contract's code, so the results must stay under the EIP-170 code size limit
 * (24,576 bytes) and the whole creation data under the EIP-3860 init code limit (49,152
 * bytes, of which Multicall3's own code takes about 6 KB); we keep a margin on both.
 */
export function callBudget(
  multicallAddress: Address | undefined,
  maxGasPerCall: number,
): CallBudget {
  return multicallAddress
    ? { gas: maxGasPerCall, outBytes: 8_000_000, inBytes: 8_000_000 }
    : { gas: maxGasPerCall, outBytes: 20_000, inBytes: 36_000 };
}

/** Most items of `itemBytes` each that fit one batch's results (at least 1). */
export function itemsPerCall(budget: CallBudget, itemBytes: number): number {
  return Math.max(1, Math.floor((budget.outBytes - 512) / itemBytes));
}

/** Where and how to run pinned calls. */
export interface PinnedContext {
  /** The client. */
  client: ChainClient;
  /** The block every call reads. */
  block: BlockRef;
  /** Multicall3-compatible address, or `undefined` for deployless. */
  multicallAddress: Address | undefined;
  /** Limits of one `eth_call`. */
  budget: CallBudget;
  /** What the caller is doing, for messages: `read network state`. */
  operation: string;
}

/** Lower-cases an address (protocol §0: output is lower case). */
export function lower(address: string): Address {
  return address.toLowerCase() as Address;
}

/** Validates a caller-provided address option. */
export function checkAddress(operation: string, name: string, value: unknown): Address {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value)) {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot ${operation}: ${name} must be a 20-byte 0x address, found ${
        JSON.stringify(abbreviate(String(value), 44))
      }`,
    );
  }
  return getAddress(value.toLowerCase());
}

/** Validates an integer option. */
export function checkInteger(
  operation: string,
  name: string,
  value: number | undefined,
  min: number,
): void {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < min)) {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot ${operation}: ${name} must be an integer ≥ ${min}, found ${value}`,
    );
  }
}

/** The first line of an error's message, with viem's `details` (the node's own words). */
function firstLine(error: unknown): string {
  if (!(error instanceof Error)) return String(error).split("\n")[0];
  const { shortMessage, details } = error as { shortMessage?: string; details?: string };
  const head = (shortMessage ?? error.message).split("\n")[0];
  const extra = details?.split("\n")[0];
  return extra && !head.includes(extra) ? `${head} (${extra})` : head;
}

/** Resolves the block to pin: number, hash and timestamp, in one request. */
export async function pinBlock(
  client: ChainClient,
  selector: BlockSelector,
  operation: string,
): Promise<BlockRef> {
  if (typeof selector !== "bigint" && !["latest", "safe", "finalized"].includes(selector)) {
    throw new ChainConfigError(
      "invalid_option",
      `Cannot ${operation}: block must be a bigint or "latest", "safe" or "finalized", found ${
        JSON.stringify(String(selector))
      }`,
    );
  }
  let block;
  try {
    block = typeof selector === "bigint"
      ? await client.getBlock({ blockNumber: selector })
      : await client.getBlock({ blockTag: selector });
  } catch (cause) {
    const notFound = (cause as { name?: string }).name === "BlockNotFoundError";
    throw new ChainReadError(
      notFound ? "block_not_found" : "rpc",
      `Cannot ${operation}: block ${String(selector)} ${
        notFound ? "was not found" : `could not be fetched: ${firstLine(cause)}`
      }`,
      { cause },
    );
  }
  if (block.number === null || block.hash === null) {
    throw new ChainReadError(
      "block_not_found",
      `Cannot ${operation}: block ${String(selector)} is pending, expected a mined block`,
    );
  }
  return { number: block.number, hash: block.hash, timestamp: block.timestamp };
}

/**
 * Runs the calls at the pinned block and returns their decoded results in order. Calls are
 * grouped into as few `eth_call`s as the budget allows; the groups run concurrently.
 *
 * @throws {ChainReadError} `call_failed` naming the first call that reverted or returned
 * nothing, `rpc` or `block_not_found` when a request failed.
 */
export async function runPinned(context: PinnedContext, calls: PinnedCall[]): Promise<unknown[]> {
  if (calls.length === 0) return [];
  // Each call's result costs about 4 more words inside aggregate3's result array.
  const OVERHEAD = 128;
  const { budget } = context;
  const groups: PinnedCall[][] = [[]];
  let used = { gas: 0, outBytes: 0, inBytes: 0 };
  for (const call of calls) {
    const current = groups[groups.length - 1];
    const next = {
      gas: used.gas + call.gas,
      outBytes: used.outBytes + call.outBytes + OVERHEAD,
      inBytes: used.inBytes + call.inBytes + OVERHEAD,
    };
    const fits = next.gas <= budget.gas && next.outBytes <= budget.outBytes &&
      next.inBytes <= budget.inBytes;
    if (current.length > 0 && !fits) {
      groups.push([call]);
      used = {
        gas: call.gas,
        outBytes: call.outBytes + OVERHEAD,
        inBytes: call.inBytes + OVERHEAD,
      };
    } else {
      current.push(call);
      used = next;
    }
  }
  const { client, block, multicallAddress } = context;
  const settled = await Promise.allSettled(groups.map((group) =>
    client.multicall({
      contracts: group.map(({ address, abi, functionName, args }) => ({
        address,
        abi,
        functionName,
        args,
      })),
      allowFailure: true,
      batchSize: 0,
      blockHash: block.hash,
      requireCanonical: true,
      ...(multicallAddress ? { multicallAddress } : { deployless: true }),
    })
  ));
  const results: unknown[] = [];
  for (let g = 0; g < groups.length; g++) {
    const outcome = settled[g];
    if (outcome.status === "rejected") {
      throw requestError(context, outcome.reason);
    }
    const group = groups[g];
    for (let i = 0; i < group.length; i++) {
      const result = outcome.value[i] as { status: string; result?: unknown; error?: unknown };
      if (result.status !== "success") {
        const call = group[i];
        // A failure of the whole aggregate (network, unknown block) shows up per call.
        const cause = result.error;
        if (isRequestLevel(cause)) throw requestError(context, cause);
        throw new ChainReadError(
          "call_failed",
          `Cannot ${context.operation}: ${call.label} at ${lower(call.address)} failed: ${
            firstLine(cause)
          }`,
          {
            cause,
            details: `at block ${block.number} (${abbreviate(block.hash, 12)})`,
            hints: ["Check that the address is the right contract on this chain."],
          },
        );
      }
      results.push(result.result);
    }
  }
  return results;
}

function isRequestLevel(error: unknown): boolean {
  let current = error as { name?: string; cause?: unknown } | undefined;
  for (let depth = 0; current && depth < 8; depth++) {
    const name = current.name ?? "";
    if (
      name === "HttpRequestError" || name === "TimeoutError" || name === "RpcRequestError" ||
      name === "InvalidInputRpcError" || name === "ResourceNotFoundRpcError" ||
      name === "InternalRpcError" || name === "LimitExceededRpcError" ||
      name === "UnknownRpcError"
    ) return true;
    current = current.cause as typeof current;
  }
  return false;
}

function requestError(context: PinnedContext, cause: unknown): ChainReadError {
  const text = firstLine(cause);
  const missing = /header not found|unknown block|block not found|not canonical|no state/i.test(
    String((cause as { details?: string })?.details ?? "") + " " +
      String((cause as Error)?.message ?? ""),
  );
  return new ChainReadError(
    missing ? "block_not_found" : "rpc",
    missing
      ? `Cannot ${context.operation}: block ${context.block.number} (${
        abbreviate(context.block.hash, 12)
      }) is no longer available or canonical`
      : `Cannot ${context.operation}: the RPC request failed: ${text}`,
    { cause },
  );
}

/** Shorthand for a hex value that must be lower case in results. */
export function lowerHex(value: Hex): Hex {
  return value.toLowerCase() as Hex;
}

/** A Registry `ProviderRecord` tuple as viem decodes it. */
export type RawProvider = {
  provider: Address;
  adCommitment: Hex;
  trustRoot: Address;
  tier: number;
  active: boolean;
};

/** Converts a Registry `ProviderRecord` tuple; rejects an unknown tier. */
export function providerFromChain(raw: RawProvider, operation: string): ProviderRecord {
  let tier: ProviderTier;
  if (raw.tier === 0) tier = "verified";
  else if (raw.tier === 1) tier = "tee";
  else {
    throw new ChainReadError(
      "invalid_data",
      `Cannot ${operation}: provider ${
        lower(raw.provider)
      } has tier ${raw.tier}, expected 0 (verified) or 1 (tee)`,
    );
  }
  return {
    address: lower(raw.provider),
    adCommitment: lowerHex(raw.adCommitment),
    trustRoot: lower(raw.trustRoot),
    tier,
    active: raw.active,
  };
}
