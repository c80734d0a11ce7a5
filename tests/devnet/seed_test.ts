import assert from "node:assert/strict";
import { validateAd } from "../../chain/ad.ts";
import { expectedNetwork, planNetwork } from "../../devnet/seed.ts";

Deno.test("the plan is a pure function of its options", () => {
  const a = planNetwork({ providers: 20 });
  const b = planNetwork({ providers: 20 });
  assert.deepEqual(a, b);
  assert.deepEqual(expectedNetwork(a), expectedNetwork(b));
  const other = planNetwork({ providers: 20, seed: "other" });
  assert.notEqual(other.providers[0].address, a.providers[0].address);
});

Deno.test("the default plan is a realistic network", () => {
  const plan = planNetwork();
  const { state, settlements } = expectedNetwork(plan);
  const bond = plan.deployment.minProviderBond;
  assert.equal(state.providers.length, 60);
  assert.equal(plan.providers.filter((p) => p.revoked).length, 2);
  assert.ok(state.providers.some((p) => p.tier === "tee"));
  assert.ok(state.providers.some((p) => p.tier === "verified"));
  assert.ok(state.providers.some((p) => !p.active), "some inactive");
  assert.ok(state.providers.some((p) => p.stake > 0n && p.stake < bond), "some below the bond");
  assert.ok(state.providers.some((p) => p.stake === bond && p.bonded), "one exactly at the bond");
  assert.equal(state.validators.length, 5);
  assert.equal(state.routers.length, 3);
  assert.equal(state.approvedMeasurements.length, 3);
  assert.ok(state.emission.currentEpoch > 0n);
  assert.ok(state.emission.totalEmitted > 0n && state.emission.totalEmitted <= state.emission.cap);
  assert.ok(new Set(settlements.map((s) => s.epoch)).size === 4);
  // Every ad is valid and matches its Registry record.
  for (const provider of state.providers) {
    const planned = plan.providers.find((p) => p.address === provider.address)!;
    validateAd(JSON.parse(JSON.stringify(planned.ad)), { record: provider });
    assert.ok(planned.ad.models.length >= 1);
  }
  // Only active, registered providers are paid.
  const payable = new Set(state.providers.filter((p) => p.active).map((p) => p.address));
  assert.ok(settlements.every((s) => payable.has(s.provider)));
});

Deno.test("bad plan options are refused", () => {
  assert.throws(() => planNetwork({ providers: 2 }), /providers must be an integer ≥ 3, found 2/);
  assert.throws(() => planNetwork({ settledEpochs: 0 }), /settledEpochs/);
});
