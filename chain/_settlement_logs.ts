/**
 * Reading the Escrow's `Settled` logs (private to `chain/`; `settlements.ts` re-exports what
 * others use): the strict decoder of one log, the "too much" recognizer, and
 * {@linkcode SettlementLogReader}, which reads a block range in adaptive chunks and splits a
 * chunk the endpoint cannot answer, down to one block. A settlement paid by a consumer's voucher
 * is followed, in the same transaction, by `VoucherRedeemed`: the reader reads both and gives the
 * settlement the consumer whose signature backs it.
 *
 * @module
 */

import { type Address, encodeEventTopics, type Hex, numberToHex } from "viem";
import { abbreviate } from "../errors.ts";
import { escrowAbi } from "./abi.ts";
import type { ChainClient } from "./client.ts";
import { SettlementScanError } from "./errors.ts";
import type { SettlementScanStats } from "./settlements.ts";

const OPERATION = "scan settlements";
/** The `Settled(address indexed provider, uint256 indexed epoch, uint256, uint256)` topic. */
export const SETTLED_TOPIC: Hex = encodeEventTopics({ abi: escrowAbi, eventName: "Settled" })[0];
/** The `VoucherRedeemed(consumer, provider, epoch, amount, total, seq)` topic. */
export const VOUCHER_REDEEMED_TOPIC: Hex = encodeEventTopics({
  abi: escrowAbi,
  eventName: "VoucherRedeemed",
})[0];
/** Successes in a row before the chunk doubles. */
const GROW_AFTER = 2;
/** Successes in a row before the chunk may grow back to a size that was too much. */
const RETRY_TOO_MUCH_AFTER = 32;

/** One `Settled` event, decoded. */
export interface SettledEvent {
  /** The block it was emitted in. */
  block: bigint;
  /** That block's hash, as the log names it (lower case). */
  blockHash: Hex;
  /** The provider paid (lower case). */
  provider: Address;
  /** The epoch of the Emission clock at settlement. */
  epoch: bigint;
  /** The settled amount. */
  amount: bigint;
  /** The settled tokens. */
  tokens: bigint;
  /**
   * The consumer whose voucher paid it (the `VoucherRedeemed` right after it in the same
   * transaction), or `null` for a settlement by a trusted settler.
   */
  consumer: Address | null;
}

/** A range read by {@linkcode SettlementLogReader}: every `Settled` event of `from`–`to`. */
export interface SettledRange {
  /** First block. */
  from: bigint;
  /** Last block, inclusive. */
  to: bigint;
  /** The events, in the order the endpoint returned them. */
  events: SettledEvent[];
}

/** A log as `eth_getLogs` returns it. */
interface RawLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string | null;
  blockHash: string | null;
  transactionHash?: string | null;
  logIndex?: string | null;
  removed?: boolean;
}

/** The first line of an error's message, with viem's `details` (the node's own words). */
export function firstLine(error: unknown): string {
  if (!(error instanceof Error)) return String(error).split("\n")[0];
  const { shortMessage, details } = error as { shortMessage?: string; details?: string };
  const head = (shortMessage ?? error.message).split("\n")[0];
  const extra = details?.split("\n")[0];
  return extra && !head.includes(extra) ? `${head} (${extra})` : head;
}

/** Error names (anywhere in the cause chain) that mean "this answer is too much". */
const TOO_MUCH_NAMES = new Set(["ResponseBodyTooLargeError", "TimeoutError"]);

/**
 * Whether an RPC error says the requested log range is too large or returns too much: a
 * node's or provider's limit on the block range or the result count (each words it
 * differently: all of them mention a range, a limit or a result count), HTTP 413, viem's
 * response body size limit (10 MiB), or a timeout (the node could not answer in time).
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
    if (current.status === 413 || current.status === 408) return true;
    if (typeof current.name === "string" && TOO_MUCH_NAMES.has(current.name)) return true;
  }
  const text = texts.join(" ");
  return /block range|range (is )?too (large|wide|big)|too many (results|logs|blocks)|more than \d+ (results|logs)|exceed(s|ed)? (the )?(max|maximum|limit)|limit exceeded|response size|query timeout|max(imum)? (block )?range|log response|body exceeded the size limit|(response|body|payload|entity|request) (is )?too large|timed out|took too long/i
    .test(text);
}

const HEX_WORD = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS_TOPIC = /^0x0{24}[0-9a-fA-F]{40}$/;
const SETTLED_DATA = /^0x[0-9a-fA-F]{128}$/;

/**
 * Decodes one log strictly as the Escrow's `Settled` event of blocks `from`–`to`.
 *
 * @throws {SettlementScanError} `invalid_log` naming what is wrong.
 */
export function decodeSettled(
  log: RawLog,
  escrow: Address,
  from: bigint,
  to: bigint,
): SettledEvent {
  const bad = (what: string): never => {
    throw new SettlementScanError("invalid_log", `Cannot ${OPERATION}: a log ${what}`);
  };
  if (typeof log !== "object" || log === null) return bad("is not an object");
  if (log.removed) bad("is marked removed");
  if (typeof log.address !== "string" || log.address.toLowerCase() !== escrow) {
    bad(`comes from ${abbreviate(String(log.address), 44)}, expected the escrow ${escrow}`);
  }
  const block = typeof log.blockNumber === "string" && /^0x[0-9a-fA-F]+$/.test(log.blockNumber)
    ? BigInt(log.blockNumber)
    : null;
  if (block === null || block < from || block > to) {
    bad(`is in block ${block}, outside the requested range ${from}–${to}`);
  }
  if (typeof log.blockHash !== "string" || !HEX_WORD.test(log.blockHash)) {
    bad(`in block ${block} has no block hash`);
  }
  const topics = log.topics;
  if (
    !Array.isArray(topics) || topics.length !== 3 ||
    String(topics[0]).toLowerCase() !== SETTLED_TOPIC || !ADDRESS_TOPIC.test(topics[1]) ||
    !HEX_WORD.test(topics[2])
  ) {
    bad(
      `in block ${block} does not decode as Settled: expected the Settled topic, an address ` +
        "topic and an epoch topic",
    );
  }
  if (typeof log.data !== "string" || !SETTLED_DATA.test(log.data)) {
    bad(
      `in block ${block} does not decode as Settled: its data is ${
        abbreviate(String(log.data), 20)
      }, expected two 32-byte words (amount, tokens)`,
    );
  }
  return {
    block: block!,
    blockHash: log.blockHash!.toLowerCase() as Hex,
    provider: `0x${topics[1].slice(26).toLowerCase()}` as Address,
    epoch: BigInt(topics[2]),
    amount: BigInt(log.data.slice(0, 66)),
    tokens: BigInt(`0x${log.data.slice(66)}`),
    consumer: null,
  };
}

const VOUCHER_DATA = /^0x[0-9a-fA-F]{192}$/;

/**
 * Decodes a chunk's logs: each `Settled`, with the consumer of the `VoucherRedeemed` that
 * follows it in the same transaction (same provider, epoch and amount). A `VoucherRedeemed` with
 * no such `Settled` before it is refused.
 *
 * @throws {SettlementScanError} `invalid_log` naming what is wrong.
 */
export function decodeSettlementLogs(
  logs: readonly RawLog[],
  escrow: Address,
  from: bigint,
  to: bigint,
): SettledEvent[] {
  const events: SettledEvent[] = [];
  const byPosition = new Map<string, SettledEvent>();
  const position = (log: RawLog, offset: number): string | null =>
    typeof log.transactionHash === "string" && typeof log.logIndex === "string" &&
      /^0x[0-9a-fA-F]+$/.test(log.logIndex)
      ? `${log.transactionHash.toLowerCase()}|${BigInt(log.logIndex) + BigInt(offset)}`
      : null;
  const redemptions: RawLog[] = [];
  for (const log of logs) {
    const topic = Array.isArray(log?.topics) ? String(log.topics[0]).toLowerCase() : "";
    if (topic === VOUCHER_REDEEMED_TOPIC) {
      redemptions.push(log);
      continue;
    }
    const event = decodeSettled(log, escrow, from, to);
    events.push(event);
    const at = position(log, 0);
    if (at) byPosition.set(at, event);
  }
  for (const log of redemptions) {
    const bad = (what: string): never => {
      throw new SettlementScanError(
        "invalid_log",
        `Cannot ${OPERATION}: a VoucherRedeemed log ${what}`,
      );
    };
    const topics = log.topics;
    if (
      log.removed || String(log.address).toLowerCase() !== escrow || topics.length !== 4 ||
      !ADDRESS_TOPIC.test(topics[1]) || !ADDRESS_TOPIC.test(topics[2]) ||
      !HEX_WORD.test(topics[3]) || typeof log.data !== "string" || !VOUCHER_DATA.test(log.data)
    ) {
      bad(`at ${abbreviate(String(log.transactionHash), 14)} does not decode as VoucherRedeemed`);
    }
    const at = position(log, -1);
    const settled = at ? byPosition.get(at) : undefined;
    const provider = `0x${topics[2].slice(26).toLowerCase()}`;
    if (
      !settled || settled.consumer !== null || settled.provider !== provider ||
      settled.epoch !== BigInt(topics[3]) || settled.amount !== BigInt(log.data.slice(0, 66))
    ) {
      bad(
        `at ${abbreviate(String(log.transactionHash), 14)} does not follow the Settled event it ` +
          "belongs to (same transaction, the log before it, same provider, epoch and amount)",
      );
    }
    settled!.consumer = `0x${topics[1].slice(26).toLowerCase()}` as Address;
  }
  return events;
}

/** Options of {@linkcode SettlementLogReader}. */
export interface SettlementLogReaderOptions {
  /**
   * Blocks per `eth_getLogs` request at the start.
   *
   * @default {2_000}
   */
  chunkSize?: number;
  /**
   * Largest chunk the reader grows back to after successes.
   *
   * @default {10_000}
   */
  maxChunkSize?: number;
  /**
   * Retries of a request that failed for another reason than "too much" (network, node
   * error), with a doubling delay from 200 ms. A "too much" answer is never retried as is:
   * the range is split.
   *
   * @default {2}
   */
  retries?: number;
  /**
   * Aborts the reading between requests.
   *
   * @default {undefined}
   */
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/**
 * Reads the Escrow's `Settled` events over a block range with `eth_getLogs` in adaptive chunks.
 * An answer that is too much — a range or result-count limit, HTTP 413, viem's response body
 * limit, a timeout ({@linkcode isRangeLimitError}) — halves the chunk and asks again, down to
 * one block; {@linkcode GROW_AFTER} successes in a row double it again, up to `maxChunkSize`,
 * but not back to a size that was too much in the last {@linkcode RETRY_TOO_MUCH_AFTER}
 * chunks (each such try costs a refused answer of up to the endpoint's limit).
 * Chunks are yielded in block order as they are read, so a caller can commit each one and
 * keep what it has when a later one fails.
 */
export class SettlementLogReader {
  /** The current chunk size, in blocks (the next start value for a later reader). */
  chunk: number;
  /** What the reader did so far. */
  readonly stats: SettlementScanStats = { getLogsRequests: 0, shrinks: 0, logs: 0 };
  readonly #client: ChainClient;
  readonly #escrow: Address;
  readonly #maxChunk: number;
  readonly #retries: number;
  readonly #signal: AbortSignal | undefined;
  /** The smallest chunk that was too much lately: growth stops below it for a while. */
  #tooMuch = Infinity;
  #sinceTooMuch = 0;

  /** A reader of `escrow`'s logs through `client`. */
  constructor(client: ChainClient, escrow: Address, options: SettlementLogReaderOptions = {}) {
    this.#client = client;
    this.#escrow = escrow.toLowerCase() as Address;
    this.#maxChunk = options.maxChunkSize ?? 10_000;
    this.chunk = Math.max(1, Math.min(options.chunkSize ?? 2_000, this.#maxChunk));
    this.#retries = options.retries ?? 2;
    this.#signal = options.signal;
  }

  /**
   * Yields every `Settled` event of blocks `from` to `end` (inclusive), one chunk at a time,
   * in block order.
   *
   * @throws {SettlementScanError} `range_limit` when even the single block `from` of a chunk
   * cannot be read (the message names it), `rpc` for any other failure, `invalid_log`.
   */
  async *ranges(from: bigint, end: bigint): AsyncGenerator<SettledRange, void, void> {
    let streak = 0;
    while (from <= end) {
      this.#signal?.throwIfAborted();
      const to = from + BigInt(this.chunk) - 1n < end ? from + BigInt(this.chunk) - 1n : end;
      const logs = await this.#getLogs(from, to);
      if (logs === undefined) {
        streak = 0;
        continue;
      }
      if (!Array.isArray(logs)) {
        throw new SettlementScanError(
          "invalid_log",
          `Cannot ${OPERATION}: eth_getLogs for blocks ${from}–${to} returned ${typeof logs}, ` +
            "expected an array of logs",
        );
      }
      const events = decodeSettlementLogs(logs, this.#escrow, from, to);
      this.stats.logs += events.length;
      yield { from, to, events };
      from = to + 1n;
      if (++this.#sinceTooMuch >= RETRY_TOO_MUCH_AFTER) this.#tooMuch = Infinity;
      const ceiling = Math.min(this.#maxChunk, this.#tooMuch - 1);
      if (++streak >= GROW_AFTER && this.chunk < ceiling) {
        this.chunk = Math.min(this.chunk * 2, ceiling);
        streak = 0;
      }
    }
  }

  /** The logs of one chunk, or `undefined` when the answer was too much (chunk halved). */
  async #getLogs(from: bigint, to: bigint): Promise<RawLog[] | undefined> {
    for (let attempt = 0;; attempt++) {
      this.stats.getLogsRequests++;
      try {
        return await this.#client.request({
          method: "eth_getLogs",
          params: [{
            address: this.#escrow,
            topics: [[SETTLED_TOPIC, VOUCHER_REDEEMED_TOPIC]],
            fromBlock: numberToHex(from),
            toBlock: numberToHex(to),
          }],
        }, { retryCount: 0 }) as unknown as RawLog[];
      } catch (cause) {
        this.#signal?.throwIfAborted();
        if (isRangeLimitError(cause)) return this.#split(from, to, cause);
        if (attempt < this.#retries) {
          await sleep(200 * 2 ** attempt, this.#signal);
          continue;
        }
        throw new SettlementScanError(
          "rpc",
          `Cannot ${OPERATION}: eth_getLogs for blocks ${from}–${to} failed: ${firstLine(cause)}`,
          { cause },
        );
      }
    }
  }

  #split(from: bigint, to: bigint, cause: unknown): undefined {
    const range = Number(to - from + 1n);
    if (range <= 1) {
      throw new SettlementScanError(
        "range_limit",
        `Cannot ${OPERATION}: the endpoint cannot answer eth_getLogs even for the single block ${from}: ${
          firstLine(cause)
        }`,
        { cause },
      );
    }
    this.chunk = Math.max(1, Math.floor(range / 2));
    this.#tooMuch = Math.min(this.#tooMuch, range);
    this.#sinceTooMuch = 0;
    this.stats.shrinks++;
    return undefined;
  }
}
