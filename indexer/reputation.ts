/**
 * Reputation: how steadily a provider has been paid, from the indexed settlement history.
 *
 * **Rule.** The window is the last `windowEpochs` *finished* epochs before the current one
 * (epochs `max(0, current − windowEpochs) … current − 1`). A provider's reputation is the
 * share of the window's epochs in which at least one of its settlements was confirmed:
 *
 * ```
 * reputation = (epochs in the window with ≥ 1 settlement) / (epochs in the window)
 * ```
 *
 * rounded to 4 decimals; `null` while no epoch has finished (the window is empty). Paid in 3
 * of the last 5 finished epochs → `0.6`. A model's reputation is the mean of the reputations
 * of the live-verified providers serving it, rounded to 4 decimals.
 *
 * It rewards being paid (served and settled) often, not being paid much: one large
 * settlement does not outweigh months of steady service, and volume is shown separately.
 *
 * @example
 * ```ts
 * import { reputation } from "./reputation.ts";
 *
 * // Current epoch 5, window 8 → epochs 0..4; paid in epochs 0, 1 and 3.
 * console.assert(reputation([0n, 1n, 3n], 5n) === 0.6);
 * ```
 *
 * @module
 */

/** The default window of {@linkcode reputation}, in finished epochs. */
export const REPUTATION_EPOCHS = 8;

/** Options of {@linkcode reputation}. */
export interface ReputationOptions {
  /**
   * Number of finished epochs the window covers.
   *
   * @default {REPUTATION_EPOCHS}
   */
  windowEpochs?: number;
}

/** Rounds to 4 decimals (half away from zero; inputs here are ≥ 0). */
export function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

/**
 * A provider's reputation from the epochs in which it had settlements (any order, duplicates
 * allowed) and the current epoch; `null` when no epoch has finished.
 *
 * @throws {RangeError} when `windowEpochs` is not a positive integer.
 */
export function reputation(
  settledEpochs: Iterable<bigint>,
  currentEpoch: bigint,
  options: ReputationOptions = {},
): number | null {
  const window = options.windowEpochs ?? REPUTATION_EPOCHS;
  if (!Number.isSafeInteger(window) || window < 1) {
    throw new RangeError(
      `Cannot compute reputation: windowEpochs must be a positive integer, found ${window}`,
    );
  }
  const first = currentEpoch - BigInt(window) > 0n ? currentEpoch - BigInt(window) : 0n;
  const size = Number(currentEpoch - first);
  if (size <= 0) return null;
  const hit = new Set<bigint>();
  for (const epoch of settledEpochs) {
    if (epoch >= first && epoch < currentEpoch) hit.add(epoch);
  }
  return round4(hit.size / size);
}

/** The mean of the non-null values, rounded to 4 decimals; `null` when there are none. */
export function meanReputation(values: Iterable<number | null>): number | null {
  let sum = 0;
  let count = 0;
  for (const value of values) {
    if (value === null) continue;
    sum += value;
    count++;
  }
  return count === 0 ? null : round4(sum / count);
}
