import assert from "node:assert/strict";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { PROBLEM_CODES } from "../../indexer/_schemas_health.ts";
import { type IndexerState, initialState } from "../../indexer/state.ts";
import { modelsView, providersView, statsView } from "../../indexer/views.ts";
import { handHistory, handSnapshot, handSync } from "./_network.ts";
import { okJson } from "../_http.ts";

const takenAt = new Date("2030-03-17T05:15:00.000Z");
const later = (secs: number) => new Date(takenAt.getTime() + secs * 1000);

function servingState(): IndexerState {
  return {
    ...initialState(30, 60),
    history: handHistory(),
    snapshot: handSnapshot(takenAt),
    lastSnapshotAt: takenAt,
    lastAttemptAt: takenAt,
  };
}

function failingState(): IndexerState {
  return {
    ...initialState(30, 60),
    lastSnapshotAt: takenAt,
    lastAttemptAt: later(30),
    failing: true,
    lastError: {
      code: "chain_unreachable",
      message: "the chain at http://127.0.0.1:8545 is unreachable: connection refused",
      at: later(30),
    },
    nextRefreshAt: later(42),
  };
}

function handler(state: IndexerState, now: Date = later(5)) {
  let current = state;
  let clock = now;
  const handle = createIndexerHandler({ state: () => current, clock: () => clock, log: () => {} });
  return {
    get: (path: string, init?: RequestInit) =>
      handle(new Request(`http://127.0.0.1:8088${path}`, init)),
    set(state: IndexerState) {
      current = state;
    },
    at(now: Date) {
      clock = now;
    },
  };
}

/** CORS on every answer; `no-store` on all but a data endpoint's 200 (cache-safe, up to the bound). */
function cors(response: Response): void {
  assert.equal(response.headers.get("access-control-allow-origin"), "*", `on ${response.status}`);
  const cacheControl = response.headers.get("cache-control");
  if (response.status === 200 && response.headers.has("etag")) {
    assert.match(cacheControl ?? "", /^public, max-age=\d+$/);
  } else assert.equal(cacheControl, "no-store");
}

async function error(response: Response, status: number, code: string, fragment = "") {
  cors(response);
  assert.equal(response.status, status);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const body = await response.json();
  assert.deepEqual(Object.keys(body), ["error"]);
  assert.equal(body.error.code, code);
  assert.ok(body.error.message.includes(fragment), `${body.error.message} ∌ ${fragment}`);
  return body;
}

Deno.test("the data paths serve the snapshot's views, with CORS", async () => {
  const h = handler(servingState());
  const snapshot = servingState().snapshot!;
  for (
    const [path, view] of [
      ["/stats", statsView(snapshot, handSync(snapshot))],
      ["/models", modelsView(snapshot, handSync(snapshot))],
      ["/providers", providersView(snapshot, handSync(snapshot))],
    ] as const
  ) {
    const response = await h.get(path);
    cors(response);
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
    assert.deepEqual(await response.json(), JSON.parse(JSON.stringify(view)), path);
    // Served again from the per-snapshot cache: the same bytes.
    assert.deepEqual(await okJson(h.get(path)), JSON.parse(JSON.stringify(view)));
  }
});

Deno.test("a new snapshot is served as soon as the state holds it", async () => {
  const h = handler(servingState());
  assert.equal((await okJson(h.get("/stats"))).snapshot.block_number, "4242");
  const next = servingState();
  next.snapshot = {
    ...next.snapshot!,
    chain: { ...next.snapshot!.chain, block: { ...next.snapshot!.chain.block, number: 4243n } },
  };
  h.set(next);
  assert.equal((await okJson(h.get("/stats"))).snapshot.block_number, "4243");
});

Deno.test("before the first snapshot: 503 no_snapshot, /health says starting", async () => {
  const h = handler({ ...initialState(30, 60), refreshing: true });
  for (const path of ["/stats", "/models", "/providers"]) {
    const response = await h.get(path);
    await error(response, 503, "no_snapshot", "first refresh has not finished");
    assert.equal(response.headers.get("retry-after"), "1");
  }
  const health = await h.get("/health");
  cors(health);
  assert.equal(health.status, 503);
  const body = await health.json();
  assert.deepEqual(
    [body.status, body.live, body.serving, body.last_snapshot_at, body.snapshot],
    ["starting", true, false, null, null],
  );
  assert.equal(body.error.code, "no_snapshot");
});

Deno.test("after a failed refresh: 503 with what is unreachable, never the old snapshot", async () => {
  const h = handler(failingState(), later(31));
  for (const path of ["/stats", "/models", "/providers"]) {
    const response = await h.get(path);
    const body = await error(
      response,
      503,
      "chain_unreachable",
      "http://127.0.0.1:8545 is unreachable",
    );
    assert.equal(JSON.stringify(body).includes("4242"), false, "nothing of the old snapshot");
    // The next refresh is due at +42 s; it is +31 s now.
    assert.equal(response.headers.get("retry-after"), "11");
    assert.equal(response.headers.get("access-control-expose-headers"), "Retry-After");
  }
  const health = await h.get("/health");
  assert.equal(health.status, 503);
  assert.equal(health.headers.get("retry-after"), "11");
  const body = await health.json();
  assert.equal(body.status, "unavailable");
  assert.equal(body.serving, false);
  assert.deepEqual(body.error, {
    code: "chain_unreachable",
    message: "the chain at http://127.0.0.1:8545 is unreachable: connection refused",
  });
  assert.deepEqual(body.last_error, { ...body.error, at: later(30).toISOString() });
  assert.equal(body.last_snapshot_at, takenAt.toISOString());
  assert.equal(body.snapshot, null);
});

Deno.test("a snapshot older than its freshness bound is refused: the refresh loop is stuck", async () => {
  const h = handler(servingState(), later(60));
  assert.equal((await h.get("/stats")).status, 200, "exactly at the bound it is still fresh");
  assert.equal((await h.get("/health")).status, 200);
  h.at(later(61));
  for (const path of ["/stats", "/models", "/providers"]) {
    await error(
      await h.get(path),
      503,
      "stale",
      "61 s old, older than the freshness bound of 60 s",
    );
  }
  const health = await h.get("/health");
  assert.equal(health.status, 503);
  const body = await health.json();
  assert.deepEqual([body.status, body.error.code, body.snapshot], ["stale", "stale", null]);
  assert.equal(body.last_snapshot_at, takenAt.toISOString());
});

Deno.test("/health while serving: 200 with the snapshot, its age and the settlement index", async () => {
  const state = servingState();
  state.lastError = {
    code: "routers_unreachable",
    message: "No router is reachable",
    at: later(-30),
  };
  state.history = {
    ...state.history,
    rescans: { count: 1, last: { at: later(-60), reason: "a reorg" } },
  };
  state.nextRefreshAt = later(30);
  const response = await handler(state, later(12)).get("/health");
  cors(response);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("retry-after"), null);
  assert.deepEqual(await response.json(), {
    status: "ok",
    live: true,
    serving: true,
    error: null,
    last_snapshot_at: "2030-03-17T05:15:00.000Z",
    last_attempt_at: "2030-03-17T05:15:00.000Z",
    // An earlier failure stays visible with its time.
    last_error: {
      code: "routers_unreachable",
      message: "No router is reachable",
      at: "2030-03-17T05:14:30.000Z",
    },
    snapshot: {
      block_number: "4242",
      block_hash: `0x${"ab".repeat(32)}`,
      block_timestamp: "1900018500",
      taken_at: "2030-03-17T05:15:00.000Z",
      age_secs: 12,
    },
    routers: { total: 2, reachable: 2 },
    refresh_secs: 30,
    stale_after_secs: 60,
    next_refresh_at: "2030-03-17T05:15:30.000Z",
    refreshing: false,
    settlements: {
      synced: true,
      scanned_to_block: "4230",
      head_block: "4242",
      confirmations: 12,
      last_block: "4242",
      role: "writer",
      store: { backend: "embedded", location: "/var/lib/net-stats" },
      unreadable_block: null,
      failing: false,
      last_error: null,
      stopped: null,
      rescans: 1,
      last_rescan: { at: "2030-03-17T05:14:00.000Z", reason: "a reorg" },
    },
    problems: [],
    rpc: [],
  });
});

Deno.test("every answer carries CORS and its request id: the page, the metrics, data and errors", async () => {
  const h = handler(servingState());
  for (
    const [path, status] of [["/", 200], ["/metrics", 200], ["/stats", 200], ["/x", 404]] as const
  ) {
    const response = await h.get(path);
    await response.body?.cancel();
    assert.equal(response.status, status, path);
    assert.equal(response.headers.get("access-control-allow-origin"), "*", path);
    assert.match(response.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/, path);
  }
  const kept = await h.get("/stats", { headers: { "x-request-id": "client-chosen-1" } });
  await kept.body?.cancel();
  assert.equal(kept.headers.get("x-request-id"), "client-chosen-1");
});

Deno.test("unknown paths are 404, other methods 405, both with CORS", async () => {
  const h = handler(servingState());
  for (const path of ["/stats/", "/v1/stats", "/STATS", "/health/x", "/index.html"]) {
    await error(
      await h.get(path),
      404,
      "not_found",
      "GET /stats, /models, /providers, /providers/{address}, /epochs, /health, /events, " +
        "/metrics, /openapi.json and / (the dashboard page)",
    );
  }
  await error(await h.get("/nope", { method: "POST" }), 404, "not_found");
  for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
    const response = await h.get("/stats", { method });
    await error(response, 405, "method_not_allowed", `Method ${method} is not allowed on /stats`);
    assert.equal(response.headers.get("allow"), "GET, HEAD, OPTIONS");
  }
});

Deno.test("OPTIONS answers preflights on every path, serving or not", async () => {
  for (const state of [servingState(), failingState(), initialState(30, 60)]) {
    const h = handler(state);
    for (const path of ["/stats", "/models", "/providers", "/health"]) {
      const response = await h.get(path, {
        method: "OPTIONS",
        headers: {
          origin: "https://dashboard.example",
          "access-control-request-method": "GET",
          "access-control-request-headers": "x-requested-with",
        },
      });
      cors(response);
      assert.equal(response.status, 204);
      assert.equal(response.headers.get("access-control-allow-methods"), "GET, HEAD, OPTIONS");
      assert.equal(response.headers.get("access-control-allow-headers"), "x-requested-with");
      assert.equal(response.headers.get("access-control-max-age"), "86400");
      assert.equal(await response.text(), "");
    }
  }
});

Deno.test("HEAD answers like GET without a body", async () => {
  const h = handler(servingState());
  const head = await h.get("/stats", { method: "HEAD" });
  cors(head);
  assert.equal(head.status, 200);
  assert.equal(head.headers.get("content-type"), "application/json; charset=utf-8");
  assert.equal(head.body, null);
  const down = handler(failingState(), later(31));
  const headDown = await down.get("/models", { method: "HEAD" });
  assert.equal(headDown.status, 503);
  assert.equal(headDown.headers.get("retry-after"), "11");
  assert.equal(headDown.body, null);
});

Deno.test("an unexpected failure is a generic 500 with CORS, logged, never leaked", async () => {
  const logged: unknown[] = [];
  const handle = createIndexerHandler({
    state: () => {
      throw new Error("secret internal detail");
    },
    log: (_message, e) => logged.push(e),
  });
  const response = await handle(new Request("http://127.0.0.1:8088/stats"));
  const body = await error(response, 500, "internal_error", "details are in its log");
  assert.equal(JSON.stringify(body).includes("secret"), false);
  assert.equal(logged.length, 1);
});

Deno.test("the history endpoints: /epochs, /providers/{address} (404 when unknown), bad queries 400", async () => {
  const calls: string[] = [];
  const handle = createIndexerHandler({
    state: servingState,
    clock: () => later(5),
    readProviderHistory: (address) => {
      calls.push(address);
      return Promise.resolve({
        buckets: address === "0x4444444444444444444444444444444444444444"
          ? [{ provider: address, epoch: 2n, amount: 7n, tokens: 60n, settlements: 1 }]
          : [],
        at: { number: 4230n, hash: `0x${"42".repeat(32)}` },
      });
    },
  });
  const get = (path: string) => handle(new Request(`http://127.0.0.1:8088${path}`));
  const epochs = await get("/epochs?limit=2&order=desc");
  assert.equal(epochs.status, 200);
  const body = await epochs.json();
  assert.deepEqual(body.epochs.map((e: { epoch: string }) => e.epoch), ["5", "4"]);
  assert.equal(body.next_cursor, "4");
  // Mixed case is accepted; the answer is lower case. A provider only the history knows.
  const p3 = await get("/providers/0x4444444444444444444444444444444444444444?limit=5");
  assert.equal(p3.status, 200);
  const detail = await p3.json();
  assert.equal(detail.settled.total.amount, "7");
  assert.equal(detail.history.synced, true);
  const upper = await get(`/providers/0x${"A".repeat(40)}`);
  await error(upper, 404, "unknown_provider", `Unknown provider 0x${"a".repeat(40)}`);
  assert.deepEqual(calls.at(-1), `0x${"a".repeat(40)}`);
  for (
    const [path, field] of [
      ["/providers?limit=0", "limit"],
      ["/providers?limit=1001", "limit"],
      ["/providers?cursor=nope", "cursor"],
      ["/providers?tier=gold", "tier"],
      ["/models?limit=x", "limit"],
      ["/epochs?cursor=-1", "cursor"],
      ["/epochs?order=up", "order"],
      ["/providers/0x12", "address"],
      ["/providers?limit=1&limit=2", "limit"],
    ]
  ) {
    const response = await get(path);
    const answer = await error(response, 400, "invalid_request");
    assert.match(answer.error.message, new RegExp(field), path);
  }
  // Unknown parameters are ignored, as before.
  assert.equal((await get("/stats?pretty=1")).status, 200);
  // No snapshot: the history endpoints answer 503 like the others.
  const down = createIndexerHandler({ state: () => initialState(30, 60) });
  for (const path of ["/epochs", `/providers/0x${"1".repeat(40)}`]) {
    const response = await down(new Request(`http://127.0.0.1:8088${path}`));
    await error(response, 503, "no_snapshot");
  }
});

Deno.test("/providers/{address} when the store fails: 200 with the history unavailable, logged", async () => {
  const logged: unknown[] = [];
  const handle = createIndexerHandler({
    state: servingState,
    clock: () => later(5),
    log: (_message, e) => logged.push(e),
    readProviderHistory: () => Promise.reject(new Error("connection terminated")),
  });
  const response = await handle(
    new Request("http://127.0.0.1:8088/providers/0x1111111111111111111111111111111111111111"),
  );
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.deepEqual(body.settled, { total: null, epochs: null, next_cursor: null });
  assert.equal(body.history.synced, false);
  assert.equal(body.live.settled, null);
  assert.equal(body.registry.tier, "verified");
  assert.equal(logged.length, 1);
});

Deno.test("a failed refresh keeps a fresh snapshot served (degraded); past its bound, 503 with the failure", async () => {
  const state: IndexerState = {
    ...servingState(),
    failing: true,
    lastAttemptAt: later(30),
    lastError: {
      code: "rpc_rate_limited",
      message: "the chain at https://rpc.example/… rate-limits us: HTTP request failed. (429)",
      at: later(30),
    },
  };
  const rpc = [{
    url: "https://rpc.example/…",
    state: "rate_limited" as const,
    calls: 40,
    failures: 3,
    rateLimited: 3,
    waitUntil: later(33),
    latencyMs: 12.5,
    head: 4242n,
    maxRps: 10,
    lastError: { kind: "rate", message: "Too Many Requests", at: later(30) },
  }];
  let now = later(31);
  const handle = createIndexerHandler({
    state: () => state,
    clock: () => now,
    rpc: () => rpc,
    log: () => {},
  });
  const get = (path: string) => handle(new Request(`http://127.0.0.1:8088${path}`));
  const stats = await get("/stats");
  assert.equal(stats.status, 200);
  await stats.body?.cancel();
  const health = await get("/health");
  assert.equal(health.status, 200);
  const body = await health.json();
  assert.equal(body.status, "degraded");
  assert.deepEqual(body.problems.map((p: { code: string; source: string }) => [p.code, p.source]), [
    ["rpc_rate_limited", "refresh"],
    ["rpc_rate_limited", "rpc"],
  ]);
  assert.match(body.problems[1].message, /asked us to wait until 2030-03-17T05:15:33.000Z/);
  assert.deepEqual(body.rpc, [{
    url: "https://rpc.example/…",
    state: "rate_limited",
    calls: 40,
    failures: 3,
    rate_limited: 3,
    wait_until: "2030-03-17T05:15:33.000Z",
    latency_ms: 12.5,
    head: "4242",
    max_rps: 10,
    last_error: { kind: "rate", message: "Too Many Requests", at: "2030-03-17T05:15:30.000Z" },
  }]);
  // Past the bound (60 s): 503 with the failure's code, and the age in the message.
  now = later(61);
  await error(await get("/stats"), 503, "rpc_rate_limited", "past the freshness bound of 60 s");
  const gone = await get("/health");
  assert.equal(gone.status, 503);
  assert.equal((await gone.json()).status, "unavailable");
});

Deno.test("docs/indexer.md's health codes are the code's, every one", async () => {
  const docs = await Deno.readTextFile(new URL("../../docs/indexer.md", import.meta.url));
  const section = docs.slice(docs.indexOf("#### Health codes"), docs.indexOf("### `GET /events`"));
  const listed = [...section.matchAll(/^\| `([a-z_]+)` /gm)].map((m) => m[1]);
  assert.deepEqual(listed.toSorted(), [...PROBLEM_CODES].toSorted());
});
