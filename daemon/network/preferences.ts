/**
 * A request's routing preferences applied to its candidates, before the scheduler chooses among
 * them (`scheduler.ts` then follows `order` and `sort`): `only`, `ignore`, `order` without
 * fallbacks, `max_price` and `min_stake` keep the candidates that satisfy them, in that order.
 * When none is left, the refusal names the preference that excluded the last of them and what
 * the candidates offered, so the client knows what to relax:
 *
 * ```
 * No provider of devnet/echo in the verified tier satisfies the routing preferences:
 * provider.max_price.prompt (100) excluded the 2 left (the cheapest asks 150000)
 * ```
 *
 * @module
 */

import type { Address } from "viem";
import { DaemonError, type RoutingPreferences, type Tier } from "../core/mod.ts";
import type { ProviderCandidate } from "../gateway/mod.ts";

/** A candidate's stake on chain, or `undefined` when it cannot be read. */
export type StakeOf = (provider: Address) => Promise<bigint | undefined>;

interface Rule {
  /** The preference, as the client wrote it (`provider.max_price.prompt`). */
  readonly field: string;
  /** Its value, as shown. */
  readonly value: string;
  /** Whether a candidate satisfies it. */
  readonly keeps: (candidate: ProviderCandidate) => boolean;
  /** What the candidates it excluded offered. */
  readonly offered?: (excluded: readonly ProviderCandidate[]) => string;
}

function priceOf(candidate: ProviderCandidate, model: string, side: "input" | "output"): bigint {
  const entry = candidate.ad.models.find((m) => m.id === model);
  return entry ? BigInt(entry.prices[side]) : (1n << 256n);
}

function lowest(values: readonly bigint[]): bigint {
  return values.reduce((a, b) => (b < a ? b : a));
}

function highest(values: readonly bigint[]): bigint {
  return values.reduce((a, b) => (b > a ? b : a));
}

function list(addresses: readonly string[]): string {
  return addresses.length <= 3
    ? addresses.join(", ")
    : `${addresses.slice(0, 3).join(", ")} and ${addresses.length - 3} more`;
}

/** The rules of `preferences`, in the order they are applied. */
function rules(
  preferences: RoutingPreferences,
  model: string,
  stakes: ReadonlyMap<string, bigint | undefined>,
): Rule[] {
  const out: Rule[] = [];
  const { only, ignore, order, maxPrice, minStake } = preferences;
  if (only) {
    out.push({
      field: "provider.only",
      value: list(only),
      keeps: (c) => only.includes(c.provider),
    });
  }
  if (ignore) {
    out.push({
      field: "provider.ignore",
      value: list(ignore),
      keeps: (c) => !ignore.includes(c.provider),
    });
  }
  if (order && preferences.allowFallbacks === false) {
    out.push({
      field: "provider.order (with allow_fallbacks false)",
      value: list(order),
      keeps: (c) => order.includes(c.provider),
    });
  }
  for (const [key, side] of [["prompt", "input"], ["completion", "output"]] as const) {
    const limit = maxPrice?.[key];
    if (limit === undefined) continue;
    out.push({
      field: `provider.max_price.${key}`,
      value: String(limit),
      keeps: (c) => priceOf(c, model, side) <= limit,
      offered: (excluded) =>
        `the cheapest asks ${lowest(excluded.map((c) => priceOf(c, model, side)))}`,
    });
  }
  if (minStake !== undefined) {
    out.push({
      field: "provider.min_stake",
      value: String(minStake),
      keeps: (c) => (stakes.get(c.provider) ?? -1n) >= minStake,
      offered: (excluded) => {
        const known = excluded.map((c) => stakes.get(c.provider)).filter((s) => s !== undefined);
        return known.length === 0
          ? "no stake could be read"
          : `the most staked holds ${highest(known as bigint[])}`;
      },
    });
  }
  return out;
}

/**
 * The candidates that satisfy `preferences` (in their order), or a `no_matching_provider`
 * refusal naming the preference that excluded the last of them. Stakes are read only when
 * `min_stake` asks (through `stakeOf`, the chain's cached reads).
 *
 * @throws {DaemonError} `no_matching_provider` (404), or `invalid_request_error` for
 * `min_stake` without a chain to read stakes from.
 */
export async function preferred(
  candidates: readonly ProviderCandidate[],
  request: { model: string; tier: Tier; preferences?: RoutingPreferences },
  stakeOf: StakeOf | undefined,
): Promise<ProviderCandidate[]> {
  const preferences = request.preferences;
  if (!preferences) return [...candidates];
  const stakes = new Map<string, bigint | undefined>();
  if (preferences.minStake !== undefined) {
    if (!stakeOf) {
      throw new DaemonError(
        "invalid_request_error",
        "Cannot honour provider.min_stake: the daemon reads no chain (--insecure-gateway-keys), " +
          "so no provider's stake can be checked",
        { param: "provider.min_stake" },
      );
    }
    await Promise.all(
      candidates.map(async (c) => stakes.set(c.provider, await stakeOf(c.provider))),
    );
  }
  let kept = [...candidates];
  for (const rule of rules(preferences, request.model, stakes)) {
    const next = kept.filter(rule.keeps);
    if (next.length === 0) {
      const offered = rule.offered ? ` (${rule.offered(kept)})` : "";
      throw new DaemonError(
        "no_matching_provider",
        `No provider of ${request.model} in the ${request.tier} tier satisfies the routing ` +
          `preferences: ${rule.field} (${rule.value}) excluded the ${kept.length} left${offered}`,
        { param: rule.field.split(" ")[0] },
      );
    }
    kept = next;
  }
  return kept;
}
