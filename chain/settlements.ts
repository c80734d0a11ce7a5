/**
 * `scanSettlements`: realized settled volume (amount and tokens) per provider per epoch, from
 * the Escrow's `Settled(provider indexed, epoch indexed, amount, tokens)` logs, bucketed by
 * `settlement_buckets.ts`. Not exported by `@net/consumer/chain`: the services read logs with
 * {@linkcode SettlementLogReader}; this whole-history scan checks the devnet's seed and exercises
 * the reader's adaptive chunks in the tests.
 *
 * - Only blocks at least `confirmations` deep are counted, so an ordinary reorg never touches
 *   the totals. A reorg deeper than that is detected (the cursor remembers the hash of the
 *   last block it counted) and refused, never silently mixed in.
 * - `eth_getLogs` runs in chunks whose size adapts to the endpoint: a "range too large" or
 *   "too many results" error halves the range and retries; successes double it again, up to
 *   `maxChunkSize`.
 * - The scan is resumable: the returned cursor is a plain JSON object (bigints as decimal
 *   strings) holding the totals so far and where to continue.
 *
 * @example Scan, save the cursor, resume later
 * ```ts ignore
 * import { createChainClient } from "@net/consumer/chain";
 * import { scanSettlements } from "./settlements.ts";
 *
 * const client = await createChainClient("http://127.0.0.1:8545");
 * const escrow = "0x…";
 * const first = await scanSettlements(client, escrow, { confirmations: 12 });
 * const saved = JSON.stringify(first.cursor);
 * const later = await scanSettlements(client, escrow, { cursor: JSON.parse(saved) });
 * console.log(later.buckets);
 * ```
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { abbreviate } from "../errors.ts";
import type { ChainClient } from "./client.ts";
import { ChainConfigError, SettlementScanError } from "./errors.ts";
import { cursorOf, type CursorState, parseCursor } from "./_settlement_cursor.ts";
import { addSettlement, type SettlementBucket, sortedBuckets } from "./settlement_buckets.ts";
import { firstLine, SettlementLogReader } from "./_settlement_logs.ts";

export type { SettlementBucket };

export {
  decodeSettled,
  DEFAULT_MAX_SETTLEMENTS,
  isRangeLimitError,
  type SettledEvent,
  type SettledRange,
  SettlementLogReader,
  type SettlementLogReaderOptions,
} from "./_settlement_logs.ts";

/** What one call of {@linkcode scanSettlements} (or a {@linkcode SettlementLogReader}) did. */
export interface SettlementScanStats {
  /** `eth_getLogs` requests sent, failed ones included. */
  getLogsRequests: number;
  /** How often a "too much" answer split the chunk. */
  shrinks: number;
  /** `Settled` logs read. */
  logs: number;
}

/** A bucket in a cursor: bigints as decimal strings. */
export interface SettlementBucketJson {
  /** The provider (lower case). */
  provider: string;
  /** Epoch, decimal. */
  epoch: string;
  /** Amount, decimal. */
  amount: string;
  /** Tokens, decimal. */
  tokens: string;
  /** Number of events. */
  settlements: number;
}

/** Where a scan stopped and what it counted: a plain, JSON-serializable object. */
export interface SettlementCursor {
  /** Format version: 1. */
  version: 1;
  /** The Escrow the cursor belongs to (lower case). */
  escrow: string;
  /** The first block not yet scanned, decimal. */
  nextBlock: string;
  /** The last block counted and its hash, for reorg detection; `null` before any. */
  lastBlock: { number: string; hash: string } | null;
  /** The chunk size that worked last, decimal, to start the next scan with. */
  chunkSize: string;
  /** The totals so far. */
  buckets: SettlementBucketJson[];
}

/** The result of {@linkcode scanSettlements}. */
export interface SettlementScan {
  /** All totals (the cursor's plus this scan's), sorted by provider, then epoch. */
  buckets: SettlementBucket[];
  /** Save it and pass it back to continue. */
  cursor: SettlementCursor;
  /** The chain head seen at the start. */
  head: bigint;
  /** The last block counted so far (`head − confirmations` or `toBlock`), or `null`. */
  scannedTo: bigint | null;
  /** What this call did. */
  stats: SettlementScanStats;
}

/** Options of {@linkcode scanSettlements}. */
export interface ScanSettlementsOptions {
  /**
   * A cursor from an earlier scan of the same Escrow; the scan continues after it and the
   * result includes its totals.
   *
   * @default {undefined}
   */
  cursor?: SettlementCursor;
  /**
   * First block to scan when there is no cursor (e.g. the Escrow's deployment block).
   *
   * @default {0n}
   */
  fromBlock?: bigint;
  /**
   * Last block to scan; clipped to `head − confirmations`.
   *
   * @default {head − confirmations}
   */
  toBlock?: bigint;
  /**
   * How deep a block must be to count: blocks above `head − confirmations` are left for a
   * later scan.
   *
   * @default {12}
   */
  confirmations?: number;
  /**
   * Blocks per `eth_getLogs` request at the start (the cursor's last size when resuming).
   *
   * @default {2_000}
   */
  chunkSize?: number;
  /**
   * Largest chunk the scan grows back to after successes.
   *
   * @default {10_000}
   */
  maxChunkSize?: number;
  /**
   * Aborts the scan between requests.
   *
   * @default {undefined}
   */
  signal?: AbortSignal;
}

const OPERATION = "scan settlements";
function invalidOption(message: string): ChainConfigError {
  return new ChainConfigError("invalid_option", `Cannot ${OPERATION}: ${message}`);
}

function checkPositive(name: string, value: number | undefined, min: number): void {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < min)) {
    throw invalidOption(`${name} must be an integer ≥ ${min}, found ${value}`);
  }
}

async function blockHash(client: ChainClient, number: bigint): Promise<Hex> {
  try {
    const block = await client.getBlock({ blockNumber: number });
    if (!block.hash) throw new Error(`block ${number} has no hash`);
    return block.hash.toLowerCase() as Hex;
  } catch (cause) {
    throw new SettlementScanError(
      "rpc",
      `Cannot ${OPERATION}: block ${number} could not be fetched: ${firstLine(cause)}`,
      { cause },
    );
  }
}

/**
 * Scans the Escrow's `Settled` logs from the cursor (or `fromBlock`) up to
 * `head − confirmations` and returns the totals per provider per epoch with a new cursor.
 *
 * @throws {ChainConfigError} `invalid_option` for a malformed address or option.
 * @throws {SettlementScanError} `bad_cursor`, `reorg` (the cursor's last block is no longer
 * canonical, or the chain reorganized below the confirmation depth during the scan),
 * `range_limit` (even one block is refused), `rpc`, or `invalid_log`.
 */
export async function scanSettlements(
  client: ChainClient,
  escrow: Address,
  options: ScanSettlementsOptions = {},
): Promise<SettlementScan> {
  const escrowAddress = checkOptions(escrow, options);
  const confirmations = BigInt(options.confirmations ?? 12);
  const maxChunk = options.maxChunkSize ?? 10_000;
  const state: CursorState = options.cursor
    ? parseCursor(options.cursor, escrowAddress)
    : { next: options.fromBlock ?? 0n, last: null, chunk: 0, totals: new Map() };
  const scan = new SettlementLogReader(client, escrowAddress, {
    chunkSize: Math.min(options.chunkSize ?? (state.chunk || 2_000), maxChunk),
    maxChunkSize: maxChunk,
    signal: options.signal,
  });

  const head = await chainHead(client);
  if (state.last) await checkCursorBlock(client, state.last);
  const safe = head - confirmations;
  const end = options.toBlock !== undefined && options.toBlock < safe ? options.toBlock : safe;
  let last = state.last;
  let from = state.next;
  if (end >= from) {
    const endHash = await blockHash(client, end);
    for await (const range of scan.ranges(from, end)) {
      for (const event of range.events) addSettlement(state.totals, event);
    }
    from = end + 1n;
    const endHashAfter = await blockHash(client, end);
    if (endHashAfter !== endHash) {
      throw new SettlementScanError(
        "reorg",
        `Cannot ${OPERATION}: block ${end} changed from ${abbreviate(endHash, 14)} to ${
          abbreviate(endHashAfter, 14)
        } during the scan: a reorg deeper than the confirmation depth`,
        { hints: ["Retry; if it persists, use a larger confirmation depth."] },
      );
    }
    last = { number: end, hash: endHash };
  }
  const buckets = sortedBuckets(state.totals);
  return {
    buckets,
    cursor: cursorOf(escrowAddress, { next: from, last, chunk: scan.chunk, buckets }),
    head,
    scannedTo: last ? last.number : null,
    stats: scan.stats,
  };
}

/** Checks the escrow address and the options; returns the address in lower case. */
function checkOptions(escrow: Address, options: ScanSettlementsOptions): Address {
  if (typeof escrow !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(escrow)) {
    throw invalidOption(
      `escrow must be a 20-byte 0x address, found ${abbreviate(String(escrow), 44)}`,
    );
  }
  checkPositive("confirmations", options.confirmations, 0);
  checkPositive("chunkSize", options.chunkSize, 1);
  checkPositive("maxChunkSize", options.maxChunkSize, 1);
  for (const name of ["fromBlock", "toBlock"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "bigint" || value < 0n)) {
      throw invalidOption(`${name} must be a non-negative bigint, found ${String(value)}`);
    }
  }
  return escrow.toLowerCase() as Address;
}

async function chainHead(client: ChainClient): Promise<bigint> {
  try {
    return await client.getBlockNumber({ cacheTime: 0 });
  } catch (cause) {
    throw new SettlementScanError(
      "rpc",
      `Cannot ${OPERATION}: the chain head could not be read: ${firstLine(cause)}`,
      { cause },
    );
  }
}

/** The block the cursor counted last must still be canonical. */
async function checkCursorBlock(
  client: ChainClient,
  last: { number: bigint; hash: Hex },
): Promise<void> {
  const hash = await blockHash(client, last.number);
  if (hash !== last.hash) {
    throw new SettlementScanError(
      "reorg",
      `Cannot ${OPERATION}: block ${last.number} is now ${
        abbreviate(hash, 14)
      }, the cursor counted ${
        abbreviate(last.hash, 14)
      }: a reorg deeper than the confirmation depth`,
      { hints: ["Rescan from the Escrow's deployment block, with a larger confirmation depth."] },
    );
  }
}
