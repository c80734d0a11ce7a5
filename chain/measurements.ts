/**
 * `readApprovedMeasurements`: the Registry's approved TEE measurement ids at one block — the
 * set a TEE attestation's measurement must belong to (`docs/protocol.md` §6).
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { registryAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import { ChainReadError } from "./errors.ts";
import {
  callBudget,
  checkAddress,
  checkInteger,
  itemsPerCall,
  lowerHex,
  pinBlock,
  runPinned,
} from "./_pinned.ts";
import type { BlockRef, BlockSelector } from "./types.ts";

/** Options of {@linkcode readApprovedMeasurements}. */
export interface ReadApprovedMeasurementsOptions {
  /**
   * The block to read at.
   *
   * @default {"latest"}
   */
  block?: BlockSelector;
  /**
   * Most measurement ids per paged getter call (also capped so one page fits a batch).
   *
   * @default {500}
   */
  pageSize?: number;
  /**
   * Address of a Multicall3-compatible contract.
   *
   * @default {the client chain's `contracts.multicall3`, else viem's deployless multicall}
   */
  multicallAddress?: Address;
}

/** The result of {@linkcode readApprovedMeasurements}. */
export interface MeasurementsReading {
  /** The block the set was read at. */
  block: BlockRef;
  /** The approved measurement ids (lower-case hex, 32 bytes each), in Registry order. */
  measurements: Hex[];
}

const OPERATION = "read approved measurements";

/**
 * Reads the approved TEE measurement set at one block: two round trips when the set fits in
 * one page, three otherwise.
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed address or option.
 * @throws {ChainReadError} when a request or call fails, or the pages disagree with the count.
 */
export async function readApprovedMeasurements(
  client: ChainClient,
  registry: Address,
  options: ReadApprovedMeasurementsOptions = {},
): Promise<MeasurementsReading> {
  const address = checkAddress(OPERATION, "registry", registry);
  checkInteger(OPERATION, "pageSize", options.pageSize, 1);
  const budget = callBudget(
    options.multicallAddress ?? client.chain.contracts?.multicall3?.address,
    12_000_000,
  );
  const pageSize = Math.min(options.pageSize ?? 500, itemsPerCall(budget, 32) - 8);
  const multicallAddress = options.multicallAddress === undefined
    ? client.chain.contracts?.multicall3?.address
    : checkAddress(OPERATION, "multicallAddress", options.multicallAddress);
  const block = await pinBlock(client, options.block ?? "latest", OPERATION);
  const context = {
    client,
    block,
    multicallAddress,
    budget,
    operation: OPERATION,
  };
  const page = (offset: number) => ({
    address,
    abi: registryAbi,
    functionName: "measurementsPage",
    args: [BigInt(offset), BigInt(pageSize)],
    label: `Registry.measurementsPage(${offset}, ${pageSize})`,
    gas: 10_000 + pageSize * 3_000,
    outBytes: 64 + pageSize * 32,
    inBytes: 68,
  });
  const [count, first] = await runPinned(context, [
    {
      address,
      abi: registryAbi,
      functionName: "measurementCount",
      label: "Registry.measurementCount()",
      gas: 10_000,
      outBytes: 32,
      inBytes: 4,
    },
    page(0),
  ]) as [bigint, Hex[]];
  const rest: ReturnType<typeof page>[] = [];
  for (let offset = pageSize; offset < count; offset += pageSize) rest.push(page(offset));
  const more = (await runPinned(context, rest)) as Hex[][];
  const measurements = [...first, ...more.flat()].map(lowerHex);
  if (BigInt(measurements.length) !== count) {
    throw new ChainReadError(
      "invalid_data",
      `Cannot ${OPERATION}: Registry lists ${measurements.length} measurements, its count says ${count}`,
    );
  }
  return { block, measurements };
}
