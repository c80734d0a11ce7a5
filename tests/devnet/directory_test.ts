import assert from "node:assert/strict";
import { RouterDirectory } from "../../devnet/directory.ts";
import { createRouterHandler } from "../../devnet/router.ts";
import { closedPort, serve } from "../_http.ts";

const ad = (n: number) => ({
  version: 1,
  provider: `0x${String(n).repeat(40)}`,
  tier: n % 2 ? "verified" : "tee",
  serving_key: `0x${"e".repeat(40)}`,
  endpoint: `http://127.0.0.1:${9000 + n}`,
  models: [{ id: "devnet/echo", prices: { input: "1", output: "2" }, context_length: 8192 }],
});
const entry = (value: unknown) => ({
  ad: value,
  capacity: { max_concurrency: 2, available_concurrency: 1 },
  metrics: { tokens_per_sec: 3 },
});

Deno.test("the directory merges routers, validates ads and keeps a failed router's last view", async () => {
  let routerBUp = true;
  await using a = serve(createRouterHandler({
    source: () => [entry(ad(1)), entry({ ...ad(2), extra: true }), entry(ad(3))],
  }));
  await using b = serve((req) =>
    routerBUp
      ? createRouterHandler({ source: () => [entry(ad(3)), entry(ad(4))] })(req)
      : new Response("down", { status: 503 })
  );
  const down = `http://127.0.0.1:${closedPort()}`;
  const logs: string[] = [];
  const directory = new RouterDirectory([a.url, b.url, down], {
    timeoutMs: 1000,
    log: (m) => logs.push(m),
  });
  assert.deepEqual(directory.entries(), []);
  assert.equal(await directory.refresh(), 2);
  const providers = directory.entries().map((e) => e.provider);
  assert.deepEqual(providers, [ad(1).provider, ad(3).provider, ad(4).provider]);
  assert.equal(directory.entries()[1].tier, "verified");
  assert.ok(logs.some((l) => l.includes("invalid ad") && l.includes("extra")), logs.join("\n"));
  assert.ok(logs.some((l) => l.includes(down)));

  routerBUp = false;
  assert.equal(await directory.refresh(), 1);
  assert.equal(directory.entries().length, 3, "router B's last good view is kept");
});

Deno.test("a capacity or metrics report without the protocol's shape is kept as unknown (null)", async () => {
  await using router = serve(createRouterHandler({
    source: () =>
      [
        { ad: ad(1), capacity: { max_concurrency: "lots" }, metrics: { tokens_per_sec: -1 } },
        entry(ad(3)),
      ] as never,
  }));
  const directory = new RouterDirectory([router.url], { log: () => {} });
  assert.equal(await directory.refresh(), 1);
  assert.deepEqual(
    directory.entries().map((e) => [e.provider, e.capacity, e.metrics]),
    [
      [ad(1).provider, null, null],
      [ad(3).provider, entry(ad(3)).capacity, entry(ad(3)).metrics],
    ],
  );
});
