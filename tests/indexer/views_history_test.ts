// /epochs, /providers/{address}, pagination and filters, and the "null until synced" rule, on
// the hand network of `_network.ts` (every figure worked out by hand).
import assert from "node:assert/strict";
import { syncFor } from "../../indexer/_history_data.ts";
import { modelsView, providersView, statsView } from "../../indexer/views.ts";
import { epochReward, epochsView, providerDetailView } from "../../indexer/views_history.ts";
import { handFigures, handHistory, handSettlements, handSnapshot, handSync } from "./_network.ts";

const E30 = 10n ** 30n;
const P0 = "0x1111111111111111111111111111111111111111";
const P1 = "0x2222222222222222222222222222222222222222";
const P2 = "0x3333333333333333333333333333333333333333";
const P3 = "0x4444444444444444444444444444444444444444";

/** The hand history one block short of the snapshot's confirmed block 4230. */
function behind() {
  const history = handHistory({
    ...handFigures(),
    at: { number: 4229n, hash: `0x${"41".repeat(32)}` },
  });
  return syncFor(history, handSnapshot().chain.block, {
    confirmations: 12,
    scanFromBlock: 100n,
    fromEpoch: 0n,
  });
}

Deno.test("settlement figures are null, never zero or partial, until the history is synced", () => {
  const snapshot = handSnapshot();
  const sync = behind();
  assert.equal(sync.synced, false);
  const stats = statsView(snapshot, sync);
  assert.deepEqual(stats.settlements, {
    synced: false,
    scanned_to_block: "4229",
    head_block: "4242",
    confirmations: 12,
    amount: null,
    tokens: null,
    count: null,
    signed_amount: null,
    signed_count: null,
    paying_consumers: null,
  });
  // Chain state is still all there.
  assert.deepEqual(stats.providers, { registered: 4, bonded: 3, live_verified: 3 });
  const providers = providersView(snapshot, sync);
  assert.deepEqual(providers.providers.map((p) => [p.settled, p.reputation]), [
    [null, null],
    [null, null],
    [null, null],
  ]);
  assert.equal(providers.history.synced, false);
  assert.deepEqual(modelsView(snapshot, sync).models.map((m) => m.reputation), [null, null, null]);
  const epochs = epochsView(snapshot, sync, { limit: 10 });
  assert.ok(epochs.epochs.every((e) => e.amount === null && e.settlements === null));
  assert.equal(epochs.epochs[0].reward, String(1000n * E30), "the reward is chain state");
  // Synced again: the same history one block further.
  assert.equal(handSync().synced, true);
});

Deno.test("the history must come from the snapshot's fork when it ends at its block", () => {
  const snapshot = handSnapshot();
  const at = { number: 4242n, hash: `0x${"cd".repeat(32)}` as `0x${string}` };
  const history = handHistory({ ...handFigures(), at });
  const options = { confirmations: 0, scanFromBlock: 100n, fromEpoch: 0n };
  assert.equal(syncFor(history, snapshot.chain.block, options).synced, false);
  const same = handHistory({ ...handFigures(), at: { ...at, hash: snapshot.chain.block.hash } });
  assert.equal(syncFor(same, snapshot.chain.block, options).synced, true);
  // Nothing to count yet (the snapshot's confirmed block is before the first block): synced.
  const empty = handHistory({ ...handFigures(), at: null });
  const early = syncFor(empty, snapshot.chain.block, { ...options, scanFromBlock: 5000n });
  assert.equal(early.synced, true);
});

Deno.test("/providers pages: stable, complete, no duplicates; filters by model and tier", () => {
  const snapshot = handSnapshot();
  const sync = handSync();
  const all = providersView(snapshot, sync).providers.map((p) => p.provider);
  assert.deepEqual(all, [P0, P1, P2]);
  for (const limit of [1, 2, 3, 5]) {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = providersView(snapshot, sync, {}, { limit, cursor });
      assert.ok(page.providers.length <= limit);
      seen.push(...page.providers.map((p) => p.provider));
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    assert.deepEqual(seen, all, `limit ${limit}`);
  }
  // A cursor in upper case, or between two addresses, starts strictly after it.
  assert.deepEqual(
    providersView(snapshot, sync, {}, { cursor: P0.toUpperCase().replace("0X", "0x") })
      .providers.map((p) => p.provider),
    [P1, P2],
  );
  assert.deepEqual(
    providersView(snapshot, sync, {}, { cursor: "0x2" }).providers.map((p) => p.provider),
    [P1, P2],
  );
  const tee = providersView(snapshot, sync, {}, { tier: "tee" });
  assert.deepEqual(tee.providers.map((p) => p.provider), [P1]);
  const beta = providersView(snapshot, sync, {}, { model: "acme/beta" });
  assert.deepEqual(beta.providers.map((p) => p.provider), [P0, P2]);
  const betaPaged = providersView(snapshot, sync, {}, { model: "acme/beta", limit: 1 });
  assert.deepEqual([betaPaged.providers[0].provider, betaPaged.next_cursor], [P0, P0]);
  assert.deepEqual(
    providersView(snapshot, sync, {}, { model: "acme/none" }),
    { providers: [], next_cursor: null, history: beta.history },
  );
});

Deno.test("/models pages and filters: one model, one tier's offers", () => {
  const snapshot = handSnapshot();
  const sync = handSync();
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = modelsView(snapshot, sync, {}, { limit: 2, cursor });
    pages.push(page.models.map((m) => m.model));
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  assert.deepEqual(pages, [["acme/alpha", "acme/beta"], ["acme/gamma"]]);
  const beta = modelsView(snapshot, sync, {}, { model: "acme/beta" });
  assert.deepEqual(beta.models.map((m) => [m.model, m.providers]), [["acme/beta", 2]]);
  // Only the TEE tier's offers: P1 serves alpha alone, at 150/150.
  const tee = modelsView(snapshot, sync, {}, { tier: "tee" });
  assert.deepEqual(
    tee.models.map((m) => [m.model, m.providers, m.tiers, m.cheapest_price.provider]),
    [["acme/alpha", 1, { verified: 0, tee: 1 }, P1]],
  );
  assert.equal(tee.models[0].reputation, 0.2, "P1's own reputation");
});

Deno.test("/epochs: every epoch 0 … current, its reward by the schedule and cap, settled volume", () => {
  const snapshot = handSnapshot();
  const view = epochsView(snapshot, handSync(), { limit: 100 });
  // Rewards: 1000e30 for epochs 0–3, halved from epoch 4 (interval 4); the cap 6000e30 is
  // never reached. Epochs 0–4 are emitted (emitted_epochs 5); 5 is the current one.
  const row = (
    epoch: number,
    reward: bigint,
    amount: bigint,
    tokens: number,
    settlements: number,
    providers: number,
  ) => ({
    epoch: String(epoch),
    reward: String(reward),
    emitted: epoch < 5,
    finished: epoch < 5,
    amount: String(amount),
    tokens: String(tokens),
    settlements,
    providers,
    signed_amount: "0",
    signed_settlements: 0,
    paying_consumers: 0,
  });
  assert.deepEqual(view.epochs, [
    row(0, 1000n * E30, E30, 1000, 1, 1),
    row(1, 1000n * E30, 5n, 30, 2, 1),
    row(2, 1000n * E30, 7n, 60, 1, 1),
    row(3, 1000n * E30, 4n, 30, 1, 1),
    row(4, 500n * E30, 5n, 40, 1, 1),
    row(5, 500n * E30, 6n, 50, 1, 1),
  ]);
  assert.equal(view.next_cursor, null);
  assert.deepEqual(view.snapshot.block_number, "4242");
  // Pages, both orders, keyset by epoch.
  const asc = epochsView(snapshot, handSync(), { limit: 4 });
  assert.deepEqual([asc.epochs.map((e) => e.epoch), asc.next_cursor], [["0", "1", "2", "3"], "3"]);
  const rest = epochsView(snapshot, handSync(), { limit: 4, cursor: 3n });
  assert.deepEqual([rest.epochs.map((e) => e.epoch), rest.next_cursor], [["4", "5"], null]);
  const desc = epochsView(snapshot, handSync(), { limit: 4, order: "desc" });
  assert.deepEqual([desc.epochs.map((e) => e.epoch), desc.next_cursor], [
    ["5", "4", "3", "2"],
    "2",
  ]);
  const tail = epochsView(snapshot, handSync(), { limit: 4, order: "desc", cursor: 2n });
  assert.deepEqual([tail.epochs.map((e) => e.epoch), tail.next_cursor], [["1", "0"], null]);
  assert.deepEqual(epochsView(snapshot, handSync(), { limit: 4, cursor: 9n }).epochs, []);
});

Deno.test("the emission reward of an epoch stops at the cap", () => {
  const emission = { ...handSnapshot().chain.emission, cap: 4_200n * E30 };
  // 4 × 1000 before epoch 4; 200 left for it; nothing after.
  assert.deepEqual(
    [0n, 3n, 4n, 5n, 100n].map((e) => epochReward(emission, e)),
    [1000n * E30, 1000n * E30, 200n * E30, 0n, 0n],
  );
  // 256 halvings and more: 0.
  const schedule = { ...emission.schedule, halvingInterval: 1n };
  assert.equal(epochReward({ ...emission, cap: 10n ** 78n, schedule }, 300n), 0n);
});

Deno.test("/providers/{address}: a provider that is not live, with its whole history paged", () => {
  const snapshot = handSnapshot();
  const sync = handSync();
  const history = (address: string) => ({
    buckets: handSettlements().filter((b) => b.provider === address).sort((a, b) =>
      Number(a.epoch - b.epoch)
    ),
  });
  const p3 = providerDetailView(snapshot, sync, P3, history(P3), { limit: 10 });
  assert.deepEqual(p3.registry, {
    tier: "verified",
    active: true,
    stake: "1",
    bonded: false,
    serving_key: `0x${"8".repeat(40)}`,
    ad_commitment: snapshot.chain.providers[3].adCommitment,
  });
  assert.equal(p3.live, null, "not bonded: not listed");
  assert.deepEqual(p3.settled, {
    total: {
      amount: "7",
      tokens: "60",
      settlements: 1,
      epochs: 1,
      first_epoch: "2",
      last_epoch: "2",
    },
    epochs: [{ epoch: "2", amount: "7", tokens: "60", settlements: 1 }],
    next_cursor: null,
  });
  // P0 is live; its history (epochs 0, 1, 3) a page of 2 at a time, both orders.
  const p0 = providerDetailView(snapshot, sync, P0, history(P0), { limit: 2 });
  assert.equal(p0.live?.provider, P0);
  assert.deepEqual([p0.settled.epochs!.map((e) => e.epoch), p0.settled.next_cursor], [
    ["0", "1"],
    "1",
  ]);
  const p0next = providerDetailView(snapshot, sync, P0, history(P0), { limit: 2, cursor: 1n });
  assert.deepEqual([p0next.settled.epochs!.map((e) => e.epoch), p0next.settled.next_cursor], [
    ["3"],
    null,
  ]);
  const p0desc = providerDetailView(snapshot, sync, P0, history(P0), { limit: 2, order: "desc" });
  assert.deepEqual(p0desc.settled.epochs!.map((e) => e.epoch), ["3", "1"]);
  assert.equal(p0.settled.total!.settlements, 4);
  // Not synced: registry and listing still there, the settlement figures null.
  const unsynced = providerDetailView(snapshot, behind(), P0, null, { limit: 2 });
  assert.deepEqual(unsynced.settled, { total: null, epochs: null, next_cursor: null });
  assert.equal(unsynced.live?.settled, null);
  assert.equal(unsynced.registry?.tier, "verified");
  // P2 is live and was never paid.
  const p2 = providerDetailView(snapshot, sync, P2, history(P2), { limit: 2 });
  assert.deepEqual(p2.settled.total, {
    amount: "0",
    tokens: "0",
    settlements: 0,
    epochs: 0,
    first_epoch: null,
    last_epoch: null,
  });
  assert.deepEqual(p2.settled.epochs, []);
  assert.equal(P1 < P2, true);
});

Deno.test("/epochs and /stats: volume paid by consumers' vouchers and paying consumers per epoch", () => {
  const snapshot = handSnapshot();
  const figures = handFigures();
  // Epoch 2 (finished) and epoch 5 (the current one) were partly paid by vouchers.
  const signed = new Map([[2n, { amount: 4n, settlements: 1, consumers: 1 }], [5n, {
    amount: 6n,
    settlements: 1,
    consumers: 3,
  }]]);
  const history = handHistory({
    ...figures,
    signed: { amount: 10n, settlements: 2 },
    epochs: figures.epochs.map((e) => {
      const s = signed.get(e.epoch);
      return s
        ? { ...e, signedAmount: s.amount, signedSettlements: s.settlements, consumers: s.consumers }
        : e;
    }),
  });
  const sync = syncFor(history, snapshot.chain.block, {
    confirmations: 12,
    scanFromBlock: 100n,
    fromEpoch: 0n,
  });
  const view = epochsView(snapshot, sync, { limit: 100 });
  assert.deepEqual(
    view.epochs.map((e) => [e.epoch, e.signed_amount, e.signed_settlements, e.paying_consumers]),
    [
      ["0", "0", 0, 0],
      ["1", "0", 0, 0],
      ["2", "4", 1, 1],
      ["3", "0", 0, 0],
      ["4", "0", 0, 0],
      ["5", "6", 1, 3],
    ],
  );
  const stats = statsView(snapshot, sync);
  assert.deepEqual(
    [
      stats.settlements.signed_amount,
      stats.settlements.signed_count,
      stats.settlements.paying_consumers,
    ],
    ["10", 2, 3],
  );
});
