/**
 * Browser origins as Ollama allows them by default, and the embeddings routes' refusals: each
 * in its dialect's shape, before anything reaches the network.
 */

import assert from "node:assert/strict";
import type { EmbeddingsRequest, NetworkModel } from "../../../daemon/core/backend.ts";
import { createDaemonHandler } from "../../../daemon/service/handler.ts";
import { DEFAULT_ALLOWED_ORIGINS } from "../../../daemon/service/hygiene.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import { BASE, get, PORT, post, surface } from "../_surface.ts";
import { TEST_MODELS, TEST_SERVED, TestBackend } from "../_test_backend.ts";

const DEFAULT_ALLOWED = [
  "http://localhost",
  "http://localhost:5173",
  "https://localhost:8443",
  "http://127.0.0.1:3000",
  "https://127.0.0.1",
  "http://0.0.0.0:8080",
  "app://obsidian.md",
  "file://",
  "tauri://localhost",
  "vscode-webview://1n2b3c4d",
  "vscode-file://vscode-app",
];

Deno.test("origins: every origin Ollama allows by default gets CORS and 200; preflights answered", async () => {
  const fixture = surface({}, { allowedOrigins: DEFAULT_ALLOWED_ORIGINS });
  for (const origin of DEFAULT_ALLOWED) {
    const answer = await fixture.handler(get("/api/tags", { origin }));
    assert.equal(answer.status, 200, origin);
    assert.equal(answer.headers.get("access-control-allow-origin"), origin, origin);
    await answer.body?.cancel();
    const preflight = await fixture.handler(
      new Request(`${BASE}/v1/chat/completions`, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type, authorization",
        },
      }),
    );
    assert.equal(preflight.status, 204, origin);
    assert.equal(preflight.headers.get("access-control-allow-origin"), origin);
    assert.match(preflight.headers.get("access-control-allow-methods") ?? "", /POST/);
    await preflight.body?.cancel();
  }
});

Deno.test("origins: another site is refused with 403 naming --allowed-origins and NET_ALLOWED_ORIGINS, preflight too", async () => {
  const fixture = surface({}, { allowedOrigins: DEFAULT_ALLOWED_ORIGINS });
  for (const origin of ["https://evil.example", "http://localhost.evil.example", "null"]) {
    const refused = await fixture.handler(get("/v1/models", { origin }));
    assert.equal(refused.status, 403, origin);
    assert.equal(refused.headers.get("access-control-allow-origin"), null);
    const body = await refused.json();
    assert.equal(body.error.code, "forbidden_origin");
    assert.match(body.error.message, /--allowed-origins/);
    assert.match(body.error.message, /NET_ALLOWED_ORIGINS/);
    const ollama = await fixture.handler(get("/api/tags", { origin }));
    assert.equal(ollama.status, 403);
    assert.match((await ollama.json()).error, /--allowed-origins/);
    const preflight = await fixture.handler(
      new Request(`${BASE}/v1/embeddings`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST" },
      }),
    );
    assert.equal(preflight.status, 403, origin);
    assert.equal(preflight.headers.get("access-control-allow-origin"), null);
    await preflight.body?.cancel();
  }
  // The Sec-Fetch-Site rule still holds.
  const scripted = await fixture.handler(get("/api/tags", { "sec-fetch-site": "cross-site" }));
  assert.equal(scripted.status, 403);
  await scripted.body?.cancel();
  assert.equal(fixture.backend.listCalls, 0);
});

const EMBED_MODEL: NetworkModel = {
  tier: "verified",
  model: "devnet/embed",
  contextLength: 8192,
  providers: 1,
  cheapestPrice: null,
  kind: "embedding",
  supports: [],
  embeddingDimensions: 4,
};

/** The test double, with embeddings that record what reached "the network". */
class EmbeddingBackend extends TestBackend {
  readonly embeds: EmbeddingsRequest[] = [];
  embed(request: EmbeddingsRequest) {
    this.embeds.push(request);
    const n = typeof request.body.input === "string" ? 1 : request.body.input.length;
    return Promise.resolve({
      served: { ...TEST_SERVED, tier: request.tier },
      vectors: Array.from({ length: n }, () => [0.5, -0.5, 0.5, -0.5]),
      promptTokens: n,
    });
  }
}

Deno.test("embeddings: wrong types, missing fields, oversized batches, chat models and dimensions → 400 in the dialect, nothing sent", async () => {
  const backend = new EmbeddingBackend({ models: [...TEST_MODELS, EMBED_MODEL] });
  const handler = createDaemonHandler({
    backend,
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port: PORT,
    log: () => {},
  });
  const model = "net/verified/devnet/embed";
  const many = Array.from({ length: 2049 }, () => "x");
  const openai: [unknown, string][] = [
    [{ model }, "input"],
    [{ input: "x" }, "model"],
    [{ model, input: 3 }, "input"],
    [{ model, input: "" }, "input"],
    [{ model, input: [] }, "input"],
    [{ model, input: many }, "input"],
    [{ model, input: "x", encoding_format: "int8" }, "encoding_format"],
    [{ model, input: "x", dimensions: 0 }, "dimensions"],
    [{ model, input: "x", dimensions: 2 }, "dimensions"], // no dimensions capability
    [{ model: "net/verified/devnet/tiny-chat", input: "x" }, "model"], // a chat model
    [{ model: "gpt-4", input: "x" }, "model"],
  ];
  for (const [body, param] of openai) {
    const answer = await handler(post("/v1/embeddings", body));
    const error = (await answer.json()).error;
    assert.equal(answer.status, 400, JSON.stringify(body).slice(0, 100));
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, param, JSON.stringify(body).slice(0, 100));
  }
  const ollama: [string, unknown][] = [
    ["/api/embed", { model }],
    ["/api/embed", { model, input: 7 }],
    ["/api/embed", { model, input: many }],
    ["/api/embed", { model: "net/verified/devnet/tiny-chat", input: "x" }],
    ["/api/embeddings", { model }],
    ["/api/embeddings", { model, prompt: ["x"] }],
  ];
  for (const [path, body] of ollama) {
    const answer = await handler(post(path, body));
    assert.equal(answer.status, 400, `${path} ${JSON.stringify(body).slice(0, 80)}`);
    assert.equal(typeof (await answer.json()).error, "string");
  }
  assert.equal(backend.embeds.length, 0, "the provider received nothing");

  const ok = await handler(post("/v1/embeddings", { model, input: ["a", "b"], dimensions: 4 }));
  assert.equal(ok.status, 200);
  const list = await ok.json();
  assert.deepEqual(list.data.map((d: { index: number }) => d.index), [0, 1]);
  assert.deepEqual(list.usage, { prompt_tokens: 2, total_tokens: 2 });
  assert.deepEqual(backend.embeds[0].body, {
    model: "devnet/embed",
    input: ["a", "b"],
    encoding_format: "float",
    dimensions: 4,
  });
});

Deno.test("logprobs: refused with 400 for a model that does not advertise them, nothing sent", async () => {
  const fixture = surface();
  for (const extra of [{ logprobs: true }, { top_logprobs: 2 }]) {
    const answer = await fixture.handler(
      post("/v1/chat/completions", {
        model: "net/verified/devnet/tiny-chat",
        messages: [{ role: "user", content: "hi" }],
        ...extra,
      }),
    );
    assert.equal(answer.status, 400);
    const error = (await answer.json()).error;
    assert.equal(error.param, "logprobs");
    assert.match(error.message, /"logprobs" capability/);
  }
  for (const path of ["/api/chat", "/api/generate"]) {
    for (const extra of [{ logprobs: true }, { top_logprobs: 2 }]) {
      const answer = await fixture.handler(
        post(path, {
          model: "net/verified/devnet/tiny-chat",
          messages: [{ role: "user", content: "hi" }],
          prompt: "hi",
          ...extra,
        }),
      );
      assert.equal(answer.status, 400, path);
      assert.match((await answer.json()).error, /"logprobs" capability \(POST \/api\/show/);
    }
    const bad = await fixture.handler(
      post(path, { model: "net/verified/devnet/tiny-chat", prompt: "hi", top_logprobs: 21 }),
    );
    assert.equal(bad.status, 400, `${path} top_logprobs 21`);
    assert.match((await bad.json()).error, /top_logprobs/);
  }
  assert.equal(fixture.backend.chats.length, 0, "the provider received nothing");
});
