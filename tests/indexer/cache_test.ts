/**
 * Cache-safe answers of the data endpoints, with an injected clock: `max-age` never reaches
 * past the snapshot's freshness bound, a matching `If-None-Match` is a 304 with the same
 * headers, ETags change with the snapshot, the history's figures and the query (and only
 * then), and everything that is not a fresh 200 stays `no-store`. (Through a real nginx in front
 * of a real indexer: `cache_proxy_test.ts`.)
 */

import assert from "node:assert/strict";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { maxAgeSecs } from "../../indexer/_serving.ts";
import { type IndexerState, initialState } from "../../indexer/state.ts";
import { HAND, handHistory, handSettlements, handSnapshot } from "./_network.ts";
import { okJson } from "../_http.ts";

const takenAt = new Date("2030-03-17T05:15:00.000Z");
const at = (ms: number) => new Date(takenAt.getTime() + ms);
const STALE_AFTER_SECS = 60;
const PROVIDER = HAND.providers[0].address.toLowerCase();
const DATA = ["/stats", "/models", "/providers", "/epochs", `/providers/${PROVIDER}`];

function servingState(history = handHistory()): IndexerState {
  return {
    ...initialState(30, STALE_AFTER_SECS),
    history,
    snapshot: handSnapshot(takenAt),
    lastSnapshotAt: takenAt,
    lastAttemptAt: takenAt,
  };
}

function handler(state: () => IndexerState, clock: () => Date) {
  const handle = createIndexerHandler({
    state,
    clock,
    log: () => {},
    readProviderHistory: (address) =>
      Promise.resolve({
        buckets: handSettlements().filter((b) => b.provider.toLowerCase() === address),
        at: handHistory().confirmed,
      }),
  });
  return (path: string, headers?: HeadersInit, method = "GET") =>
    handle(new Request(`http://127.0.0.1:8088${path}`, { headers, method }));
}

function maxAge(response: Response): number {
  const value = response.headers.get("cache-control") ?? "";
  const match = /^public, max-age=(\d+)$/.exec(value);
  assert.ok(match, `Cache-Control ${JSON.stringify(value)} is not public, max-age=N`);
  return Number(match[1]);
}

Deno.test("max-age never reaches past the freshness bound, at any moment of the snapshot's life", async () => {
  let now = takenAt;
  const get = handler(() => servingState(), () => now);
  // Every 250 ms of the snapshot's life, and the last milliseconds before the bound.
  const moments = [
    ...Array.from({ length: STALE_AFTER_SECS * 4 + 1 }, (_, i) => i * 250),
    STALE_AFTER_SECS * 1000 - 1,
  ];
  for (const ms of moments) {
    now = at(ms);
    for (const path of DATA) {
      const response = await get(path);
      await response.body?.cancel();
      assert.equal(response.status, 200, `${path} at +${ms} ms`);
      const secs = maxAge(response);
      const leftSecs = STALE_AFTER_SECS - ms / 1000;
      assert.ok(secs >= 0 && secs <= leftSecs, `${path} at +${ms} ms: max-age ${secs}`);
      // Kept for max-age from now, the answer is at most as old as the bound allows.
      assert.ok(ms + secs * 1000 <= STALE_AFTER_SECS * 1000);
    }
  }
  // Worked by hand: 19.6 s left → 19 whole seconds, less one for transit.
  now = at(40_400);
  assert.equal(maxAge(await get("/stats")), 18);
  now = at(59_500); // 0.5 s left: nothing a cache may keep
  const last = await get("/stats");
  assert.equal(maxAge(last), 0);
  // Not even a 304: a proxy revalidating its copy gets the whole body, which it cannot keep.
  const again = await get("/stats", { "if-none-match": last.headers.get("etag")! });
  assert.equal(again.status, 200);
  assert.equal(maxAge(again), 0);
  await again.body?.cancel();
  // Past the bound: 503, never cached.
  now = at(STALE_AFTER_SECS * 1000 + 1);
  for (const path of DATA) {
    const response = await get(path);
    await response.body?.cancel();
    assert.equal(response.status, 503, path);
    assert.equal(response.headers.get("cache-control"), "no-store", path);
    assert.equal(response.headers.get("etag"), null, path);
  }
});

Deno.test("maxAgeSecs: whole seconds left, less one, never negative", () => {
  const snapshot = handSnapshot(takenAt);
  assert.equal(maxAgeSecs(snapshot, 60, at(0)), 59);
  assert.equal(maxAgeSecs(snapshot, 60, at(999)), 58);
  assert.equal(maxAgeSecs(snapshot, 60, at(1000)), 58);
  assert.equal(maxAgeSecs(snapshot, 60, at(58_000)), 1);
  assert.equal(maxAgeSecs(snapshot, 60, at(59_000)), 0);
  assert.equal(maxAgeSecs(snapshot, 60, at(90_000)), 0);
  assert.equal(maxAgeSecs(snapshot, 1, at(0)), 0);
});

Deno.test("If-None-Match with the current ETag is a 304 with the same caching headers", async () => {
  let now = at(5_000);
  const get = handler(() => servingState(), () => now);
  for (const path of [...DATA, "/models?limit=1", "/epochs?order=desc&limit=2"]) {
    const first = await get(path);
    const body = await first.text();
    const etag = first.headers.get("etag")!;
    assert.match(etag, /^"[\w-]{43}"$/, path);
    // The ETag is the body's SHA-256.
    const digest = new Uint8Array(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body)),
    );
    const base64 = btoa(String.fromCharCode(...digest));
    assert.equal(etag, `"${base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}"`);
    now = at(7_500);
    for (const match of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await get(path, { "if-none-match": match });
      assert.equal(again.status, 304, `${path} with ${match}`);
      assert.equal(await again.text(), "");
      assert.equal(again.headers.get("etag"), etag);
      assert.equal(again.headers.get("cache-control"), "public, max-age=51");
      assert.equal(again.headers.get("access-control-allow-origin"), "*");
      assert.equal(again.headers.get("content-type"), null);
    }
    const other = await get(path, { "if-none-match": '"something-else"' });
    assert.equal(other.status, 200);
    assert.equal(await other.text(), body);
    now = at(5_000);
  }
  // HEAD carries the same validators, and revalidates the same way.
  const stats = await get("/stats");
  await stats.body?.cancel();
  const head = await get("/stats", {}, "HEAD");
  assert.equal(head.status, 200);
  assert.equal(head.body, null);
  assert.equal(head.headers.get("etag"), stats.headers.get("etag"));
  const headAgain = await get("/stats", { "if-none-match": stats.headers.get("etag")! }, "HEAD");
  assert.equal(headAgain.status, 304);
});

Deno.test("the ETag changes with the snapshot, the history's figures and the query, and only then", async () => {
  let state = servingState();
  const get = handler(() => state, () => at(5_000));
  const etag = async (path: string) => {
    const response = await get(path);
    await response.body?.cancel();
    return response.headers.get("etag")!;
  };
  const first = await etag("/stats");
  assert.equal(await etag("/stats"), first, "the same snapshot, the same ETag");
  assert.notEqual(await etag("/models?limit=1"), await etag("/models"), "another query");
  assert.notEqual(await etag("/epochs?order=desc"), await etag("/epochs"));
  // The history not synced yet: settlement figures null, another body.
  state = servingState(handHistory(null));
  const unsynced = await etag("/stats");
  assert.notEqual(unsynced, first);
  assert.equal(
    (await okJson(get("/stats"))).settlements.amount,
    null,
    "no figures before the history is synced",
  );
  // A new snapshot of the same chain state, taken later: another body (its taken_at).
  state = { ...servingState(), snapshot: handSnapshot(at(1_000)) };
  assert.notEqual(await etag("/stats"), first);
  // The same state again: the first ETag.
  state = servingState();
  assert.equal(await etag("/stats"), first);
});

Deno.test("everything but a fresh data answer is no-store", async () => {
  const get = handler(() => servingState(), () => at(5_000));
  for (
    const [path, status] of [
      ["/health", 200],
      ["/metrics", 200],
      ["/openapi.json", 200],
      ["/models?limit=0", 400],
      ["/nowhere", 404],
    ] as const
  ) {
    const response = await get(path);
    await response.body?.cancel();
    assert.equal(response.status, status, path);
    assert.equal(response.headers.get("cache-control"), "no-store", path);
    assert.equal(response.headers.get("etag"), null, path);
  }
  const down = handler(() => initialState(30, 60), () => at(5_000));
  for (const path of DATA) {
    const response = await down(path, { "if-none-match": "*" });
    await response.body?.cancel();
    assert.equal(response.status, 503, path);
    assert.equal(response.headers.get("cache-control"), "no-store");
  }
});
