/**
 * The settlement figures the API serves, read from the history store as one consistent set
 * (every read between two identical observations of the store's confirmed block), and the
 * rule that decides whether they may be served with a snapshot: only once the history has
 * caught up to the snapshot's confirmed block (`block − confirmations`), never partial.
 *
 * @module
 */

import type { BlockRef } from "../chain/types.ts";
import type {
  BlockHash,
  EpochTotals,
  HistoryStore,
  ProviderTotals,
  SettlementBucket,
  StoreCursor,
} from "./store/mod.ts";
import { StoreError } from "./store/mod.ts";

/** Network-wide settled volume. */
export interface Volume {
  /** Sum of settled amounts. */
  amount: bigint;
  /** Sum of settled tokens. */
  tokens: bigint;
  /** Number of `Settled` events. */
  settlements: number;
}

/** Confirmed settlement figures, all read at one confirmed block. */
export interface HistoryFigures {
  /** The last block they include, or `null` when nothing is confirmed yet (all zero). */
  at: BlockHash | null;
  /** All settled volume, every provider, all time. */
  total: Volume;
  /** The part of it paid by consumers' vouchers (`VoucherRedeemed`): amount and settlements. */
  signed: { amount: bigint; settlements: number };
  /** Every epoch with at least one settlement, oldest first. */
  epochs: readonly EpochTotals[];
  /** Each provider's all-time totals, by lower-case address. */
  providers: ReadonlyMap<string, ProviderTotals>;
  /** Each provider's buckets of the epochs from {@linkcode fromEpoch} on, oldest first. */
  recent: ReadonlyMap<string, readonly SettlementBucket[]>;
  /** The first epoch {@linkcode recent} covers. */
  fromEpoch: bigint;
}

const ATTEMPTS = 5;

function sameBlock(a: BlockHash | null, b: BlockHash | null): boolean {
  return a === b || (a !== null && b !== null && a.number === b.number && a.hash === b.hash);
}

async function allEpochs(store: HistoryStore): Promise<EpochTotals[]> {
  const out: EpochTotals[] = [];
  let after: bigint | undefined;
  do {
    const page = await store.epochs({ after, limit: 10_000 });
    out.push(...page.items);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return out;
}

/**
 * Reads the figures the API serves, and the store's cursor they were read at. The reads are
 * separate statements, so another replica's commit may land between them: the store's
 * confirmed block is read before and after, and the set is read again until both agree (at
 * most a few times).
 *
 * @throws {StoreError} from the store, or `conflict` when commits kept landing in between.
 */
export async function readFigures(
  store: HistoryStore,
  fromEpoch: bigint,
): Promise<{ figures: HistoryFigures; cursor: StoreCursor }> {
  for (let attempt = 1;; attempt++) {
    const before = (await store.state()).cursor.confirmed;
    const epochs = await allEpochs(store);
    const totals = await store.providerTotals();
    const buckets = await store.buckets({ fromEpoch });
    const { cursor } = await store.state();
    const after = cursor.confirmed;
    if (sameBlock(before, after)) {
      const total: Volume = { amount: 0n, tokens: 0n, settlements: 0 };
      const signed = { amount: 0n, settlements: 0 };
      for (const e of epochs) {
        total.amount += e.amount;
        total.tokens += e.tokens;
        total.settlements += e.settlements;
        signed.amount += e.signedAmount;
        signed.settlements += e.signedSettlements;
      }
      const recent = new Map<string, SettlementBucket[]>();
      for (const b of buckets) {
        const list = recent.get(b.provider);
        if (list) list.push(b);
        else recent.set(b.provider, [b]);
      }
      return {
        figures: {
          at: after,
          total,
          signed,
          epochs,
          providers: new Map(totals.map((t) => [t.provider, t])),
          recent,
          fromEpoch,
        },
        cursor,
      };
    }
    if (attempt >= ATTEMPTS) {
      throw new StoreError(
        "conflict",
        `Cannot read the settlement figures: the history moved during each of ${ATTEMPTS} reads`,
      );
    }
  }
}

/**
 * One provider's whole history (every epoch it was paid in, oldest first) and the confirmed
 * block it was read at, read again until the block did not move during the read.
 *
 * @throws {StoreError} from the store, or `conflict` when commits kept landing in between.
 */
export async function readProviderBuckets(
  store: HistoryStore,
  provider: `0x${string}`,
): Promise<{ buckets: SettlementBucket[]; at: BlockHash | null }> {
  for (let attempt = 1;; attempt++) {
    const before = (await store.state()).cursor.confirmed;
    const buckets: SettlementBucket[] = [];
    let after: bigint | undefined;
    do {
      const page = await store.providerHistory(provider, { after, limit: 10_000 });
      buckets.push(...page.items);
      after = page.next ?? undefined;
    } while (after !== undefined);
    const at = (await store.state()).cursor.confirmed;
    if (sameBlock(before, at)) return { buckets, at };
    if (attempt >= ATTEMPTS) {
      throw new StoreError(
        "conflict",
        `Cannot read the history of ${provider}: it moved during each of ${ATTEMPTS} reads`,
      );
    }
  }
}

/** How far the history is, as every settlement-derived figure carries it. */
export interface HistorySync {
  /** Whether the figures are served: the history has caught up to the snapshot. */
  synced: boolean;
  /** The last block the figures include (the store's confirmed block), or `null`. */
  scannedTo: bigint | null;
  /** The chain head the history last measured, or `null`. */
  headBlock: bigint | null;
  /** The confirmation depth. */
  confirmations: number;
  /** The figures, when synced; otherwise `null` (never partial ones). */
  figures: HistoryFigures | null;
}

/** What {@linkcode syncFor} needs of the history. */
export interface HistoryPosition {
  /** The figures last read, or `null`. */
  figures: HistoryFigures | null;
  /** The chain head the history last measured. */
  headBlock: bigint | null;
}

/**
 * Whether the history's figures may be served with a snapshot pinned at `block`: they must
 * include every block up to `block − confirmations` (nothing to include when that is before
 * the first block), come from the snapshot's fork when they end at its very block, and cover
 * the recent epochs the views show (from `fromEpoch` on).
 */
export function syncFor(
  position: HistoryPosition,
  block: BlockRef,
  options: { confirmations: number; scanFromBlock: bigint; fromEpoch: bigint },
): HistorySync {
  const { figures } = position;
  const target = block.number - BigInt(options.confirmations);
  const at = figures?.at ?? null;
  const synced = figures !== null && figures.fromEpoch <= options.fromEpoch &&
    (target < options.scanFromBlock || (at !== null && at.number >= target)) &&
    !(at !== null && at.number === block.number && at.hash !== block.hash.toLowerCase());
  return {
    synced,
    scannedTo: at?.number ?? null,
    headBlock: position.headBlock,
    confirmations: options.confirmations,
    figures: synced ? figures : null,
  };
}
