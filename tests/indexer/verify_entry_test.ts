import assert from "node:assert/strict";
import { adCommitment } from "../../chain/ad.ts";
import type { ProviderState } from "../../chain/types.ts";
import { planNetwork } from "../../devnet/seed.ts";
import { type RejectionReason, verifyEntry } from "../../indexer/verify_entry.ts";
import { plannedState, routerEntry } from "./_network.ts";

const plan = planNetwork({ providers: 12 });
const state = plannedState(plan);
const byAddress: ReadonlyMap<string, ProviderState> = new Map(
  state.providers.map((p) => [p.address, p]),
);
const bonded = plan.providers.find((p) => byAddress.get(p.address)?.bonded && p.tier === "tee")!;
const unbonded = plan.providers.find((p) =>
  byAddress.has(p.address) && !byAddress.get(p.address)!.bonded
)!;
const revoked = plan.providers.find((p) => p.revoked)!;

// deno-lint-ignore no-explicit-any
type Json = any;

function entry(change: (e: Json) => void = () => {}): Json {
  const e = routerEntry(bonded) as Json;
  change(e);
  return e;
}

function rejected(
  value: unknown,
  reason: RejectionReason,
  fragments: string[] = [],
  map = byAddress,
) {
  const verdict = verifyEntry(value, map);
  assert.equal(verdict.ok, false, `expected ${reason}, the entry was accepted`);
  if (verdict.ok) return;
  assert.equal(verdict.reason, reason, verdict.message);
  for (const fragment of fragments) {
    assert.ok(verdict.message.includes(fragment), `${verdict.message} ∌ ${fragment}`);
  }
}

Deno.test("an entry of a bonded provider whose ad matches the commitment is accepted", () => {
  assert.ok(bonded && unbonded && revoked, "the plan has every kind of provider");
  const verdict = verifyEntry(entry(), byAddress);
  assert.ok(verdict.ok, verdict.ok ? "" : verdict.message);
  assert.deepEqual(verdict.ad, bonded.ad);
  assert.equal(verdict.provider, byAddress.get(bonded.address));
  assert.deepEqual(verdict.capacity, routerEntry(bonded).capacity);
  assert.deepEqual(verdict.metrics, routerEntry(bonded).metrics);
});

Deno.test("a tampered ad is refused: commitment_mismatch", () => {
  rejected(entry((e) => e.ad.models[0].prices.input = "1"), "commitment_mismatch", [
    bonded.address,
    "the Registry holds",
  ]);
  rejected(entry((e) => e.ad.endpoint = "https://evil.example"), "commitment_mismatch");
  // A provider whose on-chain commitment is zero (never set) never matches.
  const unset = new Map(byAddress);
  unset.set(bonded.address, {
    ...byAddress.get(bonded.address)!,
    adCommitment: `0x${"0".repeat(64)}`,
  });
  rejected(entry(), "commitment_mismatch", [], unset);
  // The published case of an address is part of the committed text.
  rejected(
    entry((e) => e.ad.serving_key = e.ad.serving_key.toUpperCase().replace("0X", "0x")),
    "commitment_mismatch",
  );
});

Deno.test("an ad that disagrees with the Registry is refused: mismatched_fields", () => {
  const other = state.providers.find((p) => p.trustRoot !== bonded.servingAddress)!;
  rejected(entry((e) => e.ad.tier = "verified"), "mismatched_fields", [
    "tier is verified",
    "the Registry says tee",
  ]);
  rejected(entry((e) => e.ad.serving_key = other.trustRoot), "mismatched_fields", [
    `serving_key is ${other.trustRoot}`,
    `trust root for ${bonded.address} is ${bonded.servingAddress}`,
  ]);
});

Deno.test("providers that are not bonded or not registered are refused", () => {
  rejected(routerEntry(unbonded), "not_bonded", ["below the minimum bond"]);
  const inactive = new Map(byAddress);
  inactive.set(bonded.address, { ...byAddress.get(bonded.address)!, active: false, bonded: false });
  rejected(entry(), "not_bonded", ["inactive"], inactive);
  rejected(routerEntry(revoked), "unknown_provider", [revoked.address, "not in the Registry"]);
  rejected(entry(), "unknown_provider", [], new Map<string, ProviderState>());
});

Deno.test("malformed entries and ads are refused: malformed", () => {
  const table: [unknown, string][] = [
    [null, "it is null"],
    [[entry()], "an array"],
    ["ad", "expected an object"],
    [entry((e) => delete e.capacity), "has no capacity"],
    [entry((e) => e.extra = 1), 'unknown field "extra"'],
    [entry((e) => e.capacity = 8), "capacity is number 8"],
    [entry((e) => e.capacity.max_concurrency = -1), "capacity.max_concurrency is number -1"],
    [entry((e) => e.capacity.max_concurrency = 1.5), "an integer from 0"],
    [entry((e) => e.capacity.max_concurrency = 2 ** 31), "an integer from 0 to 2147483647"],
    [entry((e) => e.capacity.available_concurrency = "1"), 'available_concurrency is "1"'],
    [
      entry((e) => Object.assign(e.capacity, { max_concurrency: 2, available_concurrency: 3 })),
      "exceeds max_concurrency 2",
    ],
    [entry((e) => e.capacity.burst = 1), 'capacity has the unknown field "burst"'],
    [entry((e) => e.metrics = {}), "metrics has no tokens_per_sec"],
    [entry((e) => e.metrics.tokens_per_sec = -0.5), "a finite number ≥ 0"],
    [entry((e) => e.metrics.tokens_per_sec = "41.7"), 'tokens_per_sec is "41.7"'],
    [entry((e) => e.ad = "not an ad"), "expected an object"],
    [entry((e) => e.ad.version = 2), "version"],
    [entry((e) => e.ad.models = []), "models"],
    [entry((e) => e.ad.models[0].prices.input = 150000), "models[0].prices.input"],
    [entry((e) => e.ad.models[0].id = "tiny-chat"), "maker/model"],
    [entry((e) => e.ad.endpoint = "ftp://x"), "endpoint"],
    [entry((e) => e.ad.surprise = true), 'unknown field "surprise"'],
    [entry((e) => e.ad.provider = "0x1234"), "provider"],
  ];
  for (const [value, fragment] of table) rejected(value, "malformed", [fragment]);
});

Deno.test("an ad larger than 64 KiB is refused before it is parsed: oversized", () => {
  rejected(entry((e) => e.ad.padding = "x".repeat(70_000)), "oversized", [
    "expected at most 65536",
  ]);
  // Just under the limit, the same junk is malformed (unknown field), not oversized.
  rejected(entry((e) => e.ad.padding = "x".repeat(60_000)), "malformed", ['"padding"']);
});

Deno.test("the check uses the chain's commitment, not one the router could supply", () => {
  // A router cannot make a tampered ad pass by changing what it sends next to it.
  const tampered = entry((e) => e.ad.models[0].prices.output = "0");
  tampered.ad_commitment = adCommitment(tampered.ad);
  rejected(tampered, "malformed", ['unknown field "ad_commitment"']);
});
