/**
 * Handler-level tests (a `Request` in, a `Response` out, no port) of routing, the
 * transparency endpoints, CORS, timeouts and cancellation; one test over a real socket checks
 * that a client that goes away stops the backend.
 */

import assert from "node:assert/strict";
import { createDaemonHandler } from "../../../daemon/service/handler.ts";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import { BASE, get, NOW, post, serveSurface, sseData, surface } from "../_surface.ts";
import type { ChatBackend, ChatCompletionChunk } from "../../../daemon/core/backend.ts";
import { TEST_MODELS, TestBackend } from "../_test_backend.ts";
import { okJson } from "../../_http.ts";

const MODEL = "net/verified/devnet/tiny-chat";

Deno.test("handler: unknown paths are 404 and wrong methods 405, in the path's dialect", async () => {
  const fixture = surface();
  const openaiMissing = await fixture.handler(get("/v1/nothing"));
  assert.equal(openaiMissing.status, 404);
  assert.equal((await openaiMissing.json()).error.code, "not_found");
  const ollamaMissing = await fixture.handler(get("/api/copy"));
  assert.equal(ollamaMissing.status, 404);
  assert.match((await ollamaMissing.json()).error, /no such endpoint/);
  const wrong = await fixture.handler(post("/api/tags", {}));
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get("allow"), "GET, HEAD");
  assert.match((await wrong.json()).error, /allowed GET, HEAD/);
  const wrongOpenAI = await fixture.handler(
    new Request(`${BASE}/v1/models`, { method: "DELETE" }),
  );
  assert.equal(wrongOpenAI.status, 405);
  assert.equal((await wrongOpenAI.json()).error.code, "method_not_allowed");
});

Deno.test("handler: /api/version serves plain dotted integers from the version", async () => {
  for (const [version, served] of [["0.1.0", "0.1.0"], ["1.20.3-rc.1+build.5", "1.20.3"]]) {
    const fixture = surface({}, { version });
    const response = await fixture.handler(get("/api/version"));
    assert.deepEqual(await response.json(), { version: served });
  }
  const denoJson = JSON.parse(
    await Deno.readTextFile(new URL("../../../deno.json", import.meta.url)),
  );
  assert.match(denoJson.version, /^\d+\.\d+\.\d+/, "deno.json's version is usable");
  for (const version of ["v1.0.0", "1.0", "latest", "01.2.3"]) {
    assert.throws(() => surface({}, { version }), RangeError, version);
  }
});

Deno.test("handler: options out of range are refused at construction, showing the value", () => {
  const cases: [Record<string, unknown>, RegExp | typeof Error][] = [
    [{ port: 0 }, /port must be the bound port, 1–65535, found 0/],
    [{ port: 70000 }, /found 70000/],
    [{ maxBodyBytes: -1 }, /maxBodyBytes must be a positive integer, found -1/],
    [{ firstByteTimeoutMs: 0 }, /firstByteTimeoutMs/],
    [{ idleTimeoutMs: 1.5 }, /idleTimeoutMs/],
    [{ maxReplyBytes: Number.NaN }, /maxReplyBytes must be a positive integer, found NaN/],
    [{ maxReplyBytes: Infinity }, /maxReplyBytes must be a positive integer, found Infinity/],
    [{ allowedOrigins: ["http://localhost:3000/path"] }, /Cannot use allowed origin/],
  ];
  for (const [override, expected] of cases) {
    assert.throws(() => surface({}, override), expected as RegExp);
  }
});

Deno.test("handler: /v1/models lists well-formed models once each, sorted", async () => {
  const fixture = surface({
    models: [
      ...TEST_MODELS,
      TEST_MODELS[0],
      { ...TEST_MODELS[0], model: "bad model/x" },
      { ...TEST_MODELS[0], tier: "gold" as "tee" },
      { ...TEST_MODELS[0], model: "ok/x", contextLength: 0 },
      { ...TEST_MODELS[0], model: "ok/y", cheapestPrice: { input: "1.5", output: "2" } },
    ],
  });
  const response = await fixture.handler(get("/v1/models"));
  const body = await response.json();
  assert.equal(body.object, "list");
  assert.deepEqual(body.data.map((m: { id: string }) => m.id), [
    "net/verified/acme/big-model",
    "net/tee/devnet/tiny-chat",
    "net/verified/devnet/tiny-chat",
  ]);
  assert.deepEqual(body.data[2], {
    id: "net/verified/devnet/tiny-chat",
    object: "model",
    created: Math.floor(NOW.getTime() / 1000),
    owned_by: "devnet",
    net: {
      tier: "verified",
      providers: 2,
      context_length: 8192,
      cheapest_price: { input: "150000", output: "600000" },
      kind: "chat",
      capabilities: ["tools", "json_mode", "structured_outputs"],
    },
  });
  assert.equal(fixture.logged.length, 4, "each malformed entry is logged");
});

Deno.test("handler: a failing model list is an error in each dialect", async () => {
  const fixture = surface({ listError: new DaemonError("no_gateway", "No gateway is reachable") });
  const openai = await fixture.handler(get("/v1/models"));
  assert.equal(openai.status, 503);
  assert.equal((await openai.json()).error.code, "no_gateway");
  const ollama = await fixture.handler(get("/api/tags"));
  assert.equal(ollama.status, 503);
  assert.deepEqual(await ollama.json(), { error: "No gateway is reachable" });
  const show = await fixture.handler(post("/api/show", { model: MODEL }));
  assert.equal(show.status, 503);
  await show.body?.cancel();
});

Deno.test("handler: /v1/gateways serves the lister's entries in the protocol's shape", async () => {
  const entries = [
    { url: "http://127.0.0.1:9201", last_seen: "2026-11-22T10:00:00.000Z", reached: true },
    { url: "https://gw.example", last_seen: "2026-11-21T10:00:00.000Z", reached: false },
  ];
  const fixture = surface({}, { gateways: () => Promise.resolve(entries) });
  const response = await fixture.handler(get("/v1/gateways"));
  assert.deepEqual(await response.json(), {
    gateways: entries.map(({ url, last_seen }) => ({ url, last_seen })),
  });
  const failing = surface({}, {
    gateways: () => {
      throw new Error("cache file is locked");
    },
  });
  const error = await failing.handler(get("/v1/gateways"));
  assert.equal(error.status, 500);
  assert.ok(!(await error.text()).includes("locked"));
});

Deno.test("handler: /v1/verdicts serves the latest verdicts, newest first, limited", async () => {
  const fixture = surface();
  for (let i = 0; i < 12; i++) {
    fixture.verdicts.append({
      at: new Date(NOW.getTime() + i * 1000),
      tier: i % 2 ? "tee" : "verified",
      model: "devnet/tiny-chat",
      provider: `0x${i.toString(16).padStart(40, "0")}`,
      gateway: "http://127.0.0.1:9201",
      outcome: i === 11 ? "refused" : "accepted",
      verdict: i === 11 ? "mock attestation" : "endorsed-key",
      ...(i === 11 ? { code: "attestation_mock" as const } : {}),
    });
  }
  const all = await okJson(fixture.handler(get("/v1/verdicts")));
  assert.equal(all.verdicts.length, 10, "the log keeps its capacity");
  assert.deepEqual(all.verdicts[0], {
    at: new Date(NOW.getTime() + 11_000).toISOString(),
    tier: "tee",
    model: "devnet/tiny-chat",
    provider: `0x${"b".padStart(40, "0")}`,
    gateway: "http://127.0.0.1:9201",
    outcome: "refused",
    verdict: "mock attestation",
    code: "attestation_mock",
  });
  assert.equal(all.verdicts[1].code, null);
  const two = await okJson(fixture.handler(get("/v1/verdicts?limit=2")));
  assert.equal(two.verdicts.length, 2);
  for (const limit of ["0", "11", "-1", "x", "1e3"]) {
    const bad = await fixture.handler(get(`/v1/verdicts?limit=${limit}`));
    assert.equal(bad.status, 400, limit);
    assert.equal((await bad.json()).error.param, "limit");
  }
});

Deno.test("handler: allowed origins get CORS headers and preflight answers; others nothing", async () => {
  const fixture = surface({}, { allowedOrigins: ["http://localhost:*", "app://*"] });
  const preflight = await fixture.handler(
    new Request(`${BASE}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:5173",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-stainless-os",
        "access-control-request-private-network": "true",
      },
    }),
  );
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("access-control-allow-origin"), "http://localhost:5173");
  assert.equal(preflight.headers.get("access-control-allow-methods"), "GET, HEAD, POST, OPTIONS");
  assert.equal(
    preflight.headers.get("access-control-allow-headers"),
    "authorization, content-type, x-stainless-os",
  );
  assert.equal(preflight.headers.get("access-control-allow-private-network"), "true");
  assert.match(preflight.headers.get("vary") ?? "", /Origin/);

  const refused = await fixture.handler(
    new Request(`${BASE}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    }),
  );
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get("access-control-allow-origin"), null);
  await refused.body?.cancel();

  const chat = await fixture.handler(
    post("/api/chat", {
      model: MODEL,
      stream: false,
      messages: [{ role: "user", content: "x" }],
    }, { origin: "app://desktop" }),
  );
  assert.equal(chat.headers.get("access-control-allow-origin"), "app://desktop");
  assert.equal(
    chat.headers.get("access-control-expose-headers"),
    "x-net-provider, x-net-tier, x-net-verdict, x-net-gateway, x-net-receipt",
  );
  await chat.body?.cancel();

  const plain = await fixture.handler(
    new Request(`${BASE}/api/tags`, { method: "OPTIONS" }),
  );
  assert.equal(plain.status, 204);
  assert.equal(plain.headers.get("allow"), "GET, HEAD, OPTIONS");
});

Deno.test("handler: served-by headers are sanitized to printable ASCII", async () => {
  const fixture = surface({
    served: { verdict: "tee:tdx measurement 0x91eb… approved\r\nx-evil: 1", gateway: "http://gw" },
  });
  const response = await fixture.handler(
    post("/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "x" }] }),
  );
  assert.equal(response.status, 200);
  assert.equal(
    response.headers.get("x-net-verdict"),
    "tee:tdx measurement 0x91eb... approved??x-evil: 1",
  );
  assert.equal(response.headers.get("x-evil"), null);
  await response.body?.cancel();
});

Deno.test("handler: no first chunk within the timeout is a 504 and aborts the backend", async () => {
  const fixture = surface({ firstChunkDelayMs: 10_000 }, { firstByteTimeoutMs: 50 });
  const response = await fixture.handler(
    post("/api/chat", { model: MODEL, messages: [{ role: "user", content: "x" }] }),
  );
  assert.equal(response.status, 504);
  assert.match((await response.json()).error, /no reply from the network for 50 ms/);
  assert.ok(fixture.backend.chats[0].signal.aborted);
});

Deno.test("handler: a stalled stream ends with an in-stream timeout and aborts the backend", async () => {
  // Stall after the role chunk (which yields no event) and after a content chunk.
  for (const stallAfter of [1, 2]) await stalled(stallAfter);
});

async function stalled(stallAfter: number): Promise<void> {
  const fixture = surface({ stallAfter }, { idleTimeoutMs: 50 });
  const response = await fixture.handler(
    post("/v1/chat/completions", {
      model: MODEL,
      stream: true,
      messages: [{ role: "user", content: "x y" }],
    }),
  );
  assert.equal(response.status, 200);
  const events = sseData(await response.text());
  const last = JSON.parse(events[events.length - 1]);
  assert.equal(last.error.code, "timeout");
  assert.match(last.error.message, /sent nothing more for 50 ms/);
  assert.ok(fixture.backend.chats[0].signal.aborted);
  assert.ok(fixture.backend.chats[0].closed);
}

Deno.test("handler: a slow reader is not a stalled provider (the idle timer only runs while waiting)", async () => {
  const fixture = surface({}, { idleTimeoutMs: 30 });
  const response = await fixture.handler(
    post("/api/chat", { model: MODEL, messages: [{ role: "user", content: "a b" }] }),
  );
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    text += value;
    await new Promise((resolve) => setTimeout(resolve, 80));
  }
  assert.ok(!text.includes('"error"'), text);
  assert.match(text, /"done":true/);
  assert.ok(!fixture.backend.chats[0].signal.aborted);
});

Deno.test("handler: cancelling a streamed body aborts the backend and closes its stream", async () => {
  const fixture = surface({ stallAfter: 3 });
  const response = await fixture.handler(
    post("/api/chat", { model: MODEL, messages: [{ role: "user", content: "a b c" }] }),
  );
  const reader = response.body!.getReader();
  const first = await reader.read();
  assert.ok(first.value && first.value.length > 0);
  await reader.cancel();
  const [chat] = fixture.backend.chats;
  assert.ok(chat.signal.aborted, "the backend's signal is aborted");
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.ok(chat.closed, "the backend's stream was closed");
});

Deno.test("handler: a client that disconnects mid-stream stops the backend (real socket)", async () => {
  await using server = serveSurface({ stallAfter: 3 });
  const controller = new AbortController();
  const response = await fetch(`${server.url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "a b c" }] }),
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  await reader.read();
  controller.abort();
  await reader.closed.catch(() => {});
  const [chat] = server.backend.chats;
  for (let i = 0; i < 200 && !chat.closed; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.ok(chat.signal.aborted, "the backend's signal is aborted");
  assert.ok(chat.closed, "the backend's stream was closed");
});

Deno.test("handler: a late reply after a timeout is closed, never read", async () => {
  let closed = false;
  const backend = new TestBackend();
  const slow = {
    listModels: backend.listModels.bind(backend),
    async chat() {
      await new Promise((resolve) => setTimeout(resolve, 100));
      return {
        served: { provider: "0x1", tier: "verified" as const, verdict: "v", gateway: "g" },
        chunks: {
          [Symbol.asyncIterator]: () => ({
            next: () => Promise.resolve({ done: true as const, value: undefined }),
            return: () => {
              closed = true;
              return Promise.resolve({ done: true as const, value: undefined });
            },
          }),
        },
      };
    },
  };
  const handler = createDaemonHandler({
    backend: slow,
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port: 11435,
    firstByteTimeoutMs: 20,
    log: () => {},
  });
  const response = await handler(
    post("/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: "x" }] }),
  );
  assert.equal(response.status, 504);
  await response.body?.cancel();
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.ok(closed, "the late reply's stream was closed");
});

const MiB = 1024 * 1024;

// Attack: a provider is untrusted (anyone can register one in the verified tier); its reply is
// only authenticated as *its* reply. For a `stream: false` client the surface concatenates every
// content delta (and every tool-call argument fragment) into one string with no size limit and
// no overall deadline (the idle timeout is re-armed by every chunk). A provider that keeps
// streaming makes the daemon hold the whole reply in memory: up to V8's string limit (~512 Mi
// characters, 0.5–1 GB) per request before the concatenation itself throws; several concurrent
// requests take the user's machine down. The request body is bounded (4 MiB); the reply should
// be too, with a `provider_error` once it passes a limit.
//
// The double below yields one shared 1 MiB string per chunk, so the test itself costs little
// memory (V8 keeps the concatenation as a rope). It counts how much the daemon pulled before it
// stopped; a bounded daemon stops long before 128 MiB.
Deno.test("handler: a stream:false reply is bounded; the daemon stops reading a provider's endless reply", async () => {
  const piece = "x".repeat(MiB);
  let produced = 0;
  let stoppedAt: number | undefined;
  const backend: ChatBackend = {
    listModels: () => Promise.resolve([]),
    chat: (_request, signal) =>
      Promise.resolve({
        served: {
          provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
          tier: "verified",
          verdict: "endorsed-key",
          gateway: "http://127.0.0.1:9201",
        },
        chunks: (async function* (): AsyncGenerator<ChatCompletionChunk> {
          try {
            // Safety stop far beyond any sane limit (and beyond V8's string limit).
            while (produced < 2048 && !signal.aborted) {
              produced++;
              yield {
                id: "x",
                object: "chat.completion.chunk",
                created: 0,
                model: "devnet/tiny-chat",
                choices: [{ index: 0, delta: { content: piece }, finish_reason: null }],
              } as ChatCompletionChunk;
            }
          } finally {
            stoppedAt ??= produced;
          }
        })(),
      }),
  };
  const handler = createDaemonHandler({
    backend,
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port: 11435,
    log: () => {},
  });
  const response = await handler(
    new Request("http://127.0.0.1:11435/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "net/verified/devnet/tiny-chat",
        messages: [{ role: "user", content: "hi" }],
      }),
    }),
  );
  const body = await response.text();
  assert.ok(
    (stoppedAt ?? produced) <= 128,
    `the daemon buffered ${stoppedAt ?? produced} MiB of one provider reply before stopping ` +
      `(answer: ${response.status} ${body.slice(0, 160)})`,
  );
  assert.equal(response.status, 502, body.slice(0, 200));
});

Deno.test("handler: a URL or headers over the layer's limits are 414 and 431, in the path's dialect", async () => {
  const fixture = surface();
  const long = "x".repeat(9000);
  const cases: [string, HeadersInit, number, string][] = [
    [`/v1/models?q=${long}`, {}, 414, "url_too_long"],
    [`/api/tags?q=${long}`, {}, 414, "url_too_long"],
    ["/v1/models", { "x-big": long.repeat(4) }, 431, "headers_too_large"],
    ["/api/tags", { "x-big": long.repeat(4) }, 431, "headers_too_large"],
  ];
  for (const [path, headers, status, code] of cases) {
    const response = await fixture.handler(get(path, headers));
    assert.equal(response.status, status, path.slice(0, 20));
    const body = await response.json();
    if (path.startsWith("/v1/")) {
      assert.equal(body.error.code, code);
      assert.equal(body.error.type, "invalid_request_error");
    } else assert.equal(typeof body.error, "string");
  }
  assert.equal(fixture.backend.listCalls, 0);
});

Deno.test("handler: CORS headers on every answer to an allowed origin; a preflight needs a served path", async () => {
  const fixture = surface({}, { allowedOrigins: ["http://localhost:*"] });
  const origin = "http://localhost:5173";
  const missing = await fixture.handler(get("/v1/nothing", { origin }));
  assert.equal(missing.status, 404);
  assert.equal(missing.headers.get("access-control-allow-origin"), origin);
  assert.match(missing.headers.get("vary") ?? "", /Origin/);
  await missing.body?.cancel();
  const preflight = await fixture.handler(
    new Request(`${BASE}/v1/nothing`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "GET" },
    }),
  );
  assert.equal(preflight.status, 404, "no preflight for a path the daemon does not serve");
  await preflight.body?.cancel();
  const tooLarge = await fixture.handler(
    post("/api/chat", { model: MODEL, messages: [], pad: "x".repeat(5 * 1024 * 1024) }, {
      origin,
    }),
  );
  assert.equal(tooLarge.status, 413);
  assert.equal(tooLarge.headers.get("access-control-allow-origin"), origin);
  assert.match((await tooLarge.json()).error, /more than the limit of 4 MiB/);
});
