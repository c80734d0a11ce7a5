/** Shared helpers of the store tests: the identity, full reads, the recount comparison. */

import assert from "node:assert/strict";
import type {
  EpochTotals,
  Hex,
  HistoryStore,
  Settlement,
  SettlementBucket,
  StoreIdentity,
} from "../../../indexer/store/mod.ts";
import { recount } from "./_chain.ts";

/** The identity of every test store. */
export const IDENTITY: StoreIdentity = {
  chainId: 31337,
  escrow: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
  scanFromBlock: 100n,
};

/** Every epoch, read a page at a time. */
export async function allEpochs(store: HistoryStore, limit = 1000): Promise<EpochTotals[]> {
  const out: EpochTotals[] = [];
  let after: bigint | undefined;
  do {
    const page = await store.epochs({ after, limit });
    out.push(...page.items);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return out;
}

/** One provider's whole history, read a page at a time. */
export async function allHistory(
  store: HistoryStore,
  provider: Hex,
  limit = 1000,
): Promise<SettlementBucket[]> {
  const out: SettlementBucket[] = [];
  let after: bigint | undefined;
  do {
    const page = await store.providerHistory(provider, { after, limit });
    out.push(...page.items);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return out;
}

/**
 * Asserts the store's confirmed figures — buckets, epoch totals, provider totals and each
 * provider's history — equal an independent recount of `settlements`.
 */
export async function assertConfirmed(
  store: HistoryStore,
  settlements: readonly Settlement[],
): Promise<void> {
  const expected = recount(settlements);
  assert.deepEqual(await store.buckets({}), expected.buckets);
  assert.deepEqual(await allEpochs(store), expected.epochs);
  assert.deepEqual(await store.providerTotals(), expected.providers);
  for (const p of expected.providers) {
    assert.deepEqual(
      await allHistory(store, p.provider),
      expected.buckets.filter((b) => b.provider === p.provider),
    );
  }
}
