/**
 * The nginx caching-proxy fixture (`tests/_nginx.ts`) against a toy upstream: an answer with
 * `Cache-Control: public, max-age=2` and an `ETag` is served from the cache within its two
 * seconds and not after them (nginx revalidates with `If-None-Match`); `no-store` answers are
 * never cached; the dashboard page is always fresh and its versioned assets are cached.
 */

import assert from "node:assert/strict";
import { dashboardAsset, dashboardResponse, IMMUTABLE } from "../../../indexer/dashboard/mod.ts";
import { serve } from "../../_http.ts";
import { nginxConfig, startNginx } from "../../_nginx.ts";

/** A toy upstream: counts requests per path and remembers their `If-None-Match`. */
function toyUpstream() {
  const hits = new Map<string, number>();
  const conditional: string[] = [];
  let version = 1;
  const server = serve((request) => {
    const path = new URL(request.url).pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const etag = `"v${version}"`;
    if (path === "/data") {
      const headers = { etag, "cache-control": "public, max-age=2" };
      const asked = request.headers.get("if-none-match");
      if (asked) conditional.push(asked);
      if (asked === etag) return new Response(null, { status: 304, headers });
      return new Response(`version ${version}`, { headers });
    }
    if (path === "/down") {
      return Response.json({ error: { code: "chain_unreachable", message: "down" } }, {
        status: 503,
        headers: { "cache-control": "no-store" },
      });
    }
    const asset = dashboardAsset(path);
    if (asset) return dashboardResponse(asset, request);
    return new Response("fresh", { headers: { etag, "cache-control": "no-store" } });
  });
  return {
    server,
    hits: (path: string) => hits.get(path) ?? 0,
    conditional,
    bump: () => version++,
  };
}

async function get(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  const body = await response.text();
  return { status: response.status, cache: response.headers.get("x-cache-status"), body };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("within max-age a request is a cache hit; after it, nginx asks the upstream again", async () => {
  const upstream = toyUpstream();
  await using _server = upstream.server;
  await using proxy = await startNginx({ upstream: upstream.server.url });

  const first = await get(`${proxy.url}/data`);
  const storedAt = Date.now();
  assert.deepEqual([first.status, first.cache, first.body], [200, "MISS", "version 1"]);
  const second = await get(`${proxy.url}/data`);
  // The bound is 2 s; a second request on a stalled machine may come too late to be a hit.
  if (Date.now() - storedAt < 1000) {
    assert.deepEqual([second.status, second.cache, second.body], [200, "HIT", "version 1"]);
    assert.equal(upstream.hits("/data"), 1, "a hit must not reach the upstream");
  }

  // After the bound (nginx counts whole seconds: wait past 3 s), the copy is not served as is:
  // nginx revalidates with the ETag, and the upstream's 304 refreshes it.
  await sleep(Math.max(0, storedAt + 3200 - Date.now()));
  const hitsBefore = upstream.hits("/data");
  const third = await get(`${proxy.url}/data`);
  assert.deepEqual([third.status, third.cache, third.body], [200, "REVALIDATED", "version 1"]);
  assert.equal(upstream.hits("/data"), hitsBefore + 1);
  assert.deepEqual(upstream.conditional, ['"v1"']);

  // A changed answer is seen at the next expiry, never later.
  upstream.bump();
  const refreshedAt = Date.now();
  await sleep(Math.max(0, refreshedAt + 3200 - Date.now()));
  const fourth = await get(`${proxy.url}/data`);
  assert.deepEqual([fourth.status, fourth.cache, fourth.body], [200, "EXPIRED", "version 2"]);
  assert.equal(proxy.errorLog().includes("[emerg]"), false, proxy.errorLog());
});

Deno.test("no-store answers (and the indexer's 503s) are never served from the cache", async () => {
  const upstream = toyUpstream();
  await using _server = upstream.server;
  await using proxy = await startNginx({ upstream: upstream.server.url });
  for (const path of ["/fresh", "/down"]) {
    const a = await get(`${proxy.url}${path}`);
    const b = await get(`${proxy.url}${path}`);
    assert.deepEqual([a.cache, b.cache], ["MISS", "MISS"], path);
    assert.equal(upstream.hits(path), 2, `${path} must reach the upstream every time`);
  }
  assert.equal((await get(`${proxy.url}/down`)).status, 503);
});

Deno.test("through a caching proxy the page is always fresh and its versioned assets are cached", async () => {
  const upstream = toyUpstream();
  await using _server = upstream.server;
  await using proxy = await startNginx({ upstream: upstream.server.url });
  const script = dashboardAsset("/dashboard.js")!;
  const path = `/dashboard.js?v=${script.version}`;
  const first = await fetch(`${proxy.url}${path}`);
  assert.deepEqual([first.headers.get("x-cache-status"), first.headers.get("etag")], [
    "MISS",
    script.etag,
  ]);
  assert.equal(first.headers.get("cache-control"), IMMUTABLE);
  assert.deepEqual(new Uint8Array(await first.arrayBuffer()), script.body);
  const second = await get(`${proxy.url}${path}`);
  assert.deepEqual([second.status, second.cache], [200, "HIT"]);
  const conditional = await get(`${proxy.url}${path}`, { "if-none-match": script.etag });
  assert.deepEqual([conditional.status, conditional.cache, conditional.body], [304, "HIT", ""]);
  assert.equal(upstream.hits("/dashboard.js"), 1, "the cached script must not reach the upstream");
  // The page itself is no-cache: every load reaches the upstream, so a new version shows at once.
  for (let i = 0; i < 2; i++) {
    const page = await get(`${proxy.url}/`);
    assert.deepEqual([page.status, page.cache], [200, "MISS"]);
    assert.ok(page.body.includes(`dashboard.js?v=${script.version}`));
  }
  assert.equal(upstream.hits("/"), 2);
});

Deno.test("the fixture refuses an upstream with a path, and removes its directory", async () => {
  assert.throws(() => nginxConfig("/tmp/x", 1, "http://127.0.0.1:1/api"), /without a path/);
  const upstream = toyUpstream();
  await using _server = upstream.server;
  const proxy = await startNginx({ upstream: upstream.server.url });
  assert.match(proxy.config, /proxy_cache_revalidate on;/);
  await proxy.stop();
  await proxy.stop();
  assert.throws(() => Deno.statSync(proxy.dir), Deno.errors.NotFound);
  await assert.rejects(fetch(`${proxy.url}/data`));
});
