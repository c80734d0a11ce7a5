/**
 * The daemon's own view of each provider's reliability: how often it recently answered a
 * request of this daemon. The network's reputation lives in the indexer (settlement history),
 * which the daemon does not depend on; what the daemon can know first-hand is whether a
 * provider served it. That is what ranks candidates after price.
 *
 * The score is a success rate with a prior of one success and one failure, so an unknown
 * provider scores ½, and every count halves every `halfLifeMs`, so old failures are forgiven.
 *
 * @example
 * ```ts
 * import { ProviderReputation } from "./provider_reputation.ts";
 * const reputation = new ProviderReputation();
 * reputation.record("0xabc", false);
 * console.assert(reputation.score("0xabc") < 0.5);
 * ```
 *
 * @module
 */

/** Options of {@linkcode ProviderReputation}. */
export interface ProviderReputationOptions {
  /** Counts halve every this many ms. @default {600000} (10 minutes) */
  halfLifeMs?: number;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Most providers remembered (the least recently seen go first). @default {10000} */
  capacity?: number;
}

interface Counts {
  successes: number;
  failures: number;
  at: number;
}

/** How much a new latency weighs in the moving average. */
const LATENCY_WEIGHT = 0.3;

/** Recent successes and failures per provider. */
export class ProviderReputation {
  readonly #counts = new Map<string, Counts>();
  readonly #latencies = new Map<string, number>();
  readonly #halfLifeMs: number;
  readonly #clock: () => Date;
  readonly #capacity: number;

  /**
   * Creates an empty record.
   *
   * @throws {RangeError} when `halfLifeMs` is not a positive finite number or `capacity` not
   * a positive integer.
   */
  constructor(options: ProviderReputationOptions = {}) {
    this.#halfLifeMs = options.halfLifeMs ?? 600_000;
    this.#clock = options.clock ?? (() => new Date());
    this.#capacity = options.capacity ?? 10_000;
    // A zero half-life makes every score NaN (0/0); a NaN capacity turns the bound off.
    if (!Number.isFinite(this.#halfLifeMs) || this.#halfLifeMs <= 0) {
      throw new RangeError(
        `Cannot create provider reputation: halfLifeMs must be a positive finite number of ms, found ${this.#halfLifeMs}`,
      );
    }
    if (!Number.isSafeInteger(this.#capacity) || this.#capacity < 1) {
      throw new RangeError(
        `Cannot create provider reputation: capacity must be a positive integer, found ${this.#capacity}`,
      );
    }
  }

  /** Records that `provider` served a request (`true`) or failed one (`false`). */
  record(provider: string, served: boolean): void {
    const counts = this.#decayed(provider);
    if (served) counts.successes++;
    else counts.failures++;
    this.#counts.delete(provider);
    this.#counts.set(provider, counts);
    if (this.#counts.size > this.#capacity) {
      this.#counts.delete(this.#counts.keys().next().value!);
    }
  }

  /** Records how long `provider` took to its first chunk, ms (a moving average is kept). */
  recordLatency(provider: string, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    const before = this.#latencies.get(provider);
    this.#latencies.delete(provider);
    this.#latencies.set(
      provider,
      before === undefined ? ms : before + LATENCY_WEIGHT * (ms - before),
    );
    if (this.#latencies.size > this.#capacity) {
      this.#latencies.delete(this.#latencies.keys().next().value!);
    }
  }

  /** The provider's average time to its first chunk, ms, or `undefined` when never measured. */
  latency(provider: string): number | undefined {
    return this.#latencies.get(provider);
  }

  /** The provider's score in (0, 1): ½ when unknown, towards 1 when it keeps serving. */
  score(provider: string): number {
    // Called for every comparison of a pick: nothing is allocated for it.
    const counts = this.#counts.get(provider);
    if (!counts) return 0.5;
    const factor = this.#factor(counts);
    const successes = counts.successes * factor;
    return (successes + 1) / (successes + counts.failures * factor + 2);
  }

  /** How much of `counts` is left now (it halves every half-life). */
  #factor(counts: Counts): number {
    return 0.5 ** (Math.max(0, this.#clock().getTime() - counts.at) / this.#halfLifeMs);
  }

  #decayed(provider: string): Counts {
    const now = this.#clock().getTime();
    const counts = this.#counts.get(provider);
    if (!counts) return { successes: 0, failures: 0, at: now };
    const factor = 0.5 ** (Math.max(0, now - counts.at) / this.#halfLifeMs);
    return { successes: counts.successes * factor, failures: counts.failures * factor, at: now };
  }
}
