/**
 * Routing preferences on the network side: which candidates `only`, `ignore`, `order` without
 * fallbacks, `max_price` and `min_stake` keep (a refusal names the preference that excluded the
 * last of them, and what they offered), and how the scheduler follows `order` and `sort`
 * (`throughput`, `latency`) among those left, one free slot at a time.
 */

import assert from "node:assert/strict";
import type { Address } from "viem";
import type { ProviderAd } from "../../../chain/ad.ts";
import { DaemonError, type RoutingPreferences } from "../../../daemon/core/mod.ts";
import type { ProviderCandidate } from "../../../daemon/gateway/gateway_client.ts";
import { preferred } from "../../../daemon/network/preferences.ts";
import { ProviderScheduler } from "../../../daemon/network/scheduler.ts";

const MODEL = "devnet/echo";
const addressOf = (id: number) => `0x${id.toString(16).padStart(40, "0")}` as Address;

function candidate(
  id: number,
  options: { input?: number; output?: number; tokensPerSec?: number; capacity?: number } = {},
): ProviderCandidate {
  const ad: ProviderAd = {
    version: 1,
    provider: addressOf(id),
    tier: "verified",
    serving_key: addressOf(0xffff),
    endpoint: "http://127.0.0.1:9301",
    models: [{
      id: MODEL,
      prices: { input: String(options.input ?? 100), output: String(options.output ?? 400) },
      context_length: 8192,
    }],
  };
  return {
    provider: addressOf(id),
    tier: "verified",
    ad,
    available: 0,
    tokensPerSec: options.tokensPerSec ?? 0,
    maxConcurrency: options.capacity ?? 2,
  };
}

const CANDIDATES = [
  candidate(1, { input: 100, output: 400 }),
  candidate(2, { input: 50, output: 900 }),
  candidate(3, { input: 300, output: 300 }),
];
const STAKES = new Map([[addressOf(1), 2000n], [addressOf(2), 2500n], [addressOf(3), 3000n]]);
const stakeOf = (provider: Address) => Promise.resolve(STAKES.get(provider));

async function kept(preferences: RoutingPreferences): Promise<number[]> {
  const out = await preferred(CANDIDATES, { model: MODEL, tier: "verified", preferences }, stakeOf);
  return out.map((c) => Number.parseInt(c.provider, 16));
}

Deno.test("preferences: each keeps the candidates that satisfy it", async () => {
  assert.deepEqual(await kept({}), [1, 2, 3]);
  assert.deepEqual(await kept({ only: [addressOf(3), addressOf(1)] }), [1, 3]);
  assert.deepEqual(await kept({ ignore: [addressOf(2)] }), [1, 3]);
  assert.deepEqual(await kept({ order: [addressOf(3)] }), [1, 2, 3], "fallbacks allowed");
  assert.deepEqual(await kept({ order: [addressOf(3)], allowFallbacks: false }), [3]);
  assert.deepEqual(await kept({ maxPrice: { prompt: 100n } }), [1, 2]);
  assert.deepEqual(await kept({ maxPrice: { completion: 400n } }), [1, 3]);
  assert.deepEqual(await kept({ maxPrice: { prompt: 100n, completion: 400n } }), [1]);
  assert.deepEqual(await kept({ minStake: 2500n }), [2, 3]);
  assert.deepEqual(await kept({ only: [addressOf(1), addressOf(2)], minStake: 2200n }), [2]);
});

Deno.test("preferences: none left is a 404 naming the preference and what was offered", async () => {
  const cases: [RoutingPreferences, string, RegExp][] = [
    [{ only: [addressOf(9)] }, "provider.only", /provider\.only \(0x0+9\) excluded the 3 left$/],
    [
      { ignore: [addressOf(1), addressOf(2), addressOf(3)] },
      "provider.ignore",
      /provider\.ignore \(.+\) excluded the 3 left$/,
    ],
    [
      { order: [addressOf(7)], allowFallbacks: false },
      "provider.order",
      /provider\.order \(with allow_fallbacks false\)/,
    ],
    [
      { maxPrice: { prompt: 10n } },
      "provider.max_price.prompt",
      /provider\.max_price\.prompt \(10\) excluded the 3 left \(the cheapest asks 50\)$/,
    ],
    [
      { only: [addressOf(1), addressOf(3)], maxPrice: { completion: 200n } },
      "provider.max_price.completion",
      /excluded the 2 left \(the cheapest asks 300\)$/,
    ],
    [
      { minStake: 5000n },
      "provider.min_stake",
      /provider\.min_stake \(5000\) excluded the 3 left \(the most staked holds 3000\)$/,
    ],
  ];
  for (const [preferences, param, message] of cases) {
    await assert.rejects(
      preferred(CANDIDATES, { model: MODEL, tier: "verified", preferences }, stakeOf),
      (error: unknown) => {
        assert.ok(error instanceof DaemonError);
        assert.equal(error.code, "no_matching_provider");
        assert.equal(error.status, 404);
        assert.equal(error.param, param);
        assert.match(
          error.shortMessage,
          /^No provider of devnet\/echo in the verified tier satisfies the routing preferences: /,
        );
        assert.match(error.shortMessage, message);
        return true;
      },
      JSON.stringify(preferences, (_, v) => typeof v === "bigint" ? String(v) : v),
    );
  }
});

Deno.test("preferences: min_stake without a chain is refused; an unreadable stake excludes", async () => {
  await assert.rejects(
    preferred(
      CANDIDATES,
      { model: MODEL, tier: "verified", preferences: { minStake: 1n } },
      undefined,
    ),
    (error: unknown) =>
      error instanceof DaemonError && error.code === "invalid_request_error" &&
      error.param === "provider.min_stake" && /--insecure-gateway-keys/.test(error.shortMessage),
  );
  const partial = (provider: Address) =>
    Promise.resolve(provider === addressOf(3) ? 9000n : undefined);
  const out = await preferred(
    CANDIDATES,
    { model: MODEL, tier: "verified", preferences: { minStake: 1n } },
    partial,
  );
  assert.deepEqual(out.map((c) => c.provider), [addressOf(3)], "fail closed");
});

Deno.test("scheduler: order is followed while its providers have a free slot, then the rule", () => {
  const s = new ProviderScheduler({ random: () => 0 });
  const candidates = [candidate(1), candidate(2), candidate(3)];
  const order = [addressOf(3), addressOf(2)];
  const picks: string[] = [];
  for (let i = 0; i < 6; i++) {
    const pick = s.pick(candidates, { model: MODEL, order })!;
    s.acquire(pick);
    picks.push(pick.provider);
  }
  // Provider 3's two slots, then 2's, then the rest by the default rule.
  assert.deepEqual(picks, [
    addressOf(3),
    addressOf(3),
    addressOf(2),
    addressOf(2),
    addressOf(1),
    addressOf(1),
  ]);
  assert.equal(s.pick(candidates, { model: MODEL, order }), undefined, "every slot is taken");
});

Deno.test("scheduler: sort by throughput or by observed latency, one free slot at a time", () => {
  const candidates = [
    candidate(1, { tokensPerSec: 10 }),
    candidate(2, { tokensPerSec: 90 }),
    candidate(3, { tokensPerSec: 40 }),
  ];
  const fill = (sort: "throughput" | "latency", latency?: (p: string) => number | undefined) => {
    const s = new ProviderScheduler();
    const picks: number[] = [];
    for (let i = 0; i < 6; i++) {
      const pick = s.pick(candidates, { model: MODEL, sort, latency })!;
      s.acquire(pick);
      picks.push(Number.parseInt(pick.provider, 16));
    }
    return picks;
  };
  assert.deepEqual(fill("throughput"), [2, 2, 3, 3, 1, 1]);
  const observed = new Map<string, number>([[addressOf(1), 120], [addressOf(3), 800]]);
  assert.deepEqual(fill("latency", (p) => observed.get(p)), [1, 1, 3, 3, 2, 2], "unknown last");
  // A provider that keeps failing this daemon comes after reliable ones, however fast.
  const s = new ProviderScheduler();
  const pick = s.pick(candidates, {
    model: MODEL,
    sort: "throughput",
    score: (p) => (p === addressOf(2) ? 0.2 : 0.5),
  });
  assert.equal(pick?.provider, addressOf(3));
});
