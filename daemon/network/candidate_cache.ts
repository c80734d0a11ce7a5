/**
 * The candidate lists of recent requests (`GET /v1/providers?model=&tier=`), kept briefly per
 * gateway, model and tier, so that a chat in steady state costs no gateway round trip before
 * sealing: a list younger than `freshMs` is used as it is; an older one, up to `staleMs`, is
 * used while a refresh runs in the background; past that, the request waits for a fresh list.
 * A gateway is untrusted either way: every ad in a list was validated when it was read, and
 * every provider is verified before anything is sealed to it.
 *
 * @module
 */

import type { Tier } from "../core/mod.ts";
import type { GatewayClient, ProviderCandidate } from "../gateway/mod.ts";

/** Options of {@linkcode CandidateCache}. */
export interface CandidateCacheOptions {
  /** How long a list is used without asking again, in ms. @default {2000} */
  freshMs?: number;
  /** How long a list is used while a refresh runs in the background, in ms. @default {30000} */
  staleMs?: number;
  /** Most lists kept (the oldest go first). @default {1024} */
  capacity?: number;
  /** A monotonic clock in ms. @default {() => performance.now()} */
  now?: () => number;
  /** Called after a list was read again (new providers may have slots). */
  onRefresh?: () => void;
}

interface Entry {
  at: number;
  list: readonly ProviderCandidate[];
}

/** Recent candidate lists, per gateway, model and tier. */
export class CandidateCache {
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<readonly ProviderCandidate[]>>();
  readonly #freshMs: number;
  readonly #staleMs: number;
  readonly #capacity: number;
  readonly #now: () => number;
  readonly #onRefresh: (() => void) | undefined;

  /** Creates an empty cache. */
  constructor(options: CandidateCacheOptions = {}) {
    this.#freshMs = options.freshMs ?? 2000;
    this.#staleMs = options.staleMs ?? 30_000;
    this.#capacity = options.capacity ?? 1024;
    this.#now = options.now ?? (() => performance.now());
    this.#onRefresh = options.onRefresh;
  }

  /**
   * The candidates of `model` in `tier` through `gateway`: cached, or read now (`fresh: true`
   * always reads now).
   *
   * @throws {GatewayError} when the gateway cannot give a list and none is cached.
   */
  async get(
    gateway: GatewayClient,
    request: { model: string; tier: Tier; fresh?: boolean },
    signal: AbortSignal,
  ): Promise<readonly ProviderCandidate[]> {
    const key = keyOf(gateway.url, request.model, request.tier);
    const entry = this.#entries.get(key);
    const age = entry ? this.#now() - entry.at : Infinity;
    if (!request.fresh && entry && age < this.#staleMs) {
      if (age >= this.#freshMs) this.#refresh(key, gateway, request).catch(() => {});
      return entry.list;
    }
    return await abortable(this.#refresh(key, gateway, request), signal);
  }

  /** The cached list, if any, whatever its age. */
  peek(gatewayUrl: string, model: string, tier: Tier): readonly ProviderCandidate[] | undefined {
    return this.#entries.get(keyOf(gatewayUrl, model, tier))?.list;
  }

  /** Reads the list once for everyone who needs it now (no caller's signal cancels it). */
  #refresh(
    key: string,
    gateway: GatewayClient,
    request: { model: string; tier: Tier },
  ): Promise<readonly ProviderCandidate[]> {
    const running = this.#pending.get(key);
    if (running) return running;
    const pending = gateway.providers(request.model, request.tier).then((list) => {
      this.#entries.delete(key);
      this.#entries.set(key, { at: this.#now(), list });
      if (this.#entries.size > this.#capacity) {
        this.#entries.delete(this.#entries.keys().next().value!);
      }
      this.#onRefresh?.();
      return list;
    }).finally(() => this.#pending.delete(key));
    this.#pending.set(key, pending);
    return pending;
  }
}

function keyOf(gatewayUrl: string, model: string, tier: Tier): string {
  return `${gatewayUrl}\u0000${tier}\u0000${model}`;
}

/** `promise`, or the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
