/**
 * The JSON bodies of the history endpoints, by pure functions: `/epochs` (every epoch from 0
 * to the current one: its emission reward from the snapshot's schedule, and the network's
 * settled volume from the history) and `/providers/{address}` (one provider, live or not:
 * its Registry record, its listing, and its full per-epoch history a page at a time).
 * Settlement figures are `null` unless the history has caught up with the snapshot.
 *
 * @example
 * ```ts ignore
 * import { epochsView } from "./views_history.ts";
 *
 * const body = JSON.stringify(epochsView(snapshot, sync, { limit: 100 }));
 * ```
 *
 * @module
 */

import type { z } from "zod";
import type { EmissionState } from "../chain/types.ts";
import type { EpochSchema, EpochsSchema, ProviderDetailSchema } from "./_schemas.ts";
import type { HistorySync } from "./history.ts";
import type { SettlementBucket } from "./store/mod.ts";
import type { Snapshot } from "./snapshot.ts";
import type { TeeEvidence } from "./tee_evidence.ts";
import { providerTrustView } from "./views_trust.ts";
import { historyView, providerView, snapshotView, type ViewOptions } from "./views.ts";

/** One entry of `/epochs`. */
export type EpochView = z.infer<typeof EpochSchema>;
/** The `/epochs` body. */
export type EpochsView = z.infer<typeof EpochsSchema>;
/** The `/providers/{address}` body. */
export type ProviderDetailView = z.infer<typeof ProviderDetailSchema>;

/** A page of epochs: keyset by epoch. */
export interface EpochPage {
  /** Start strictly after this epoch (the previous page's `next_cursor`). */
  cursor?: bigint;
  /** Epochs per page. */
  limit: number;
  /** Oldest first (the default) or newest first. */
  order?: "asc" | "desc";
}

/** The scheduled reward of `epoch`, before the cap: `initialReward >> (epoch / halvingInterval)`. */
export function scheduledReward(schedule: EmissionState["schedule"], epoch: bigint): bigint {
  const halvings = epoch / schedule.halvingInterval;
  return halvings >= 256n ? 0n : schedule.initialReward >> halvings;
}

/** The scheduled rewards of epochs `0 … epoch − 1`, summed (one term per halving period). */
function scheduledBefore(schedule: EmissionState["schedule"], epoch: bigint): bigint {
  const interval = schedule.halvingInterval;
  let sum = 0n;
  const full = epoch / interval;
  for (let k = 0n; k < full && k < 256n; k++) sum += interval * (schedule.initialReward >> k);
  if (full < 256n) sum += (epoch % interval) * (schedule.initialReward >> full);
  return sum;
}

/**
 * The emission reward of `epoch` as the Emission contract emits it: the scheduled reward,
 * limited by what the cap leaves after the earlier epochs (emission runs in epoch order, so
 * the earlier epochs took `min(cap, their scheduled sum)`).
 */
export function epochReward(emission: EmissionState, epoch: bigint): bigint {
  const before = scheduledBefore(emission.schedule, epoch);
  const room = emission.cap > before ? emission.cap - before : 0n;
  const scheduled = scheduledReward(emission.schedule, epoch);
  return scheduled < room ? scheduled : room;
}

/** The `/epochs` body: epochs `0 … current`, a page at a time. */
export function epochsView(snapshot: Snapshot, sync: HistorySync, page: EpochPage): EpochsView {
  const emission = snapshot.chain.emission;
  const current = emission.currentEpoch;
  const desc = page.order === "desc";
  let first: bigint;
  if (desc) first = page.cursor === undefined ? current : page.cursor - 1n;
  else first = page.cursor === undefined ? 0n : page.cursor + 1n;
  if (first > current) first = desc ? current : current + 1n;
  const numbers: bigint[] = [];
  for (
    let e = first;
    numbers.length < page.limit && (desc ? e >= 0n : e <= current);
    e += desc ? -1n : 1n
  ) numbers.push(e);
  const last = numbers.at(-1);
  const more = last !== undefined && (desc ? last > 0n : last < current);
  const totals = new Map((sync.figures?.epochs ?? []).map((e) => [e.epoch, e]));
  const epochs = numbers.map((epoch): EpochView => {
    const t = totals.get(epoch);
    const figures = sync.figures
      ? {
        amount: String(t?.amount ?? 0n),
        tokens: String(t?.tokens ?? 0n),
        settlements: t?.settlements ?? 0,
        providers: t?.providers ?? 0,
        signed_amount: String(t?.signedAmount ?? 0n),
        signed_settlements: t?.signedSettlements ?? 0,
        paying_consumers: t?.consumers ?? 0,
      }
      : {
        amount: null,
        tokens: null,
        settlements: null,
        providers: null,
        signed_amount: null,
        signed_settlements: null,
        paying_consumers: null,
      };
    return {
      epoch: String(epoch),
      reward: String(epochReward(emission, epoch)),
      emitted: epoch < emission.emittedEpochs,
      finished: epoch < current,
      ...figures,
    };
  });
  return {
    epochs,
    next_cursor: more ? String(last) : null,
    history: historyView(sync),
    snapshot: snapshotView(snapshot),
  };
}

/** One provider's history, read from the store at one confirmed block. */
export interface ProviderHistoryRead {
  /** Every bucket of the provider, oldest first. */
  buckets: readonly SettlementBucket[];
}

/**
 * The `/providers/{address}` body. `history` is the provider's whole history (every epoch it
 * was paid in), `null` unless synced; the page is cut from it.
 */
export function providerDetailView(
  snapshot: Snapshot,
  sync: HistorySync,
  address: string,
  history: ProviderHistoryRead | null,
  page: EpochPage,
  options: ViewOptions = {},
  trust: { tee?: TeeEvidence; now?: Date } = {},
): ProviderDetailView {
  const lower = address.toLowerCase();
  const record = snapshot.chain.providers.find((p) => p.address.toLowerCase() === lower);
  const live = snapshot.liveBy.get(lower);
  let total: ProviderDetailView["settled"]["total"] = null;
  let epochs: ProviderDetailView["settled"]["epochs"] = null;
  let next: string | null = null;
  if (sync.synced && history) {
    const all = history.buckets;
    let amount = 0n;
    let tokens = 0n;
    let settlements = 0;
    for (const b of all) {
      amount += b.amount;
      tokens += b.tokens;
      settlements += b.settlements;
    }
    total = {
      amount: String(amount),
      tokens: String(tokens),
      settlements,
      epochs: all.length,
      first_epoch: all.length ? String(all[0].epoch) : null,
      last_epoch: all.length ? String(all[all.length - 1].epoch) : null,
    };
    const ordered = page.order === "desc" ? [...all].reverse() : all;
    const after = page.cursor;
    const start = after === undefined
      ? 0
      : ordered.findIndex((b) => (page.order === "desc" ? b.epoch < after : b.epoch > after));
    const slice = start < 0 ? [] : ordered.slice(start, start + page.limit);
    epochs = slice.map((b) => ({
      epoch: String(b.epoch),
      amount: String(b.amount),
      tokens: String(b.tokens),
      settlements: b.settlements,
    }));
    const end = start < 0 ? ordered.length : start + slice.length;
    next = end < ordered.length && slice.length > 0 ? String(slice.at(-1)!.epoch) : null;
  }
  return {
    provider: lower,
    registry: record
      ? {
        tier: record.tier,
        active: record.active,
        stake: String(record.stake),
        bonded: record.bonded,
        serving_key: record.trustRoot.toLowerCase(),
        ad_commitment: record.adCommitment.toLowerCase(),
      }
      : null,
    live: live ? providerView(snapshot, sync, live, options) : null,
    settled: { total, epochs, next_cursor: next },
    ...providerTrustView(snapshot, lower, trust.tee, trust.now ?? snapshot.takenAt),
    ...providerTrustView(snapshot, lower, trust.tee, trust.now ?? snapshot.takenAt),
    history: historyView(sync),
    snapshot: snapshotView(snapshot),
  };
}
