import assert from "node:assert/strict";
import { createRouterHandler, pollProviders, type RouterEntry } from "../../devnet/router.ts";
import { closedPort, serve } from "../_http.ts";

const entry = (n: number): RouterEntry => ({
  ad: { version: 1, provider: `0x${String(n).repeat(40).slice(0, 40)}` },
  capacity: { max_concurrency: 4, available_concurrency: n },
  metrics: { tokens_per_sec: n * 1.5 },
});

Deno.test("GET /v1/ads serves the source's entries; other routes are refused", async () => {
  const handler = createRouterHandler({ source: () => [entry(1), entry(2)] });
  const res = await handler(new Request("http://r/v1/ads"));
  assert.deepEqual(await res.json(), { ads: [entry(1), entry(2)] });
  const post = await handler(new Request("http://r/v1/ads", { method: "POST" }));
  assert.equal(post.status, 405);
  assert.equal((await post.json()).error.code, "method_not_allowed");
  assert.equal((await handler(new Request("http://r/x"))).status, 404);
});

Deno.test("pollProviders lists the live providers and reports the others", async () => {
  await using up = serve(() => Response.json(entry(3)));
  await using junk = serve(() => Response.json({ ad: 1 }));
  const down = `http://127.0.0.1:${closedPort()}`;
  const errors: string[] = [];
  const source = pollProviders([up.url, down, junk.url], {
    timeoutMs: 1000,
    onError: (url) => errors.push(url),
  });
  assert.deepEqual(await source(), [entry(3)]);
  assert.deepEqual(errors.sort(), [down, junk.url].sort());
});
