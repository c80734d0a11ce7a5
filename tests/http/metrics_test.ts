/**
 * The request-metrics middleware and `GET /metrics` on a real `Deno.serve` on loopback: counters
 * move with real traffic, labelled by route template (never the raw path) and status; refusals,
 * 404s, 405s and thrown errors are counted; a stream's latency runs to its end and the in-flight
 * gauge follows it; the exposition parses with the tests' independent parser.
 */

import assert from "node:assert/strict";
import type { MiddlewareHandler } from "hono";
import { createService, defineRoute, HttpRequestError, type Service, z } from "../../http/mod.ts";
import { httpMetrics, metricsRoute, UNMATCHED_ROUTE } from "../../http/metrics.ts";
import { MetricsRegistry } from "../../io/metrics.ts";
import { serve } from "../_http.ts";
import { type Family, parsePrometheusText, sampleValue } from "../_prometheus.ts";
import { assertRoutesDocumented } from "../_routes.ts";

/** A stream the test releases chunk by chunk. */
function gatedStream() {
  const encoder = new TextEncoder();
  let push!: (text: string | null) => void;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      push = (
        text,
      ) => (text === null ? controller.close() : controller.enqueue(encoder.encode(text)));
    },
  });
  return { stream, push: (text: string | null) => push(text) };
}

/** A refusal rule like the daemon's Host and Origin checks (fetch cannot send another Host). */
const hostRule: MiddlewareHandler = (c, next) =>
  c.req.header("x-test-origin") === "https://evil.example"
    ? Promise.resolve(c.text("forbidden origin", 403))
    : next();

function testService(
  registry: MetricsRegistry,
  streams: ReturnType<typeof gatedStream>[],
): Service {
  return createService({
    info: { title: "metrics", version: "1" },
    middleware: [
      httpMetrics(registry, {
        labels: {
          names: ["dialect"],
          values: { dialect: ["openai", "ollama", "none"] },
          of: (_, route) => ({
            dialect: route.startsWith("/v1/")
              ? "openai"
              : route.startsWith("/api/")
              ? "ollama"
              : "none",
          }),
        },
      }),
      hostRule,
    ],
    renderError: (error) =>
      error instanceof HttpRequestError
        ? new Response(error.reason, { status: error.status })
        : new Response("internal", { status: 500 }),
    routes: [
      metricsRoute(registry),
      defineRoute({
        method: "get",
        path: "/v1/models/{id:.+}",
        summary: "A model",
        params: z.object({ id: z.string() }),
        responses: { 200: { description: "It" } },
        handler: (c, { params }) => c.text(params.id),
      }),
      defineRoute({
        method: "get",
        path: "/api/boom",
        summary: "Fails",
        responses: { 500: { description: "Always" } },
        handler: () => {
          throw new Error("boom");
        },
      }),
      defineRoute({
        method: "post",
        path: "/v1/stream",
        summary: "Streams",
        responses: { 200: { description: "Events" } },
        handler: () => {
          const gate = gatedStream();
          streams.push(gate);
          return new Response(gate.stream, { headers: { "content-type": "text/event-stream" } });
        },
      }),
    ],
  });
}

async function scrape(url: string): Promise<Map<string, Family>> {
  const response = await fetch(`${url}/metrics`);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return parsePrometheusText(await response.text());
}

const total = (families: Map<string, Family>, labels: Record<string, string>) =>
  sampleValue(families, "net_test_http_requests_total", labels) ?? 0;

Deno.test("counters move with real traffic, by route template and status, refusals included", async () => {
  const registry = new MetricsRegistry({ prefix: "net_test_" });
  const service = testService(registry, []);
  assertRoutesDocumented(service);
  await using server = serve(service.fetch);
  const before = await scrape(server.url);
  const get = async (path: string, init?: RequestInit) => {
    const response = await fetch(`${server.url}${path}`, init);
    await response.body?.cancel();
    return response.status;
  };
  for (const id of ["a/b", "c/d", "e/f"]) assert.equal(await get(`/v1/models/${id}`), 200);
  // A fixed body keeps its length (the middleware leaves non-stream bodies alone).
  const fixed = await fetch(`${server.url}/v1/models/a/b`);
  assert.equal(fixed.headers.get("content-length"), "3");
  assert.equal(fixed.headers.get("transfer-encoding"), null);
  assert.equal(await fixed.text(), "a/b");
  assert.equal(await get("/v1/models/x", { method: "HEAD" }), 200);
  assert.equal(await get("/api/boom"), 500);
  assert.equal(await get("/nowhere/12345"), 404);
  assert.equal(await get("/v1/models/a", { method: "DELETE" }), 405);
  assert.equal(
    await get("/v1/models/a", { headers: { "x-test-origin": "https://evil.example" } }),
    403,
  );
  const after = await scrape(server.url);

  const model = { method: "GET", route: "/v1/models/{id}", status: "200", dialect: "openai" };
  assert.equal(total(before, model), 0);
  assert.equal(total(after, model), 4);
  assert.equal(total(after, { ...model, method: "HEAD" }), 1);
  assert.equal(total(after, { route: "/api/boom", status: "500", dialect: "ollama" }), 1);
  const unmatched = { route: UNMATCHED_ROUTE, dialect: "none" };
  assert.equal(total(after, { ...unmatched, method: "GET", status: "404" }), 1);
  assert.equal(total(after, { ...unmatched, method: "DELETE", status: "405" }), 1);
  assert.equal(total(after, { ...unmatched, method: "GET", status: "403" }), 1);
  assert.equal(
    total(after, { route: "/metrics", status: "200" }),
    1,
    "the first scrape is counted",
  );
  // Never a raw path: every route label is a declared template or "unmatched".
  const routes = new Set(
    [...after.values()].flatMap((f) => f.samples.map((s) => s.labels.route)).filter(Boolean),
  );
  assert.deepEqual([...routes].sort(), [
    "/api/boom",
    "/metrics",
    "/v1/models/{id}",
    UNMATCHED_ROUTE,
  ]);
  const durations = sampleValue(after, "net_test_http_request_duration_seconds_count", {
    method: "GET",
    route: "/v1/models/{id}",
    dialect: "openai",
  });
  assert.equal(durations, 4);
});

Deno.test("a stream is in flight until its end; its latency and first byte are observed", async () => {
  const registry = new MetricsRegistry({ prefix: "net_test_" });
  const streams: ReturnType<typeof gatedStream>[] = [];
  await using server = serve(testService(registry, streams).fetch);
  const inFlight = async () =>
    sampleValue(await scrape(server.url), "net_test_http_requests_in_flight");
  assert.equal(await inFlight(), 1, "only the scrape itself");

  const response = await fetch(`${server.url}/v1/stream`, { method: "POST" });
  const reader = response.body!.getReader();
  streams[0].push("data: 1\n\n");
  assert.equal(new TextDecoder().decode((await reader.read()).value), "data: 1\n\n");
  assert.equal(await inFlight(), 2, "the open stream and the scrape");
  let families = await scrape(server.url);
  const stream = { method: "POST", route: "/v1/stream", dialect: "openai" };
  assert.equal(sampleValue(families, "net_test_http_response_first_byte_seconds_count", stream), 1);
  assert.equal(
    sampleValue(families, "net_test_http_request_duration_seconds_count", stream),
    undefined,
  );
  streams[0].push("data: 2\n\n");
  streams[0].push(null);
  assert.equal(new TextDecoder().decode((await reader.read()).value), "data: 2\n\n");
  assert.equal((await reader.read()).done, true);
  families = await scrape(server.url);
  assert.equal(sampleValue(families, "net_test_http_request_duration_seconds_count", stream), 1);
  const first = sampleValue(families, "net_test_http_response_first_byte_seconds_sum", stream)!;
  const whole = sampleValue(families, "net_test_http_request_duration_seconds_sum", stream)!;
  assert.ok(whole >= first, `the stream ended (${whole} s) before its first byte (${first} s)`);
  assert.equal(sampleValue(families, "net_test_http_requests_in_flight"), 1);

  // A client that goes away mid-stream ends it too.
  const abort = new AbortController();
  const second = await fetch(`${server.url}/v1/stream`, { method: "POST", signal: abort.signal });
  streams[1].push("data: 1\n\n");
  await second.body!.getReader().read();
  abort.abort();
  for (let i = 0; i < 100 && (await inFlight()) !== 1; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(await inFlight(), 1, "the abandoned stream is no longer in flight");
  assert.equal(total(await scrape(server.url), { ...stream, status: "200" }), 2);
});

Deno.test("one middleware per registry; the metrics route answers no-store", async () => {
  const registry = new MetricsRegistry();
  httpMetrics(registry);
  assert.throws(() => httpMetrics(registry), /http_requests_total: it is declared already/);
  const response = await metricsRoute(registry).handler(
    {} as never,
    { params: undefined, query: undefined, body: undefined },
  );
  assert.equal(response.headers.get("cache-control"), "no-store");
  assert.ok(parsePrometheusText(await response.text()).has("http_requests_in_flight"));
});
