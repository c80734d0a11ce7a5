/**
 * The scan of one pass as two loops that overlap (private to `indexer/`): one reads the
 * Escrow's `Settled` logs (`eth_getLogs`, a budget of settlements a step), checks each range's
 * blocks against the chain's hashes and sums it into a {@linkcode SettlementBatch}; the other
 * commits what was read, one transaction with its cursor per commit. The next range is read
 * while the last one is committed, and the steps read meanwhile are merged into the next
 * commit (at most `commitSteps` of them, and a bounded number of sums), so neither the
 * endpoint nor the store waits for the other.
 *
 * The reading can begin before the store is open (a first start: the store is being
 * created, which takes a second or more): it then holds what it read, summed, until
 * {@linkcode ScanPipeline.commitTo} is given the store.
 *
 * Crash safety is the commit's: a cursor is only ever committed with the rows of its blocks,
 * so a crash at any point resumes at the first block of the first commit that did not happen.
 *
 * @module
 */

import type { ChainClient } from "../chain/client.ts";
import { type SettledRange, SettlementLogReader } from "../chain/settlements.ts";
import type { Address, Hex } from "viem";
import type { BlockHash, HistoryStore, StoreCursor } from "./store/mod.ts";
import { SnapshotError } from "./errors.ts";
import { SettlementBatch } from "./_history_batch.ts";

/**
 * Default {@linkcode PipelineOptions.maxEntries}: the sums a batch may hold before the reading
 * waits for a commit (each a few hundred bytes; a batch holds one per provider, epoch and
 * consumer, and per window block).
 */
export const DEFAULT_MAX_ENTRIES = 4_096;

/** Options of {@linkcode ScanPipeline}. */
export interface PipelineOptions {
  /** The Escrow. */
  escrow: Address;
  /** The confirmation depth. */
  confirmations: number;
  /** Blocks of the first `eth_getLogs` request. */
  chunkSize: number;
  /** Largest `eth_getLogs` range, blocks. */
  maxChunkSize: number;
  /** Settlements per step (`SettlementLogReaderOptions.maxSettlements`). */
  maxSettlements?: number;
  /**
   * The most steps one commit merges; 1 commits each step alone (the next one is read while
   * it commits).
   */
  commitSteps: number;
  /** The most sums a batch holds before the reading waits. @default {DEFAULT_MAX_ENTRIES} */
  maxEntries?: number;
  /** Aborts the reading and the commits. */
  signal: AbortSignal;
  /** Told after each step read, with the steps read so far. */
  onRead?: (steps: number) => void;
}

/** The chain's hashes of `blocks`, `null` for a block it does not have; one JSON-RPC batch. */
export async function canonicalHashes(
  client: ChainClient,
  blocks: readonly bigint[],
): Promise<(Hex | null)[]> {
  return await Promise.all(blocks.map(async (number) => {
    try {
      const block = await client.getBlock({ blockNumber: number });
      return block.hash ? block.hash.toLowerCase() as Hex : null;
    } catch (error) {
      if ((error as { name?: string }).name === "BlockNotFoundError") return null;
      throw error;
    }
  }));
}

/** The hashes a range's commit needs: its window blocks and its last confirmed block. */
function neededBlocks(range: SettledRange, safe: bigint): bigint[] {
  const blocks: bigint[] = [];
  const top = range.to < safe ? range.to : safe;
  if (top >= range.from) blocks.push(top);
  for (let b = safe + 1n > range.from ? safe + 1n : range.from; b <= range.to; b++) blocks.push(b);
  return blocks;
}

/**
 * The hashes of a range's needed blocks, each event's block hash checked against them.
 *
 * @throws {SnapshotError} `chain_error` when a block disappeared or changed while the range
 * was read (a reorg: the next pass reconciles).
 */
async function checkedHashes(
  client: ChainClient,
  range: SettledRange,
  safe: bigint,
): Promise<BlockHash[]> {
  const blocks = neededBlocks(range, safe);
  // The range's last block comes with its logs, from the same endpoint (so an endpoint behind
  // the others cannot pass off blocks it has not seen as empty).
  const others = blocks.filter((b) => b !== range.to);
  const fetched = others.length > 0 ? await canonicalHashes(client, others) : [];
  const hashes: BlockHash[] = [];
  const byBlock = new Map<bigint, Hex>();
  for (const block of blocks) {
    const hash = block === range.to && range.toHash !== undefined
      ? range.toHash
      : fetched[others.indexOf(block)];
    if (hash === null || hash === undefined) {
      throw new SnapshotError(
        "chain_error",
        `Cannot scan settlements: block ${block} disappeared while blocks ` +
          `${range.from}–${range.to} were read (a reorg); the next pass scans again`,
      );
    }
    hashes.push({ number: block, hash });
    byBlock.set(block, hash);
  }
  for (const event of range.events) {
    const hash = byBlock.get(event.block);
    if (hash !== undefined && hash !== event.blockHash) {
      throw new SnapshotError(
        "chain_error",
        `Cannot scan settlements: block ${event.block} is ${hash}, its logs came from ` +
          `${event.blockHash} (a reorg while the range was read); the next pass scans again`,
      );
    }
  }
  return hashes;
}

/** A pass's scan from `from` to `head`: the reading started at once, the commits when given a store. */
export class ScanPipeline {
  /** The first block read. */
  readonly from: bigint;
  /** The head the pass reads to. */
  readonly head: bigint;
  /** The log reader (its chunk size and stats). */
  readonly reader: SettlementLogReader;
  readonly #safe: bigint;
  readonly #commitSteps: number;
  readonly #maxEntries: number;
  readonly #abort = new AbortController();
  readonly #signal: AbortSignal;
  readonly #onRead: ((steps: number) => void) | undefined;
  #steps = 0;
  #batch: SettlementBatch | undefined;
  #ended = false;
  #failure: { error: unknown } | undefined;
  #changed = Promise.withResolvers<void>();
  readonly #reading: Promise<void>;

  /** Starts reading blocks `from` to `head` through `client`. */
  constructor(client: ChainClient, from: bigint, head: bigint, options: PipelineOptions) {
    this.from = from;
    this.head = head;
    this.#safe = head - BigInt(options.confirmations);
    this.#commitSteps = options.commitSteps;
    this.#maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.#signal = AbortSignal.any([options.signal, this.#abort.signal]);
    this.#onRead = options.onRead;
    this.reader = new SettlementLogReader(client, options.escrow, {
      chunkSize: options.chunkSize,
      maxChunkSize: options.maxChunkSize,
      maxSettlements: options.maxSettlements,
      signal: this.#signal,
      withBlockHash: true,
    });
    this.#reading = this.#read(client);
  }

  /** Settles when the reading has ended (the head reached, failed, or cancelled). */
  get read(): Promise<void> {
    return this.#reading;
  }

  #wake(): void {
    this.#changed.resolve();
    this.#changed = Promise.withResolvers<void>();
  }

  #full(): boolean {
    const batch = this.#batch;
    return batch !== undefined &&
      (batch.steps >= this.#commitSteps || batch.size >= this.#maxEntries);
  }

  async #read(client: ChainClient): Promise<void> {
    try {
      for await (const range of this.reader.ranges(this.from, this.head)) {
        const hashes = await checkedHashes(client, range, this.#safe);
        while (this.#full()) {
          this.#signal.throwIfAborted();
          await this.#changed.promise;
        }
        this.#signal.throwIfAborted();
        (this.#batch ??= new SettlementBatch(range.from, this.#safe)).add(range, hashes);
        this.#wake();
        this.#onRead?.(++this.#steps);
      }
    } catch (error) {
      this.#failure = { error };
    }
    this.#ended = true;
    this.#wake();
  }

  /**
   * Commits what is read into `store` until the head, each commit one transaction with its
   * cursor; `onCommit` after each. When the reading fails, what was read before the failure is
   * committed first, then its error is thrown.
   *
   * @throws {StoreError} from a commit (the reading is stopped), the reading's error
   * ({@linkcode SettlementScanError}, {@linkcode SnapshotError}, a viem error), or the
   * signal's reason when aborted.
   */
  async commitTo(
    store: HistoryStore,
    onCommit: (cursor: StoreCursor, settlements: number) => void,
  ): Promise<void> {
    try {
      for (;;) {
        const batch = this.#batch;
        if (!batch) {
          if (this.#ended) break;
          await this.#changed.promise;
          continue;
        }
        this.#signal.throwIfAborted();
        this.#batch = undefined;
        this.#wake();
        const result = await store.commitChunk(batch.commit(this.head, this.reader.chunk));
        onCommit(result.cursor, batch.settlements);
      }
    } catch (error) {
      await this.cancel();
      throw error;
    }
    if (this.#failure) throw this.#failure.error;
  }

  /** Stops the reading and drops what it read; resolves once it stopped. */
  async cancel(): Promise<void> {
    this.#abort.abort(new DOMException("the scan was cancelled", "AbortError"));
    this.#wake();
    await this.#reading;
    this.#batch = undefined;
  }
}
