/**
 * Shared pieces of the indexer tests: the router entry each planned provider gets (its ad as
 * published, plus capacity and metrics that are a simple function of its index, so a test can
 * state the expected sums by hand), and a chain state for the pure tests.
 *
 * @module
 */

import { adCommitment, type ProviderAd } from "../../chain/ad.ts";
import type { SettlementBucket } from "../../chain/settlements.ts";
import type { NetworkState } from "../../chain/types.ts";
import {
  type HistoryFigures,
  type HistoryState,
  type HistorySync,
  initialHistoryState,
} from "../../indexer/history.ts";
import { syncFor } from "../../indexer/_history_data.ts";
import { buildSnapshot, type Snapshot } from "../../indexer/snapshot.ts";
import type { EpochTotals, ProviderTotals } from "../../indexer/store/mod.ts";
import { firstEpochNeeded } from "../../indexer/views.ts";
import type { RouterEntry } from "../../devnet/router.ts";
import { expectedNetwork, type NetworkPlan, type PlannedProvider } from "../../devnet/seed.ts";

/** Capacity of planned provider `index`: max `2 + index % 7`, available `index % 3`. */
export function capacityOf(index: number): RouterEntry["capacity"] {
  return { max_concurrency: 2 + (index % 7), available_concurrency: index % 3 };
}

/** Observed tokens/sec of planned provider `index`: `10 + index / 4`. */
export function tokensPerSecOf(index: number): number {
  return 10 + index / 4;
}

/** The entry a router serves for a planned provider: its ad exactly as published. */
export function routerEntry(provider: PlannedProvider): RouterEntry {
  return {
    ad: structuredClone(provider.ad),
    capacity: capacityOf(provider.index),
    metrics: { tokens_per_sec: tokensPerSecOf(provider.index) },
  };
}

/** The plan's expected chain state at a made-up block (for tests without a chain). */
export function plannedState(plan: NetworkPlan, blockNumber = 100n): NetworkState {
  return {
    block: {
      number: blockNumber,
      hash: `0x${blockNumber.toString(16).padStart(64, "0")}`,
      timestamp: plan.finalTime,
    },
    ...structuredClone(expectedNetwork(plan).state),
  };
}

/** A provider of the hand-made network. */
interface HandProvider {
  address: `0x${string}`;
  tier: "verified" | "tee";
  stake: bigint;
  models: [id: string, input: string, output: string, context: number][];
  capacity: RouterEntry["capacity"];
  tokensPerSec: number;
}

const E30 = 10n ** 30n;

/**
 * A small network written out by hand, so the views' figures can be worked out on paper
 * (`tests/indexer/views_test.ts` does so): three bonded providers, one unbonded, two routers,
 * settlements in epochs 0–5 with the current epoch 5.
 */
export const HAND = {
  providers: [
    {
      address: "0x1111111111111111111111111111111111111111",
      tier: "verified",
      stake: 5n * E30,
      models: [
        ["acme/alpha", "100", "200", 8192],
        ["acme/beta", "10", "10", 4096],
        ["acme/gamma", "7", "7", 1024],
      ],
      capacity: { max_concurrency: 4, available_concurrency: 1 },
      tokensPerSec: 40,
    },
    {
      address: "0x2222222222222222222222222222222222222222",
      tier: "tee",
      stake: 3n * E30,
      models: [["acme/alpha", "150", "150", 32768]],
      capacity: { max_concurrency: 8, available_concurrency: 8 },
      tokensPerSec: 20.5,
    },
    {
      address: "0x3333333333333333333333333333333333333333",
      tier: "verified",
      stake: 1n * E30,
      models: [
        ["acme/alpha", "50", "250", 8192],
        ["acme/beta", "5", "15", 4096],
        ["acme/gamma", "7", "7", 2048],
      ],
      capacity: { max_concurrency: 0, available_concurrency: 0 },
      tokensPerSec: 11,
    },
    {
      address: "0x4444444444444444444444444444444444444444",
      tier: "verified",
      stake: 1n,
      models: [["acme/alpha", "1", "1", 8192]],
      capacity: { max_concurrency: 100, available_concurrency: 100 },
      tokensPerSec: 1000,
    },
  ] as HandProvider[],
  /** Settlements: [provider index, epoch, amount, tokens]. */
  settlements: [
    [0, 0n, 1n * E30, 1000n],
    [0, 1n, 2n, 10n],
    [0, 1n, 3n, 20n],
    [0, 3n, 4n, 30n],
    [1, 4n, 5n, 40n],
    [1, 5n, 6n, 50n],
    [3, 2n, 7n, 60n],
  ] as [number, bigint, bigint, bigint][],
  minProviderBond: 1000n,
  currentEpoch: 5n,
};

/** The hand network's ad of provider `i`. */
export function handAd(i: number): ProviderAd {
  const p = HAND.providers[i];
  return {
    version: 1,
    provider: p.address,
    tier: p.tier,
    serving_key: `0x${String(i + 5).repeat(40)}` as `0x${string}`,
    endpoint: `https://p${i}.example`,
    models: p.models.map(([id, input, output, context_length]) => ({
      id,
      prices: { input, output },
      context_length,
    })),
  };
}

/** The hand network's chain state. */
export function handState(): NetworkState {
  return {
    block: { number: 4242n, hash: `0x${"ab".repeat(32)}`, timestamp: 1_900_018_500n },
    providers: HAND.providers.map((p, i) => ({
      address: p.address,
      adCommitment: adCommitment(handAd(i)),
      trustRoot: handAd(i).serving_key,
      tier: p.tier,
      active: true,
      stake: p.stake,
      bonded: p.stake >= HAND.minProviderBond,
    })),
    validators: ["0x00000000000000000000000000000000000000a1"],
    routers: [
      { id: "0x00000000000000000000000000000000000000b1", url: "http://router-1.example" },
      { id: "0x00000000000000000000000000000000000000b2", url: "http://router-2.example" },
    ],
    approvedMeasurements: [`0x${"cd".repeat(32)}`],
    emission: {
      cap: 6000n * E30,
      totalEmitted: 1875n * E30,
      emittedEpochs: 5n,
      currentEpoch: HAND.currentEpoch,
      currentEpochReward: 500n * E30,
      schedule: {
        rule: "halving",
        genesisTime: 1_900_000_000n,
        epochLength: 3_600n,
        initialReward: 1000n * E30,
        halvingInterval: 4n,
      },
    },
    staking: { totalStaked: 9n * E30 + 1n, minProviderBond: HAND.minProviderBond },
  };
}

/** The hand network's settlement buckets. */
export function handSettlements(): SettlementBucket[] {
  const buckets = new Map<string, SettlementBucket>();
  for (const [i, epoch, amount, tokens] of HAND.settlements) {
    const provider = HAND.providers[i].address;
    const key = `${provider}:${epoch}`;
    const b = buckets.get(key) ?? { provider, epoch, amount: 0n, tokens: 0n, settlements: 0 };
    b.amount += amount;
    b.tokens += tokens;
    b.settlements++;
    buckets.set(key, b);
  }
  return [...buckets.values()];
}

/** The hand network's snapshot: router 1 serves every provider, router 2 the first two. */
export function handSnapshot(takenAt = new Date("2030-03-17T05:15:00.000Z")): Snapshot {
  const entry = (i: number) => ({
    ad: handAd(i),
    capacity: HAND.providers[i].capacity,
    metrics: { tokens_per_sec: HAND.providers[i].tokensPerSec },
  });
  const chain = handState();
  return buildSnapshot({
    takenAt,
    chain,
    routers: [
      { router: chain.routers[0], entries: HAND.providers.map((_, i) => entry(i)) },
      { router: chain.routers[1], entries: [entry(0), entry(1)] },
    ],
  });
}

/**
 * Settlement figures of `buckets` (every epoch, `fromEpoch` 0, addresses in lower case), as the
 * history reads them from its store, confirmed up to `at`.
 */
export function figuresOf(
  buckets: readonly SettlementBucket[],
  at: HistoryFigures["at"],
): HistoryFigures {
  // The store keeps lower-case addresses.
  const sorted = buckets.map((b) => ({
    ...b,
    provider: b.provider.toLowerCase() as typeof b.provider,
  }))
    .sort((a, b) =>
      a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : Number(a.epoch - b.epoch)
    );
  const epochs = new Map<bigint, EpochTotals>();
  const providers = new Map<string, ProviderTotals>();
  const recent = new Map<string, SettlementBucket[]>();
  const total = { amount: 0n, tokens: 0n, settlements: 0 };
  for (const b of sorted) {
    const e = epochs.get(b.epoch) ?? {
      epoch: b.epoch,
      amount: 0n,
      tokens: 0n,
      settlements: 0,
      providers: 0,
      signedAmount: 0n,
      signedSettlements: 0,
      consumers: 0,
    };
    epochs.set(b.epoch, {
      ...e,
      amount: e.amount + b.amount,
      tokens: e.tokens + b.tokens,
      settlements: e.settlements + b.settlements,
      providers: e.providers + 1,
    });
    const p = providers.get(b.provider) ?? {
      provider: b.provider,
      amount: 0n,
      tokens: 0n,
      settlements: 0,
      epochs: 0,
      firstEpoch: b.epoch,
      lastEpoch: b.epoch,
    };
    providers.set(b.provider, {
      ...p,
      amount: p.amount + b.amount,
      tokens: p.tokens + b.tokens,
      settlements: p.settlements + b.settlements,
      epochs: p.epochs + 1,
      lastEpoch: b.epoch,
    });
    recent.set(b.provider, [...(recent.get(b.provider) ?? []), b]);
    total.amount += b.amount;
    total.tokens += b.tokens;
    total.settlements += b.settlements;
  }
  return {
    at,
    total,
    signed: { amount: 0n, settlements: 0 }, // the hand network's settlements have no vouchers
    epochs: [...epochs.values()].sort((a, b) => Number(a.epoch - b.epoch)),
    providers,
    recent,
    fromEpoch: 0n,
  };
}

/** The hand network's settlement figures, confirmed up to block 4230 (all buckets, all epochs). */
export function handFigures(): HistoryFigures {
  return figuresOf(handSettlements(), { number: 4230n, hash: `0x${"42".repeat(32)}` });
}

/** The hand network's settlement history: a writer, synced with the hand snapshot. */
export function handHistory(figures: HistoryFigures | null = handFigures()): HistoryState {
  return {
    ...initialHistoryState(12, 100n),
    store: { backend: "embedded", location: "/var/lib/net-stats" },
    role: "writer",
    confirmed: figures?.at ?? null,
    lastBlock: { number: 4242n, hash: `0x${"ab".repeat(32)}` },
    headBlock: 4242n,
    figures,
  };
}

/** The hand history against the hand snapshot (synced). */
export function handSync(snapshot: Snapshot = handSnapshot()): HistorySync {
  const history = handHistory();
  return syncFor(history, snapshot.chain.block, {
    confirmations: history.confirmations,
    scanFromBlock: history.scanFromBlock,
    fromEpoch: firstEpochNeeded(snapshot.chain.emission.currentEpoch),
  });
}
