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
const DECIMAL = /^(0|[1-9][0-9]*)$/;
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

function parseCursor(value: unknown, escrow: string): {
  next: bigint;
  last: { number: bigint; hash: Hex } | null;
  chunk: number;
  totals: Map<string, SettlementBucket>;
} {
  const bad = (what: string): never => {
    throw new SettlementScanError("bad_cursor", `Cannot ${OPERATION}: cursor ${what}`, {
      hints: ["Start a new scan without a cursor (from the Escrow's deployment block)."],
    });
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return bad("must be an object");
  }
  const cursor = value as Record<string, unknown>;
  const keys = ["version", "escrow", "nextBlock", "lastBlock", "chunkSize", "buckets"];
  for (const key of Object.keys(cursor)) {
    if (!keys.includes(key)) bad(`has an unknown field ${JSON.stringify(key)}`);
  }
  if (cursor.version !== 1) bad(`version is ${JSON.stringify(cursor.version)}, expected 1`);
  if (typeof cursor.escrow !== "string" || cursor.escrow.toLowerCase() !== escrow) {
    bad(`belongs to escrow ${abbreviate(String(cursor.escrow), 44)}, expected ${escrow}`);
  }
  const decimal = (field: string, v: unknown): bigint => {
    if (typeof v !== "string" || !DECIMAL.test(v)) {
      bad(
        `${field} is ${abbreviate(JSON.stringify(v) ?? "nothing", 40)}, expected a decimal string`,
      );
    }
    return BigInt(v as string);
  };
  const next = decimal("nextBlock", cursor.nextBlock);
  const chunk = decimal("chunkSize", cursor.chunkSize);
  if (chunk < 1n || chunk > BigInt(Number.MAX_SAFE_INTEGER)) {
    bad(`chunkSize ${chunk} is out of range`);
  }
  let last: { number: bigint; hash: Hex } | null = null;
  if (cursor.lastBlock !== null) {
    const lb = cursor.lastBlock as Record<string, unknown> | undefined;
    if (typeof lb !== "object" || lb === null) return bad("lastBlock must be an object or null");
    const hash = lb.hash;
    if (typeof hash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(hash)) {
      bad("lastBlock.hash must be a 32-byte hex string");
    }
    last = {
      number: decimal("lastBlock.number", lb.number),
      hash: (hash as string).toLowerCase() as Hex,
    };
    if (last.number + 1n !== next) {
      bad(`lastBlock ${last.number} does not precede nextBlock ${next}`);
    }
  }
  if (!Array.isArray(cursor.buckets)) return bad("buckets must be an array");
  const totals = new Map<string, SettlementBucket>();
  cursor.buckets.forEach((b: unknown, i: number) => {
    const bucket = b as Record<string, unknown>;
    if (typeof bucket !== "object" || bucket === null) bad(`buckets[${i}] must be an object`);
    const provider = bucket.provider;
    if (typeof provider !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(provider)) {
      bad(`buckets[${i}].provider must be an address`);
    }
    const settlements = bucket.settlements;
    if (typeof settlements !== "number" || !Number.isSafeInteger(settlements) || settlements < 1) {
      bad(`buckets[${i}].settlements must be a positive integer`);
    }
    const entry: SettlementBucket = {
      provider: (provider as string).toLowerCase() as Address,
      epoch: decimal(`buckets[${i}].epoch`, bucket.epoch),
      amount: decimal(`buckets[${i}].amount`, bucket.amount),
      tokens: decimal(`buckets[${i}].tokens`, bucket.tokens),
      settlements: settlements as number,
    };
    const key = `${entry.provider}:${entry.epoch}`;
    if (totals.has(key)) bad(`lists provider ${entry.provider} epoch ${entry.epoch} twice`);
    totals.set(key, entry);
  });
  return { next, last, chunk: Number(chunk), totals };
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
  if (typeof escrow !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(escrow)) {
    throw invalidOption(
      `escrow must be a 20-byte 0x address, found ${abbreviate(String(escrow), 44)}`,
    );
  }
  const escrowAddress = escrow.toLowerCase() as Address;
  checkPositive("confirmations", options.confirmations, 0);
  checkPositive("chunkSize", options.chunkSize, 1);
  checkPositive("maxChunkSize", options.maxChunkSize, 1);
  for (const name of ["fromBlock", "toBlock"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "bigint" || value < 0n)) {
      throw invalidOption(`${name} must be a non-negative bigint, found ${String(value)}`);
    }
  }
  const confirmations = BigInt(options.confirmations ?? 12);
  const maxChunk = options.maxChunkSize ?? 10_000;
  const state = options.cursor
    ? parseCursor(options.cursor, escrowAddress)
    : { next: options.fromBlock ?? 0n, last: null, chunk: 0, totals: new Map() };
  let chunk = Math.min(options.chunkSize ?? (state.chunk || 2_000), maxChunk);
  const stats: SettlementScanStats = { getLogsRequests: 0, shrinks: 0, logs: 0 };

  let head: bigint;
  try {
    head = await client.getBlockNumber({ cacheTime: 0 });
  } catch (cause) {
    throw new SettlementScanError(
      "rpc",
      `Cannot ${OPERATION}: the chain head could not be read: ${firstLine(cause)}`,
      { cause },
    );
  }
  if (state.last) {
    const hash = await blockHash(client, state.last.number);
    if (hash !== state.last.hash) {
      throw new SettlementScanError(
        "reorg",
        `Cannot ${OPERATION}: block ${state.last.number} is now ${
          abbreviate(hash, 14)
        }, the cursor counted ${
          abbreviate(state.last.hash, 14)
        }: a reorg deeper than the confirmation depth`,
        { hints: ["Rescan from the Escrow's deployment block, with a larger confirmation depth."] },
      );
    }
  }
  const safe = head - confirmations;
  const end = options.toBlock !== undefined && options.toBlock < safe ? options.toBlock : safe;
  let last = state.last;
  let from = state.next;
  if (end >= from) {
    const endHash = await blockHash(client, end);
    let streak = 0;
    while (from <= end) {
      options.signal?.throwIfAborted();
      const to = from + BigInt(chunk) - 1n < end ? from + BigInt(chunk) - 1n : end;
      let logs: RawLog[];
      stats.getLogsRequests++;
      try {
        logs = await client.request({
          method: "eth_getLogs",
          params: [{
            address: escrowAddress,
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
        chunk = Math.max(1, Math.floor(range / 2));
        stats.shrinks++;
        streak = 0;
        continue;
      }
      for (const log of logs) addLog(state.totals, log, escrowAddress, from, to);
      stats.logs += logs.length;
      from = to + 1n;
      if (++streak >= GROW_AFTER && chunk < maxChunk) {
        chunk = Math.min(chunk * 2, maxChunk);
        streak = 0;
      }
    }
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
  const buckets = [...state.totals.values()].sort((a, b) =>
    a.provider < b.provider
      ? -1
      : a.provider > b.provider
      ? 1
      : a.epoch < b.epoch
      ? -1
      : a.epoch > b.epoch
      ? 1
      : 0
  );
  const cursor: SettlementCursor = {
    version: 1,
    escrow: escrowAddress,
    nextBlock: String(from),
    lastBlock: last ? { number: String(last.number), hash: last.hash } : null,
    chunkSize: String(chunk),
    buckets: buckets.map((b) => ({
      provider: b.provider,
      epoch: String(b.epoch),
      amount: String(b.amount),
      tokens: String(b.tokens),
      settlements: b.settlements,
    })),
  };
  return { buckets, cursor, head, scannedTo: last ? last.number : null, stats };
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
