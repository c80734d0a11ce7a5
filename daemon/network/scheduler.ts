/**
 * The daemon's scheduler on the network side: how many requests this daemon has in flight at
 * each provider, against the capacity the provider advertises, and which acceptable candidate a
 * request goes to (`docs/daemon.md`, "Scheduling").
 *
 * - **Capacity** is the provider's advertised `max_concurrency` (the routers' live capacity, as
 *   the gateway lists it), or {@linkcode DEFAULT_CAPACITY} when it advertises none. A provider
 *   that answered "at capacity" (`503` + `Retry-After`) takes nothing more from this daemon until
 *   that time passes or one of this daemon's own requests there ends.
 * - **The rule**: the candidates this request has not already seen fail are put in preference
 *   order ({@linkcode rank}: reliable ones — the daemon's own reputation ≥ ½ — first, then by
 *   blended price) and cut into price bands: a band is a candidate and every one of the same
 *   reliability priced within {@linkcode PRICE_BAND_PERCENT} % above it. The first band with a
 *   free slot is used; in it, the least relative load (in flight ÷ capacity) wins; ties are
 *   broken at random. A burst therefore spreads over every provider of the band instead of
 *   landing on one, and spills over to the next band only when the band is full.
 *
 * @example
 * ```ts ignore
 * const scheduler = new ProviderScheduler();
 * const pick = scheduler.pick(candidates, { model: "devnet/echo", exclude: new Set() });
 * if (pick) {
 *   const lease = scheduler.acquire(pick);
 *   try { … } finally { lease.release(); }
 * }
 * ```
 *
 * @module
 */

import { blendedPrice } from "../../chain/ad.ts";
import type { ProviderCandidate } from "../gateway/mod.ts";

/** Slots assumed for a provider that advertises no capacity. */
export const DEFAULT_CAPACITY = 4;

/** How far above the cheapest price a candidate still counts as cheap, in percent. */
export const PRICE_BAND_PERCENT = 10n;

/** Options of {@linkcode ProviderScheduler}. */
export interface ProviderSchedulerOptions {
  /** A monotonic clock in ms. @default {() => performance.now()} */
  now?: () => number;
  /** Random numbers in [0, 1), to break ties. @default {Math.random} */
  random?: () => number;
  /** Slots of a provider that advertises none. @default {DEFAULT_CAPACITY} */
  defaultCapacity?: number;
}

/** What {@linkcode ProviderScheduler.pick} needs besides the candidates. */
export interface PickOptions {
  /** The model asked for (`maker/model`): its price in each ad is compared. */
  model: string;
  /** Providers this request must not use again (they failed it). */
  exclude?: ReadonlySet<string>;
  /** The daemon's reliability score of a provider, in (0, 1). @default {() => 0.5} */
  score?: (provider: string) => number;
  /**
   * The client's order of preference (`provider.sort`): `price` is the rule above;
   * `throughput` takes the highest advertised tokens/s with a free slot, `latency` the lowest
   * first-chunk latency this daemon observed (`latency`; unknown ones after known ones) —
   * reliable providers first either way.
   *
   * @default {"price"}
   */
  sort?: "price" | "throughput" | "latency";
  /** Providers to take first, in this order, while one has a free slot (`provider.order`). */
  order?: readonly string[];
  /** A provider's observed first-chunk latency, ms, when known. @default {() => undefined} */
  latency?: (provider: string) => number | undefined;
}

/** A slot this daemon holds at a provider, until {@linkcode Lease.release}. */
export interface Lease {
  /** The provider it is held at. */
  readonly candidate: ProviderCandidate;
  /**
   * Gives the slot back; idempotent. With `busyForMs`, the provider answered that it is at
   * capacity: it takes nothing more from this daemon for that long (or until another of this
   * daemon's requests there ends).
   */
  release(options?: { busyForMs?: number }): void;
}

interface ProviderState {
  inFlight: number;
  busyUntil: number;
}

/** Per-provider load as this daemon sees it, and the choice among candidates. */
export class ProviderScheduler {
  readonly #states = new Map<string, ProviderState>();
  readonly #listeners = new Set<() => void>();
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #defaultCapacity: number;

  /** Creates a scheduler with nothing in flight. */
  constructor(options: ProviderSchedulerOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#random = options.random ?? Math.random;
    this.#defaultCapacity = options.defaultCapacity ?? DEFAULT_CAPACITY;
  }

  /** The slots a candidate offers this daemon: its advertised capacity, or the default. */
  capacityOf(candidate: ProviderCandidate): number {
    return candidate.maxConcurrency ?? this.#defaultCapacity;
  }

  /** Requests this daemon has in flight at `provider`. */
  inFlight(provider: string): number {
    return this.#states.get(provider)?.inFlight ?? 0;
  }

  /** Requests this daemon has in flight, over every provider. */
  get totalInFlight(): number {
    let total = 0;
    for (const state of this.#states.values()) total += state.inFlight;
    return total;
  }

  /** Slots this daemon may still use at `candidate` now (0 while it said it is busy). */
  free(candidate: ProviderCandidate): number {
    const state = this.#states.get(candidate.provider);
    if (state && state.busyUntil > this.#now()) return 0;
    return Math.max(0, this.capacityOf(candidate) - (state?.inFlight ?? 0));
  }

  /**
   * Chooses where a request goes (the rule in the module documentation), or `undefined` when
   * no candidate has a free slot.
   */
  pick(
    candidates: readonly ProviderCandidate[],
    options: PickOptions,
  ): ProviderCandidate | undefined {
    const score = options.score ?? (() => 0.5);
    const usable = candidates.filter((c) => !options.exclude?.has(c.provider));
    for (const address of options.order ?? []) {
      const ordered = usable.find((c) => c.provider === address);
      if (ordered && this.free(ordered) > 0) return ordered;
    }
    const rest = options.order
      ? usable.filter((c) => !options.order!.includes(c.provider))
      : usable;
    if (options.sort === "throughput" || options.sort === "latency") {
      return this.#fastest(rest, options.sort, { score, latency: options.latency });
    }
    // The preference order without load (the listing's free slots are stale; ours count).
    const ranked = rank(
      rest.map((c) => ({ ...c, available: 1 })),
      options.model,
      score,
    );
    for (let at = 0; at < ranked.length;) {
      // A band: the candidates of one reliability class priced within the band of its cheapest.
      const anchor = ranked[at];
      const reliable = score(anchor.provider) >= 0.5;
      const ceiling = priceOf(anchor, options.model) * (100n + PRICE_BAND_PERCENT);
      let least: ProviderCandidate[] = [];
      let leastLoad: [number, number] = [1, 0]; // in flight, capacity: compared as fractions
      for (; at < ranked.length; at++) {
        const c = ranked[at];
        if ((score(c.provider) >= 0.5) !== reliable) break;
        if (priceOf(c, options.model) * 100n > ceiling) break;
        if (this.free(c) === 0) continue;
        const load: [number, number] = [this.inFlight(c.provider), this.capacityOf(c)];
        const order = load[0] * leastLoad[1] - leastLoad[0] * load[1];
        if (least.length === 0 || order < 0) {
          least = [c];
          leastLoad = load;
        } else if (order === 0) least.push(c);
      }
      if (least.length === 0) continue; // this band is full: the next one
      const chosen = least[Math.min(least.length - 1, Math.floor(this.#random() * least.length))];
      return candidates.find((c) => c.provider === chosen.provider);
    }
    return undefined;
  }

  /** The first with a free slot by throughput or latency, reliable ones first. */
  #fastest(
    candidates: readonly ProviderCandidate[],
    sort: "throughput" | "latency",
    how: {
      score: (provider: string) => number;
      latency?: (provider: string) => number | undefined;
    },
  ): ProviderCandidate | undefined {
    const latency = (c: ProviderCandidate) => how.latency?.(c.provider) ?? Infinity;
    const ordered = [...candidates].sort((a, b) => {
      const reliable = Number(how.score(b.provider) >= 0.5) - Number(how.score(a.provider) >= 0.5);
      if (reliable !== 0) return reliable;
      const by = sort === "throughput" ? b.tokensPerSec - a.tokensPerSec : latency(a) - latency(b);
      if (by !== 0 && !Number.isNaN(by)) return by;
      return a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : 0;
    });
    return ordered.find((c) => this.free(c) > 0);
  }

  /** Takes a slot at `candidate` for one request. */
  acquire(candidate: ProviderCandidate): Lease {
    const state = this.#state(candidate.provider);
    state.inFlight++;
    let released = false;
    return {
      candidate,
      release: (options = {}) => {
        if (released) return;
        released = true;
        state.inFlight--;
        if (options.busyForMs !== undefined) {
          state.busyUntil = this.#now() + options.busyForMs;
          this.#states.set(candidate.provider, state);
          return; // nothing freed: the provider is full
        }
        // One of this daemon's own requests there ended: that slot is free, whatever it said.
        state.busyUntil = 0;
        if (state.inFlight === 0) this.#states.delete(candidate.provider);
        this.#notify();
      },
    };
  }

  /** Records that `provider` answered "at capacity" and asked to wait `retryAfterMs`. */
  busy(provider: string, retryAfterMs: number): void {
    this.#state(provider).busyUntil = this.#now() + retryAfterMs;
  }

  /** When the earliest "at capacity" answer expires (clock ms), or `undefined` if none is pending. */
  nextExpiry(): number | undefined {
    const now = this.#now();
    let next: number | undefined;
    for (const [provider, state] of this.#states) {
      if (state.busyUntil > now) next = Math.min(next ?? Infinity, state.busyUntil);
      else if (state.inFlight === 0) this.#states.delete(provider);
    }
    return next;
  }

  /** Calls `listener` whenever a slot may have become free; returns the unsubscriber. */
  onFree(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #state(provider: string): ProviderState {
    let state = this.#states.get(provider);
    if (!state) {
      state = { inFlight: 0, busyUntil: 0 };
      this.#states.set(provider, state);
    }
    return state;
  }

  #notify(): void {
    for (const listener of this.#listeners) listener();
  }
}

/** The blended price (input + output, exact) of `model` in the candidate's ad. */
function priceOf(candidate: ProviderCandidate, model: string): bigint {
  const entry = candidate.ad.models.find((m) => m.id === model);
  // A candidate is listed only when its ad offers the model; an ad without it sorts last.
  return entry ? blendedPrice(entry.prices) : (1n << 256n);
}

/**
 * Orders candidates by preference (`docs/daemon.md`), which
 * {@linkcode ProviderScheduler.pick} reads its band from: those with free capacity first; then those this daemon has found reliable (`score` ≥ ½: unknown
 * providers count as reliable) before those that keep failing it; then the lowest blended price
 * of the model (input + output, exact); then the better reputation; then the higher observed
 * throughput; then by address, so the order is total.
 */
export function rank(
  candidates: readonly ProviderCandidate[],
  model: string,
  score: (provider: string) => number = () => 0.5,
): ProviderCandidate[] {
  return [...candidates].map((c) => ({ c, price: priceOf(c, model), score: score(c.provider) }))
    .sort((a, b) => {
      if ((a.c.available > 0) !== (b.c.available > 0)) return a.c.available > 0 ? -1 : 1;
      if ((a.score >= 0.5) !== (b.score >= 0.5)) return a.score >= 0.5 ? -1 : 1;
      if (a.price !== b.price) return a.price < b.price ? -1 : 1;
      if (a.score !== b.score) return b.score - a.score;
      if (a.c.tokensPerSec !== b.c.tokensPerSec) return b.c.tokensPerSec - a.c.tokensPerSec;
      return a.c.provider < b.c.provider ? -1 : a.c.provider > b.c.provider ? 1 : 0;
    })
    .map(({ c }) => c);
}
