import assert from "node:assert/strict";
import { RouterAdsError, type RouterAdsFailure } from "../../indexer/errors.ts";
import { fetchRouterAds, routerAdsUrl } from "../../indexer/router_ads.ts";
import { closedPort, serve } from "../_http.ts";

async function refused(
  promise: Promise<unknown>,
  reason: RouterAdsFailure,
  fragment = "",
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RouterAdsError, String(error));
    assert.equal(error.reason, reason, error.message);
    assert.ok(error.shortMessage.includes(fragment), `${error.shortMessage} ∌ ${fragment}`);
    return true;
  });
}

Deno.test("fetchRouterAds returns the entries of a well-formed envelope", async () => {
  const seen: string[] = [];
  await using router = serve((req) => {
    seen.push(`${req.method} ${new URL(req.url).pathname}`);
    return Response.json({ ads: [{ ad: 1 }, "anything"] });
  });
  // Entries are returned unchecked: each one is verified on its own later.
  assert.deepEqual(await fetchRouterAds(router.url), [{ ad: 1 }, "anything"]);
  assert.deepEqual(await fetchRouterAds(`${router.url}/`), [{ ad: 1 }, "anything"]);
  assert.deepEqual(seen, ["GET /v1/ads", "GET /v1/ads"]);
});

Deno.test("router failures are typed and say what happened", async (t) => {
  await t.step("nothing listens", async () => {
    await refused(
      fetchRouterAds(`http://127.0.0.1:${closedPort()}`),
      "unreachable",
      "Cannot reach",
    );
  });
  await t.step("a router that never answers times out", async () => {
    await using router = serve((req) =>
      new Promise<Response>((resolve) =>
        req.signal.addEventListener("abort", () => resolve(new Response(null)))
      )
    );
    await refused(fetchRouterAds(router.url, { timeoutMs: 200 }), "timeout", "within 200 ms");
  });
  await t.step("a body that stalls half-way times out too", async () => {
    await using router = serve((req) => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"ads":['));
          req.signal.addEventListener("abort", () => controller.close());
        },
      });
      return new Response(body, { headers: { "content-type": "application/json" } });
    });
    await refused(fetchRouterAds(router.url, { timeoutMs: 200 }), "timeout");
  });
  await t.step("a cancelled refresh aborts the request", async () => {
    await using router = serve((req) =>
      new Promise<Response>((resolve) =>
        req.signal.addEventListener("abort", () => resolve(new Response(null)))
      )
    );
    const controller = new AbortController();
    const pending = fetchRouterAds(router.url, { signal: controller.signal });
    controller.abort();
    await refused(pending, "aborted");
  });
  await t.step("an error status", async () => {
    await using router = serve(() => Response.json({ error: "down" }, { status: 502 }));
    await refused(fetchRouterAds(router.url), "status", "status 502");
  });
  await t.step("an oversized body, declared or streamed", async () => {
    const big = JSON.stringify({ ads: ["x".repeat(4096)] });
    await using declared = serve(() => new Response(big));
    await refused(fetchRouterAds(declared.url, { maxBytes: 1024 }), "too_large", "limit is 1024");
    await using streamed = serve(() =>
      new Response(
        new ReadableStream({
          pull(controller) {
            controller.enqueue(new TextEncoder().encode(" ".repeat(512)));
          },
        }),
      )
    );
    await refused(fetchRouterAds(streamed.url, { maxBytes: 4096 }), "too_large");
  });
  await t.step("not JSON", async () => {
    await using router = serve(() => new Response("<html>"));
    await refused(fetchRouterAds(router.url), "invalid_json", "not JSON");
  });
  await t.step("JSON that is not the envelope", async () => {
    const table: [unknown, string][] = [
      [[], "it is an array"],
      [null, "it is null"],
      [7, "it is number"],
      [{}, '"ads" is missing'],
      [{ ads: {} }, '"ads" is not an array'],
      [{ ads: [], next: "…" }, 'unknown field "next"'],
      [{ ads: Array.from({ length: 10_001 }, () => 0) }, '"ads" has 10001 entries'],
    ];
    let body: unknown;
    await using router = serve(() => Response.json(body));
    for (const [value, fragment] of table) {
      body = value;
      await refused(fetchRouterAds(router.url), "invalid_envelope", fragment);
    }
  });
});

Deno.test("router URLs from chain are checked before use", () => {
  assert.equal(routerAdsUrl("http://127.0.0.1:9101"), "http://127.0.0.1:9101/v1/ads");
  assert.equal(routerAdsUrl("https://r.example/base/"), "https://r.example/base/v1/ads");
  const table: [string, string][] = [
    ["router-0", "not a URL"],
    ["file:///etc/passwd", "scheme is file:"],
    ["http://user:pw@r.example", "credentials"],
    ["http://r.example/?x=1", "query"],
    ["http://r.example/#x", "fragment"],
    [`http://r.example/${"a".repeat(2100)}`, "characters"],
  ];
  for (const [url, fragment] of table) {
    assert.throws(() => routerAdsUrl(url), (error: unknown) => {
      assert.ok(error instanceof RouterAdsError && error.reason === "invalid_url", String(error));
      assert.ok(error.shortMessage.includes(fragment), `${error.shortMessage} ∌ ${fragment}`);
      return true;
    });
  }
});
