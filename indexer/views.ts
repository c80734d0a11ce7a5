/**
 * The JSON bodies of `/stats`, `/models`, `/providers` (rendered from a {@linkcode Snapshot})
 * and `/health` (from the indexer's state), by pure functions. Field names are the contract
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
 * const body = JSON.stringify(statsView(snapshot));
 * ```
 *
 * @module
 */

import type { z } from "zod";
import { comparePrices } from "../chain/ad.ts";
import type { SettlementBucket } from "../chain/settlements.ts";
import type { ProviderTier } from "../chain/types.ts";
import type {
  EpochVolumeSchema,
  HealthSchema,
  ModelSchema,
  ModelsSchema,
  ProviderSchema,
  ProvidersSchema,
  RouterSchema,
  SnapshotSchema,
  StatsSchema,
} from "./_schemas.ts";
import type { IndexerRequestError } from "./errors.ts";
import { meanReputation, reputation, REPUTATION_EPOCHS } from "./reputation.ts";
import type { Snapshot } from "./snapshot.ts";
import type { IndexerState } from "./state.ts";

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
export type HealthView = z.infer<typeof HealthSchema>;

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
export function statsView(snapshot: Snapshot): StatsView {
  const { chain } = snapshot;
  const capacity = { max_concurrency: 0, available_concurrency: 0 };
  const models = new Set<string>();
  for (const p of snapshot.live) {
    capacity.max_concurrency += p.capacity.max_concurrency;
    capacity.available_concurrency += p.capacity.available_concurrency;
    for (const m of p.ad.models) models.add(m.id);
  }
  let amount = 0n;
  let tokens = 0n;
  let count = 0;
  for (const b of snapshot.settlements.buckets) {
    amount += b.amount;
    tokens += b.tokens;
    count += b.settlements;
  }
  const e = chain.emission;
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
      scanned_to_block: snapshot.settlements.scannedTo === null
        ? null
        : String(snapshot.settlements.scannedTo),
      confirmations: snapshot.settlements.confirmations,
      amount: String(amount),
      tokens: String(tokens),
      count,
    },
    snapshot: snapshotView(snapshot),
  };
}

function providerReputation(
  snapshot: Snapshot,
  address: string,
  options: ViewOptions,
): number | null {
  const buckets = snapshot.settledBy.get(address.toLowerCase()) ?? [];
  return reputation(buckets.map((b) => b.epoch), snapshot.chain.emission.currentEpoch, {
    windowEpochs: options.reputationEpochs ?? REPUTATION_EPOCHS,
  });
}

/** The `/models` body: one entry per model id, sorted by id. */
export function modelsView(snapshot: Snapshot, options: ViewOptions = {}): ModelsView {
  interface Offer {
    provider: string;
    tier: ProviderTier;
    input: bigint;
    output: bigint;
    context: number;
    tps: number;
    reputation: number | null;
  }
  const offers = new Map<string, Offer[]>();
  for (const p of snapshot.live) {
    const rep = providerReputation(snapshot, p.state.address, options);
    for (const m of p.ad.models) {
      const list = offers.get(m.id) ?? [];
      list.push({
        provider: p.state.address.toLowerCase(),
        tier: p.state.tier,
        input: BigInt(m.prices.input),
        output: BigInt(m.prices.output),
        context: m.context_length,
        tps: p.metrics.tokens_per_sec,
        reputation: rep,
      });
      offers.set(m.id, list);
    }
  }
  const models = [...offers.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(
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
      };
    },
  );
  return { models };
}

function volume(buckets: readonly SettlementBucket[]): Omit<EpochVolumeView, "epoch"> {
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

/** The `/providers` body: one entry per live-verified provider, sorted by address. */
export function providersView(
  snapshot: Snapshot,
  options: ViewOptions = {},
): ProvidersView {
  const recent = BigInt(options.recentEpochs ?? RECENT_EPOCHS);
  const current = snapshot.chain.emission.currentEpoch;
  const first = current - recent + 1n > 0n ? current - recent + 1n : 0n;
  return {
    providers: snapshot.live.map((p): ProviderView => {
      const address = p.state.address.toLowerCase();
      const buckets = snapshot.settledBy.get(address) ?? [];
      const epochs: EpochVolumeView[] = [];
      for (let epoch = first; epoch <= current; epoch++) {
        epochs.push({ epoch: String(epoch), ...volume(buckets.filter((b) => b.epoch === epoch)) });
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
        settled: { epochs, total: volume(buckets) },
        reputation: providerReputation(snapshot, address, options),
      };
    }),
  };
}

function healthStatus(refused: IndexerRequestError | null): HealthView["status"] {
  if (refused === null) return "ok";
  if (refused.reason === "stale") return "stale";
  return refused.reason === "no_snapshot" ? "starting" : "unavailable";
}

/**
 * The `/health` body: the state, and why the data paths cannot answer now (`refused`, or
 * `null` when they can).
 */
export function healthView(
  state: IndexerState,
  now: Date,
  refused: IndexerRequestError | null,
): HealthView {
  const serving = refused === null ? state.snapshot : null;
  const iso = (date: Date | null) => (date ? date.toISOString() : null);
  const { lastError, rescans } = state;
  return {
    status: healthStatus(refused),
    live: true,
    serving: refused === null,
    error: refused ? { code: refused.code, message: refused.shortMessage } : null,
    last_snapshot_at: iso(state.lastSnapshotAt),
    last_attempt_at: iso(state.lastAttemptAt),
    last_error: lastError
      ? { code: lastError.code, message: lastError.message, at: lastError.at.toISOString() }
      : null,
    snapshot: serving
      ? {
        ...snapshotView(serving),
        age_secs: Math.max(0, Math.floor((now.getTime() - serving.takenAt.getTime()) / 1000)),
      }
      : null,
    routers: serving
      ? {
        total: serving.routers.length,
        reachable: serving.routers.filter((r) => r.reachable).length,
      }
      : null,
    refresh_secs: state.refreshSecs,
    stale_after_secs: state.staleAfterSecs,
    next_refresh_at: iso(state.nextRefreshAt),
    refreshing: state.refreshing,
    settlements: {
      scanned_to_block: serving?.settlements.scannedTo != null
        ? String(serving.settlements.scannedTo)
        : null,
      rescans: rescans.count,
      last_rescan: rescans.last
        ? { at: rescans.last.at.toISOString(), reason: rescans.last.reason }
        : null,
    },
  };
}
