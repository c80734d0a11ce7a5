/**
 * Settled volume per provider per epoch: the one bucketing of `Settled` events (or of any
 * settlements) and the one order of buckets — by provider, then epoch — that the settlement
 * scan, the devnet's expected truth (summed from its plan, never from the chain) and the tests'
 * recounts share.
 *
 * @example
 * ```ts
 * import { bucketSettlements } from "./settlement_buckets.ts";
 *
 * const buckets = bucketSettlements([
 *   { provider: "0xbb", epoch: 1n, amount: 5n, tokens: 50n },
 *   { provider: "0xaa", epoch: 2n, amount: 1n, tokens: 10n },
 *   { provider: "0xbb", epoch: 1n, amount: 2n, tokens: 20n },
 * ]);
 * console.assert(buckets.length === 2 && buckets[0].provider === "0xaa");
 * console.assert(buckets[1].amount === 7n && buckets[1].settlements === 2);
 * ```
 *
 * @module
 */

import type { Address } from "viem";

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

/** One settlement: a `Settled` event's provider, epoch, amount and tokens. */
export interface SettlementItem {
  /** The provider (lower case). */
  readonly provider: Address;
  /** The epoch. */
  readonly epoch: bigint;
  /** The amount settled. */
  readonly amount: bigint;
  /** The tokens settled. */
  readonly tokens: bigint;
}

/** The order of buckets (and of anything keyed by provider and epoch): provider, then epoch. */
export function compareBuckets(
  a: { readonly provider: string; readonly epoch: bigint },
  b: { readonly provider: string; readonly epoch: bigint },
): number {
  if (a.provider !== b.provider) return a.provider < b.provider ? -1 : 1;
  return a.epoch < b.epoch ? -1 : a.epoch > b.epoch ? 1 : 0;
}

/** Adds one settlement to `totals` (keyed by provider and epoch). */
export function addSettlement(totals: Map<string, SettlementBucket>, item: SettlementItem): void {
  const key = `${item.provider}:${item.epoch}`;
  const bucket = totals.get(key);
  if (bucket) {
    bucket.amount += item.amount;
    bucket.tokens += item.tokens;
    bucket.settlements += 1;
  } else {
    totals.set(key, {
      provider: item.provider,
      epoch: item.epoch,
      amount: item.amount,
      tokens: item.tokens,
      settlements: 1,
    });
  }
}

/** The buckets of `totals`, in {@linkcode compareBuckets} order. */
export function sortedBuckets(totals: Map<string, SettlementBucket>): SettlementBucket[] {
  return [...totals.values()].sort(compareBuckets);
}

/** Sums `items` per provider and epoch, in {@linkcode compareBuckets} order. */
export function bucketSettlements(items: Iterable<SettlementItem>): SettlementBucket[] {
  const totals = new Map<string, SettlementBucket>();
  for (const item of items) addSettlement(totals, item);
  return sortedBuckets(totals);
}
