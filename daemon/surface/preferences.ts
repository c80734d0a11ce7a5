/**
 * Routing preferences on every chat surface: the `provider` object clients already write for
 * OpenRouter — `sort` (`price`, `throughput`, `latency`), `max_price`, `order`, `only`, `ignore`,
 * `allow_fallbacks` — plus the network's own `require_tier` (`tee`: served only after the
 * provider's enclave is attested, whatever tier the model id names) and `min_stake` (the
 * smallest stake a provider must hold on chain). Checked strictly: an unknown key or a bad value
 * is a 400 naming it. Providers are named by their address; prices and stakes are decimal
 * strings (or whole numbers) in the smallest token unit, prices per 1M tokens like the ads'.
 *
 * The object is taken out of the body (a provider never sees it) and becomes
 * {@linkcode RoutingPreferences} on the chat request, which the network backend honours
 * (`network/preferences.ts`).
 *
 * @example
 * ```ts
 * import { routed } from "./preferences.ts";
 *
 * const request = routed(
 *   { tier: "verified", model: "devnet/echo", body: {} as never },
 *   { require_tier: "tee", sort: "throughput" },
 * );
 * console.assert(request.tier === "tee" && request.preferences?.sort === "throughput");
 * ```
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import type { ChatRequest, RoutingPreferences, Tier } from "../core/mod.ts";

const ADDRESS = z.string().regex(/^0x[0-9a-fA-F]{40}$/).openapi({
  description: "A provider's address.",
});

const AMOUNT = z.union([
  z.string().regex(/^(0|[1-9][0-9]{0,77})$/),
  z.number().int().min(0),
]).openapi({
  description: "An amount in the smallest token unit: a decimal string or a whole number.",
});

const ADDRESSES = z.array(ADDRESS).min(1).max(256);

/** The `provider` object of a chat request. */
export const PROVIDER_PREFERENCES = z.strictObject({
  sort: z.enum(["price", "throughput", "latency"]).optional().openapi({
    description: "`price` (the default rule: cheapest band, least loaded), `throughput` " +
      "(highest advertised tokens/s first) or `latency` (lowest time to the first token this " +
      "daemon observed first).",
  }),
  order: ADDRESSES.optional().openapi({ description: "Providers to try first, in order." }),
  allow_fallbacks: z.boolean().optional().openapi({
    description: "With `order`: whether other providers may serve it (default `true`).",
  }),
  only: ADDRESSES.optional().openapi({ description: "The only providers that may serve it." }),
  ignore: ADDRESSES.optional().openapi({ description: "Providers that must not serve it." }),
  max_price: z.strictObject({ prompt: AMOUNT.optional(), completion: AMOUNT.optional() })
    .optional().openapi({
      description: "The highest input (`prompt`) and output (`completion`) prices per 1M " +
        "tokens, in the ads' smallest unit.",
    }),
  require_tier: z.enum(["verified", "tee"]).optional().openapi({
    description: "The lowest tier that may serve it: `tee` serves a `net/verified/…` model " +
      "from TEE-tier providers only (attested first).",
  }),
  min_stake: AMOUNT.optional().openapi({
    description: "The smallest stake a provider must hold on chain (needs the chain: refused " +
      "with --insecure-gateway-keys).",
  }),
}).openapi("ProviderPreferences", {
  description: "Routing preferences (OpenRouter's `provider` object, plus `require_tier` and " +
    "`min_stake`). A request no provider satisfies is a 404 `no_matching_provider` naming " +
    "the preference that excluded the last of them.",
});

/** A validated `provider` object. */
export type ProviderPreferences = z.output<typeof PROVIDER_PREFERENCES>;

const lower = (list: readonly string[] | undefined) => list?.map((a) => a.toLowerCase());

/**
 * The chat request with the client's preferences: its tier raised to `require_tier` (a
 * `verified` id stays `tee` when the id says `tee`: the tier is a floor), the rest attached.
 * `undefined` preferences leave the request as it is.
 */
export function routed(
  request: ChatRequest,
  provider: ProviderPreferences | undefined,
): ChatRequest {
  if (provider === undefined) return request;
  const tier: Tier = provider.require_tier === "tee" ? "tee" : request.tier;
  const preferences: RoutingPreferences = {
    ...(provider.sort ? { sort: provider.sort } : {}),
    ...(provider.order ? { order: lower(provider.order) } : {}),
    ...(provider.allow_fallbacks === undefined ? {} : { allowFallbacks: provider.allow_fallbacks }),
    ...(provider.only ? { only: lower(provider.only) } : {}),
    ...(provider.ignore ? { ignore: lower(provider.ignore) } : {}),
    ...(provider.max_price
      ? {
        maxPrice: {
          ...(provider.max_price.prompt === undefined
            ? {}
            : { prompt: BigInt(provider.max_price.prompt) }),
          ...(provider.max_price.completion === undefined
            ? {}
            : { completion: BigInt(provider.max_price.completion) }),
        },
      }
      : {}),
    ...(provider.min_stake === undefined ? {} : { minStake: BigInt(provider.min_stake) }),
  };
  return { ...request, tier, preferences };
}

/** A forwarded body without the `provider` object (it is the daemon's, not the provider's). */
export function withoutPreferences<B extends Record<string, unknown>>(body: B): B {
  if (!("provider" in body)) return body;
  const { provider: _, ...rest } = body;
  return rest as B;
}
