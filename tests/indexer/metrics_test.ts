/**
 * The indexer's `/metrics`: it parses as Prometheus text (`tests/_prometheus.ts`, an
 * independent parser), every metric is declared with its help and type, the state gauges
 * describe the served snapshot (and vanish with it), the RPC counters count requests, calls and
 * each kind of error; and against a real devnet and a real `indexer/main.ts` the counters move
 * with real traffic and with an outage of the chain (whose lines are JSON with
 * `--log-format json`).
 */

import assert from "node:assert/strict";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { IndexerMetrics } from "../../indexer/metrics.ts";
import { type IndexerState, initialState } from "../../indexer/state.ts";
import { REJECTION_REASONS } from "../../indexer/verify_entry.ts";
import { type Family, parsePrometheusText, sampleValue } from "../_prometheus.ts";

type Families = Map<string, Family>;
import { startLiveNetwork, until } from "./_live.ts";
import { handHistory, handSnapshot } from "./_network.ts";

const takenAt = new Date("2030-03-17T05:15:00.000Z");
const at = (secs: number) => new Date(takenAt.getTime() + secs * 1000);

/** Every metric of the indexer, with its type. */
const METRICS: Record<string, string> = {
  net_indexer_refreshes_total: "counter",
  net_indexer_refresh_duration_seconds: "histogram",
  net_indexer_rpc_requests_total: "counter",
  net_indexer_rpc_calls_total: "counter",
  net_indexer_rpc_errors_total: "counter",
  net_indexer_rpc_request_duration_seconds: "histogram",
  net_indexer_router_requests_total: "counter",
  net_indexer_history_rescans_total: "counter",
  net_indexer_serving: "gauge",
  net_indexer_snapshot_age_seconds: "gauge",
  net_indexer_providers: "gauge",
  net_indexer_routers: "gauge",
  net_indexer_rejected_ads: "gauge",
  net_indexer_history_lag_blocks: "gauge",
  net_indexer_history_synced: "gauge",
  net_indexer_history_failing: "gauge",
  net_indexer_http_requests_total: "counter",
  net_indexer_http_request_duration_seconds: "histogram",
  net_indexer_http_response_first_byte_seconds: "histogram",
  net_indexer_http_requests_in_flight: "gauge",
  process_start_time_seconds: "gauge",
  process_resident_memory_bytes: "gauge",
  process_heap_bytes: "gauge",
};

function servingState(): IndexerState {
  return {
    ...initialState(30, 60),
    history: handHistory(),
    snapshot: handSnapshot(takenAt),
    lastSnapshotAt: takenAt,
    lastAttemptAt: takenAt,
  };
}

async function scrape(fetcher: (path: string) => Promise<Response>): Promise<Families> {
  const response = await fetcher("/metrics");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  assert.equal(response.headers.get("cache-control"), "no-store");
  return parsePrometheusText(await response.text());
}

Deno.test("/metrics parses; every metric declared; the gauges are the served snapshot's", async () => {
  let state = servingState();
  let now = at(12.5);
  const handle = createIndexerHandler({ state: () => state, clock: () => now, log: () => {} });
  const get = (path: string) => handle(new Request(`http://127.0.0.1:8088${path}`));
  for (const _ of [1, 2, 3]) await (await get("/stats")).body?.cancel();
  await (await get("/providers?limit=1")).body?.cancel();
  await (await get("/nowhere")).body?.cancel();

  const families = await scrape(get);
  for (const [name, type] of Object.entries(METRICS)) {
    assert.equal(families.get(name)?.type, type, `${name} is a ${type}`);
    assert.ok(families.get(name)!.help.length > 10, `${name} has a help text`);
  }
  const value = (name: string, labels: Record<string, string> = {}) =>
    sampleValue(families, `net_indexer_${name}`, labels);
  const snapshot = state.snapshot!;
  assert.equal(value("serving"), 1);
  assert.equal(value("snapshot_age_seconds"), 12.5);
  assert.equal(value("providers", { state: "registered" }), snapshot.chain.providers.length);
  assert.equal(
    value("providers", { state: "bonded" }),
    snapshot.chain.providers.filter((p) => p.bonded).length,
  );
  assert.equal(value("providers", { state: "live_verified" }), snapshot.live.length);
  assert.equal(value("routers", { state: "registered" }), 2);
  assert.equal(value("routers", { state: "reachable" }), 2);
  for (const reason of REJECTION_REASONS) {
    assert.equal(value("rejected_ads", { reason }), snapshot.rejections[reason], reason);
  }
  // The hand history: head 4242, 12 confirmations, confirmed up to 4230: nothing left to count.
  assert.equal(value("history_lag_blocks"), 0);
  assert.equal(value("history_synced"), 1);
  assert.equal(value("history_failing"), 0);
  // Served requests by route template and status.
  const served = (route: string, status: string) =>
    value("http_requests_total", { method: "GET", route, status });
  assert.equal(served("/stats", "200"), 3);
  assert.equal(served("/providers", "200"), 1);
  assert.equal(served("unmatched", "404"), 1);

  // The chain goes away: nothing served, the snapshot's gauges gone; the age keeps growing.
  state = {
    ...initialState(30, 60),
    history: handHistory(),
    lastSnapshotAt: takenAt,
    lastAttemptAt: at(30),
    failing: true,
    lastError: { code: "chain_unreachable", message: "the chain is unreachable", at: at(30) },
  };
  now = at(45);
  await (await get("/stats")).body?.cancel();
  const down = await scrape(get);
  const downValue = (name: string, labels: Record<string, string> = {}) =>
    sampleValue(down, `net_indexer_${name}`, labels);
  assert.equal(downValue("serving"), 0);
  assert.equal(downValue("snapshot_age_seconds"), 45);
  assert.equal(downValue("history_synced"), 0);
  for (const name of ["providers", "routers", "rejected_ads"]) {
    assert.deepEqual(down.get(`net_indexer_${name}`)!.samples, [], `${name} without a snapshot`);
  }
  assert.equal(
    downValue("http_requests_total", { method: "GET", route: "/stats", status: "503" }),
    1,
  );
});

Deno.test("rpcFetch counts requests, calls by method, and each kind of error", async () => {
  const metrics = new IndexerMetrics();
  const answers: (() => Promise<Response>)[] = [
    () => Promise.resolve(Response.json({ jsonrpc: "2.0", id: 1, result: "0x1" })),
    () =>
      Promise.resolve(
        new Response(
          JSON.stringify([
            { jsonrpc: "2.0", id: 1, result: "0x" },
            { jsonrpc: "2.0", id: 2, error: { code: 3, message: "execution reverted" } },
            { jsonrpc: "2.0", id: 3, error: { code: -32005, message: "limit exceeded" } },
          ]),
          { headers: { "content-type": "application/json", "content-length": "180" } },
        ),
      ),
    () => Promise.resolve(new Response("busy", { status: 503 })),
    () => Promise.reject(new TypeError("error sending request: connection refused")),
    () => Promise.reject(new DOMException("The signal has been aborted", "AbortError")),
  ];
  const counted = metrics.rpcFetch("history", () => answers.shift()!());
  const call = (method: string, id = 1) => ({ jsonrpc: "2.0", id, method, params: [] });
  const send = (body: unknown) =>
    counted("http://127.0.0.1:8545", { method: "POST", body: JSON.stringify(body) });
  await (await send(call("eth_blockNumber"))).text();
  const batch = await send([call("eth_call", 1), call("eth_call", 2), call("eth_getLogs", 3)]);
  assert.equal((await batch.json()).length, 3, "the caller reads the whole answer");
  await (await send(call("eth_chainId"))).text();
  await assert.rejects(send(call("eth_getLogs")), TypeError);
  await assert.rejects(send(call("debug_traceCall")), DOMException);
  await new Promise((resolve) => setTimeout(resolve, 10)); // the copy read beside the caller's
  const families = parsePrometheusText(await metrics.registry.text());
  const value = (name: string, labels: Record<string, string>) =>
    sampleValue(families, `net_indexer_${name}`, { client: "history", ...labels });
  assert.equal(value("rpc_requests_total", {}), 5);
  assert.equal(value("rpc_calls_total", { method: "eth_call" }), 2);
  assert.equal(value("rpc_calls_total", { method: "eth_getLogs" }), 2);
  assert.equal(value("rpc_calls_total", { method: "eth_blockNumber" }), 1);
  assert.equal(value("rpc_calls_total", { method: "other" }), 1, "an undeclared method");
  assert.equal(value("rpc_errors_total", { reason: "rpc_error" }), 2);
  assert.equal(value("rpc_errors_total", { reason: "http_status" }), 1);
  assert.equal(value("rpc_errors_total", { reason: "network" }), 1);
  assert.equal(value("rpc_errors_total", { reason: "timeout" }), 1);
  assert.equal(value("rpc_request_duration_seconds_count", {}), 5);
});

Deno.test("against a real devnet: counters move with traffic and with an outage of the chain", async () => {
  await using live = await startLiveNetwork({ settledEpochs: 2 });
  // A freshness bound far above the refresh interval: a busy machine may take seconds between
  // two snapshots, and staleness is not what this test counts.
  const indexer = await live.startIndexer([
    "--refresh-secs",
    "1",
    "--stale-after-secs",
    "60",
    "--log-format",
    "json",
  ]);
  const get = (path: string) => fetch(`${indexer.url}${path}`);
  await until("the indexer to serve, synced", async () => {
    const health = await indexer.get("/health");
    return health.body.serving && health.body.settlements.synced ? true : undefined;
  }, { failed: indexer.failure });
  const before = await scrape(get);
  const statsAnswer = await indexer.get("/stats");
  assert.equal(statsAnswer.status, 200, JSON.stringify(statsAnswer.body));
  const stats = statsAnswer.body;
  for (let i = 0; i < 4; i++) await (await get("/models")).body?.cancel();
  const after = await scrape(get);
  const delta = (name: string, labels: Record<string, string> = {}) =>
    (sampleValue(after, name, labels) ?? 0) - (sampleValue(before, name, labels) ?? 0);
  const http = (route: string) => ({ method: "GET", route, status: "200" });
  assert.equal(delta("net_indexer_http_requests_total", http("/models")), 4);
  assert.equal(delta("net_indexer_http_requests_total", http("/stats")), 1);
  assert.equal(delta("net_indexer_http_requests_total", http("/metrics")), 1);
  // The refresh loop ran in between, through the real chain and routers.
  const v = (name: string, labels: Record<string, string> = {}) =>
    sampleValue(after, `net_indexer_${name}`, labels) ?? 0;
  assert.ok(v("refreshes_total", { result: "ok", code: "none" }) >= 1);
  assert.ok(v("refresh_duration_seconds_count", { result: "ok" }) >= 1);
  assert.ok(v("rpc_requests_total", { client: "snapshot" }) >= 4);
  assert.ok(v("rpc_calls_total", { client: "snapshot", method: "eth_call" }) >= 1);
  assert.ok(v("rpc_calls_total", { client: "history", method: "eth_getLogs" }) >= 1);
  assert.ok(v("rpc_requests_total", { client: "check" }) >= 1, "the contract check at start");
  assert.equal(v("router_requests_total", { result: "ok" }) >= live.devnet.routers.length, true);
  assert.equal(v("serving"), 1);
  assert.equal(v("routers", { state: "registered" }), stats.routers.total);
  assert.equal(v("routers", { state: "reachable" }), stats.routers.reachable);
  assert.equal(v("providers", { state: "live_verified" }), stats.providers.live_verified);
  assert.equal(v("history_synced"), 1);
  // The lag: blocks come every second, so it is small once the history has caught up (how
  // small at one moment depends on the machine's speed: wait for a pass that reached the head).
  await until("the history's lag to be at most 2 blocks", async () => {
    const lag = sampleValue(await scrape(get), "net_indexer_history_lag_blocks", {});
    return lag !== undefined && lag <= 2 ? true : undefined;
  }, { failed: indexer.failure });
  assert.ok(v("snapshot_age_seconds") >= 0 && v("snapshot_age_seconds") < 30);

  // The chain stops: refreshes fail as chain_unreachable, the RPC errors are counted; once the
  // last snapshot is past its freshness bound, nothing is served.
  await live.stopChain();
  const down = await until("a failed refresh, and the snapshot past its bound", async () => {
    const families = await scrape(get);
    const failed = sampleValue(families, "net_indexer_refreshes_total", {
      result: "failed",
      code: "chain_unreachable",
    });
    return failed && sampleValue(families, "net_indexer_serving") === 0 ? families : undefined;
  }, { failed: indexer.failure });
  assert.ok(
    (sampleValue(down, "net_indexer_rpc_errors_total", { client: "snapshot", reason: "network" }) ??
      0) >= 1,
  );
  assert.equal(sampleValue(down, "net_indexer_serving"), 0);
  assert.deepEqual(down.get("net_indexer_providers")!.samples, []);
  await live.startChain();
  await until("serving again", async () => {
    const families = await scrape(get);
    return sampleValue(families, "net_indexer_serving") === 1 ? true : undefined;
  }, { failed: indexer.failure });

  // --log-format json: every line on stderr is one JSON object; the outage was a warning.
  const lines = indexer.stderr().split("\n").filter((line) => line !== "");
  assert.ok(lines.length >= 2, indexer.stderr());
  const records = lines.map((line) => JSON.parse(line));
  for (const record of records) {
    assert.deepEqual(Object.keys(record).slice(0, 4), ["time", "level", "message", "logger"]);
    assert.equal(record.logger, "indexer");
  }
  const outage = records.find((r) => r.message.startsWith("not serving:"));
  assert.ok(outage, indexer.stderr());
  assert.equal(outage.level, "warn");
  assert.equal(outage.code, "chain_unreachable");
  assert.ok(records.some((r) => r.level === "info" && r.message.startsWith("serving again")));
  assert.equal(await indexer.stop(), 0);
});
