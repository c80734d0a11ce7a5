import assert from "node:assert/strict";
import { SnapshotError } from "../../indexer/errors.ts";
import { buildSnapshot, type RouterAnswer } from "../../indexer/snapshot.ts";
import { AdCache } from "../../indexer/verify_entry.ts";
import { HAND, handAd, handState } from "./_network.ts";

const takenAt = new Date("2030-03-17T05:15:00.000Z");
const chain = handState();
const [r1, r2] = chain.routers;

function entry(i: number, capacity = HAND.providers[i].capacity) {
  return { ad: handAd(i), capacity, metrics: { tokens_per_sec: HAND.providers[i].tokensPerSec } };
}

function build(routers: RouterAnswer[], state = chain) {
  return buildSnapshot({ takenAt, chain: state, routers });
}

Deno.test("capacity comes from the first router (Registry order) that verified the provider", () => {
  const other = { max_concurrency: 99, available_concurrency: 98 };
  const snapshot = build([
    { router: r1, entries: [entry(1)] },
    { router: r2, entries: [entry(0, other), entry(1, other)] },
  ]);
  assert.deepEqual(snapshot.live.map((p) => [p.state.address, p.capacity, p.routers]), [
    [HAND.providers[0].address, other, [r2.id]],
    [HAND.providers[1].address, HAND.providers[1].capacity, [r1.id, r2.id]],
  ]);
});

Deno.test("a provider listed twice by one router is counted once; the second is a duplicate", () => {
  const snapshot = build([
    { router: r1, entries: [entry(0), entry(0, { max_concurrency: 1, available_concurrency: 0 })] },
    { router: r2, entries: [entry(0)] },
  ]);
  assert.equal(snapshot.live.length, 1);
  assert.deepEqual(snapshot.live[0].capacity, HAND.providers[0].capacity);
  assert.equal(snapshot.rejections.duplicate, 1);
  assert.deepEqual([snapshot.routers[0].accepted, snapshot.routers[0].rejected.duplicate], [1, 1]);
  assert.deepEqual([snapshot.routers[1].accepted, snapshot.routers[1].rejected.duplicate], [1, 0]);
  assert.match(snapshot.routers[0].examples[0].message, /more than once/);
});

Deno.test("a tampered copy at one router does not hide the verified copy at another", () => {
  const tampered = entry(0);
  tampered.ad.models[0].prices.output = "1";
  const snapshot = build([
    { router: r1, entries: [tampered, entry(1)] },
    { router: r2, entries: [entry(0)] },
  ]);
  assert.deepEqual(snapshot.live.map((p) => [p.state.address, p.routers]), [
    [HAND.providers[0].address, [r2.id]],
    [HAND.providers[1].address, [r1.id]],
  ]);
  // The listed ad is the verified one, never the tampered one.
  assert.equal(snapshot.live[0].ad.models[0].prices.output, "200");
  assert.equal(snapshot.rejections.commitment_mismatch, 1);
  assert.equal(snapshot.routers[0].rejected.commitment_mismatch, 1);
});

Deno.test("partly reachable routers: only what the reachable ones verified is listed", () => {
  const snapshot = build([
    {
      router: r1,
      error: { code: "timeout", message: "Cannot reach r1: no answer within 5000 ms" },
    },
    { router: r2, entries: [entry(1)] },
  ]);
  assert.deepEqual(snapshot.live.map((p) => p.state.address), [HAND.providers[1].address]);
  assert.deepEqual(snapshot.routers.map((r) => [r.reachable, r.error?.code ?? null, r.entries]), [
    [false, "timeout", 0],
    [true, null, 1],
  ]);
});

Deno.test("no reachable router: no snapshot, and the error names every router's failure", () => {
  assert.throws(
    () =>
      build([
        { router: r1, error: { code: "unreachable", message: "Cannot reach r1: refused" } },
        { router: r2, error: { code: "status", message: "status 502, expected 2xx" } },
      ]),
    (error: unknown) => {
      assert.ok(error instanceof SnapshotError, String(error));
      assert.equal(error.reason, "routers_unreachable");
      assert.match(error.shortMessage, /all 2 registered routers failed/);
      assert.match(error.message, /router-1\.example: Cannot reach r1: refused/);
      assert.match(error.message, /router-2\.example: status 502/);
      return true;
    },
  );
});

Deno.test("no router registered: a snapshot with no live provider (the chain's truth)", () => {
  const snapshot = build([], { ...chain, routers: [] });
  assert.deepEqual([snapshot.live.length, snapshot.routers.length], [0, 0]);
});

Deno.test("an ad cache gives the same verdicts, and still compares with the chain every time", () => {
  const cache = new AdCache();
  const routers = [{ router: r1, entries: HAND.providers.map((_, i) => entry(i)) }];
  const plain = build(routers);
  const first = buildSnapshot({ takenAt, chain, routers }, { adCache: cache });
  cache.rotate();
  assert.equal(cache.size, 4);
  const second = buildSnapshot({ takenAt, chain, routers }, { adCache: cache });
  for (const snapshot of [first, second]) {
    assert.deepEqual(
      snapshot.live.map((p) => p.state.address),
      plain.live.map((p) => p.state.address),
    );
    assert.deepEqual(snapshot.rejections, plain.rejections);
  }
  assert.equal(second.live[0].ad, first.live[0].ad, "the cached check was reused");
  // The chain moved P0's commitment: the cached ad no longer matches it.
  const moved = {
    ...chain,
    providers: chain.providers.map((p, i) =>
      i === 0 ? { ...p, adCommitment: `0x${"9".repeat(64)}` as const } : p
    ),
  };
  const third = buildSnapshot({ takenAt, chain: moved, routers }, { adCache: cache });
  assert.equal(third.rejections.commitment_mismatch, 1);
  assert.equal(third.live.some((p) => p.state.address === HAND.providers[0].address), false);
  // A malformed ad is remembered as such.
  const bad = { ...entry(1), ad: { ...handAd(1), endpoint: "ftp://x" } };
  for (let round = 0; round < 2; round++) {
    const snapshot = buildSnapshot({ takenAt, chain, routers: [{ router: r1, entries: [bad] }] }, {
      adCache: cache,
    });
    assert.equal(snapshot.rejections.malformed, 1, `round ${round}`);
  }
  // Entries unused for two refreshes are forgotten.
  cache.rotate();
  cache.rotate();
  assert.equal(cache.size, 0);
});

Deno.test("examples are capped per router", () => {
  const junk = Array.from({ length: 25 }, () => ({ nope: true }));
  const snapshot = buildSnapshot(
    { takenAt, chain, routers: [{ router: r1, entries: junk }] },
    { examplesPerRouter: 3 },
  );
  assert.equal(snapshot.rejections.malformed, 25);
  assert.equal(snapshot.routers[0].examples.length, 3);
});
