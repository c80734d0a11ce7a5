/**
 * Reading the Escrow's `Settled` logs (private to `chain/`; `settlements.ts` re-exports what
 * others use): the strict decoder of one log, the "too much" recognizer, and
 * {@linkcode SettlementLogReader}, which reads a block range in adaptive chunks and splits a
 * chunk the endpoint does not answer — whatever the error — down to one block, following the
 * range or the limit the provider names when it names one. A settlement paid by a consumer's
 * voucher is followed, in the same transaction, by `VoucherRedeemed`: the reader reads both and
 * gives the settlement the consumer whose signature backs it.
 *
 * @module
 */

import { type Address, encodeEventTopics, type Hex, numberToHex } from "viem";
import { abbreviate } from "../errors.ts";
import { escrowAbi } from "./abi.ts";
import { type ChainClient, rpcPoolOf } from "./client.ts";
import { SettlementScanError } from "./errors.ts";
import { type LogsRefusal, readLogsRefusal } from "./_logs_refusal.ts";
import type { SettlementScanStats } from "./settlements.ts";

export type { LogsRefusal, LogsRefusalKind } from "./_logs_refusal.ts";

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
/**
 * Default {@linkcode SettlementLogReaderOptions.maxSettlements}: 4,000 settlements are 8,000 logs
 * with their vouchers' redemptions, under the 10,000 logs a response may hold at Infura and
 * Alchemy, and about 5 MiB of JSON. Fewer requests and commits make a first scan faster
 * (measured on anvil, 200,100 settlements, to the full answer: 1,000 2.67–2.88 s, 2,500
 * 2.38–2.45 s, 4,000 2.21–2.32 s, 5,000 1.97–2.11 s).
 */
export const DEFAULT_MAX_SETTLEMENTS = 4_000;
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
  /**
   * With `withBlockHash`: the hash of block `to` on the endpoint that answered the logs (lower
   * case), asked in the same JSON-RPC batch — so the logs come from an endpoint that had
   * reached `to`, and the hash is of the same chain as they are.
   */
  toHash?: Hex;
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

/**
 * Whether an RPC error says the requested log range is too large or returns too much: a
 * node's or provider's limit on the block range or the result count (each words it
 * differently; `_logs_refusal.ts` reads them), HTTP 413 or 408, viem's response body size
 * limit (10 MiB), or a timeout (the node could not answer in time). The reader splits the range
 * on any error; this only says whether the error names the range as the cause.
 */
export function isRangeLimitError(error: unknown): boolean {
  const kind = readLogsRefusal(error, 0n, 0n).kind;
  return kind === "range" || kind === "results";
}

const HEX_WORD = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS_TOPIC = /^0x0{24}[0-9a-fA-F]{40}$/;
const SETTLED_DATA = /^0x[0-9a-fA-F]{128}$/;
const VOUCHER_DATA = /^0x[0-9a-fA-F]{192}$/;
const HEX_NUMBER = /^0x[0-9a-fA-F]+$/;

/**
 * The fields that repeat from log to log of one answer — a block's number and hash, the
 * Escrow's address, a provider's topic, an epoch, a transaction's hash — each checked and
 * converted once: an answer of 1,000 settlements names a dozen providers, a few blocks and
 * epochs (measured: decoding 400,000 logs took 0.56 s of the indexer's thread, most of it
 * checking and converting the same strings again).
 */
export class LogRepeats {
  readonly #escrow: Address;
  /** The last address found to be the Escrow's, as written. */
  #address: string;
  #blockNumber = "";
  #block: bigint | null = null;
  #blockHash = "";
  #hash: Hex | null = null;
  #epochTopic: string | undefined;
  #epoch = 0n;
  #tx = "";
  #txLower = "";
  readonly #providers = new Map<string, Address | null>();

  /** Repeats of the logs of `escrow` (lower case). */
  constructor(escrow: Address) {
    this.#escrow = escrow;
    this.#address = escrow;
  }

  /** Whether `address` is the Escrow's (in any case). */
  isEscrow(address: unknown): boolean {
    if (address === this.#address) return true;
    if (typeof address !== "string" || address.toLowerCase() !== this.#escrow) return false;
    this.#address = address;
    return true;
  }

  /** The block number `raw` names, or `null` when it is not a hex number (`""` is `null`). */
  block(raw: unknown): bigint | null {
    if (raw !== this.#blockNumber) {
      this.#blockNumber = typeof raw === "string" ? raw : "";
      this.#block = typeof raw === "string" && HEX_NUMBER.test(raw) ? BigInt(raw) : null;
    }
    return this.#block;
  }

  /** The block hash `raw` names (lower case), or `null` when it is not a 32-byte word. */
  blockHash(raw: unknown): Hex | null {
    if (raw !== this.#blockHash) {
      this.#blockHash = typeof raw === "string" ? raw : "";
      this.#hash = typeof raw === "string" && HEX_WORD.test(raw) ? raw.toLowerCase() as Hex : null;
    }
    return this.#hash;
  }

  /** The address an address topic holds (lower case), or `null` when it is not one. */
  address(topic: unknown): Address | null {
    if (typeof topic !== "string") return null;
    let address = this.#providers.get(topic);
    if (address === undefined) {
      address = ADDRESS_TOPIC.test(topic) ? `0x${topic.slice(26).toLowerCase()}` as Address : null;
      this.#providers.set(topic, address);
    }
    return address;
  }

  /** The number a 32-byte topic holds, or `null` when it is not one. */
  word(topic: unknown): bigint | null {
    if (typeof topic === "string" && topic === this.#epochTopic) return this.#epoch;
    if (typeof topic !== "string" || !HEX_WORD.test(topic)) return null;
    this.#epochTopic = topic;
    this.#epoch = BigInt(topic);
    return this.#epoch;
  }

  /** A transaction hash, lower case. */
  tx(hash: string): string {
    if (hash !== this.#tx) {
      this.#tx = hash;
      this.#txLower = hash.toLowerCase();
    }
    return this.#txLower;
  }
}

/** Whether `topic` is `expected` (a lower-case topic), in any case. */
function isTopic(topic: unknown, expected: Hex): boolean {
  return topic === expected || (typeof topic === "string" && topic.toLowerCase() === expected);
}

/**
 * Decodes one log strictly as the Escrow's `Settled` event of blocks `from`–`to` (`repeats`:
 * what the other logs of the same answer already checked).
 *
 * @throws {SettlementScanError} `invalid_log` naming what is wrong.
 */
export function decodeSettled(
  log: RawLog,
  escrow: Address,
  from: bigint,
  to: bigint,
  repeats: LogRepeats = new LogRepeats(escrow),
): SettledEvent {
  const bad = (what: string): never => {
    throw new SettlementScanError("invalid_log", `Cannot ${OPERATION}: a log ${what}`);
  };
  if (typeof log !== "object" || log === null) return bad("is not an object");
  if (log.removed) bad("is marked removed");
  if (!repeats.isEscrow(log.address)) {
    bad(`comes from ${abbreviate(String(log.address), 44)}, expected the escrow ${escrow}`);
  }
  const block = repeats.block(log.blockNumber);
  if (block === null || block < from || block > to) {
    bad(`is in block ${block}, outside the requested range ${from}–${to}`);
  }
  const blockHash = repeats.blockHash(log.blockHash);
  if (blockHash === null) bad(`in block ${block} has no block hash`);
  const topics = log.topics;
  const provider = Array.isArray(topics) ? repeats.address(topics[1]) : null;
  const epoch = Array.isArray(topics) ? repeats.word(topics[2]) : null;
  if (
    !Array.isArray(topics) || topics.length !== 3 || !isTopic(topics[0], SETTLED_TOPIC) ||
    provider === null || epoch === null
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
    blockHash: blockHash!,
    provider: provider!,
    epoch: epoch!,
    amount: BigInt(log.data.slice(0, 66)),
    tokens: BigInt(`0x${log.data.slice(66)}`),
    consumer: null,
  };
}

/** A log's place, `offset` logs away: its transaction (lower case) and index, or `null`. */
function position(log: RawLog, offset: number, repeats: LogRepeats): string | null {
  const index = log.logIndex;
  if (typeof log.transactionHash !== "string" || typeof index !== "string") return null;
  if (!HEX_NUMBER.test(index)) return null;
  // Up to 13 hex digits a number holds exactly; past them (never seen), a bigint.
  const at = index.length <= 15
    ? String(parseInt(index, 16) + offset)
    : String(BigInt(index) + BigInt(offset));
  return `${repeats.tx(log.transactionHash)}|${at}`;
}

/** Checks a `VoucherRedeemed` log, and gives the consumer to the `Settled` event it follows. */
function redeem(
  log: RawLog,
  byPosition: Map<string, SettledEvent>,
  repeats: LogRepeats,
): void {
  const bad = (what: string): never => {
    throw new SettlementScanError(
      "invalid_log",
      `Cannot ${OPERATION}: a VoucherRedeemed log ${what}`,
    );
  };
  const topics = log.topics;
  const consumer = repeats.address(topics[1]);
  const provider = repeats.address(topics[2]);
  const epoch = repeats.word(topics[3]);
  if (
    log.removed || !repeats.isEscrow(log.address) || topics.length !== 4 || consumer === null ||
    provider === null || epoch === null || typeof log.data !== "string" ||
    !VOUCHER_DATA.test(log.data)
  ) {
    bad(`at ${abbreviate(String(log.transactionHash), 14)} does not decode as VoucherRedeemed`);
  }
  const at = position(log, -1, repeats);
  const settled = at ? byPosition.get(at) : undefined;
  if (
    !settled || settled.consumer !== null || settled.provider !== provider ||
    settled.epoch !== epoch || settled.amount !== BigInt(log.data.slice(0, 66))
  ) {
    bad(
      `at ${abbreviate(String(log.transactionHash), 14)} does not follow the Settled event it ` +
        "belongs to (same transaction, the log before it, same provider, epoch and amount)",
    );
  }
  settled!.consumer = consumer;
}

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
  const repeats = new LogRepeats(escrow);
  const events: SettledEvent[] = [];
  const byPosition = new Map<string, SettledEvent>();
  const redemptions: RawLog[] = [];
  for (const log of logs) {
    if (Array.isArray(log?.topics) && isTopic(log.topics[0], VOUCHER_REDEEMED_TOPIC)) {
      redemptions.push(log);
      continue;
    }
    const event = decodeSettled(log, escrow, from, to, repeats);
    events.push(event);
    const at = position(log, 0, repeats);
    if (at) byPosition.set(at, event);
  }
  for (const log of redemptions) redeem(log, byPosition, repeats);
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
   * The budget of settlements per step: an answer with more is yielded in steps of at most
   * this many (cut between blocks, so a block that alone holds more is one step), and the next
   * request is sized from the answer's density so that it holds about this many; the chunk
   * doubles only while an answer holds at most half of it. Bounds what a scan holds in memory
   * at once (a JSON-RPC answer, its decoded events, one commit), whatever the chain's density.
   *
   * @default {DEFAULT_MAX_SETTLEMENTS}
   */
  maxSettlements?: number;
  /**
   * Retries of a one-block request that failed (a longer range is split instead), with a
   * doubling delay from 200 ms (or the endpoint's `Retry-After`). After them the reader fails
   * with the reason the last error names.
   *
   * @default {2}
   */
  retries?: number;
  /**
   * Ask the hash of each chunk's last block of the same endpoint, in the same batch as its
   * logs (`SettledRange.toHash`); an endpoint that has not reached that block yet counts as a
   * failure of the chunk. Needs a client of `createChainClient`.
   *
   * @default {false}
   */
  withBlockHash?: boolean;
  /**
   * Aborts the reading between requests (and a wait before one).
   *
   * @default {undefined}
   */
  signal?: AbortSignal;
}

/** What a {@linkcode SettlementLogReader} did, and what the endpoint said last. */
export interface LogReaderStats extends SettlementScanStats {
  /** Failed `eth_getLogs` requests by kind of refusal. */
  refusals: Record<LogsRefusal["kind"], number>;
  /** The smallest limit a provider named (blocks per request), or `null`. */
  namedLimit: number | null;
  /** The last refusal read, or `null`. */
  lastRefusal: LogsRefusal | null;
}

/** A chunk's request in flight: its last block and its answer (`undefined` when it was split). */
interface Request {
  to: bigint;
  answer: Promise<{ logs: RawLog[]; toHash?: Hex } | undefined>;
}

/**
 * `eth_getLogs` requests in flight ahead of the range being decoded: an answer of 1,000
 * settlements is about a MiB of JSON, and while this thread parses and decodes one the endpoint
 * prepares the next two (measured on anvil, 200,100 settlements: 2.65–2.93 s to the full answer
 * with two ahead against 3.04–3.07 s with one).
 */
const REQUESTS_AHEAD = 2;

/** Longest wait before the next request after a rate limit or an unreachable endpoint, ms. */
const MAX_BACKOFF_MS = 5_000;

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
 *
 * **Any error splits the range.** What the error says ({@linkcode readLogsRefusal}) decides
 * how far: a range the provider suggests (`this block range should work: [0x…, 0x…]`) is used
 * as is; a limit it names (`limited to a 10,000 range`, `Max range: 800`) gives the chunk (one
 * block under it) and caps the growth for the reader's life; otherwise the chunk is halved. A
 * rate limit or an unreachable endpoint (HTTP 5xx, no connection) waits first (its
 * `Retry-After`, else a doubling delay up to 5 s) and asks the same range once more before it
 * splits, so random faults do not shrink the chunk. A one-block request that fails is retried `retries` times and then fails
 * with a specific reason: `range_limit` (the endpoint refuses or cannot answer even that block),
 * `rate_limited`, or `rpc`.
 *
 * {@linkcode GROW_AFTER} successes in a row double the chunk again, up to `maxChunkSize`, but
 * not back to a size that was refused as too much in the last {@linkcode RETRY_TOO_MUCH_AFTER}
 * chunks (each such try costs a refused answer). Chunks are yielded in block order as they are
 * read, so a caller can commit each one and keep what it has when a later one fails.
 */
export class SettlementLogReader {
  /** The current chunk size, in blocks (the next start value for a later reader). */
  chunk: number;
  /** What the reader did so far. */
  readonly stats: LogReaderStats = {
    getLogsRequests: 0,
    shrinks: 0,
    logs: 0,
    refusals: { range: 0, results: 0, rate: 0, unreachable: 0, other: 0 },
    namedLimit: null,
    lastRefusal: null,
  };
  readonly #client: ChainClient;
  readonly #escrow: Address;
  readonly #maxChunk: number;
  readonly #maxSettlements: number;
  readonly #retries: number;
  readonly #signal: AbortSignal | undefined;
  readonly #withBlockHash: boolean;
  /** The smallest chunk that was too much lately: growth stops below it for a while. */
  #tooMuch = Infinity;
  #sinceTooMuch = 0;
  /** Blocks per request the provider allows, from its own words. */
  #limit = Infinity;
  /** Failed requests in a row, for the delay after rate limits and unreachable endpoints. */
  #failures = 0;

  /** A reader of `escrow`'s logs through `client`. */
  constructor(client: ChainClient, escrow: Address, options: SettlementLogReaderOptions = {}) {
    this.#client = client;
    this.#escrow = escrow.toLowerCase() as Address;
    this.#maxChunk = options.maxChunkSize ?? 10_000;
    this.chunk = Math.max(1, Math.min(options.chunkSize ?? 2_000, this.#maxChunk));
    this.#maxSettlements = options.maxSettlements ?? DEFAULT_MAX_SETTLEMENTS;
    if (!Number.isSafeInteger(this.#maxSettlements) || this.#maxSettlements < 1) {
      throw new RangeError(
        `maxSettlements is ${this.#maxSettlements}, expected a whole number of at least 1`,
      );
    }
    this.#retries = options.retries ?? 2;
    this.#signal = options.signal;
    this.#withBlockHash = options.withBlockHash ?? false;
  }

  /**
   * Yields every `Settled` event of blocks `from` to `end` (inclusive), one chunk at a time,
   * in block order.
   *
   * @throws {SettlementScanError} when even the single block `from` of a chunk cannot be read
   * (the message names it and the endpoint's words): `range_limit` (refused as too much),
   * `rate_limited`, `rpc` for any other failure; `invalid_log`.
   */
  async *ranges(from: bigint, end: bigint): AsyncGenerator<SettledRange, void, void> {
    let streak = 0;
    // The requests sent ahead, in block order, the first starting at `from`: they are answered
    // while this range is decoded and its steps are used.
    const ahead: Request[] = [];
    while (from <= end) {
      this.#signal?.throwIfAborted();
      // Alone at first and after a split: the chunks ahead are sized from an answer's density.
      if (ahead.length === 0) ahead.push(this.#ask(from, end));
      const { to, answer: asked } = ahead.shift()!;
      const answer = await asked;
      if (answer === undefined) {
        // Split: the requests sent after it started past a range it did not read; their
        // answers are dropped, and the reading goes on from `from`, with the smaller chunk.
        ahead.length = 0;
        streak = 0;
        continue;
      }
      const { logs, toHash } = answer;
      if (!Array.isArray(logs)) {
        throw new SettlementScanError(
          "invalid_log",
          `Cannot ${OPERATION}: eth_getLogs for blocks ${from}–${to} returned ${typeof logs}, ` +
            "expected an array of logs",
        );
      }
      // The next chunk is sized from this answer's settlements (every log that is not a
      // voucher's redemption; decoding checks each), before the steps are yielded (a caller
      // stores it with them), and asked for at once.
      let settled = 0;
      for (const log of logs) {
        if (!isTopic(log?.topics?.[0], VOUCHER_REDEEMED_TOPIC)) settled++;
      }
      const span = Number(to - from + 1n);
      if (++this.#sinceTooMuch >= RETRY_TOO_MUCH_AFTER) this.#tooMuch = Infinity;
      if (settled > this.#maxSettlements) {
        // Too dense: the next request is sized to hold about the budget.
        this.chunk = Math.max(1, Math.floor(span * this.#maxSettlements / settled));
        streak = 0;
      } else if (++streak >= GROW_AFTER && settled * 2 <= this.#maxSettlements) {
        const ceiling = Math.min(this.#maxChunk, this.#limit, this.#tooMuch - 1);
        if (this.chunk < ceiling) {
          this.chunk = Math.min(this.chunk * 2, ceiling);
          streak = 0;
        }
      }
      this.#askAhead(ahead, to, end);
      const events = decodeSettlementLogs(logs, this.#escrow, from, to);
      this.stats.logs += events.length;
      yield* stepsOf({ from, to, events, toHash }, this.#maxSettlements);
      from = to + 1n;
    }
  }

  /**
   * Adds requests to `ahead` (the chunks after `to`, at most to `end`) until it holds
   * {@linkcode REQUESTS_AHEAD}, or one after a failure (until a request succeeds again). Each
   * after the first is sent a turn of the event loop later: requests sent in the same turn go
   * out as one JSON-RPC batch and are answered together, and the next range would then wait for
   * both instead of being decoded while the other is answered.
   */
  #askAhead(ahead: Request[], to: bigint, end: bigint): void {
    const most = this.#failures > 0 ? 1 : REQUESTS_AHEAD;
    let turn = 0;
    for (let last = ahead.at(-1)?.to ?? to; ahead.length < most && last < end; turn++) {
      const request = this.#ask(last + 1n, end, turn);
      ahead.push(request);
      last = request.to;
    }
  }

  /**
   * Sends the request of the chunk from `from` (at most to `end`); its answer is awaited later
   * (a failure meanwhile is not an unhandled rejection).
   */
  #ask(from: bigint, end: bigint, turns = 0): Request {
    const to = from + BigInt(this.chunk) - 1n < end ? from + BigInt(this.chunk) - 1n : end;
    const answer = (async () => {
      for (let turn = 0; turn < turns; turn++) await sleep(0);
      return await this.#getLogs(from, to);
    })();
    answer.catch(() => {});
    return { to, answer };
  }

  /** One chunk's logs (and its last block's hash), or `undefined` when it was split. */
  async #getLogs(
    from: bigint,
    to: bigint,
  ): Promise<{ logs: RawLog[]; toHash?: Hex } | undefined> {
    for (let attempt = 0;; attempt++) {
      this.stats.getLogsRequests++;
      try {
        const answer = await this.#request(from, to);
        this.#failures = 0;
        return answer;
      } catch (cause) {
        this.#signal?.throwIfAborted();
        const refusal = readLogsRefusal(cause, from, to);
        this.stats.refusals[refusal.kind]++;
        this.stats.lastRefusal = refusal;
        this.#failures++;
        const span = Number(to - from + 1n);
        // A rate limit or a gateway error is asked again once as is (a random fault should
        // not shrink the chunk); when it comes back for the same range, the range is split.
        const transient = refusal.kind === "rate" || refusal.kind === "unreachable";
        if (span > 1 && !(transient && attempt === 0)) {
          this.#split(span, refusal);
          await this.#pause(refusal);
          return undefined;
        }
        if (span > 1 || attempt < this.#retries) {
          await this.#pause(refusal, span > 1 ? 0 : 200 * 2 ** attempt);
          continue;
        }
        throw floorFailure(from, refusal, cause);
      }
    }
  }

  async #request(from: bigint, to: bigint): Promise<{ logs: RawLog[]; toHash?: Hex }> {
    const getLogs = {
      method: "eth_getLogs" as const,
      params: [{
        address: this.#escrow,
        topics: [[SETTLED_TOPIC, VOUCHER_REDEEMED_TOPIC]],
        fromBlock: numberToHex(from),
        toBlock: numberToHex(to),
      }] as [{ address: Address; topics: Hex[][]; fromBlock: Hex; toBlock: Hex }],
    };
    if (!this.#withBlockHash) {
      const logs = await this.#client.request(getLogs, { retryCount: 0 });
      return { logs: logs as unknown as RawLog[] };
    }
    const pool = rpcPoolOf(this.#client);
    if (!pool) throw new TypeError("withBlockHash needs a client of createChainClient");
    const [logs, block] = await pool.onOne(
      [
        getLogs,
        { method: "eth_getBlockByNumber", params: [numberToHex(to), false] },
      ],
      this.#signal,
      true,
    );
    const hash = (block as { hash?: unknown } | null)?.hash;
    if (typeof hash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(hash)) {
      throw new Error(
        `the endpoint that answered the logs of blocks ${from}–${to} has no block ${to} yet ` +
          "(it is behind the others)",
      );
    }
    return { logs: logs as RawLog[], toHash: hash.toLowerCase() as Hex };
  }

  /** Waits before the next request: the endpoint's `Retry-After`, or a doubling delay. */
  async #pause(refusal: LogsRefusal, atLeast = 0): Promise<void> {
    const transient = refusal.kind === "rate" || refusal.kind === "unreachable";
    const backoff = transient ? Math.min(MAX_BACKOFF_MS, 100 * 2 ** (this.#failures - 1)) : 0;
    const ms = Math.max(atLeast, refusal.retryAfterMs ?? backoff);
    if (ms > 0) await sleep(Math.min(ms, 60_000), this.#signal);
    this.#signal?.throwIfAborted();
  }

  /** The next chunk after a failed request of `span` blocks. */
  #split(span: number, refusal: LogsRefusal): void {
    let next = Math.floor(span / 2);
    if (refusal.suggested) {
      next = Number(refusal.suggested.to - refusal.suggested.from + 1n);
    } else if (refusal.maxBlocks !== undefined && refusal.maxBlocks - 1 < span) {
      next = Math.max(1, refusal.maxBlocks - 1);
    }
    if (refusal.maxBlocks !== undefined) {
      this.#limit = Math.min(this.#limit, Math.max(1, refusal.maxBlocks - 1));
      this.stats.namedLimit = Math.min(this.stats.namedLimit ?? Infinity, refusal.maxBlocks);
    }
    if (refusal.kind !== "rate" && refusal.kind !== "unreachable") {
      this.#tooMuch = Math.min(this.#tooMuch, span);
      this.#sinceTooMuch = 0;
    }
    this.chunk = Math.max(1, Math.min(next, span - 1));
    this.stats.shrinks++;
  }
}

/**
 * A chunk's events in steps of at most `budget` settlements, cut between blocks (a block that
 * alone holds more is one step), in block order and covering `from` to `to`. A step that ends
 * before `to` ends at its last event's block and carries that block's hash as the logs name it
 * (same endpoint, same answer), when the chunk carries one.
 */
function* stepsOf(range: SettledRange, budget: number): Generator<SettledRange, void, void> {
  const { events, toHash } = range;
  if (events.some((e, i) => i > 0 && e.block < events[i - 1].block)) {
    yield range; // not in block order (no endpoint seen does this): one step, as read
    return;
  }
  let start = 0;
  let from = range.from;
  while (events.length - start > budget) {
    // The last block boundary within the budget, or the end of the first block past it.
    let end = start + budget;
    while (end > start && events[end].block === events[end - 1].block) end--;
    if (end === start) {
      end = start + budget;
      while (end < events.length && events[end].block === events[start].block) end++;
    }
    if (end === events.length) break;
    const last = events[end - 1];
    const step = events.slice(start, end);
    yield toHash === undefined
      ? { from, to: last.block, events: step }
      : { from, to: last.block, events: step, toHash: last.blockHash };
    from = last.block + 1n;
    start = end;
  }
  const rest = start === 0 ? events : events.slice(start);
  yield toHash === undefined
    ? { from, to: range.to, events: rest }
    : { from, to: range.to, events: rest, toHash };
}

/** The failure of a one-block request, named by what its error says. */
function floorFailure(block: bigint, refusal: LogsRefusal, cause: unknown): SettlementScanError {
  const said = firstLine(cause) === refusal.words
    ? refusal.words
    : `${firstLine(cause)} (${refusal.words})`;
  if (refusal.kind === "range" || refusal.kind === "results") {
    return new SettlementScanError(
      "range_limit",
      `Cannot ${OPERATION}: the endpoint cannot answer eth_getLogs even for the single block ${block}: ${said}`,
      {
        cause,
        hints: [
          "Use an endpoint without this limit (a second --rpc-url), or a paid plan of this one.",
        ],
      },
    );
  }
  if (refusal.kind === "rate") {
    return new SettlementScanError(
      "rate_limited",
      `Cannot ${OPERATION}: the endpoint rate-limits eth_getLogs for block ${block}: ${said}`,
      {
        cause,
        hints: ["Lower --rpc-max-rps, or add an endpoint (a second --rpc-url)."],
      },
    );
  }
  return new SettlementScanError(
    "rpc",
    `Cannot ${OPERATION}: eth_getLogs for block ${block} failed: ${said}`,
    { cause },
  );
}
