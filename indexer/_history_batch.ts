/**
 * The scan's steps merged into one commit (private to `indexer/`): consecutive ranges of
 * `Settled` events, already checked against the chain's hashes, summed per provider, epoch and
 * consumer — and per block in the unconfirmed window, where each block keeps its own deltas —
 * with the block hashes the commit needs. What it holds grows with the number of distinct
 * sums, not with the number of settlements, so the scan can read ahead of the store (while a
 * commit runs, or while a new store is being created) and commit many steps in one
 * transaction, holding a few kilobytes where the events were megabytes.
 *
 * @module
 */

import type { SettledRange } from "../chain/settlements.ts";
import type { BlockHash, ChunkCommit, Settlement } from "./store/mod.ts";

/** 2^256: a sum that would reach it starts a new entry (the store takes uint256 values). */
const U256 = 1n << 256n;

/** Consecutive checked ranges, summed, ready to be committed as one chunk. */
export class SettlementBatch {
  /** The first block. */
  readonly from: bigint;
  /** The last block read so far, inclusive. */
  to: bigint;
  /** The settlements summed in (each event counts one). */
  settlements = 0;
  /** Ranges (the scan's steps) merged in. */
  steps = 0;
  /** `head − confirmations`: blocks at or below it are confirmed. */
  readonly #safe: bigint;
  /** The sums, by block (window blocks only) and provider, epoch and consumer. */
  readonly #sums = new Map<string, Settlement & { count: number }>();
  /** Sums that reached 2^256 and were closed (a new entry took over their key). */
  readonly #full: Settlement[] = [];
  /** Every window block's hash, and the last confirmed block's. */
  readonly #windowHashes: BlockHash[] = [];
  #top: BlockHash | undefined;

  /** An empty batch starting at block `from`, for a pass whose confirmed part ends at `safe`. */
  constructor(from: bigint, safe: bigint) {
    this.from = from;
    this.to = from - 1n;
    this.#safe = safe;
  }

  /** Entries held (what the batch's memory and its commit grow with). */
  get size(): number {
    return this.#sums.size + this.#full.length + this.#windowHashes.length;
  }

  /**
   * Adds the next range, with the hashes its commit needs (its window blocks, and its last
   * confirmed block when it reaches one).
   *
   * @throws {RangeError} when the range does not start right after the batch's last block.
   */
  add(range: SettledRange, hashes: readonly BlockHash[]): void {
    if (range.from !== this.to + 1n) {
      throw new RangeError(
        `Cannot merge blocks ${range.from}–${range.to} into a batch that ends at ${this.to}`,
      );
    }
    for (const event of range.events) {
      const window = event.block > this.#safe;
      const key = `${window ? event.block : ""}|${event.provider}|${event.epoch}|${
        event.consumer ?? ""
      }`;
      const sum = this.#sums.get(key);
      if (!sum) {
        this.#sums.set(key, {
          block: event.block,
          provider: event.provider,
          epoch: event.epoch,
          amount: event.amount,
          tokens: event.tokens,
          consumer: event.consumer,
          count: 1,
        });
      } else if (sum.amount + event.amount >= U256 || sum.tokens + event.tokens >= U256) {
        this.#full.push(sum);
        this.#sums.set(key, { ...sum, amount: event.amount, tokens: event.tokens, count: 1 });
      } else {
        sum.amount += event.amount;
        sum.tokens += event.tokens;
        sum.count++;
      }
    }
    for (const hash of hashes) {
      if (hash.number > this.#safe) this.#windowHashes.push(hash);
      else if (!this.#top || hash.number > this.#top.number) this.#top = hash;
    }
    this.to = range.to;
    this.settlements += range.events.length;
    this.steps++;
  }

  /** The batch as one chunk commit at `head` (`ChunkCommit`). */
  commit(head: bigint, chunkSize: number): ChunkCommit {
    const hashes = this.#top ? [this.#top, ...this.#windowHashes] : [...this.#windowHashes];
    return {
      from: this.from,
      to: this.to,
      head,
      settlements: [...this.#full, ...this.#sums.values()],
      hashes,
      chunkSize,
    };
  }
}
