/**
 * The JSON bodies of `/stats`, `/models`, `/providers` (rendered from a {@linkcode Snapshot}
 * and the settlement history's figures, {@linkcode HistorySync}) and `/health` (from the
 * indexer's state), by pure functions. Settlement-derived figures are `null` unless the
 * history has caught up with the snapshot (`sync.synced`), and every body that has them
 * carries the history's own state. Field names are the contract
 * (`docs/indexer.md` documents each one); the types are inferred from the schemas the routes
 * declare (`_schemas.ts`), so the generated OpenAPI document and the bodies cannot drift.
 *
 * Conventions (`docs/protocol.md` §0): token amounts, prices, block numbers, epochs, times and
 * every other `uint256` read from chain are decimal strings; counts the indexer makes
 * (providers, routers, concurrency) are JSON numbers; addresses and hashes are lower-case hex;
 * `taken_at` is RFC 3339 UTC.
 *
 * @example
 * ```ts ignore
 * import { modelsView, providersView, statsView } from "./views.ts";
 *
 * const body = JSON.stringify(statsView(snapshot, sync));
 * ```
 *
 * @module
 */

import type { z } from "zod";
import { comparePrices, type ModelCapability, modelKind } from "../chain/ad.ts";
import type { ProviderTier } from "../chain/types.ts";
import type {
  EpochVolumeSchema,
  HistorySchema,
  ModelSchema,
  ModelsSchema,
  ProviderSchema,
  ProvidersSchema,
  RouterSchema,
  SnapshotSchema,
  StatsSchema,
} from "./_schemas.ts";
import type { HistorySync } from "./history.ts";
import { meanReputation, reputation, REPUTATION_EPOCHS } from "./reputation.ts";
import type { LiveProvider, Snapshot } from "./snapshot.ts";

/** The default number of epochs (the current one included) in a provider's `settled.epochs`. */
export const RECENT_EPOCHS = 8;

/** Options of the views. */
export interface ViewOptions {
  /**
   * Epochs listed in a provider's recent settled volume, the current one included.
   *
   * @default {RECENT_EPOCHS}
   */
  recentEpochs?: number;
  /**
   * Finished epochs in the reputation window (`reputation.ts`).
   *
   * @default {REPUTATION_EPOCHS}
   */
  reputationEpochs?: number;
}

/** Which block and when: the `snapshot` object of every data body. */
export type SnapshotView = z.infer<typeof SnapshotSchema>;
/** One router in `/stats`. */
export type RouterView = z.infer<typeof RouterSchema>;
/** The `/stats` body. */
export type StatsView = z.infer<typeof StatsSchema>;
/** One entry of `/models`. */
export type ModelView = z.infer<typeof ModelSchema>;
/** The `/models` body. */
export type ModelsView = z.infer<typeof ModelsSchema>;
/** Settled volume of one epoch. */
export type EpochVolumeView = z.infer<typeof EpochVolumeSchema>;
/** One entry of `/providers`. */
export type ProviderView = z.infer<typeof ProviderSchema>;
/** The `/providers` body. */
export type ProvidersView = z.infer<typeof ProvidersSchema>;
/** The `/health` body. */
/** The history's state in a body. */
export type HistoryStateView = z.infer<typeof HistorySchema>;

/** A page of a list: where to start and how many. */
export interface ListPage {
  /** Start strictly after this key (an address, a model id). */
  cursor?: string;
  /** Items per page. @default {all} */
  limit?: number;
  /** Only providers serving this model id (`/providers`), or only this model (`/models`). */
  model?: string;
  /** Only providers (offers) of this tier. */
  tier?: ProviderTier;
}

/** The first epoch whose buckets the views need: the recent and the reputation windows. */
export function firstEpochNeeded(currentEpoch: bigint, options: ViewOptions = {}): bigint {
  const recent = BigInt(options.recentEpochs ?? RECENT_EPOCHS) - 1n;
  const window = BigInt(options.reputationEpochs ?? REPUTATION_EPOCHS);
  const back = recent > window ? recent : window;
  return currentEpoch > back ? currentEpoch - back : 0n;
}

/** The `history` object of a body. */
export function historyView(sync: HistorySync): HistoryStateView {
  return {
    synced: sync.synced,
    scanned_to_block: sync.scannedTo === null ? null : String(sync.scannedTo),
    head_block: sync.headBlock === null ? null : String(sync.headBlock),
    confirmations: sync.confirmations,
  };
}

/** A page of `items`, sorted by `key`: strictly after `cursor`, at most `limit`. */
export function pageOf<T>(
  items: readonly T[],
  key: (item: T) => string,
  page: { cursor?: string; limit?: number },
): { items: T[]; next: string | null } {
  let start = 0;
  if (page.cursor !== undefined) {
    // Binary search: the first item whose key sorts after the cursor.
    let low = 0;
    let high = items.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (key(items[mid]) <= page.cursor) low = mid + 1;
      else high = mid;
    }
    start = low;
  }
  const end = page.limit === undefined ? items.length : Math.min(items.length, start + page.limit);
  const slice = items.slice(start, end);
  return { items: slice, next: end < items.length && slice.length > 0 ? key(slice.at(-1)!) : null };
}

/** The `snapshot` object. */
export function snapshotView(snapshot: Snapshot): SnapshotView {
  const { block } = snapshot.chain;
  return {
    block_number: String(block.number),
    block_hash: block.hash.toLowerCase(),
    block_timestamp: String(block.timestamp),
    taken_at: snapshot.takenAt.toISOString(),
  };
}

/** The `/stats` body. */
export function statsView(snapshot: Snapshot, sync: HistorySync): StatsView {
  const { chain } = snapshot;
  const capacity = { max_concurrency: 0, available_concurrency: 0 };
  const models = new Set<string>();
  for (const p of snapshot.live) {
    capacity.max_concurrency += p.capacity.max_concurrency;
    capacity.available_concurrency += p.capacity.available_concurrency;
    for (const m of p.ad.models) models.add(m.id);
  }
  const figures = sync.figures;
  const total = figures?.total ?? null;
  const e = chain.emission;
  const current = figures?.epochs.find((x) => x.epoch === e.currentEpoch);
  return {
    providers: {
      registered: chain.providers.length,
      bonded: chain.providers.filter((p) => p.bonded).length,
      live_verified: snapshot.live.length,
    },
    validators: chain.validators.length,
    staked_security: String(chain.staking.totalStaked),
    min_provider_bond: String(chain.staking.minProviderBond),
    routers: {
      total: snapshot.routers.length,
      reachable: snapshot.routers.filter((r) => r.reachable).length,
      list: snapshot.routers.map((r) => ({
        id: r.id,
        url: r.url,
        reachable: r.reachable,
        error: r.error,
        entries: r.entries,
        accepted: r.accepted,
        rejected: r.rejected,
        rejected_examples: r.examples,
      })),
    },
    tee_measurements: chain.approvedMeasurements.map((m) => m.toLowerCase()),
    emission: {
      total_emitted: String(e.totalEmitted),
      cap: String(e.cap),
      current_epoch: String(e.currentEpoch),
      current_epoch_reward: String(e.currentEpochReward),
      emitted_epochs: String(e.emittedEpochs),
      schedule: {
        rule: e.schedule.rule,
        genesis_time: String(e.schedule.genesisTime),
        epoch_length: String(e.schedule.epochLength),
        initial_reward: String(e.schedule.initialReward),
        halving_interval: String(e.schedule.halvingInterval),
      },
    },
    capacity,
    models: models.size,
    rejected_ads: {
      total: Object.values(snapshot.rejections).reduce((sum, n) => sum + n, 0),
      by_reason: snapshot.rejections,
    },
    settlements: {
      ...historyView(sync),
      amount: total && String(total.amount),
      tokens: total && String(total.tokens),
      count: total && total.settlements,
      signed_amount: figures && String(figures.signed.amount),
      signed_count: figures && figures.signed.settlements,
      paying_consumers: figures && (current?.consumers ?? 0),
    },
    snapshot: snapshotView(snapshot),
  };
}

/** A provider's reputation from the history's recent buckets; `null` unless synced. */
export function providerReputation(
  snapshot: Snapshot,
  sync: HistorySync,
  address: string,
  options: ViewOptions,
): number | null {
  if (!sync.figures) return null;
  const buckets = sync.figures.recent.get(address.toLowerCase()) ?? [];
  return reputation(buckets.map((b) => b.epoch), snapshot.chain.emission.currentEpoch, {
    windowEpochs: options.reputationEpochs ?? REPUTATION_EPOCHS,
  });
}

/**
 * The `/models` body: one entry per model id, sorted by id, a page at a time; `tier` counts
 * only that tier's providers, `model` keeps only that model.
 */
export function modelsView(
  snapshot: Snapshot,
  sync: HistorySync,
  options: ViewOptions = {},
  page: ListPage = {},
): ModelsView {
  interface Offer {
    provider: string;
    tier: ProviderTier;
    input: bigint;
    output: bigint;
    context: number;
    tps: number;
    reputation: number | null;
    kind: "chat" | "embedding";
    capabilities: readonly ModelCapability[];
    dimensions: number | undefined;
  }
  const offers = new Map<string, Offer[]>();
  for (const p of snapshot.live) {
    if (page.tier !== undefined && p.state.tier !== page.tier) continue;
    const rep = providerReputation(snapshot, sync, p.state.address, options);
    for (const m of p.ad.models) {
      if (page.model !== undefined && m.id !== page.model) continue;
      const list = offers.get(m.id) ?? [];
      list.push({
        provider: p.state.address.toLowerCase(),
        tier: p.state.tier,
        input: BigInt(m.prices.input),
        output: BigInt(m.prices.output),
        context: m.context_length,
        tps: p.metrics.tokens_per_sec,
        reputation: rep,
        kind: modelKind(m),
        capabilities: m.capabilities ?? [],
        dimensions: m.embedding_dimensions,
      });
      offers.set(m.id, list);
    }
  }
  const sorted = [...offers.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const { items, next } = pageOf(sorted, ([model]) => model, page);
  const models = items.map(
    ([model, list]): ModelView => {
      const cheapest = list.reduce((best, o) => {
        const order = comparePrices(o, best);
        return order !== 0 ? (order < 0 ? o : best) : (o.provider < best.provider ? o : best);
      });
      return {
        model,
        cheapest_price: {
          input: String(cheapest.input),
          output: String(cheapest.output),
          provider: cheapest.provider,
          tier: cheapest.tier,
        },
        providers: list.length,
        tiers: {
          verified: list.filter((o) => o.tier === "verified").length,
          tee: list.filter((o) => o.tier === "tee").length,
        },
        reputation: meanReputation(list.map((o) => o.reputation)),
        tokens_per_sec: Math.round(list.reduce((sum, o) => sum + o.tps, 0) / list.length * 100) /
          100,
        context_length: Math.max(...list.map((o) => o.context)),
        ...offeredKind(list),
      };
    },
  );
  return { models, next_cursor: next, history: historyView(sync) };
}

/** What every offer of a model says it is and supports (a client may land on any of them). */
function offeredKind(
  list: readonly {
    kind: "chat" | "embedding";
    capabilities: readonly ModelCapability[];
    dimensions: number | undefined;
  }[],
): Pick<ModelView, "kind" | "capabilities" | "embedding_dimensions"> {
  const kind = list.every((o) => o.kind === "embedding") ? "embedding" : "chat";
  const capabilities = [...list[0].capabilities]
    .filter((c) => list.every((o) => o.capabilities.includes(c)))
    .sort();
  if (kind === "chat") return { kind, capabilities };
  return {
    kind,
    capabilities,
    embedding_dimensions: Math.min(...list.map((o) => o.dimensions ?? Infinity)),
  };
}

function volume(
  buckets: readonly { amount: bigint; tokens: bigint; settlements: number }[],
): Omit<EpochVolumeView, "epoch"> {
  let amount = 0n;
  let tokens = 0n;
  let settlements = 0;
  for (const b of buckets) {
    amount += b.amount;
    tokens += b.tokens;
    settlements += b.settlements;
  }
  return { amount: String(amount), tokens: String(tokens), settlements };
}

/** One `/providers` entry. */
export function providerView(
  snapshot: Snapshot,
  sync: HistorySync,
  p: LiveProvider,
  options: ViewOptions = {},
): ProviderView {
  const address = p.state.address.toLowerCase();
  let settled: ProviderView["settled"] = null;
  if (sync.figures) {
    const recent = BigInt(options.recentEpochs ?? RECENT_EPOCHS);
    const current = snapshot.chain.emission.currentEpoch;
    const first = current - recent + 1n > 0n ? current - recent + 1n : 0n;
    const buckets = sync.figures.recent.get(address) ?? [];
    const epochs: EpochVolumeView[] = [];
    for (let epoch = first; epoch <= current; epoch++) {
      epochs.push({ epoch: String(epoch), ...volume(buckets.filter((b) => b.epoch === epoch)) });
    }
    const total = sync.figures.providers.get(address);
    settled = { epochs, total: volume(total ? [total] : []) };
  }
  return {
    provider: address,
    tier: p.state.tier,
    stake: String(p.state.stake),
    serving_key: p.state.trustRoot.toLowerCase(),
    ad_commitment: p.state.adCommitment.toLowerCase(),
    endpoint: p.ad.endpoint,
    models: p.ad.models.map((m) => ({
      model: m.id,
      prices: { input: m.prices.input, output: m.prices.output },
      context_length: m.context_length,
    })),
    capacity: { ...p.capacity },
    metrics: { ...p.metrics },
    routers: [...p.routers],
    settled,
    reputation: providerReputation(snapshot, sync, address, options),
  };
}

/**
 * The `/providers` body: live-verified providers sorted by address, a page at a time, only
 * those serving `model` and of `tier` when given.
 */
export function providersView(
  snapshot: Snapshot,
  sync: HistorySync,
  options: ViewOptions = {},
  page: ListPage = {},
): ProvidersView {
  const filtered = page.model === undefined && page.tier === undefined
    ? snapshot.live
    : snapshot.live.filter((p) =>
      (page.tier === undefined || p.state.tier === page.tier) &&
      (page.model === undefined || p.ad.models.some((m) => m.id === page.model))
    );
  const cursor = page.cursor?.toLowerCase();
  const { items, next } = pageOf(
    filtered,
    (p) => p.state.address.toLowerCase(),
    { cursor, limit: page.limit },
  );
  return {
    providers: items.map((p) => providerView(snapshot, sync, p, options)),
    next_cursor: next,
    history: historyView(sync),
  };
}
