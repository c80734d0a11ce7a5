/**
 * One pass of the history writer: check the stored hashes against the chain (undoing a fork
 * inside the unconfirmed window, starting over after a deeper one), then read the Escrow's
 * `Settled` logs from the store's next block to the chain head and commit each chunk with its
 * block hashes, as it is read.
 *
 * @module
 */

import type { ChainClient } from "../chain/client.ts";
import { type SettledRange, SettlementLogReader } from "../chain/settlements.ts";
import type { Address, Hex } from "viem";
import type { BlockHash, HistoryStore, ReconcileResult, StoreCursor } from "./store/mod.ts";
import { SnapshotError } from "./errors.ts";

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

/** Why a deep reorg forces a rescan, in words. */
function deepReorgReason(check: Extract<ReconcileResult, { kind: "deep_reorg" }>): string {
  return check.found === null
    ? `the chain no longer has block ${check.block}, which the history counted as confirmed ` +
      "(its head is below it: a chain started anew, or a node far behind)"
    : `a reorg deeper than the confirmation depth: block ${check.block} is now ${check.found}, ` +
      `the history counted ${check.stored}`;
}

/** The hashes a chunk commit needs: its window blocks and its last confirmed block. */
function neededBlocks(range: SettledRange, safe: bigint): bigint[] {
  const blocks: bigint[] = [];
  const top = range.to < safe ? range.to : safe;
  if (top >= range.from) blocks.push(top);
  for (let b = safe + 1n > range.from ? safe + 1n : range.from; b <= range.to; b++) blocks.push(b);
  return blocks;
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
  const head = await client.getBlockNumber({ cacheTime: 0 });
  options.progress.onHead(head);
  const last = options.lastHead;
  if (last !== undefined && last.number === head) {
    const [hash] = await canonicalHashes(client, [head]);
    if (hash === last.hash) return { head, quiet: true, caughtUp: last };
  }
  const check = await store.reconcile((blocks) => canonicalHashes(client, blocks));
  let cursor: StoreCursor;
  if (check.kind === "deep_reorg") {
    options.progress.onRescan(deepReorgReason(check));
    cursor = await store.reset();
  } else {
    cursor = check.cursor;
  }
  if (cursor.nextBlock > head) {
    return { head, quiet: false, caughtUp: await headHash(client, head) };
  }
  const safe = head - BigInt(options.confirmations);
  const reader = new SettlementLogReader(client, options.escrow, {
    chunkSize: cursor.chunkSize,
    maxChunkSize: options.maxChunkSize,
    signal: options.signal,
    withBlockHash: true,
  });
  options.progress.onReader?.(reader);
  for await (const range of reader.ranges(cursor.nextBlock, head)) {
    const blocks = neededBlocks(range, safe);
    // The chunk's last block comes with its logs, from the same endpoint (so an endpoint
    // behind the others cannot pass off blocks it has not seen as empty).
    const others = blocks.filter((b) => b !== range.to);
    const fetched = await canonicalHashes(client, others);
    const found = blocks.map((b) =>
      b === range.to && range.toHash !== undefined ? range.toHash : fetched[others.indexOf(b)]
    );
    const hashes: BlockHash[] = [];
    const byBlock = new Map<bigint, Hex>();
    for (let i = 0; i < blocks.length; i++) {
      const hash = found[i];
      if (hash === null) {
        throw new SnapshotError(
          "chain_error",
          `Cannot scan settlements: block ${blocks[i]} disappeared while blocks ` +
            `${range.from}–${range.to} were read (a reorg); the next pass scans again`,
        );
      }
      hashes.push({ number: blocks[i], hash });
      byBlock.set(blocks[i], hash);
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
    options.signal.throwIfAborted();
    const result = await store.commitChunk({
      from: range.from,
      to: range.to,
      head,
      settlements: range.events,
      hashes,
      chunkSize: reader.chunk,
    });
    options.progress.onCommit(result.cursor, range.events.length);
  }
  return { head, quiet: false, caughtUp: await headHash(client, head) };
}

/** The head's number and hash, or undefined when the chain no longer has it (a reorg). */
async function headHash(client: ChainClient, head: bigint): Promise<BlockHash | undefined> {
  const [hash] = await canonicalHashes(client, [head]);
  return hash === null ? undefined : { number: head, hash };
}
