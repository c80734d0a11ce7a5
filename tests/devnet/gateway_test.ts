import assert from "node:assert/strict";
import { GatewaySet } from "../../daemon/gateway/gateway_set.ts";
import { createGatewayHandler, type DirectoryEntry, listModels } from "../../devnet/gateway.ts";
import { closedPort, okJson, serve } from "../_http.ts";

const now = new Date("2026-11-22T12:00:00Z");
const clock = () => now;
const PROVIDER_A = "0x" + "a1".repeat(20);
const PROVIDER_B = "0x" + "b2".repeat(20);
const PROVIDER_DOWN = "0x" + "c3".repeat(20);

function entry(
  provider: string,
  tier: "verified" | "tee",
  endpoint: string,
  models: [string, string, string, number][],
): DirectoryEntry {
  return {
    provider,
    tier,
    ad: {
      endpoint,
      models: models.map(([id, input, output, context_length]) => ({
        id,
        prices: { input, output },
        context_length,
      })),
    },
    capacity: { max_concurrency: 4, available_concurrency: 2 },
    metrics: { tokens_per_sec: 10 },
  };
}

/** A directory of one verified provider (`PROVIDER_A`) at `endpoint`. */
function single(endpoint: string): DirectoryEntry {
  return entry(PROVIDER_A, "verified", endpoint, [["devnet/tiny", "1", "1", 4096]]);
}

/** A gateway in front of one live provider (A), one other (B) and one unreachable. */
function setup(provider: (req: Request) => Response | Promise<Response>) {
  const upstream = serve(provider);
  const entries = [
    entry(PROVIDER_A, "verified", upstream.url, [["devnet/tiny", "100", "300", 4096]]),
    entry(PROVIDER_B, "tee", upstream.url, [["devnet/tiny", "50", "300", 8192], [
      "devnet/big",
      "1",
      "2",
      1024,
    ]]),
    entry(PROVIDER_DOWN, "verified", `http://127.0.0.1:${closedPort()}`, [[
      "devnet/tiny",
      "1",
      "1",
      2048,
    ]]),
  ];
  const peers = new GatewaySet({ clock });
  peers.markReached("http://127.0.0.1:1", new Date(now.getTime() - 60_000));
  const handler = createGatewayHandler({
    directory: { entries: () => entries },
    peers,
    self: "http://127.0.0.1:9999/",
    clock,
    passThroughTimeoutMs: 2000,
  });
  const gateway = serve(handler);
  return {
    handler,
    gateway,
    [Symbol.asyncDispose]: async () => {
      await gateway.close();
      await upstream.close();
    },
  };
}

Deno.test("gossip answer lists the gateway itself and its peers", async () => {
  await using s = setup(() => new Response());
  const body = await okJson(s.handler(new Request("http://x/v1/gateways")));
  assert.deepEqual(body, {
    gateways: [
      { url: "http://127.0.0.1:9999", last_seen: now.toISOString() },
      { url: "http://127.0.0.1:1", last_seen: new Date(now.getTime() - 60_000).toISOString() },
    ],
  });
});

Deno.test("models aggregate per model and tier with the cheapest blended price", () => {
  const entries = [
    entry(PROVIDER_A, "verified", "http://a", [["m/x", "100", "300", 4096]]),
    entry(PROVIDER_B, "verified", "http://b", [["m/x", "250", "100", 8192]]),
    entry(PROVIDER_DOWN, "verified", "http://c", [["m/x", "150", "200", 1024]]),
    entry("0x" + "d4".repeat(20), "tee", "http://d", [["m/x", "1", "1", 1024]]),
  ];
  assert.deepEqual(listModels(entries), [
    {
      model: "m/x",
      tier: "tee",
      providers: 1,
      context_length: 1024,
      cheapest_price: { input: "1", output: "1" },
      kind: "chat",
      capabilities: [],
    },
    {
      model: "m/x",
      tier: "verified",
      providers: 3,
      context_length: 8192,
      // 250 + 100 = 350 ties with 150 + 200 = 350: the lower output price wins.
      cheapest_price: { input: "250", output: "100" },
      kind: "chat",
      capabilities: [],
    },
  ]);
});

Deno.test("providers are filtered by model and tier; bad queries are refused", async () => {
  await using s = setup(() => new Response());
  const get = async (query: string) => {
    const res = await s.handler(new Request(`http://x/v1/providers${query}`));
    return { status: res.status, body: await res.json() };
  };
  const tiny = await get("?model=devnet/tiny&tier=verified");
  assert.deepEqual(tiny.body.providers.map((p: { provider: string }) => p.provider), [
    PROVIDER_A,
    PROVIDER_DOWN,
  ]);
  assert.equal((await get("?model=devnet/big")).body.providers.length, 1);
  assert.equal((await get("")).body.providers.length, 3);
  const badTier = await get("?tier=gold");
  assert.equal(badTier.status, 400);
  assert.equal(badTier.body.error.code, "invalid_tier");
  assert.equal((await get("?model=no-slash")).body.error.code, "invalid_model");
});

Deno.test("key and attestation requests pass through; errors name the provider", async () => {
  await using s = setup((req) => {
    const url = new URL(req.url);
    return Response.json({ path: url.pathname, nonce: url.searchParams.get("nonce") });
  });
  const key = await fetch(`${s.gateway.url}/v1/providers/${PROVIDER_A.toUpperCase()}/key`);
  assert.equal(key.status, 200);
  assert.deepEqual(await key.json(), { path: "/v1/key", nonce: null });
  const nonce = "ab".repeat(32);
  const att = await fetch(`${s.gateway.url}/v1/providers/${PROVIDER_B}/attestation?nonce=${nonce}`);
  assert.equal(att.status, 200);
  assert.deepEqual(await att.json(), { path: "/v1/attestation", nonce });

  const cases: [string, number, string][] = [
    [`/v1/providers/${PROVIDER_B}/attestation?nonce=xyz`, 400, "invalid_nonce"],
    [`/v1/providers/0x1234/key`, 400, "invalid_provider"],
    [`/v1/providers/0x${"99".repeat(20)}/key`, 404, "unknown_provider"],
    [`/v1/providers/${PROVIDER_DOWN}/key`, 502, "provider_unreachable"],
    [`/v1/nothing`, 404, "not_found"],
  ];
  for (const [path, status, code] of cases) {
    const res = await fetch(`${s.gateway.url}${path}`);
    const body = await res.json();
    assert.equal(res.status, status, path);
    assert.equal(body.error.code, code, path);
    assert.equal(typeof body.error.message, "string");
  }
});

Deno.test("the relay streams both ways as bytes arrive, without buffering", async () => {
  let releaseSecond!: () => void;
  const secondMayGo = new Promise<void>((resolve) => (releaseSecond = resolve));
  let firstRequestBytes!: (bytes: Uint8Array) => void;
  const providerSawFirstBytes = new Promise<Uint8Array>((resolve) => (firstRequestBytes = resolve));

  await using s = setup(async (req) => {
    assert.equal(req.headers.get("content-type"), "message/ohttp-chunked-req");
    const reader = req.body!.getReader();
    const first = await reader.read();
    firstRequestBytes(first.value!);
    const rest = (async () => {
      while (!(await reader.read()).done);
    })();
    return new Response(
      new ReadableStream({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode("sealed-1"));
          await secondMayGo;
          await rest;
          controller.enqueue(new TextEncoder().encode("sealed-2"));
          controller.close();
        },
      }),
      { headers: { "content-type": "message/ohttp-chunked-res" } },
    );
  });

  // The client sends its first bytes and keeps the request open.
  let closeRequest!: () => void;
  const requestBody = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode("req-1"));
      await new Promise<void>((resolve) => (closeRequest = resolve));
      controller.enqueue(new TextEncoder().encode("req-2"));
      controller.close();
    },
  });
  const responsePromise = fetch(`${s.gateway.url}/v1/providers/${PROVIDER_A}/relay`, {
    method: "POST",
    body: requestBody,
    headers: { "content-type": "message/ohttp-chunked-req" },
    // @ts-ignore: Deno needs duplex for a streaming request body
    duplex: "half",
  });
  // The provider gets the first request bytes while the client has not finished sending.
  assert.equal(new TextDecoder().decode(await providerSawFirstBytes), "req-1");
  closeRequest();
  const response = await responsePromise;
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "message/ohttp-chunked-res");
  const reader = response.body!.getReader();
  // The first sealed chunk arrives while the provider is still holding back the second.
  assert.equal(new TextDecoder().decode((await reader.read()).value!), "sealed-1");
  releaseSecond();
  let rest = "";
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    rest += new TextDecoder().decode(r.value);
  }
  assert.equal(rest, "sealed-2");
});

Deno.test("the relay refuses wrong media types and reports provider failures", async () => {
  await using s = setup(() => new Response("boom", { status: 500 }));
  const post = (provider: string, type: string) =>
    fetch(`${s.gateway.url}/v1/providers/${provider}/relay`, {
      method: "POST",
      body: "x",
      headers: { "content-type": type },
    });
  const wrongType = await post(PROVIDER_A, "application/json");
  assert.equal(wrongType.status, 415);
  assert.equal((await wrongType.json()).error.code, "unsupported_media_type");
  const failing = await post(PROVIDER_A, "message/ohttp-chunked-req");
  assert.equal(failing.status, 502);
  const body = await failing.json();
  assert.equal(body.error.code, "provider_error");
  assert.match(body.error.message, /answered 500/);
  const down = await post(PROVIDER_DOWN, "message/ohttp-chunked-req");
  assert.equal(down.status, 502);
  assert.equal((await down.json()).error.code, "provider_unreachable");
  const get = await fetch(`${s.gateway.url}/v1/providers/${PROVIDER_A}/relay`);
  assert.equal(get.status, 405);
  await get.body?.cancel();
});

// Attack: a provider controls its ad's `endpoint` (any listed provider can). The gateway fetches
// `${endpoint}/v1/key` with `fetch`'s default `redirect: "follow"` and hands the body (up to
// 64 KiB; 1 MiB for the attestation) back to whoever asked. So the provider's server answers
// `302 Location: http://169.254.169.254/latest/meta-data/iam/security-credentials/…` (or any
// service on the gateway's host or LAN, with any path and query), then asks the gateway for its
// own key and reads the internal answer: a full-read SSRF from the gateway operator's network.
// The ad rules (`docs/protocol.md` §1: no query, no credentials) do not help, because the
// redirect target is never checked. Here the "internal service" is a loopback server that only
// the gateway should reach.
Deno.test("the gateway's key pass-through does not follow a provider's redirect to an internal URL", async () => {
  let internalHits = 0;
  await using internal = serve(() => {
    internalHits++;
    return Response.json({ secret: "AKIA-INTERNAL-CREDENTIALS" });
  });
  await using provider = serve((req) => {
    const path = new URL(req.url).pathname;
    return new Response(null, {
      status: 302,
      headers: { location: `${internal.url}/latest/meta-data/iam?from=${path}` },
    });
  });
  const handler = createGatewayHandler({
    directory: { entries: () => [single(provider.url)] },
    peers: new GatewaySet(),
    self: "http://127.0.0.1:9999",
    passThroughTimeoutMs: 2000,
  });
  const response = await handler(
    new Request(`http://gateway.test/v1/providers/${PROVIDER_A}/key`),
  );
  const text = await response.text();
  assert.ok(
    !text.includes("AKIA-INTERNAL-CREDENTIALS"),
    `the gateway returned the internal service's answer to the requester: ${text}`,
  );
  assert.equal(internalHits, 0, "the gateway followed the provider's redirect");
});

Deno.test("the gateway's attestation pass-through does not follow a provider's redirect", async () => {
  let internalHits = 0;
  await using internal = serve(() => {
    internalHits++;
    return new Response("root:x:0:0:internal-only", { headers: { "content-type": "text/plain" } });
  });
  await using provider = serve(() =>
    new Response(null, { status: 307, headers: { location: `${internal.url}/admin?x=1` } })
  );
  const handler = createGatewayHandler({
    directory: { entries: () => [single(provider.url)] },
    peers: new GatewaySet(),
    self: "http://127.0.0.1:9999",
    passThroughTimeoutMs: 2000,
  });
  const response = await handler(
    new Request(
      `http://gateway.test/v1/providers/${PROVIDER_A}/attestation?nonce=${"ab".repeat(32)}`,
    ),
  );
  const text = await response.text();
  assert.ok(!text.includes("internal-only"), `internal content leaked: ${text}`);
  assert.equal(internalHits, 0, "the gateway followed the provider's redirect");
});

Deno.test("the relay does not follow a provider's redirect either", async () => {
  let internalHits = 0;
  await using internal = serve(() => {
    internalHits++;
    return new Response("sealed?", { headers: { "content-type": "message/ohttp-chunked-res" } });
  });
  for (const status of [301, 302, 303, 307, 308]) {
    await using provider = serve(() =>
      new Response(null, { status, headers: { location: `${internal.url}/v1/relay` } })
    );
    const handler = createGatewayHandler({
      directory: { entries: () => [single(provider.url)] },
      peers: new GatewaySet(),
      self: "http://127.0.0.1:9999",
    });
    const response = await handler(
      new Request(`http://gateway.test/v1/providers/${PROVIDER_A}/relay`, {
        method: "POST",
        body: "sealed request",
        headers: { "content-type": "message/ohttp-chunked-req" },
      }),
    );
    const body = await response.json();
    assert.equal(response.status, 502);
    assert.equal(body.error.code, "provider_error");
    assert.match(body.error.message, new RegExp(`answered ${status} \\(a redirect\\)`));
    assert.ok(!body.error.message.includes(internal.url), "the redirect target is not echoed");
  }
  assert.equal(internalHits, 0, "the gateway followed a provider's redirect");
});

Deno.test("a provider endpoint is re-checked before every request; forbidden hosts are never contacted", async () => {
  let contacted = 0;
  const counting: typeof fetch = () => {
    contacted++;
    return Promise.resolve(Response.json({}));
  };
  const cases: [string, RegExp][] = [
    ["http://169.254.169.254", /169\.254\.169\.254 is a link-local address/],
    ["http://2852039166:80", /169\.254\.169\.254 is a link-local address/],
    ["http://[fe80::1]:9301", /link-local/],
    ["http://[::ffff:169.254.169.254]", /link-local/],
    ["http://0.0.0.0:9301", /unspecified/],
    ["http://[::]:9301", /unspecified/],
    ["http://224.0.0.1:9301", /reserved/],
    ["http://user:pw@127.0.0.1:9301", /credentials/],
    ["http://127.0.0.1:9301/?x=1", /query/],
    ["http://127.0.0.1:9301/#x", /fragment/],
    ["file:///etc/passwd", /scheme file:/],
    ["not a url", /not an absolute URL/],
  ];
  for (const [endpoint, why] of cases) {
    const handler = createGatewayHandler({
      directory: { entries: () => [single(endpoint)] },
      peers: new GatewaySet(),
      self: "http://127.0.0.1:9999",
      fetch: counting,
    });
    const requests = [
      new Request(`http://gateway.test/v1/providers/${PROVIDER_A}/key`),
      new Request(
        `http://gateway.test/v1/providers/${PROVIDER_A}/attestation?nonce=${"ab".repeat(32)}`,
      ),
      new Request(`http://gateway.test/v1/providers/${PROVIDER_A}/relay`, {
        method: "POST",
        body: "x",
        headers: { "content-type": "message/ohttp-chunked-req" },
      }),
    ];
    for (const request of requests) {
      const response = await handler(request);
      const body = await response.json();
      assert.equal(response.status, 502, endpoint);
      assert.equal(body.error.code, "provider_error", endpoint);
      assert.match(body.error.message, why, endpoint);
    }
  }
  assert.equal(contacted, 0, "a refused endpoint was contacted");
});

Deno.test("pass-through answers are JSON served as application/json, whatever the provider says", async () => {
  await using provider = serve((req) => {
    const path = new URL(req.url).pathname;
    if (path === "/v1/key") {
      // Valid JSON, but labelled as HTML: the label is not passed on.
      return new Response('{"provider":"0x1"}', { headers: { "content-type": "text/html" } });
    }
    return new Response("<script>alert(document.cookie)</script>", {
      headers: { "content-type": "text/html" },
    });
  });
  const handler = createGatewayHandler({
    directory: { entries: () => [single(provider.url)] },
    peers: new GatewaySet(),
    self: "http://127.0.0.1:9999",
  });
  const key = await handler(new Request(`http://gateway.test/v1/providers/${PROVIDER_A}/key`));
  assert.equal(key.status, 200);
  assert.equal(key.headers.get("content-type"), "application/json");
  assert.equal(key.headers.get("x-content-type-options"), "nosniff");
  assert.deepEqual(await key.json(), { provider: "0x1" });

  const page = await handler(
    new Request(
      `http://gateway.test/v1/providers/${PROVIDER_A}/attestation?nonce=${"ab".repeat(32)}`,
    ),
  );
  const text = await page.text();
  assert.equal(page.status, 502);
  assert.equal(page.headers.get("content-type"), "application/json");
  assert.ok(!text.includes("<script>"), `the provider's page was reflected: ${text}`);
  assert.match(JSON.parse(text).error.message, /not JSON \(text\/html, \d+ bytes\)/);
});

Deno.test("relay errors show the provider's status and error code, never its free text", async () => {
  await using provider = serve(() =>
    Response.json(
      { error: { code: "cannot_open", message: "<img src=x onerror=alert(1)> call 555-0100" } },
      { status: 400 },
    )
  );
  const handler = createGatewayHandler({
    directory: { entries: () => [single(provider.url)] },
    peers: new GatewaySet(),
    self: "http://127.0.0.1:9999",
  });
  const response = await handler(
    new Request(`http://gateway.test/v1/providers/${PROVIDER_A}/relay`, {
      method: "POST",
      body: "x",
      headers: { "content-type": "message/ohttp-chunked-req" },
    }),
  );
  const { error } = await response.json();
  assert.equal(response.status, 502);
  assert.equal(error.code, "provider_error");
  assert.match(error.message, /answered 400 \(application\/json, error code cannot_open\)/);
  assert.ok(!/img|555/.test(error.message), error.message);
});
