/**
 * The daemon's generated OpenAPI document: an OpenAPI 3.1 document whose schemas compile in
 * strict Ajv; the same operations as the live route table (`assertRoutesDocumented`); and
 * against real answers: the real daemon (`createDaemon`) served on loopback in front of the
 * real devnet, asked through every endpoint of both dialects — whole and streamed replies,
 * model lists, transparency endpoints, and errors (400, 403, 404, 405, 413, 414, 431, 403 for
 * the devnet's mock TEE attestation, 503 without a gateway) — each answer validated against the
 * document the daemon serves.
 */

import assert from "node:assert/strict";
import { createDaemonService, type DaemonHandlerOptions } from "../../../daemon/service/handler.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { VERSION } from "../../../version.ts";
import { closedPort, okJson } from "../../_http.ts";
import { answer, OpenApiChecker } from "../../_openapi.ts";
import { assertRoutesDocumented } from "../../_routes.ts";
import { devnetEvm, measurementsFile, startDaemon, syntheticTee } from "../_e2e.ts";

const MODEL = "net/verified/devnet/echo";
const OPTIONS: DaemonHandlerOptions = {
  backend: {
    listModels: () => Promise.resolve([]),
    chat: () => Promise.reject(new Error("not used")),
  },
  gateways: () => [],
  verdicts: new VerdictLog(),
  version: VERSION,
  port: 11435,
  log: () => {},
};
const DOCUMENT = createDaemonService(OPTIONS).document();
const PATHS = DOCUMENT.paths as Record<string, Record<string, unknown>>;

Deno.test("the generated document is OpenAPI 3.1, and its schemas compile strictly", () => {
  new OpenApiChecker(DOCUMENT);
  assert.equal(DOCUMENT.openapi, "3.1.0");
});

Deno.test("every route of the daemon is documented, and every documented one is served", async () => {
  const service = createDaemonService(OPTIONS);
  assertRoutesDocumented(service);
  for (const [path, item] of Object.entries(PATHS)) {
    for (const method of Object.keys(item)) {
      const url = `http://127.0.0.1:11435${path.replace("{model}", MODEL)}`;
      const response = await service.fetch(
        new Request(url, { method, body: method === "post" ? "{}" : undefined }),
      );
      await response.body?.cancel();
      assert.ok(
        ![404, 405].includes(response.status) || /models\//.test(path),
        `${method} ${path} is documented but answers ${response.status}`,
      );
    }
  }
});

Deno.test("the route-table check fails for a route mounted without its declaration", () => {
  const service = createDaemonService(OPTIONS);
  service.app.get("/v1/undeclared", (c) => c.json({}));
  assert.throws(() => assertRoutesDocumented(service), /GET \/v1\/undeclared/);
});

Deno.test("real answers of the daemon validate against its OpenAPI document", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0, gateways: 1 });
  await using daemon = await startDaemon({
    gateway: devnet.gateways[0],
    evm: devnetEvm(devnet),
  });
  const served = await okJson(fetch(`${daemon.url}/openapi.json`));
  assert.deepEqual(
    served,
    JSON.parse(JSON.stringify(DOCUMENT)),
    "the daemon serves the document of its declarations",
  );
  const checker = new OpenApiChecker(served);
  const call = async (
    path: string,
    init: RequestInit & { template?: string } = {},
  ) => {
    const response = await fetch(`${daemon.url}${path}`, init);
    return answer(init.template ?? path.replace(/\?.*$/, ""), init.method ?? "get", response);
  };
  const post = (path: string, body: unknown, headers: HeadersInit = {}) =>
    call(path, {
      method: "post",
      body: typeof body === "string" ? body : JSON.stringify(body),
      headers: { "content-type": "application/json", ...headers },
    });
  const expect = (got: Awaited<ReturnType<typeof call>>, status: number, component?: string) => {
    assert.equal(got.status, status, `${got.method} ${got.path}: ${got.body.slice(0, 500)}`);
    checker.check(got, component);
    return got;
  };
  const messages = [{ role: "user", content: "Hello, network!" }];

  // Ollama dialect.
  expect(await call("/"), 200);
  expect(await call("/api/version"), 200);
  expect(await call("/api/tags"), 200);
  expect(await call("/api/ps"), 200);
  expect(await post("/api/show", { model: MODEL }), 200);
  expect(await post("/api/show", { model: "net/verified/devnet/none" }), 404);
  const ndjson = expect(await post("/api/chat", { model: MODEL, messages }), 200);
  assert.match(ndjson.headers.get("content-type")!, /application\/x-ndjson/);
  assert.match(ndjson.body, /"done":true/);
  expect(await post("/api/chat", { model: MODEL, messages, stream: false }), 200);
  expect(await post("/api/chat", { model: MODEL, messages: [], stream: false }), 200);
  expect(await post("/api/chat", { model: MODEL, messages: [] }), 200);
  expect(await post("/api/generate", { model: MODEL, prompt: "Hi" }), 200);
  expect(await post("/api/generate", { model: MODEL, prompt: "Hi", stream: false }), 200);
  expect(await post("/api/chat", "{not json"), 400);
  const EMBED = "net/verified/devnet/embed";
  expect(await post("/api/embed", { model: EMBED, input: ["a", "b"] }), 200);
  expect(await post("/api/embed", { model: EMBED, input: 3 }), 400);
  expect(await post("/api/embed", { model: MODEL, input: "a chat model" }), 400);
  expect(await post("/api/embeddings", { model: EMBED, prompt: "one" }), 200);
  expect(await post("/api/embeddings", { model: EMBED }), 400);
  expect(await post("/api/embed", { model: "net/tee/devnet/embed", input: "x" }), 403);
  expect(await post("/api/pull", { model: MODEL }), 200);
  expect(await post("/api/pull", { model: MODEL, stream: false }), 200);
  expect(await post("/api/pull", { model: "net/verified/devnet/none" }), 404);
  expect(await post("/api/chat", { model: "net/tee/devnet/echo", messages, stream: false }), 403);

  // OpenAI dialect.
  const whole = expect(await post("/v1/chat/completions", { model: MODEL, messages }), 200);
  assert.ok(whole.headers.get("x-net-verdict"));
  const sse = expect(
    await post("/v1/chat/completions", {
      model: MODEL,
      messages,
      stream: true,
      stream_options: { include_usage: true },
    }),
    200,
  );
  assert.match(sse.body, /"choices":\[\],"usage":\{/);
  assert.match(sse.body, /data: \[DONE\]\n\n$/);
  expect(await post("/v1/chat/completions", { model: MODEL, messages, stream: true }), 200);
  expect(await post("/v1/chat/completions", { model: MODEL, messages: [] }), 400);
  expect(await post("/v1/chat/completions", { model: "gpt-4", messages }), 400);
  expect(await post("/v1/chat/completions", { model: "net/verified/x/none", messages }), 404);
  expect(await post("/v1/chat/completions", { model: "net/tee/devnet/echo", messages }), 403);
  expect(await post("/v1/chat/completions", "x".repeat(4 * 1024 * 1024 + 1)), 413);
  expect(await post("/v1/embeddings", { model: "net/verified/devnet/embed", input: "x" }), 200);
  expect(
    await post("/v1/embeddings", {
      model: "net/verified/devnet/embed",
      input: ["x", "y"],
      encoding_format: "base64",
      dimensions: 8,
    }),
    200,
  );
  expect(await post("/v1/embeddings", { model: "net/verified/devnet/embed" }), 400);
  expect(await post("/v1/embeddings", { model: "net/verified/devnet/embed", input: [1.5] }), 400);
  expect(await post("/v1/embeddings", { model: "net/tee/devnet/embed", input: "x" }), 403);
  expect(await post("/v1/responses", { model: MODEL, input: "Hello" }), 200);
  const events = expect(
    await post("/v1/responses", { model: MODEL, input: "Hello", stream: true }),
    200,
  );
  assert.match(events.body, /^event: response\.created\n/);
  assert.match(events.body, /event: response\.completed\n/);
  expect(await post("/v1/responses", { model: MODEL, input: "Hello", store: true }), 400);
  expect(await post("/v1/responses", { model: MODEL }), 400);
  expect(await post("/v1/completions", { model: MODEL, prompt: "Once" }), 200);
  expect(
    await post("/v1/completions", {
      model: MODEL,
      prompt: "Once",
      stream: true,
      stream_options: { include_usage: true },
    }),
    200,
  );
  expect(await post("/v1/completions", { model: MODEL, prompt: "Once", echo: true }), 400);
  expect(await call("/v1/models"), 200);
  const template = "/v1/models/{model}";
  expect(await call(`/v1/models/${encodeURIComponent(MODEL)}`, { template }), 200);
  expect(await call(`/v1/models/${MODEL}`, { template }), 200);
  expect(await call("/v1/models/net%2Fverified%2Fx%2Fnone", { template }), 404);
  expect(await call("/v1/models/nope", { template }), 400);
  expect(await call("/v1/gateways"), 200);
  const verdicts = expect(await call("/v1/verdicts?limit=5"), 200);
  assert.ok(JSON.parse(verdicts.body).verdicts.some((v: { code: unknown }) => v.code !== null));
  expect(await call("/v1/verdicts?limit=0"), 400);
  expect(await call("/openapi.json"), 200);
  expect(await call("/metrics"), 200);

  // Anthropic dialect.
  const version = { "anthropic-version": "2023-06-01" };
  const message = expect(
    await post("/v1/messages", { model: MODEL, max_tokens: 32, messages }, version),
    200,
  );
  assert.equal(JSON.parse(message.body).type, "message");
  const stream = expect(
    await post("/v1/messages", { model: MODEL, max_tokens: 32, messages, stream: true }),
    200,
  );
  assert.match(stream.body, /^event: message_start\n/);
  assert.match(stream.body, /event: message_stop\n/);
  expect(await post("/v1/messages", { model: MODEL, messages }), 400);
  expect(
    await post("/v1/messages", { model: "net/verified/x/none", max_tokens: 8, messages }),
    404,
  );
  expect(
    await post("/v1/messages", { model: "net/tee/devnet/echo", max_tokens: 8, messages }),
    403,
  );
  expect(await post("/v1/messages/count_tokens", { model: MODEL, messages }), 200);
  expect(await post("/v1/messages/count_tokens", { model: "net/verified/x/none", messages }), 404);
  // A body that is not JSON, in each dialect.
  for (const path of ["/v1/chat/completions", "/v1/messages", "/api/chat"]) {
    expect(
      await call(path, { method: "post", body: "{}", headers: { "content-type": "text/plain" } }),
      415,
    );
  }

  expect(await call("/api/tags", { method: "HEAD" }), 200);
  // The layer's limits, in each dialect: a URL over 8 KiB, headers over 32 KiB.
  const long = "x".repeat(9000);
  expect(await call(`/v1/models?q=${long}`, { template: "/v1/models" }), 414);
  expect(await call(`/api/tags?q=${long}`, { template: "/api/tags" }), 414);
  expect(await call("/v1/gateways", { headers: { "x-big": long.repeat(4) } }), 431);
  expect(await call("/api/version", { headers: { "x-big": long.repeat(4) } }), 431);

  // DNS rebinding: a foreign Host is refused in the dialect of the path (fetch cannot send
  // another Host, so the request goes to the daemon's handler itself).
  const rebound = async (path: string) =>
    answer(
      path,
      "get",
      await daemon.daemon.handler(
        new Request(`${daemon.url}${path}`, { headers: { host: "evil.example" } }),
      ),
    );
  const forbidden = expect(await rebound("/v1/models"), 403);
  assert.equal(JSON.parse(forbidden.body).error.code, "forbidden_host");
  expect(await rebound("/api/tags"), 403);
  expect(await rebound("/metrics"), 403);

  // Answers no operation owns: unknown paths and wrong methods, in each dialect.
  expect(await call("/v1/nope"), 404, "OpenAIError");
  expect(await call("/api/nope"), 404, "OllamaError");
  expect(await call("/v1/chat/completions"), 405, "OpenAIError");
  expect(await call("/api/chat"), 405, "OllamaError");
  expect(await call("/v1/messages"), 405, "AnthropicError");

  // No gateway reachable: 503 in both dialects.
  await using stranded = await startDaemon({ gateway: `http://127.0.0.1:${closedPort()}` });
  const orphan = async (path: string, body: unknown) =>
    answer(
      path,
      "post",
      await fetch(`${stranded.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  expect(await orphan("/v1/chat/completions", { model: MODEL, messages }), 503);
  expect(await orphan("/api/chat", { model: MODEL, messages }), 503);
  const list = answer("/v1/models", "get", await fetch(`${stranded.url}/v1/models`));
  expect(await list, 503);

  // A TEE reply and its receipt, from a devnet whose TEE provider attests synthetic evidence.
  const tee = await syntheticTee();
  await using teeNet = await startDevnet({
    tokenDelayMs: 0,
    gateways: 1,
    verifiedProviders: 0,
    teeProviders: 1,
    attester: () => tee.attester,
  });
  await using teeDaemon = await startDaemon({
    gateway: teeNet.gateways[0],
    roots: tee.pki.roots,
    measurementsFile: await measurementsFile(tee.measurementIds),
  });
  const teeChat = expect(
    await answer(
      "/v1/chat/completions",
      "post",
      await fetch(`${teeDaemon.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "net/tee/devnet/echo", messages }),
      }),
    ),
    200,
  );
  const receipt = async (path: string) =>
    answer("/v1/verdicts/{id}", "get", await fetch(`${teeDaemon.url}${path}`));
  expect(await receipt(`/v1/verdicts/${teeChat.headers.get("x-net-receipt")}`), 200);
  expect(await receipt(`/v1/verdicts/r${"0".repeat(32)}`), 404);
  expect(await receipt("/v1/verdicts/nope"), 400);

  // Every operation's 200 was seen.
  for (const [path, item] of Object.entries(PATHS)) {
    for (const method of Object.keys(item)) {
      assert.ok(checker.seen.has(`${path} ${method} 200`), `${method} ${path} 200 never checked`);
    }
  }
});
