// Every expected figure below is worked out by hand from `HAND` in `_network.ts`.
import assert from "node:assert/strict";
import { modelsView, providersView, statsView } from "../../indexer/views.ts";
import { handSnapshot, handSync } from "./_network.ts";

const E30 = "1000000000000000000000000000000";
const P0 = "0x1111111111111111111111111111111111111111";
const P1 = "0x2222222222222222222222222222222222222222";
const P2 = "0x3333333333333333333333333333333333333333";
const R1 = "0x00000000000000000000000000000000000000b1";
const R2 = "0x00000000000000000000000000000000000000b2";
const zeros = {
  malformed: 0,
  oversized: 0,
  unknown_provider: 0,
  not_bonded: 0,
  mismatched_fields: 0,
  commitment_mismatch: 0,
  duplicate: 0,
};

Deno.test("/stats: counts, sums and chain figures as decimal strings", () => {
  const stats = statsView(handSnapshot(), handSync());
  assert.deepEqual(stats.providers, { registered: 4, bonded: 3, live_verified: 3 });
  assert.equal(stats.validators, 1);
  assert.equal(stats.staked_security, "9000000000000000000000000000001");
  assert.equal(stats.min_provider_bond, "1000");
  assert.deepEqual(stats.tee_measurements, [`0x${"cd".repeat(32)}`]);
  assert.deepEqual(stats.emission, {
    total_emitted: `1875${E30.slice(1)}`,
    cap: `6000${E30.slice(1)}`,
    current_epoch: "5",
    current_epoch_reward: `500${E30.slice(1)}`,
    emitted_epochs: "5",
    schedule: {
      rule: "halving",
      genesis_time: "1900000000",
      epoch_length: "3600",
      initial_reward: `1000${E30.slice(1)}`,
      halving_interval: "4",
    },
  });
  // Live: P0 (4, 1), P1 (8, 8), P2 (0, 0); P3 is not bonded and not counted.
  assert.deepEqual(stats.capacity, { max_concurrency: 12, available_concurrency: 9 });
  assert.equal(stats.models, 3);
  assert.deepEqual(stats.rejected_ads, { total: 1, by_reason: { ...zeros, not_bonded: 1 } });
  assert.equal(stats.routers.total, 2);
  assert.equal(stats.routers.reachable, 2);
  assert.deepEqual(
    stats.routers.list.map((r) => [r.id, r.url, r.reachable, r.error, r.entries, r.accepted]),
    [[R1, "http://router-1.example", true, null, 4, 3], [
      R2,
      "http://router-2.example",
      true,
      null,
      2,
      2,
    ]],
  );
  assert.deepEqual(stats.routers.list[0].rejected, { ...zeros, not_bonded: 1 });
  assert.deepEqual(stats.routers.list[0].rejected_examples.map((e) => [e.provider, e.reason]), [
    ["0x4444444444444444444444444444444444444444", "not_bonded"],
  ]);
  // 1e30 + 2 + 3 + 4 + 5 + 6 + 7 over every bucket, P3's included (settlements are history).
  assert.deepEqual(stats.settlements, {
    synced: true,
    scanned_to_block: "4230",
    head_block: "4242",
    confirmations: 12,
    amount: "1000000000000000000000000000027",
    tokens: "1210",
    count: 7,
    signed_amount: "0",
    signed_count: 0,
    paying_consumers: 0,
  });
  assert.deepEqual(stats.snapshot, {
    block_number: "4242",
    block_hash: `0x${"ab".repeat(32)}`,
    block_timestamp: "1900018500",
    taken_at: "2030-03-17T05:15:00.000Z",
  });
});

Deno.test("/models: cheapest price rule, counts, reputation and tokens/sec by hand", () => {
  assert.deepEqual(modelsView(handSnapshot(), handSync()), {
    models: [
      {
        model: "acme/alpha",
        // All three blend to 300; the lower output price wins: P1's 150.
        cheapest_price: { input: "150", output: "150", provider: P1, tier: "tee" },
        providers: 3,
        tiers: { verified: 2, tee: 1 },
        reputation: 0.2667, // (0.6 + 0.2 + 0) / 3
        tokens_per_sec: 23.83, // (40 + 20.5 + 11) / 3 = 23.833…
        context_length: 32768,
        kind: "chat", // no ad says a kind
        capabilities: [],
      },
      {
        model: "acme/beta",
        // Both blend to 20; output 10 beats 15.
        cheapest_price: { input: "10", output: "10", provider: P0, tier: "verified" },
        providers: 2,
        tiers: { verified: 2, tee: 0 },
        reputation: 0.3, // (0.6 + 0) / 2
        tokens_per_sec: 25.5, // (40 + 11) / 2
        context_length: 4096,
        kind: "chat", // no ad says a kind
        capabilities: [],
      },
      {
        model: "acme/gamma",
        // Identical prices: the lower address wins, so the answer is deterministic.
        cheapest_price: { input: "7", output: "7", provider: P0, tier: "verified" },
        providers: 2,
        tiers: { verified: 2, tee: 0 },
        reputation: 0.3,
        tokens_per_sec: 25.5,
        context_length: 2048,
        kind: "chat", // no ad says a kind
        capabilities: [],
      },
    ],
    next_cursor: null,
    history: { synced: true, scanned_to_block: "4230", head_block: "4242", confirmations: 12 },
  });
});

Deno.test("/providers: one entry per live-verified provider, with recent volume and reputation", () => {
  const { providers } = providersView(handSnapshot(), handSync());
  assert.deepEqual(providers.map((p) => p.provider), [P0, P1, P2]);
  const [p0, p1, p2] = providers;
  assert.equal(p0.tier, "verified");
  assert.equal(p0.stake, `5${E30.slice(1)}`);
  assert.equal(p0.serving_key, `0x${"5".repeat(40)}`);
  assert.equal(p0.endpoint, "https://p0.example");
  assert.deepEqual(p0.models, [
    { model: "acme/alpha", prices: { input: "100", output: "200" }, context_length: 8192 },
    { model: "acme/beta", prices: { input: "10", output: "10" }, context_length: 4096 },
    { model: "acme/gamma", prices: { input: "7", output: "7" }, context_length: 1024 },
  ]);
  assert.deepEqual(p0.capacity, { max_concurrency: 4, available_concurrency: 1 });
  assert.deepEqual(p0.metrics, { tokens_per_sec: 40 });
  assert.deepEqual(p0.routers, [R1, R2]);
  assert.deepEqual(p2.routers, [R1]);
  // Current epoch 5, 8 recent epochs → epochs 0..5, zeros included.
  const volume = (epoch: string, amount: string, tokens: string, settlements: number) => ({
    epoch,
    amount,
    tokens,
    settlements,
  });
  assert.deepEqual(p0.settled, {
    epochs: [
      volume("0", E30, "1000", 1),
      volume("1", "5", "30", 2),
      volume("2", "0", "0", 0),
      volume("3", "4", "30", 1),
      volume("4", "0", "0", 0),
      volume("5", "0", "0", 0),
    ],
    total: { amount: "1000000000000000000000000000009", tokens: "1060", settlements: 4 },
  });
  assert.deepEqual(p1.settled!.epochs.slice(4), [
    volume("4", "5", "40", 1),
    volume("5", "6", "50", 1),
  ]);
  assert.deepEqual(p1.settled!.total, { amount: "11", tokens: "90", settlements: 2 });
  assert.deepEqual(p2.settled!.total, { amount: "0", tokens: "0", settlements: 0 });
  // Finished epochs 0..4: P0 paid in 0, 1, 3 (3/5); P1 in 4 (epoch 5 is unfinished); P2 never.
  assert.deepEqual(providers.map((p) => p.reputation), [0.6, 0.2, 0]);
});

Deno.test("the view windows are options", () => {
  const snapshot = handSnapshot();
  const sync = handSync(snapshot);
  const { providers } = providersView(snapshot, sync, { recentEpochs: 2, reputationEpochs: 2 });
  assert.deepEqual(providers[0].settled!.epochs.map((e) => e.epoch), ["4", "5"]);
  // Window 2 → epochs 3..4: P0 paid in 3 (1/2), P1 in 4 (1/2), P2 never.
  assert.deepEqual(providers.map((p) => p.reputation), [0.5, 0.5, 0]);
  assert.deepEqual(
    modelsView(snapshot, sync, { reputationEpochs: 2 }).models.map((m) => m.reputation),
    [0.3333, 0.25, 0.25],
  );
});
