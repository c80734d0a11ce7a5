import assert from "node:assert/strict";
import type { Address } from "viem";
import type { ProviderAd } from "../../../chain/ad.ts";
import {
  GatewayClient,
  GatewayError,
  type GatewayFailure,
} from "../../../daemon/gateway/gateway_client.ts";
import { closedPort, serve } from "../../_http.ts";

const MODEL = "devnet/echo";

/** The `i`-th provider address, in mixed case as a publisher may spell it. */
function address(i: number): Address {
  return `0xAbC${i.toString(16).padStart(37, "0")}` as Address;
}

function adOf(i: number, overrides: Partial<ProviderAd> = {}): ProviderAd {
  return {
    version: 1,
    provider: address(i),
    tier: "verified",
    serving_key: `0x${"5".repeat(40)}`,
    endpoint: `http://127.0.0.1:${9300 + (i % 100)}`,
    models: [{ id: MODEL, prices: { input: "1", output: "2" }, context_length: 8192 }],
    ...overrides,
  };
}

function entryOf(ad: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    provider: (ad as ProviderAd).provider?.toLowerCase(),
    tier: (ad as ProviderAd).tier,
    ad,
    capacity: { max_concurrency: 4, available_concurrency: 2 },
    metrics: { tokens_per_sec: 12.5 },
    ...extra,
  };
}

/** A loopback gateway answering each request with `answer`, recording what it was asked. */
function gateway(answer: (req: Request) => Response | Promise<Response>) {
  const seen: { method: string; path: string; type: string | null; body: Uint8Array }[] = [];
  const server = serve(async (req) => {
    const url = new URL(req.url);
    seen.push({
      method: req.method,
      path: url.pathname + url.search,
      type: req.headers.get("content-type"),
      body: new Uint8Array(await req.arrayBuffer()),
    });
    return await answer(req);
  });
  return Object.assign(server, { seen, client: new GatewayClient(server.url) });
}

function isGatewayError(reason: GatewayFailure, status?: number, message?: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof GatewayError, `expected GatewayError, got ${error}`);
    assert.equal(error.reason, reason, error.message);
    if (status !== undefined) assert.equal(error.status, status, error.message);
    if (message) assert.match(error.shortMessage, message);
    return true;
  };
}

// ---------------------------------------------------------------------------------------------
// models()

Deno.test("models(): valid entries are kept, bad ones skipped without hiding the others", async () => {
  const good = {
    model: MODEL,
    tier: "verified",
    providers: 2,
    context_length: 8192,
    cheapest_price: { input: "150000", output: "600000" },
  };
  await using server = gateway(() =>
    Response.json({
      models: [
        good,
        { ...good, tier: "tee", cheapest_price: { input: "01", output: "2" } }, // bad price: null
        { ...good, model: "meta/llama", cheapest_price: null },
        { ...good, model: "meta/no-price", cheapest_price: undefined },
        { ...good, tier: "gold" },
        { ...good, tier: undefined },
        { ...good, model: "no-slash" },
        { ...good, model: "a/b/c" },
        { ...good, model: 7 },
        { ...good, providers: -1 },
        { ...good, providers: 1.5 },
        { ...good, providers: "2" },
        { ...good, context_length: 2 ** 53 },
        { ...good, context_length: null },
        null,
        "devnet/echo",
        42,
        [good],
        {
          ...good,
          model: "devnet/embed",
          kind: "embedding",
          capabilities: ["dimensions", "teleport"], // an unknown capability is dropped
          embedding_dimensions: 256,
        },
        { ...good, model: "devnet/no-dims", kind: "embedding" }, // skipped: no vector length
      ],
    })
  );
  assert.deepEqual(await server.client.models(), [
    {
      tier: "verified",
      model: MODEL,
      providers: 2,
      contextLength: 8192,
      cheapestPrice: { input: "150000", output: "600000" },
      kind: "chat",
      supports: [],
    },
    {
      tier: "tee",
      model: MODEL,
      providers: 2,
      contextLength: 8192,
      cheapestPrice: null,
      kind: "chat",
      supports: [],
    },
    {
      tier: "verified",
      model: "meta/llama",
      providers: 2,
      contextLength: 8192,
      cheapestPrice: null,
      kind: "chat",
      supports: [],
    },
    {
      tier: "verified",
      model: "meta/no-price",
      providers: 2,
      contextLength: 8192,
      cheapestPrice: null,
      kind: "chat",
      supports: [],
    },
    {
      tier: "verified",
      model: "devnet/embed",
      providers: 2,
      contextLength: 8192,
      cheapestPrice: { input: "150000", output: "600000" },
      kind: "embedding",
      supports: ["dimensions"],
      embeddingDimensions: 256,
    },
  ]);
  assert.deepEqual(server.seen.map((s) => `${s.method} ${s.path}`), ["GET /v1/models"]);
});

Deno.test("models(): an answer that is not {models: [...]} is the gateway's fault", async () => {
  for (const body of [{}, [], { models: {} }, { models: "x" }, null, 1]) {
    await using server = gateway(() => Response.json(body));
    await assert.rejects(
      server.client.models(),
      isGatewayError("gateway", undefined, /expected \{"models": \[\.\.\.\]\}/),
      JSON.stringify(body),
    );
  }
});

// ---------------------------------------------------------------------------------------------
// providers()

Deno.test("providers(): only valid ads of the asked tier and model are candidates", async () => {
  await using server = gateway(() =>
    Response.json({
      providers: [
        entryOf(adOf(1)),
        entryOf(adOf(2, { tier: "tee" })), // another tier
        entryOf(
          adOf(3, {
            models: [{ id: "meta/llama", prices: { input: "1", output: "1" }, context_length: 1 }],
          }),
        ),
        entryOf({ ...adOf(4), version: 2 }), // invalid ad
        entryOf({ ...adOf(5), endpoint: "http://user:pw@127.0.0.1:1" }), // invalid ad
        entryOf(adOf(6), { provider: address(99).toLowerCase() }), // listed under another address
        entryOf(adOf(7), { provider: address(7).toUpperCase().replace("0X", "0x") }), // case only
        { ad: adOf(8) }, // no provider field, no capacity, no metrics
        entryOf(adOf(9), {
          capacity: { available_concurrency: -1 },
          metrics: { tokens_per_sec: -5 },
        }),
        entryOf(adOf(10), { capacity: "lots", metrics: { tokens_per_sec: "fast" } }),
        entryOf(adOf(11), { capacity: { available_concurrency: 1.5 }, metrics: null }),
        null,
        "0xabc",
        { provider: address(12) },
      ],
    })
  );
  const candidates = await server.client.providers(MODEL, "verified");
  assert.deepEqual(
    candidates.map((c) => [c.provider, c.tier, c.available, c.tokensPerSec]),
    [
      [address(1).toLowerCase(), "verified", 2, 12.5],
      [address(7).toLowerCase(), "verified", 2, 12.5],
      [address(8).toLowerCase(), "verified", 0, 0],
      [address(9).toLowerCase(), "verified", 0, 0],
      [address(10).toLowerCase(), "verified", 0, 0],
      [address(11).toLowerCase(), "verified", 0, 0],
    ],
  );
  assert.deepEqual(candidates[0].ad, adOf(1), "the ad is kept as published");
  assert.deepEqual(server.seen.map((s) => s.path), [
    `/v1/providers?model=devnet%2Fecho&tier=verified`,
  ]);
});

Deno.test("providers(): at most 256 entries of one answer are read", async () => {
  const invalid = entryOf({ ...adOf(0), version: 2 });
  await using flood = gateway(() =>
    Response.json({ providers: [...Array(256).fill(invalid), entryOf(adOf(1))] })
  );
  assert.deepEqual(
    await flood.client.providers(MODEL, "verified"),
    [],
    "the valid 257th entry is never read",
  );
  await using many = gateway(() =>
    Response.json({ providers: Array.from({ length: 300 }, (_, i) => entryOf(adOf(i))) })
  );
  const candidates = await many.client.providers(MODEL, "verified");
  assert.equal(candidates.length, 256);
  assert.equal(candidates.at(-1)!.provider, address(255).toLowerCase());
});

Deno.test("providers(): an answer that is not {providers: [...]} is the gateway's fault", async () => {
  for (const body of [{}, { providers: null }, { providers: {} }, []]) {
    await using server = gateway(() => Response.json(body));
    await assert.rejects(
      server.client.providers(MODEL, "tee"),
      isGatewayError("gateway", undefined, /expected \{"providers": \[\.\.\.\]\}/),
      JSON.stringify(body),
    );
  }
});

// ---------------------------------------------------------------------------------------------
// key() and attestation()

Deno.test("key() and attestation() ask the gateway for the provider's answer and return it raw", async () => {
  const endorsement = { key_config: "0x01", expires_at: 1, nonce: null, signature: "0x02" };
  await using server = gateway((req) =>
    new URL(req.url).pathname.endsWith("/key")
      ? Response.json({ provider: address(1), endorsement })
      : Response.json({ format: "mock", anything: [1, 2] })
  );
  assert.deepEqual(await server.client.key(address(1)), endorsement);
  const nonce = Uint8Array.from({ length: 32 }, (_, i) => i * 8);
  assert.deepEqual(await server.client.attestation(address(1), nonce), {
    format: "mock",
    anything: [1, 2],
  });
  const hex = [...nonce].map((b) => b.toString(16).padStart(2, "0")).join("");
  assert.deepEqual(server.seen.map((s) => `${s.method} ${s.path}`), [
    `GET /v1/providers/${address(1)}/key`,
    `GET /v1/providers/${address(1)}/attestation?nonce=${hex}`,
  ]);
});

// ---------------------------------------------------------------------------------------------
// Blame

/** A body that never ends: only a limit enforced while reading stops it. */
function endless(): ReadableStream<Uint8Array> {
  const piece = new Uint8Array(64 * 1024).fill(0x20);
  return new ReadableStream({
    pull(controller) {
      controller.enqueue(piece);
    },
  });
}

Deno.test("blame: the gateway for its own endpoints and for transport failures, the provider for pass-through answers", async () => {
  type Call = (client: GatewayClient) => Promise<unknown>;
  const calls: [string, Call, "own" | "pass-through"][] = [
    ["models", (c) => c.models(), "own"],
    ["providers", (c) => c.providers(MODEL, "verified"), "own"],
    ["key", (c) => c.key(address(1)), "pass-through"],
    ["attestation", (c) => c.attestation(address(1), new Uint8Array(32)), "pass-through"],
  ];
  const failures: [string, () => Response, number | undefined][] = [
    ["500", () => Response.json({ error: { code: "x", message: "y" } }, { status: 500 }), 500],
    ["502", () => Response.json({ error: { code: "provider_unreachable" } }, { status: 502 }), 502],
    ["404", () => Response.json({ error: { code: "unknown_provider" } }, { status: 404 }), 404],
    ["not JSON", () => new Response("<html>"), undefined],
    ["endless", () => new Response(endless()), undefined],
  ];
  for (const [name, call, kind] of calls) {
    for (const [label, answer, status] of failures) {
      await using server = gateway(answer);
      await assert.rejects(
        call(server.client),
        isGatewayError(kind === "own" ? "gateway" : "provider", status),
        `${name}: ${label}`,
      );
    }
    // Transport failures are always the gateway's: unreachable, and too slow to answer.
    const unreachable = new GatewayClient(`http://127.0.0.1:${closedPort()}`);
    await assert.rejects(call(unreachable), isGatewayError("gateway"), `${name}: unreachable`);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await using slow = serve(async () => {
      await held;
      return Response.json({});
    });
    const impatient = new GatewayClient(slow.url, { timeoutMs: 50 });
    await assert.rejects(call(impatient), isGatewayError("gateway"), `${name}: timeout`);
    release();
  }
});

Deno.test("blame: a caller's abort is passed on as it is, never blamed on anyone", async () => {
  await using server = gateway(() => Response.json({ models: [] }));
  const controller = new AbortController();
  const reason = new Error("the client went away");
  controller.abort(reason);
  await assert.rejects(server.client.models(controller.signal), (e: unknown) => e === reason);
  await assert.rejects(
    server.client.key(address(1), controller.signal),
    (e: unknown) => e === reason,
  );
  await assert.rejects(
    server.client.relay(address(1), new Uint8Array([1]), { signal: controller.signal }),
    (e: unknown) => e === reason,
  );
});

// ---------------------------------------------------------------------------------------------
// relay()

Deno.test("relay(): posts the sealed body and returns the sealed reply stream", async () => {
  const reply = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
  await using server = gateway(() =>
    new Response(reply, { headers: { "content-type": "message/ohttp-chunked-res; x=1" } })
  );
  const sealed = Uint8Array.from({ length: 100 }, (_, i) => 255 - i);
  const stream = await server.client.relay(address(1), sealed);
  assert.deepEqual(new Uint8Array(await new Response(stream).arrayBuffer()), reply);
  assert.equal(server.seen.length, 1);
  assert.equal(server.seen[0].method, "POST");
  assert.equal(server.seen[0].path, `/v1/providers/${address(1)}/relay`);
  assert.equal(server.seen[0].type, "message/ohttp-chunked-req");
  assert.deepEqual(server.seen[0].body, sealed);

  // A streamed sealed body is sent as it is too.
  await using streamed = gateway(() =>
    new Response(reply, { headers: { "content-type": "message/ohttp-chunked-res" } })
  );
  await streamed.client.relay(
    address(1),
    ReadableStream.from([sealed.subarray(0, 10), sealed.subarray(10)]),
  )
    .then((s) => s.cancel());
  assert.deepEqual(streamed.seen[0].body, sealed);
});

Deno.test("relay(): the reply is read ahead of its reader, and onEnd sees its end", async () => {
  const piece = new Uint8Array(1000).fill(7);
  await using server = gateway(() =>
    new Response(ReadableStream.from(Array.from({ length: 8 }, () => piece)), {
      headers: { "content-type": "message/ohttp-chunked-res" },
    })
  );
  // Read ahead past the whole reply: its end is seen while nothing has been read.
  const ended = Promise.withResolvers<void>();
  const stream = await server.client.relay(address(1), new Uint8Array([1]), {
    readAheadBytes: 64 * 1024,
    onEnd: ended.resolve,
  });
  await ended.promise;
  assert.equal((await new Response(stream).arrayBuffer()).byteLength, 8000, "nothing lost");
  // No read-ahead: the end is seen only once the reader got there.
  let calls = 0;
  const lazy = await server.client.relay(address(1), new Uint8Array([1]), {
    onEnd: () => calls++,
  });
  const reader = lazy.getReader();
  assert.equal((await reader.read()).done, false);
  assert.equal(calls, 0, "the reply has not been read to its end");
  while (!(await reader.read()).done) { /* read to the end */ }
  assert.equal(calls, 1, "onEnd once, at the end");
});

Deno.test("relay(): statuses say whose fault the failure is", async () => {
  const json = (status: number, body: unknown) => () => Response.json(body, { status });
  const cases: [string, () => Response, GatewayFailure, RegExp][] = [
    [
      "200 of another type",
      () => new Response("{}", { headers: { "content-type": "application/json" } }),
      "provider",
      /status 200, expected 200 message\/ohttp-chunked-res/,
    ],
    ["200 without a type", () => new Response("x"), "provider", /status 200/],
    [
      "502 provider_unreachable",
      json(502, { error: { code: "provider_unreachable", message: "down" } }),
      "provider",
      /status 502 \(provider_unreachable\)/,
    ],
    [
      "504 provider_timeout",
      json(504, { error: { code: "provider_timeout" } }),
      "provider",
      /504 \(provider_timeout\)/,
    ],
    [
      "502 without a code (a proxy's page)",
      () => new Response("<h1>Bad gateway</h1>", { status: 502 }),
      "gateway",
      /status 502,/,
    ],
    ["500 with an empty body", () => new Response(null, { status: 500 }), "gateway", /status 500,/],
    [
      "503 with a code that is not a token",
      json(503, { error: { code: "Not A Token!" } }),
      "gateway",
      /status 503,/,
    ],
    [
      "404 unknown_provider",
      json(404, { error: { code: "unknown_provider" } }),
      "provider",
      /404 \(unknown_provider\)/,
    ],
    ["415", json(415, { error: { code: "unsupported_media_type" } }), "provider", /415/],
    [
      "429 without a code",
      () => new Response("slow down", { status: 429 }),
      "provider",
      /status 429,/,
    ],
  ];
  for (const [label, answer, reason, message] of cases) {
    await using server = gateway(answer);
    const status = answer().status;
    await assert.rejects(
      server.client.relay(address(1), new Uint8Array([1, 2, 3])),
      isGatewayError(reason, status, message),
      label,
    );
  }
  await assert.rejects(
    new GatewayClient(`http://127.0.0.1:${closedPort()}`).relay(address(1), new Uint8Array([1])),
    isGatewayError("gateway", undefined, /Cannot reach gateway/),
  );
});

// ---------------------------------------------------------------------------------------------
// Redirects

Deno.test("no redirect is ever followed, on any endpoint", async () => {
  let hits = 0;
  await using target = serve(() => {
    hits++;
    return Response.json({ models: [], providers: [], endorsement: null });
  });
  for (const status of [301, 302, 303, 307, 308]) {
    await using server = gateway(() =>
      new Response(null, { status, headers: { location: `${target.url}/v1/models` } })
    );
    await assert.rejects(
      server.client.models(),
      isGatewayError("gateway", status),
      `models ${status}`,
    );
    await assert.rejects(
      server.client.providers(MODEL, "verified"),
      isGatewayError("gateway", status),
      `providers ${status}`,
    );
    await assert.rejects(
      server.client.key(address(1)),
      isGatewayError("provider", status),
      `key ${status}`,
    );
    await assert.rejects(
      server.client.relay(address(1), new Uint8Array([1])),
      isGatewayError("provider", status),
      `relay ${status}`,
    );
  }
  assert.equal(hits, 0, "the redirect target was never asked");
});

Deno.test("the gateway URL loses its trailing slashes", async () => {
  await using server = serve((req) =>
    new URL(req.url).pathname === "/v1/models"
      ? Response.json({ models: [] })
      : new Response("not found", { status: 404 })
  );
  const client = new GatewayClient(`${server.url}//`);
  assert.equal(client.url, server.url);
  assert.deepEqual(await client.models(), []);
});
