/**
 * The real indexer (`indexer/main.ts` on a real devnet) behind a real caching proxy (Debian's
 * nginx with `proxy_cache`, `tests/_nginx.ts`, configured as `docs/deploy.md` says): answers are
 * served from the cache within their `max-age`, revalidated with their ETag, and **no answer
 * is ever older than the freshness bound** when it reaches the client — in particular, once the
 * chain has stopped and the bound of the last snapshot has passed, the proxy passes the
 * indexer's 503 on instead of its cached copy.
 *
 * Ages are taken when a request is sent, not when its answer is read: a busy machine may read
 * an answer late, but the proxy chose it after the request was sent, so an answer older than
 * the bound at sending time is one the proxy should never have served.
 */

import assert from "node:assert/strict";
import { startNginx } from "../_nginx.ts";
import { startLiveNetwork, until } from "./_live.ts";

const REFRESH_SECS = 2;
const STALE_AFTER_SECS = 6;

interface Got {
  status: number;
  cache: string | null;
  etag: string | null;
  maxAge: number | null;
  takenAt: number | null;
  sentAt: number;
}

async function get(url: string, headers: HeadersInit = {}): Promise<Got> {
  const sentAt = Date.now();
  const response = await fetch(url, { headers });
  const text = await response.text();
  const cacheControl = response.headers.get("cache-control") ?? "";
  return {
    status: response.status,
    cache: response.headers.get("x-cache-status"),
    etag: response.headers.get("etag"),
    maxAge: /max-age=(\d+)/.test(cacheControl)
      ? Number(/max-age=(\d+)/.exec(cacheControl)![1])
      : null,
    // `/stats`, `/epochs` and `/providers/{address}` say which snapshot they are of.
    takenAt: response.status === 200 && JSON.parse(text).snapshot
      ? Date.parse(JSON.parse(text).snapshot.taken_at)
      : null,
    sentAt,
  };
}

/** No answer reaching the client may carry a snapshot older than the bound when it was asked for. */
function assertWithinBound(got: Got, where: string): void {
  if (got.takenAt === null) return;
  const age = got.sentAt - got.takenAt;
  assert.ok(
    age <= STALE_AFTER_SECS * 1000,
    `${where}: asked for when its snapshot was ${age} ms old, the proxy served it (${got.cache}); ` +
      `the bound is ${STALE_AFTER_SECS} s`,
  );
}

Deno.test("behind nginx: cached within max-age, revalidated by ETag, never past the bound", async () => {
  await using live = await startLiveNetwork({ settledEpochs: 1 });
  const indexer = await live.startIndexer([
    "--refresh-secs",
    String(REFRESH_SECS),
    "--stale-after-secs",
    String(STALE_AFTER_SECS),
  ]);
  await using proxy = await startNginx({ upstream: indexer.url });
  await until(
    "the indexer to serve",
    async () => (await indexer.get("/health")).body.serving || undefined,
    { failed: indexer.failure },
  );
  const seen: Got[] = [];
  const ask = async (path = "/stats", headers?: HeadersInit) => {
    const got = await get(`${proxy.url}${path}`, headers);
    seen.push(got);
    assertWithinBound(got, `${path} #${seen.length}`);
    return got;
  };

  // A first answer from the indexer, then the same from the cache while its max-age lasts.
  const first = await until("a fresh answer with time left", async () => {
    const got = await ask();
    return got.status === 200 && got.maxAge !== null && got.maxAge >= 3 ? got : undefined;
  });
  // The indexer's max-age ends by the bound (counted from the request, before it was served).
  if (first.cache !== "HIT") {
    assert.ok(
      first.maxAge! * 1000 <= first.takenAt! + STALE_AFTER_SECS * 1000 - first.sentAt + 1000,
      `max-age ${first.maxAge} s for a snapshot ${first.sentAt - first.takenAt!} ms old`,
    );
  }
  // Asked again within the max-age, the proxy answers from its cache (asked until two requests
  // land within it: a stalled machine may take longer than a max-age between two).
  const second = await until("an answer from the cache", async () => {
    const got = await ask();
    return got.cache === "HIT" ? got : undefined;
  });
  assert.equal(second.status, 200);
  // A client's If-None-Match is answered 304 by the proxy (a hit) or the indexer.
  const conditional = await ask("/stats", { "if-none-match": second.etag! });
  if (conditional.etag === second.etag) assert.equal(conditional.status, 304);

  // Every data endpoint goes through the cache the same way.
  for (const path of ["/models", "/providers?limit=2", "/epochs?order=desc&limit=3"]) {
    const a = await ask(path);
    const b = await ask(path);
    assert.equal(a.status, 200, path);
    assert.ok(
      ["HIT", "MISS", "EXPIRED", "REVALIDATED"].includes(b.cache ?? ""),
      `${path}: ${b.cache}`,
    );
  }

  // The chain stops: the indexer cannot refresh and serves its last snapshot until its bound,
  // then answers 503 (no-store); the cached copy may still be served until its max-age ends,
  // never after the bound (a revalidation in the last second is not answered 304).
  await live.stopChain();
  let newest = Math.max(...seen.filter((g) => g.takenAt !== null).map((g) => g.takenAt!));
  // Asked until one request is sent after the bound of the newest snapshot seen: its answer is
  // the indexer's 503, never a copy from the cache.
  const after = await until("a request after the bound", async () => {
    const got = await ask();
    if (got.takenAt !== null) newest = Math.max(newest, got.takenAt);
    if (got.sentAt <= newest + STALE_AFTER_SECS * 1000) return undefined;
    assert.notEqual(got.cache, "HIT", "after the bound, an answer from the cache");
    assert.equal(got.status, 503, `after the bound: ${got.status} ${got.cache}`);
    return got;
  }, { everyMs: 200 });
  assert.equal(after.status, 503);
  assert.ok(seen.some((g) => g.cache === "HIT"), "the proxy never served from its cache");
  assert.equal(proxy.errorLog().includes("[emerg]"), false, proxy.errorLog());
});
