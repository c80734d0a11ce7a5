import assert from "node:assert/strict";
import type { Address } from "viem";
import type { ProviderAd } from "../../../chain/ad.ts";
import type { ProviderCandidate } from "../../../daemon/gateway/gateway_client.ts";
import { DEFAULT_CAPACITY, ProviderScheduler } from "../../../daemon/network/scheduler.ts";
import { Prng } from "../../crypto/_helpers.ts";

const MODEL = "devnet/echo";
const addressOf = (id: number) => `0x${id.toString(16).padStart(40, "0")}` as Address;

function candidate(
  id: number,
  options: { price?: number; capacity?: number; available?: number } = {},
): ProviderCandidate {
  const price = String(options.price ?? 100);
  const ad: ProviderAd = {
    version: 1,
    provider: addressOf(id),
    tier: "verified",
    serving_key: addressOf(0xffff),
    endpoint: "http://127.0.0.1:9301",
    models: [{ id: MODEL, prices: { input: price, output: price }, context_length: 8192 }],
  };
  return {
    provider: addressOf(id),
    tier: "verified",
    ad,
    available: options.available ?? 0,
    tokensPerSec: 0,
    ...(options.capacity === undefined ? {} : { maxConcurrency: options.capacity }),
  };
}

/** A scheduler whose clock the test moves and whose ties follow a seeded generator. */
function scheduler(seed = 1) {
  let now = 0;
  const prng = new Prng(seed);
  const s = new ProviderScheduler({ now: () => now, random: () => prng.int(0, 999_999) / 1e6 });
  return { s, advance: (ms: number) => (now += ms), now: () => now };
}

Deno.test("scheduler: a burst of as many requests as slots fills every provider evenly", () => {
  const { s } = scheduler();
  const candidates = [1, 2, 3, 4, 5].map((id) => candidate(id, { capacity: 4 }));
  const chosen = new Map<string, number>();
  for (let i = 0; i < 20; i++) {
    const pick = s.pick(candidates, { model: MODEL });
    assert.ok(pick, `request ${i} found no slot`);
    s.acquire(pick);
    chosen.set(pick.provider, (chosen.get(pick.provider) ?? 0) + 1);
  }
  assert.deepEqual([...chosen.values()], [4, 4, 4, 4, 4], "least relative load spreads a burst");
  assert.equal(s.pick(candidates, { model: MODEL }), undefined, "every slot is taken");
  assert.equal(s.totalInFlight, 20);
});

Deno.test("scheduler: the first choice is not the same for every request (ties at random)", () => {
  const { s } = scheduler(7);
  const candidates = [1, 2, 3, 4].map((id) => candidate(id, { capacity: 4 }));
  const firsts = new Set<string>();
  for (let i = 0; i < 40; i++) {
    const lease = s.acquire(s.pick(candidates, { model: MODEL })!);
    firsts.add(lease.candidate.provider);
    lease.release(); // sequential requests: each finds all providers idle
  }
  assert.equal(firsts.size, 4, `sequential requests went to ${[...firsts]}`);
});

Deno.test("scheduler: load is relative to each provider's capacity", () => {
  const { s } = scheduler();
  const big = candidate(1, { capacity: 8 });
  const small = candidate(2, { capacity: 2 });
  const counts = { big: 0, small: 0 };
  for (let i = 0; i < 10; i++) {
    const pick = s.pick([big, small], { model: MODEL })!;
    s.acquire(pick);
    counts[pick === big ? "big" : "small"]++;
  }
  assert.deepEqual(counts, { big: 8, small: 2 });
});

Deno.test("scheduler: the cheapest band wins while it has slots; 10 % dearer is in the band", () => {
  const { s } = scheduler();
  const cheap = candidate(1, { price: 100, capacity: 1 });
  const near = candidate(2, { price: 110, capacity: 1 });
  const dear = candidate(3, { price: 111, capacity: 1 });
  const order = [];
  for (let i = 0; i < 3; i++) {
    const pick = s.pick([dear, near, cheap], { model: MODEL })!;
    s.acquire(pick);
    order.push(pick.provider);
  }
  assert.deepEqual(
    new Set(order.slice(0, 2)),
    new Set([cheap.provider, near.provider]),
    "the band (≤ 110 % of the cheapest) is used first",
  );
  assert.equal(order[2], dear.provider, "a dearer provider only once the band is full");
});

Deno.test("scheduler: providers that keep failing come after reliable ones; excluded ones never", () => {
  const { s } = scheduler();
  const failing = candidate(1, { price: 1 });
  const reliable = candidate(2, { price: 500 });
  const score = (p: string) => (p === failing.provider ? 0.2 : 0.5);
  assert.equal(s.pick([failing, reliable], { model: MODEL, score }), reliable);
  assert.equal(
    s.pick([failing, reliable], { model: MODEL, score, exclude: new Set([reliable.provider]) }),
    failing,
    "with nothing better, a failing provider is still tried",
  );
  assert.equal(
    s.pick([failing, reliable], {
      model: MODEL,
      exclude: new Set([failing.provider, reliable.provider]),
    }),
    undefined,
  );
});

Deno.test("scheduler: a provider that said it is busy takes nothing until Retry-After or a slot of ours frees", () => {
  const { s, advance, now } = scheduler();
  const only = candidate(1, { capacity: 4 });
  const held = s.acquire(only);
  s.busy(only.provider, 1000);
  assert.equal(s.free(only), 0);
  assert.equal(s.pick([only], { model: MODEL }), undefined);
  assert.equal(s.nextExpiry(), now() + 1000);
  let freed = 0;
  s.onFree(() => freed++);
  held.release();
  assert.equal(freed, 1, "a release is announced");
  assert.equal(s.free(only), 4, "one of our own requests there ended: it has a free slot");

  s.busy(only.provider, 500);
  assert.equal(s.free(only), 0);
  advance(500);
  assert.equal(s.free(only), 4, "Retry-After passed");
  assert.equal(s.nextExpiry(), undefined);

  // A request that was answered "busy" gives its slot back without announcing a free one.
  const refused = s.acquire(only);
  refused.release({ busyForMs: 1000 });
  assert.equal(freed, 1, "nothing freed");
  assert.equal(s.inFlight(only.provider), 0);
  assert.equal(s.free(only), 0, "busy until Retry-After");
  advance(1000);
  assert.equal(s.free(only), 4);
});

Deno.test("scheduler: capacity is the advertised max_concurrency, or the default; a lease releases once", () => {
  const { s } = scheduler();
  const unknown = candidate(1);
  assert.equal(s.capacityOf(unknown), DEFAULT_CAPACITY);
  assert.equal(s.capacityOf(candidate(2, { capacity: 9 })), 9);
  const lease = s.acquire(unknown);
  lease.release();
  lease.release();
  assert.equal(s.inFlight(unknown.provider), 0);
  assert.equal(s.totalInFlight, 0);
});
