/**
 * `scanSettlements`: realized settled volume (amount and tokens) per provider per epoch, from
 * the Escrow's `Settled(provider indexed, epoch indexed, amount, tokens)` logs.
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
 * import { createChainClient, scanSettlements } from "@net/consumer/chain";
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

import { type Address, decodeEventLog, encodeEventTopics, type Hex, numberToHex } from "viem";
import { abbreviate } from "../errors.ts";
import { escrowAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import { ChainConfigError, SettlementScanError } from "./errors.ts";
import { cursorOf, type CursorState, parseCursor, sortedBuckets } from "./_settlement_cursor.ts";

/** Settled volume of one provider in one epoch. */
export interface SettlementBucket {
  /** The provider (lower case). */
  provider: Address;
  /** The epoch of the Emission clock at settlement. */
  epoch: bigint;
  /** Sum of settled amounts. */
  amount: bigint;
  /** Sum of settled tokens. */
  tokens: bigint;
  /** Number of `Settled` events. */
  settlements: number;
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

/** What one call of {@linkcode scanSettlements} did. */
export interface SettlementScanStats {
  /** `eth_getLogs` requests sent, failed ones included. */
  getLogsRequests: number;
  /** How often a range error halved the chunk. */
  shrinks: number;
  /** `Settled` logs counted by this call. */
  logs: number;
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
const SETTLED_TOPIC = encodeEventTopics({ abi: escrowAbi, eventName: "Settled" })[0] as Hex;
/** Successes in a row before the chunk doubles. */
const GROW_AFTER = 2;

interface RawLog {
  address: string;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex | null;
  removed?: boolean;
}

function invalidOption(message: string): ChainConfigError {
  return new ChainConfigError("invalid_option", `Cannot ${OPERATION}: ${message}`);
}

function checkPositive(name: string, value: number | undefined, min: number): void {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < min)) {
    throw invalidOption(`${name} must be an integer ≥ ${min}, found ${value}`);
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

/**
 * Whether an RPC error says the requested log range is too large or returns too much. The
 * wording differs between nodes and providers; all of them mention a range, a limit or a
 * result count.
 */
export function isRangeLimitError(error: unknown): boolean {
  const texts: string[] = [];
  const seen = new Set<unknown>();
  for (
    let current = error as Record<string, unknown> | undefined;
    current && typeof current === "object" && !seen.has(current);
    current = current.cause as Record<string, unknown> | undefined
  ) {
    seen.add(current);
    texts.push(String(current.message ?? ""), String(current.details ?? ""));
    if (current.status === 413) return true;
  }
  const text = texts.join(" ");
  return /block range|range (is )?too (large|wide|big)|too many (results|logs|blocks)|more than \d+ (results|logs)|exceed(s|ed)? (the )?(max|maximum|limit)|limit exceeded|response size|query timeout|max(imum)? (block )?range|log response/i
    .test(text);
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
  const scan = new LogScan(client, escrowAddress, state.totals, {
    chunk: Math.min(options.chunkSize ?? (state.chunk || 2_000), maxChunk),
    maxChunk,
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
    await scan.run(from, end);
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

/**
 * `eth_getLogs` over a block range in adaptive chunks: a range-limit error halves the chunk
 * and retries, {@linkcode GROW_AFTER} successes in a row double it up to `maxChunk`.
 */
class LogScan {
  /** The current chunk size, in blocks. */
  chunk: number;
  /** What the scan did. */
  readonly stats: SettlementScanStats = { getLogsRequests: 0, shrinks: 0, logs: 0 };
  readonly #client: ChainClient;
  readonly #escrow: Address;
  readonly #totals: Map<string, SettlementBucket>;
  readonly #maxChunk: number;
  readonly #signal: AbortSignal | undefined;

  constructor(
    client: ChainClient,
    escrow: Address,
    totals: Map<string, SettlementBucket>,
    options: { chunk: number; maxChunk: number; signal: AbortSignal | undefined },
  ) {
    this.#client = client;
    this.#escrow = escrow;
    this.#totals = totals;
    this.chunk = options.chunk;
    this.#maxChunk = options.maxChunk;
    this.#signal = options.signal;
  }

  /** Adds every `Settled` log of blocks `from` to `end` (inclusive) to the totals. */
  async run(from: bigint, end: bigint): Promise<void> {
    let streak = 0;
    while (from <= end) {
      this.#signal?.throwIfAborted();
      const to = from + BigInt(this.chunk) - 1n < end ? from + BigInt(this.chunk) - 1n : end;
      const logs = await this.#getLogs(from, to);
      if (logs === undefined) {
        streak = 0;
        continue;
      }
      for (const log of logs) addLog(this.#totals, log, this.#escrow, from, to);
      this.stats.logs += logs.length;
      from = to + 1n;
      if (++streak >= GROW_AFTER && this.chunk < this.#maxChunk) {
        this.chunk = Math.min(this.chunk * 2, this.#maxChunk);
        streak = 0;
      }
    }
  }

  /** The logs of one chunk, or `undefined` when the endpoint refused the range (chunk halved). */
  async #getLogs(from: bigint, to: bigint): Promise<RawLog[] | undefined> {
    this.stats.getLogsRequests++;
    try {
      return await this.#client.request({
        method: "eth_getLogs",
        params: [{
          address: this.#escrow,
          topics: [SETTLED_TOPIC],
          fromBlock: numberToHex(from),
          toBlock: numberToHex(to),
        }],
      }) as unknown as RawLog[];
    } catch (cause) {
      if (!isRangeLimitError(cause)) {
        throw new SettlementScanError(
          "rpc",
          `Cannot ${OPERATION}: eth_getLogs for blocks ${from}–${to} failed: ${firstLine(cause)}`,
          { cause },
        );
      }
      const range = Number(to - from + 1n);
      if (range <= 1) {
        throw new SettlementScanError(
          "range_limit",
          `Cannot ${OPERATION}: the endpoint refuses eth_getLogs even for the single block ${from}: ${
            firstLine(cause)
          }`,
          { cause },
        );
      }
      this.chunk = Math.max(1, Math.floor(range / 2));
      this.stats.shrinks++;
      return undefined;
    }
  }
}

function addLog(
  totals: Map<string, SettlementBucket>,
  log: RawLog,
  escrow: string,
  from: bigint,
  to: bigint,
): void {
  const bad = (what: string, cause?: unknown): never => {
    throw new SettlementScanError("invalid_log", `Cannot ${OPERATION}: a log ${what}`, { cause });
  };
  if (log.removed) bad("is marked removed");
  if (typeof log.address !== "string" || log.address.toLowerCase() !== escrow) {
    bad(`comes from ${abbreviate(String(log.address), 44)}, expected the escrow ${escrow}`);
  }
  const block = log.blockNumber === null ? null : BigInt(log.blockNumber);
  if (block === null || block < from || block > to) {
    bad(`is in block ${block}, outside the requested range ${from}–${to}`);
  }
  let decoded;
  try {
    decoded = decodeEventLog({
      abi: escrowAbi,
      eventName: "Settled",
      topics: log.topics as [Hex, ...Hex[]],
      data: log.data,
      strict: true,
    });
  } catch (cause) {
    return bad(`in block ${block} does not decode as Settled: ${firstLine(cause)}`, cause);
  }
  const { provider, epoch, amount, tokens } = decoded.args;
  const address = provider.toLowerCase() as Address;
  const key = `${address}:${epoch}`;
  const bucket = totals.get(key);
  if (bucket) {
    bucket.amount += amount;
    bucket.tokens += tokens;
    bucket.settlements += 1;
  } else {
    totals.set(key, { provider: address, epoch, amount, tokens, settlements: 1 });
  }
}
