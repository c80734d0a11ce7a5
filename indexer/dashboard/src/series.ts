/**
 * The charts' data: emission over epochs (from the schedule in `/stats`, exact with `bigint`,
 * the rule of `contracts/Emission.sol`), settled volume per epoch (from `/epochs`) and a
 * provider's per-epoch history (the sparkline). Pure.
 *
 * @example
 * ```ts
 * import { scheduledTotal } from "./series.ts";
 *
 * // 100 a epoch, halving every 2 epochs, cap 1000: 100 + 100 + 50 + 50 + 25 = 325
 * console.assert(scheduledTotal({ initial: 100n, interval: 2n, cap: 1000n }, 5n) === 325n);
 * ```
 *
 * @module
 */

import { tokensAsNumber } from "./format.ts";
import type { Epoch, EpochVolume, Stats } from "./types.ts";

/** The halving schedule: reward of epoch `e` is `initial >> (e / interval)`, all capped. */
export interface Schedule {
  /** Reward of epoch 0. */
  initial: bigint;
  /** Epochs between halvings. */
  interval: bigint;
  /** Upper bound of the total. */
  cap: bigint;
}

/** The scheduled reward of `epoch`, before the cap (`Emission.epochReward`). */
export function scheduledReward(schedule: Schedule, epoch: bigint): bigint {
  const halvings = epoch / schedule.interval;
  return halvings >= 256n ? 0n : schedule.initial >> halvings;
}

/** The total of epochs `0 … epochs − 1`, capped: what `epochs` emitted epochs add up to. */
export function scheduledTotal(schedule: Schedule, epochs: bigint): bigint {
  let total = 0n;
  for (let start = 0n; start < epochs && total < schedule.cap; start += schedule.interval) {
    const count = epochs - start < schedule.interval ? epochs - start : schedule.interval;
    total += count * scheduledReward(schedule, start);
    if (scheduledReward(schedule, start) === 0n) break;
  }
  return total < schedule.cap ? total : schedule.cap;
}

/** The series of the emission chart. */
export interface EmissionSeries {
  /** The epochs on the x axis. */
  epochs: number[];
  /** Total emitted after each epoch, in tokens; `null` past the epochs emitted so far. */
  emitted: (number | null)[];
  /** Total scheduled after each epoch, in tokens (the emitted line continued). */
  scheduled: (number | null)[];
  /** Reward of each epoch, in tokens (`/epochs`' when it gives one, else the schedule's). */
  reward: number[];
}

/** The schedule of `stats`. */
export function scheduleOf(stats: Stats): Schedule {
  const schedule = stats.emission.schedule;
  return {
    initial: BigInt(schedule.initial_reward),
    interval: BigInt(schedule.halving_interval),
    cap: BigInt(stats.emission.cap),
  };
}

/** Up to `maxPoints` epochs from 0 to `last`, evenly spaced, `last` included. */
function sampleEpochs(last: bigint, maxPoints: number): bigint[] {
  const count = last + 1n;
  const step = count <= BigInt(maxPoints)
    ? 1n
    : (count + BigInt(maxPoints) - 1n) / BigInt(maxPoints);
  const out: bigint[] = [];
  for (let epoch = 0n; epoch <= last; epoch += step) out.push(epoch);
  if (out[out.length - 1] !== last) out.push(last);
  return out;
}

/**
 * Emission over epochs 0 to the current one (at most `maxPoints` of them): the total emitted
 * after each emitted epoch, the scheduled total after the later ones, and each epoch's reward.
 */
export function emissionSeries(
  stats: Stats,
  epochRewards: ReadonlyMap<string, string> = new Map(),
  maxPoints = 240,
): EmissionSeries {
  const schedule = scheduleOf(stats);
  const emittedEpochs = BigInt(stats.emission.emitted_epochs);
  const current = BigInt(stats.emission.current_epoch);
  const last = current > emittedEpochs ? current : emittedEpochs;
  const series: EmissionSeries = { epochs: [], emitted: [], scheduled: [], reward: [] };
  for (const epoch of sampleEpochs(last, maxPoints)) {
    const total = tokensAsNumber(scheduledTotal(schedule, epoch + 1n).toString());
    const isEmitted = epoch < emittedEpochs;
    series.epochs.push(Number(epoch));
    series.emitted.push(isEmitted ? total : null);
    // The scheduled line starts where the emitted one ends, so the two join.
    series.scheduled.push(isEmitted && epoch + 1n < emittedEpochs ? null : total);
    const reward = epochRewards.get(epoch.toString()) ??
      scheduledReward(schedule, epoch).toString();
    series.reward.push(tokensAsNumber(reward));
  }
  return series;
}

/** The series of the settled-volume chart. */
export interface VolumeSeries {
  /** Epochs, ascending. */
  epochs: number[];
  /** Settled amount per epoch, in tokens. */
  amount: number[];
  /** Settlements per epoch. */
  settlements: number[];
  /** Of the amount, what consumers' vouchers paid, in tokens. */
  signed: number[];
  /** Distinct consumers who paid with a voucher. */
  payers: number[];
}

/** An epoch's settled volume with what consumers' signatures paid (`/epochs`). */
export interface EpochVolumeSigned extends EpochVolume {
  /** Of the amount, what vouchers paid. */
  signed_amount?: string;
  /** Distinct paying consumers. */
  paying_consumers?: number;
}

/**
 * The settled volume of `/epochs` rows, or `null` when the history is not synced (their figures
 * are `null`: never drawn as zero).
 */
export function syncedVolume(epochs: readonly Epoch[]): EpochVolumeSigned[] | null {
  const out: EpochVolumeSigned[] = [];
  for (const e of epochs) {
    if (e.amount === null || e.tokens === null || e.settlements === null) return null;
    out.push({
      epoch: e.epoch,
      amount: e.amount,
      tokens: e.tokens,
      settlements: e.settlements,
      ...(e.signed_amount == null ? {} : { signed_amount: e.signed_amount }),
      ...(e.paying_consumers == null ? {} : { paying_consumers: e.paying_consumers }),
    });
  }
  return out;
}

/** Settled volume per epoch, sorted by epoch (the answer's order may be either). */
export function volumeSeries(epochs: readonly EpochVolumeSigned[]): VolumeSeries {
  const sorted = [...epochs].sort((a, b) => {
    const d = BigInt(a.epoch) - BigInt(b.epoch);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  });
  return {
    epochs: sorted.map((e) => Number(e.epoch)),
    amount: sorted.map((e) => tokensAsNumber(e.amount)),
    settlements: sorted.map((e) => e.settlements),
    signed: sorted.map((e) => tokensAsNumber(e.signed_amount ?? "0")),
    payers: sorted.map((e) => e.paying_consumers ?? 0),
  };
}

/** The epoch → reward map of `/epochs` rows. */
export function rewardsOf(epochs: readonly Epoch[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of epochs) if (typeof e.reward === "string") out.set(e.epoch, e.reward);
  return out;
}

/** A provider's settled amount per epoch in tokens, oldest first (the sparkline). */
export function sparkSeries(history: readonly EpochVolume[]): number[] {
  return volumeSeries(history).amount;
}
