/**
 * `verifyEntry`: checks one entry of a router's `GET /v1/ads` against the chain. An entry is
 * accepted only when its ad is well formed (`chain/ad.ts`), its provider is registered and
 * bonded, the ad's provider, tier and serving key agree with the Registry, and the ad's
 * commitment equals the provider's on-chain `adCommitment`. Anything else is a rejection with
 * one reason, checked in this order:
 *
 * | reason                | when                                                                     |
 * | --------------------- | ------------------------------------------------------------------------ |
 * | `malformed`           | the entry is not `{ad, capacity, metrics}` with valid capacity/metrics, or the ad breaks a rule of `docs/protocol.md` §1 |
 * | `oversized`           | the ad's JSON text is larger than 64 KiB                                 |
 * | `unknown_provider`    | the ad names a provider the Registry does not list                      |
 * | `not_bonded`          | the provider is inactive or its stake is below the minimum bond          |
 * | `mismatched_fields`   | the ad's tier or serving key differs from the Registry's tier / trust root |
 * | `commitment_mismatch` | keccak256(JCS(ad)) differs from the on-chain `adCommitment`              |
 *
 * (`duplicate`, a second entry for the same provider in one router, is decided by the
 * snapshot, which sees the whole router.)
 *
 * @example
 * ```ts ignore
 * import { verifyEntry } from "./verify_entry.ts";
 *
 * const byAddress = new Map(state.providers.map((p) => [p.address, p]));
 * const verdict = verifyEntry(entry, byAddress);
 * if (!verdict.ok) console.log(verdict.reason, verdict.message);
 * ```
 *
 * @module
 */

import { adCommitment, AdError, MAX_AD_BYTES, type ProviderAd, validateAd } from "../chain/ad.ts";
import type { ProviderState } from "../chain/types.ts";
import { abbreviate } from "../errors.ts";

/** Why a router entry was not listed. */
export type RejectionReason =
  | "malformed"
  | "oversized"
  | "unknown_provider"
  | "not_bonded"
  | "mismatched_fields"
  | "commitment_mismatch"
  | "duplicate";

/** Every rejection reason, in the order the checks run (`duplicate` last). */
export const REJECTION_REASONS: readonly RejectionReason[] = Object.freeze([
  "malformed",
  "oversized",
  "unknown_provider",
  "not_bonded",
  "mismatched_fields",
  "commitment_mismatch",
  "duplicate",
]);

/** A provider's live advertised supply (`docs/protocol.md` §2). */
export interface Capacity {
  /** Most concurrent requests the provider takes. */
  max_concurrency: number;
  /** Of those, how many are free now (`0 ≤ available ≤ max`). */
  available_concurrency: number;
}

/** A provider's live metrics (`docs/protocol.md` §2). */
export interface Metrics {
  /** Observed decode throughput, tokens per second (finite, ≥ 0). */
  tokens_per_sec: number;
}

/** An accepted entry. */
export interface VerifiedEntry {
  /** Accepted. */
  ok: true;
  /** The provider's chain state. */
  provider: ProviderState;
  /** The ad, validated and matching the on-chain commitment. */
  ad: ProviderAd;
  /** The router's live capacity for the provider. */
  capacity: Capacity;
  /** The router's live metrics for the provider. */
  metrics: Metrics;
}

/** A rejected entry. */
export interface RejectedEntry {
  /** Rejected. */
  ok: false;
  /** Why. */
  reason: Exclude<RejectionReason, "duplicate">;
  /** What failed, what was found, what was expected. */
  message: string;
  /** The provider the entry claims to be, when it could be read (lower case). */
  provider: string | null;
}

/** The verdict of {@linkcode verifyEntry}. */
export type EntryVerdict = VerifiedEntry | RejectedEntry;

/** What checking one ad's JSON text found: the validated ad and its commitment, or the error. */
type AdCheck =
  | { ok: true; ad: ProviderAd; commitment: string }
  | { ok: false; reason: "oversized" | "malformed"; message: string };

/**
 * The checks of ads already seen, by their JSON text: a refresh sees mostly the same ads as
 * the last one, and an unchanged ad is not validated, canonicalized and hashed again (at
 * 10,000 providers that is most of the verification time). The verdict still depends on the
 * chain: the cached commitment is compared with the provider's on-chain one every time.
 * Entries unused for two refreshes are dropped ({@linkcode AdCache.rotate}).
 */
export class AdCache {
  #current = new Map<string, AdCheck>();
  #previous = new Map<string, AdCheck>();

  /** The check of `text`, or `undefined`. */
  get(text: string): AdCheck | undefined {
    let check = this.#current.get(text);
    if (check === undefined) {
      check = this.#previous.get(text);
      if (check !== undefined) this.#current.set(text, check);
    }
    return check;
  }

  /** Remembers the check of `text`. */
  set(text: string, check: AdCheck): void {
    this.#current.set(text, check);
  }

  /** Ends a refresh: what was not used in it or the one before is forgotten. */
  rotate(): void {
    this.#previous = this.#current;
    this.#current = new Map();
  }

  /** Ads remembered. */
  get size(): number {
    return new Set([...this.#previous.keys(), ...this.#current.keys()]).size;
  }
}

function checkAd(text: string, value: unknown): AdCheck {
  const size = new TextEncoder().encode(text).length;
  if (size > MAX_AD_BYTES) {
    return {
      ok: false,
      reason: "oversized",
      message: `Cannot accept ad: its JSON text is ${size} bytes, expected at most ${MAX_AD_BYTES}`,
    };
  }
  try {
    const ad = validateAd(value);
    return { ok: true, ad, commitment: adCommitment(ad) };
  } catch (error) {
    if (error instanceof AdError) {
      return { ok: false, reason: "malformed", message: error.shortMessage };
    }
    throw error;
  }
}

/** Largest accepted `max_concurrency`: sums over 10,000 providers stay exact. */
export const MAX_CONCURRENCY = 2 ** 31 - 1;

const ENTRY_KEYS = ["ad", "capacity", "metrics"];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return JSON.stringify(abbreviate(value, 40));
  return `${typeof value} ${String(value)}`;
}

function exactKeys(value: Record<string, unknown>, keys: readonly string[]): string | null {
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) return `has the unknown field ${JSON.stringify(key)}`;
  }
  for (const key of keys) if (!(key in value)) return `has no ${key}`;
  return null;
}

function checkCapacity(value: unknown): Capacity | string {
  if (!isObject(value)) return `capacity is ${describe(value)}, expected an object`;
  const keys = exactKeys(value, ["max_concurrency", "available_concurrency"]);
  if (keys) return `capacity ${keys}`;
  const { max_concurrency: max, available_concurrency: available } = value;
  for (const [name, n] of [["max_concurrency", max], ["available_concurrency", available]]) {
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > MAX_CONCURRENCY) {
      return `capacity.${name} is ${describe(n)}, expected an integer from 0 to ${MAX_CONCURRENCY}`;
    }
  }
  if ((available as number) > (max as number)) {
    return `capacity.available_concurrency ${available} exceeds max_concurrency ${max}`;
  }
  return { max_concurrency: max as number, available_concurrency: available as number };
}

function checkMetrics(value: unknown): Metrics | string {
  if (!isObject(value)) return `metrics is ${describe(value)}, expected an object`;
  const keys = exactKeys(value, ["tokens_per_sec"]);
  if (keys) return `metrics ${keys}`;
  const tps = value.tokens_per_sec;
  if (typeof tps !== "number" || !Number.isFinite(tps) || tps < 0) {
    return `metrics.tokens_per_sec is ${describe(tps)}, expected a finite number ≥ 0`;
  }
  return { tokens_per_sec: tps };
}

/**
 * Checks one router entry against the providers read from chain (keyed by lower-case
 * address). Pure (given the same `cache`, which only remembers what an ad's text always
 * gives); never throws for bad input.
 */
export function verifyEntry(
  entry: unknown,
  providers: ReadonlyMap<string, ProviderState>,
  cache?: AdCache,
): EntryVerdict {
  const claimed = isObject(entry) && isObject(entry.ad) && typeof entry.ad.provider === "string"
    ? entry.ad.provider.toLowerCase()
    : null;
  const reject = (reason: RejectedEntry["reason"], message: string): RejectedEntry => ({
    ok: false,
    reason,
    message,
    provider: claimed,
  });
  if (!isObject(entry)) {
    return reject("malformed", `Cannot accept entry: it is ${describe(entry)}, expected an object`);
  }
  const keys = exactKeys(entry, ENTRY_KEYS);
  if (keys) return reject("malformed", `Cannot accept entry: it ${keys}`);
  const capacity = checkCapacity(entry.capacity);
  if (typeof capacity === "string") return reject("malformed", `Cannot accept entry: ${capacity}`);
  const metrics = checkMetrics(entry.metrics);
  if (typeof metrics === "string") return reject("malformed", `Cannot accept entry: ${metrics}`);

  // The ad's JSON text as the router sent it, re-serialized: the limit is on its size.
  const text = JSON.stringify(entry.ad) ?? "";
  let check = cache?.get(text);
  if (check === undefined) {
    check = checkAd(text, entry.ad);
    cache?.set(text, check);
  }
  if (!check.ok) return reject(check.reason, check.message);
  const { ad, commitment } = check;
  const address = ad.provider.toLowerCase();
  const provider = providers.get(address);
  if (!provider) {
    return reject(
      "unknown_provider",
      `Cannot accept ad: provider ${address} is not in the Registry`,
    );
  }
  if (!provider.bonded) {
    return reject(
      "not_bonded",
      `Cannot accept ad: provider ${address} is not bonded (${
        provider.active ? `stake ${provider.stake} is below the minimum bond` : "inactive"
      })`,
    );
  }
  if (ad.tier !== provider.tier) {
    return reject(
      "mismatched_fields",
      `Cannot accept ad: tier is ${ad.tier}, the Registry says ${provider.tier} for ${address}`,
    );
  }
  if (ad.serving_key.toLowerCase() !== provider.trustRoot.toLowerCase()) {
    return reject(
      "mismatched_fields",
      `Cannot accept ad: serving_key is ${ad.serving_key.toLowerCase()}, the Registry's trust ` +
        `root for ${address} is ${provider.trustRoot.toLowerCase()}`,
    );
  }
  if (commitment !== provider.adCommitment.toLowerCase()) {
    return reject(
      "commitment_mismatch",
      `Cannot accept ad of ${address}: its commitment is ${
        abbreviate(commitment, 14)
      }, the Registry holds ${abbreviate(provider.adCommitment.toLowerCase(), 14)}`,
    );
  }
  return { ok: true, provider, ad, capacity, metrics };
}
