/**
 * The daemon's `/metrics`: it parses as Prometheus text (`tests/_prometheus.ts`, an independent
 * parser), every metric is declared with its help and type, the labels stay in their closed sets;
 * it obeys the Host, Origin and API-key rules like every other path; and against a real devnet
 * and a real daemon (`createDaemon`) the counters move with real traffic: a chat in each dialect,
 * whole and streamed, a refused one, a queued one, the tokens of a reply exactly.
 */

import assert from "node:assert/strict";
import { createDaemonService, type DaemonHandlerOptions } from "../../../daemon/service/handler.ts";
import { DaemonMetrics, dialectLabel } from "../../../daemon/service/metrics.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { VERSION } from "../../../version.ts";
import { type Family, parsePrometheusText, sampleValue } from "../../_prometheus.ts";
import { assertRoutesDocumented } from "../../_routes.ts";
import { devnetEvm, startDaemon } from "../_e2e.ts";
import { chat, complete, eventually, startStream, words } from "../_load.ts";

type Families = Map<string, Family>;

/** Every metric of the daemon, with its type. */
const METRICS: Record<string, string> = {
  net_daemon_http_requests_total: "counter",
  net_daemon_http_request_duration_seconds: "histogram",
  net_daemon_http_response_first_byte_seconds: "histogram",
  net_daemon_http_requests_in_flight: "gauge",
  net_daemon_chat_first_chunk_seconds: "histogram",
  net_daemon_provider_requests_in_flight: "gauge",
  net_daemon_queued_requests: "gauge",
  net_daemon_provider_attempts_total: "counter",
  net_daemon_provider_failures_total: "counter",
  net_daemon_attestation_verifications_total: "counter",
  net_daemon_relayed_tokens_total: "counter",
  process_start_time_seconds: "gauge",
  process_resident_memory_bytes: "gauge",
  process_heap_bytes: "gauge",
};

const KEY = "net_metrics-test-key-0123456789";

function options(extra: Partial<DaemonHandlerOptions> = {}): DaemonHandlerOptions {
  return {
    backend: {
      listModels: () => Promise.resolve([]),
      chat: () => Promise.reject(new Error("not used")),
    },
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: VERSION,
    port: 11435,
    log: () => {},
    ...extra,
  };
}

async function scrape(fetcher: (path: string) => Promise<Response>): Promise<Families> {
  const response = await fetcher("/metrics");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  assert.equal(response.headers.get("cache-control"), "no-store");
  return parsePrometheusText(await response.text());
}

Deno.test("/metrics parses; every metric is declared; requests are counted by route template and dialect", async () => {
  const metrics = new DaemonMetrics();
  const service = createDaemonService(options({ metrics }));
  assertRoutesDocumented(service);
  const get = (path: string, init?: RequestInit) =>
    service.fetch(new Request(`http://127.0.0.1:11435${path}`, init));
  for (const path of ["/", "/api/version", "/api/version", "/v1/gateways", "/openapi.json"]) {
    await (await get(path)).body?.cancel();
  }
  await (await get("/v1/models/net%2Fverified%2Fsecret-model")).body?.cancel();
  await (await get("/v1/no/such/path?prompt=hello")).body?.cancel();
  await (await get("/api/nothing-here")).body?.cancel();
  await (await get("/api/chat")).body?.cancel(); // GET: 405
  metrics.attempted("verified", "failed", "timeout");
  metrics.attempted("verified", "failed", "not-a-code" as never);
  metrics.attempted("tee", "busy");
  metrics.verified("tee", "attestation_mock");
  metrics.verified("verified", "ok");
  metrics.firstChunk("verified", 0.25);
  metrics.relayed("verified", { prompt_tokens: 12, completion_tokens: 30 });
  metrics.relayed("some-other-tier", { prompt_tokens: 1 });
  metrics.watch(() => ({ inFlight: 3, queued: 2 }));

  const families = await scrape(get);
  for (const [name, type] of Object.entries(METRICS)) {
    assert.equal(families.get(name)?.type, type, `${name} is a ${type}`);
    assert.ok(families.get(name)!.help.length > 10, `${name} has a help text`);
  }
  const value = (name: string, labels: Record<string, string> = {}) =>
    sampleValue(families, `net_daemon_${name}`, labels);
  const served = (route: string, status: string, dialect: string, method = "GET") =>
    value("http_requests_total", { method, route, status, dialect });
  assert.equal(served("/", "200", "ollama"), 1);
  assert.equal(served("/api/version", "200", "ollama"), 2);
  assert.equal(served("/v1/gateways", "200", "openai"), 1);
  assert.equal(served("/openapi.json", "200", "other"), 1);
  // The template, never the model id in the path (a malformed id: 400).
  assert.equal(served("/v1/models/{model}", "400", "openai"), 1);
  assert.equal(served("unmatched", "404", "openai"), 1);
  assert.equal(served("unmatched", "404", "ollama"), 1);
  assert.equal(served("unmatched", "405", "ollama"), 1, "a wrong method is no route's answer");
  assert.equal(value("provider_failures_total", { tier: "verified", reason: "timeout" }), 1);
  assert.equal(value("provider_failures_total", { tier: "verified", reason: "other" }), 1);
  assert.equal(value("provider_attempts_total", { tier: "verified", result: "failed" }), 2);
  assert.equal(value("provider_attempts_total", { tier: "tee", result: "busy" }), 1);
  assert.equal(
    value("attestation_verifications_total", { tier: "tee", result: "attestation_mock" }),
    1,
  );
  assert.equal(value("chat_first_chunk_seconds_count", { tier: "verified" }), 1);
  assert.equal(value("relayed_tokens_total", { tier: "verified", kind: "prompt" }), 12);
  assert.equal(value("relayed_tokens_total", { tier: "verified", kind: "completion" }), 30);
  assert.equal(value("relayed_tokens_total", { tier: "other", kind: "prompt" }), 1);
  assert.equal(value("provider_requests_in_flight"), 3);
  assert.equal(value("queued_requests"), 2);
  // Nothing of the requests themselves: no model id, no query, no raw path.
  const text = await (await get("/metrics")).text();
  for (const secret of ["secret-model", "prompt=hello", "no/such/path", "nothing-here"]) {
    assert.ok(!text.includes(secret), `/metrics shows ${secret}`);
  }
});

Deno.test("dialectLabel: /v1 is openai, / and /api are ollama, the daemon's own routes other", () => {
  assert.equal(dialectLabel("/v1/chat/completions", "/v1/chat/completions"), "openai");
  assert.equal(dialectLabel("/api/chat", "/api/chat"), "ollama");
  assert.equal(dialectLabel("/", "/"), "ollama");
  assert.equal(dialectLabel("/metrics", "/metrics"), "other");
  assert.equal(dialectLabel("/openapi.json", "/openapi.json"), "other");
  assert.equal(dialectLabel("unmatched", "/v1/nope"), "openai");
  assert.equal(dialectLabel("unmatched", "/nope"), "ollama");
});

Deno.test("/metrics obeys the Host allowlist, the Origin check and the API key", async () => {
  const metrics = new DaemonMetrics();
  const service = createDaemonService(options({ metrics, apiKey: KEY }));
  const get = (headers: Record<string, string> = {}) =>
    service.fetch(new Request("http://127.0.0.1:11435/metrics", { headers }));

  const noKey = await get();
  assert.equal(noKey.status, 401, "off loopback (a key is required), /metrics needs it");
  assert.match(noKey.headers.get("www-authenticate") ?? "", /^Bearer/);
  await noKey.body?.cancel();
  const wrongKey = await get({ authorization: "Bearer net_wrong-key-0123456789abc" });
  assert.equal(wrongKey.status, 401);
  await wrongKey.body?.cancel();
  const authorized = { authorization: `Bearer ${KEY}` };
  const wrongHost = await get({ ...authorized, host: "evil.example" });
  assert.equal(wrongHost.status, 403);
  assert.match(await wrongHost.text(), /host/i);
  const evilOrigin = await get({ ...authorized, origin: "https://evil.example" });
  assert.equal(evilOrigin.status, 403);
  assert.match(await evilOrigin.text(), /origin/i);
  assert.equal(evilOrigin.headers.get("access-control-allow-origin"), null);
  const ok = await get(authorized);
  assert.equal(ok.status, 200);
  const families = parsePrometheusText(await ok.text());
  // The refusals were counted too, and the key is nowhere.
  const counted = families.get("net_daemon_http_requests_total")!.samples;
  assert.equal(
    counted.filter((s) => s.labels.status === "401").reduce((n, s) => n + s.value, 0),
    2,
  );
  assert.equal(
    counted.filter((s) => s.labels.status === "403").reduce((n, s) => n + s.value, 0),
    2,
  );
  const text = await (await get(authorized)).text();
  assert.ok(!text.includes(KEY) && !text.includes("evil.example"));
});

Deno.test("against a real devnet: the counters move with real traffic in both dialects", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 20,
    verifiedProviders: 1,
    teeProviders: 1,
    gateways: 1,
  });
  await using daemon = await startDaemon({
    gateway: devnet.gateways[0],
    evm: devnetEvm(devnet),
  });
  const get = (path: string) => fetch(`${daemon.url}${path}`);
  const start = await scrape(get);
  const delta =
    (after: Families, before: Families) => (name: string, labels: Record<string, string> = {}) =>
      (sampleValue(after, `net_daemon_${name}`, labels) ?? 0) -
      (sampleValue(before, `net_daemon_${name}`, labels) ?? 0);

  // One whole OpenAI chat alone: its usage is exactly the tokens counted.
  const whole = await chat(daemon.url, { stream: false, content: words(6) });
  assert.equal(whole.status, 200, whole.body);
  const usage = JSON.parse(whole.body).usage;
  const afterWhole = await scrape(get);
  const first = delta(afterWhole, start);
  assert.equal(
    first("relayed_tokens_total", { tier: "verified", kind: "prompt" }),
    usage.prompt_tokens,
  );
  assert.equal(
    first("relayed_tokens_total", { tier: "verified", kind: "completion" }),
    usage.completion_tokens,
  );
  assert.equal(first("provider_attempts_total", { tier: "verified", result: "ok" }), 1);
  assert.equal(first("attestation_verifications_total", { tier: "verified", result: "ok" }), 1);
  assert.equal(first("chat_first_chunk_seconds_count", { tier: "verified" }), 1);
  const chatRoute = { method: "POST", route: "/v1/chat/completions", dialect: "openai" };
  assert.equal(first("http_requests_total", { ...chatRoute, status: "200" }), 1);
  assert.equal(first("http_request_duration_seconds_count", chatRoute), 1);
  assert.equal(first("http_response_first_byte_seconds_count", chatRoute), 0, "not a stream");

  // A streamed chat in each dialect, an Ollama generate, a refused TEE chat.
  const streamed = await chat(daemon.url, { content: words(6) });
  assert.ok(complete(streamed), streamed.body);
  const ollama = await chat(daemon.url, { dialect: "ollama", content: words(6) });
  assert.ok(complete(ollama, "ollama"), ollama.body);
  const generate = await fetch(`${daemon.url}/api/generate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "net/verified/devnet/echo", prompt: "hi", stream: false }),
  });
  assert.equal(generate.status, 200);
  await generate.body?.cancel();
  const refused = await chat(daemon.url, { model: "net/tee/devnet/echo", stream: false });
  assert.equal(refused.status, 403, refused.body);

  // A queued chat: the provider's slots are all held by long replies.
  const { backend } = daemon.daemon;
  const slots = devnet.providers.find((p) => p.tier === "verified")!.provider.maxConcurrency;
  const holders = await Promise.all(
    Array.from({ length: slots }, () => startStream(daemon.url, { content: words(200) })),
  );
  await eventually(() => backend.load.inFlight === slots, 5000, () => `${backend.load.inFlight}`);
  const queued = chat(daemon.url, { content: words(3) });
  await eventually(() => backend.load.queued === 1, 5000, () => `${backend.load.queued} queued`);
  const waiting = await scrape(get);
  assert.equal(sampleValue(waiting, "net_daemon_queued_requests"), 1);
  assert.equal(sampleValue(waiting, "net_daemon_provider_requests_in_flight"), slots);
  assert.ok(
    sampleValue(waiting, "net_daemon_http_requests_in_flight")! >= holders.length + 1,
    "the held streams, the queued chat and the scrape are in flight",
  );
  for (const holder of holders) holder.abort.abort();
  for (const holder of holders) await holder.done.catch(() => {});
  const late = await queued;
  assert.ok(complete(late), `the queued chat failed: ${late.status} ${late.body}`);
  await eventually(() => backend.load.inFlight === 0, 5000, () => `${backend.load.inFlight}`);

  const end = await scrape(get);
  const all = delta(end, afterWhole);
  const servedChats = 1 + 1 + 1 + holders.length + 1; // stream, ollama, generate, holders, queued
  assert.equal(all("provider_attempts_total", { tier: "verified", result: "ok" }), servedChats);
  assert.ok(
    all("attestation_verifications_total", { tier: "verified", result: "ok" }) >= servedChats,
  );
  assert.equal(all("chat_first_chunk_seconds_count", { tier: "verified" }), servedChats);
  assert.ok(all("relayed_tokens_total", { tier: "verified", kind: "completion" }) > 0);
  // The refusal: the mock attestation, as a failed attempt and a refused verification.
  assert.ok(
    all("attestation_verifications_total", { tier: "tee", result: "attestation_mock" }) >= 1,
  );
  assert.ok(all("provider_failures_total", { tier: "tee", reason: "attestation_mock" }) >= 1);
  assert.ok(all("provider_attempts_total", { tier: "tee", result: "failed" }) >= 1);
  assert.equal(all("http_requests_total", { ...chatRoute, status: "403" }), 1);
  // Requests by route, dialect and status; streams timed to their first byte.
  assert.equal(
    all("http_requests_total", { ...chatRoute, status: "200" }),
    1 + holders.length + 1,
  );
  assert.equal(all("http_response_first_byte_seconds_count", chatRoute), 1 + holders.length + 1);
  const ollamaChat = { method: "POST", route: "/api/chat", dialect: "ollama" };
  assert.equal(all("http_requests_total", { ...ollamaChat, status: "200" }), 1);
  assert.equal(all("http_response_first_byte_seconds_count", ollamaChat), 1);
  assert.equal(
    all("http_requests_total", {
      method: "POST",
      route: "/api/generate",
      dialect: "ollama",
      status: "200",
    }),
    1,
  );
  assert.equal(sampleValue(end, "net_daemon_queued_requests"), 0);
  assert.equal(sampleValue(end, "net_daemon_provider_requests_in_flight"), 0);
  // No provider, model or gateway in any label.
  const text = await (await get("/metrics")).text();
  assert.ok(!/0x[0-9a-fA-F]{40}/.test(text), "a provider address in /metrics");
  assert.ok(!text.includes("devnet/echo") && !text.includes(devnet.gateways[0]));
});
