/**
 * One pass of the history writer: check the stored hashes against the chain (undoing a fork
 * inside the unconfirmed window, starting over after a deeper one), then read the Escrow's
 * `Settled` logs from the store's next block to the chain head and commit them with their
 * block hashes as they are read (`_history_pipeline.ts`: the next range is read while the last
 * is committed). A first pass on a new store may have begun reading before the store was open
 * ({@linkcode startEarlyScan}).
 *
 * @module
 */

import type { ChainClient } from "../chain/client.ts";
import type { SettlementLogReader } from "../chain/settlements.ts";
import type { Address } from "viem";
import type { BlockHash, HistoryStore, ReconcileResult, StoreCursor } from "./store/mod.ts";
import { canonicalHashes, ScanPipeline } from "./_history_pipeline.ts";

export { canonicalHashes } from "./_history_pipeline.ts";

/** What a pass reports as it goes. */
export interface ScanProgress {
  /** The head the pass scans to. */
  onHead(head: bigint): void;
  /** After each commit: the store's cursor. */
  onCommit(cursor: StoreCursor, settlements: number): void;
  /** A reorg deeper than the depth: the history was discarded and is scanned again. */
  onRescan(reason: string): void;
  /** The pass's log reader, once created (its stats: refusals, a limit the provider named). */
  onReader?(reader: SettlementLogReader): void;
}

/** Options of {@linkcode scanPass}. */
export interface ScanPassOptions {
  /** The Escrow. */
  escrow: Address;
  /** The confirmation depth. */
  confirmations: number;
  /** Largest `eth_getLogs` range, blocks. */
  maxChunkSize: number;
  /**
   * Settlements per step (each step one commit), `SettlementLogReaderOptions.maxSettlements`.
   * @default {DEFAULT_MAX_SETTLEMENTS}
   */
  maxSettlements?: number;
  /**
   * The most steps one commit merges (their settlements summed per provider, epoch, consumer
   * and window block); 1 commits each step alone. Either way the next step is read while the
   * last one is committed.
   *
   * @default {1}
   */
  commitSteps?: number;
  /**
   * A scan begun before the store was open ({@linkcode startEarlyScan}): the pass scans to its
   * head, and adopts what it read when the store turns out to start at its first block with
   * nothing scanned (else it is cancelled, and the pass reads from the store's next block).
   */
  early?: ScanPipeline;
  /** Aborts the pass between requests. */
  signal: AbortSignal;
  /** Progress callbacks. */
  progress: ScanProgress;
  /**
   * The chain's head at the end of the last pass, when that pass left the store caught up:
   * a head still at the same number with the same hash means nothing changed on the chain
   * (every block below it is named by its hash), and the pass returns without reading the
   * store (whose worker may then stop when idle, `store/_embedded_host.ts`).
   */
  lastHead?: BlockHash;
}

/** What a pass did. */
export interface ScanPassResult {
  /** The head it scanned to. */
  head: bigint;
  /** Nothing changed on the chain since `lastHead`: the store was not read. */
  quiet: boolean;
  /** The head's number and hash once the store is caught up with it (the next `lastHead`). */
  caughtUp?: BlockHash;
}

/** Why a deep reorg forces a rescan, in words. */
function deepReorgReason(check: Extract<ReconcileResult, { kind: "deep_reorg" }>): string {
  return check.found === null
    ? `the chain no longer has block ${check.block}, which the history counted as confirmed ` +
      "(its head is below it: a chain started anew, or a node far behind)"
    : `a reorg deeper than the confirmation depth: block ${check.block} is now ${check.found}, ` +
      `the history counted ${check.stored}`;
}

/**
 * Runs one pass. Returns the head it scanned to, and whether nothing changed on the chain.
 *
 * @throws {StoreError} from the store (`lost_lock`, `conflict`, `failed`, …),
 * {@linkcode SettlementScanError} from the log reader (`range_limit` when the store's next
 * block cannot be read), {@linkcode SnapshotError} `chain_error` when the chain changed under
 * the pass (it is retried by the next one), or a viem error from the chain.
 */
export async function scanPass(
  store: HistoryStore,
  client: ChainClient,
  options: ScanPassOptions,
): Promise<ScanPassResult> {
  const early = options.early;
  let head: bigint;
  let cursor: StoreCursor;
  try {
    if (early) {
      head = early.head;
    } else {
      head = await client.getBlockNumber({ cacheTime: 0 });
      options.progress.onHead(head);
      const last = options.lastHead;
      if (last !== undefined && last.number === head) {
        const [hash] = await canonicalHashes(client, [head]);
        if (hash === last.hash) return { head, quiet: true, caughtUp: last };
      }
    }
    const check = await store.reconcile((blocks) => canonicalHashes(client, blocks));
    if (check.kind === "deep_reorg") {
      options.progress.onRescan(deepReorgReason(check));
      cursor = await store.reset();
    } else {
      cursor = check.cursor;
    }
  } catch (error) {
    await early?.cancel();
    throw error;
  }
  // The early scan read from the first block: right only when the store starts there.
  const adopt = early !== undefined && cursor.lastBlock === null &&
    cursor.nextBlock === early.from;
  if (early && !adopt) await early.cancel();
  if (cursor.nextBlock > head) {
    return { head, quiet: false, caughtUp: caughtUpAt(cursor, head) };
  }
  const pipeline = adopt ? early! : new ScanPipeline(client, cursor.nextBlock, head, {
    escrow: options.escrow,
    confirmations: options.confirmations,
    chunkSize: cursor.chunkSize,
    maxChunkSize: options.maxChunkSize,
    maxSettlements: options.maxSettlements,
    commitSteps: options.commitSteps ?? 1,
    signal: options.signal,
  });
  options.progress.onReader?.(pipeline.reader);
  let last = cursor;
  await pipeline.commitTo(store, (committed, settlements) => {
    last = committed;
    options.progress.onCommit(committed, settlements);
  });
  return { head, quiet: false, caughtUp: caughtUpAt(last, head) };
}

/** Options of {@linkcode startEarlyScan}. */
export interface EarlyScanOptions {
  /** The Escrow. */
  escrow: Address;
  /** The first block of the scan (a new store's next block). */
  scanFromBlock: bigint;
  /** The confirmation depth. */
  confirmations: number;
  /** Largest `eth_getLogs` range, blocks. */
  maxChunkSize: number;
  /** Settlements per step. @default {DEFAULT_MAX_SETTLEMENTS} */
  maxSettlements?: number;
  /** Aborts the reading. */
  signal: AbortSignal;
  /** Told the head the scan reads to. */
  onHead(head: bigint): void;
  /** Told after each step read, with the steps read so far. */
  onRead?: (steps: number) => void;
}

/**
 * Starts reading a new store's history — from the first block to the head — before the store
 * is open (creating one takes a second or more), summing what it reads until
 * {@linkcode scanPass} is given it as `early` with the open store.
 */
export async function startEarlyScan(
  client: ChainClient,
  options: EarlyScanOptions,
): Promise<ScanPipeline> {
  const head = await client.getBlockNumber({ cacheTime: 0 });
  options.onHead(head);
  return new ScanPipeline(client, options.scanFromBlock, head, {
    escrow: options.escrow,
    confirmations: options.confirmations,
    chunkSize: 2_000,
    maxChunkSize: options.maxChunkSize,
    maxSettlements: options.maxSettlements,
    commitSteps: Infinity,
    signal: options.signal,
    onRead: options.onRead,
  });
}

/**
 * The head as the store has it, when the store's last scanned block is the head: the hash that
 * was committed with the head's logs, not the chain's now — a reorg while the pass read ahead
 * leaves the two different, and the next pass then reconciles instead of finding the chain
 * unchanged.
 */
function caughtUpAt(cursor: StoreCursor, head: bigint): BlockHash | undefined {
  const last = cursor.lastBlock;
  return last !== null && last.number === head ? last : undefined;
}
