/**
 * The indexer's generated OpenAPI document against real answers: the route table and the
 * document list the same operations; the real refresher and handler, served over HTTP, reading a real anvil chain and real routers (the devnet), plus a router
 * that serves a tampered and a malformed entry and one that does not answer, so the reports
 * carry errors and rejections. Every answer — 200s, 503s before the first snapshot and after
 * the chain went away, 404, 405, 500-free HEAD — is validated against the document.
 */

import assert from "node:assert/strict";
import { registryAbi } from "../../chain/abi.ts";
import { startDevnet } from "../../devnet/network.ts";
import { createSigner, devAccounts, sendAndConfirm } from "../../devnet/signer.ts";
import { DASHBOARD_PATHS, dashboardAsset } from "../../indexer/dashboard/mod.ts";
import { createIndexerHandler, createIndexerService } from "../../indexer/handler.ts";
import { Refresher } from "../../indexer/refresher.ts";
import { IndexerEvents } from "../../indexer/events.ts";
import { initialState } from "../../indexer/state.ts";
import { statsView } from "../../indexer/views.ts";
import { closedPort, okJson, serve } from "../_http.ts";
import { answer, OpenApiChecker } from "../_openapi.ts";
import { assertRoutesDocumented } from "../_routes.ts";
import { handSnapshot, handSync } from "./_network.ts";

/** The generated document of an indexer service (the same for every state). */
const INDEXER_OPENAPI = createIndexerService({ state: () => initialState(30, 60) }).document();

/** Statuses the layer may give on any path, checked once against `components.responses`. */
const COMMON_STATUSES = new Set(["404", "405", "414", "431", "500"]);

Deno.test("the generated document is OpenAPI 3.1 and its schemas compile strictly", () => {
  new OpenApiChecker(INDEXER_OPENAPI);
});

Deno.test("the live route table and the generated document list the same operations", () => {
  assertRoutesDocumented(createIndexerService({ state: () => initialState(30, 60) }));
});

Deno.test("every path the indexer serves is documented, and only those", async () => {
  const handler = createIndexerHandler({ state: () => initialState(30, 60) });
  const documented = Object.keys(INDEXER_OPENAPI.paths as Record<string, unknown>);
  for (const path of documented) {
    const response = await handler(new Request(`http://127.0.0.1:8088${path}`));
    await response.body?.cancel();
    assert.notEqual(response.status, 404, `${path} is documented but not served`);
  }
  // The handler's own list of paths (its 404 message) is the documented list (the page's
  // assets named as the page).
  const missing = await handler(new Request("http://127.0.0.1:8088/nope"));
  const { error } = await missing.json();
  const named = [...error.message.matchAll(/\/[a-z.{}/]+/g)].map((m) => m[0]).filter((p) =>
    p !== "/nope"
  );
  assert.match(error.message, / and \/ \(the dashboard page\)$/);
  assert.deepEqual([...named, ...DASHBOARD_PATHS].toSorted(), documented.toSorted());
});

Deno.test("real answers of the indexer validate against its OpenAPI document", async () => {
  const checker = new OpenApiChecker(INDEXER_OPENAPI);
  await using devnet = await startDevnet({ gateways: 1, tokenDelayMs: 0 });
  // Two more routers on chain: one serving a tampered and a malformed entry, one dead.
  const real = await okJson(fetch(`${devnet.routers[0]}/v1/ads`));
  const tampered = structuredClone(real.ads[0]);
  tampered.ad.models[0].prices.input = "1";
  await using bad = serve(() =>
    Response.json({ ads: [tampered, { ad: { version: 1 }, capacity: {}, metrics: {} }] })
  );
  const owner = createSigner(devnet.rpcUrl, devAccounts().owner, { chainId: devnet.chainId });
  for (const [i, url] of [bad.url, `http://127.0.0.1:${closedPort()}`].entries()) {
    await sendAndConfirm(owner, {
      address: devnet.contracts.registry,
      abi: registryAbi,
      functionName: "addRouter",
      args: [`0x${String(i + 1).repeat(40)}`, url],
    });
  }
  // One change stream at most, so its 503 can be seen.
  const events = new IndexerEvents({ maxStreams: 1 });
  // The clock moves only when the test says (the freshness bound is 60 s).
  let now = new Date();
  const clock = () => now;
  const refresher = new Refresher({
    rpcUrl: devnet.rpcUrl,
    contracts: devnet.contracts,
    scanFromBlock: devnet.fromBlock,
    confirmations: 0,
    routerTimeoutMs: 2000,
    client: { retryCount: 0, timeoutMs: 2000 },
    log: () => {},
    clock,
    events,
  });
  await using _refresher = refresher;
  await using server = serve(createIndexerHandler({
    state: () => refresher.state,
    readProviderHistory: (address) => refresher.readProviderHistory(address),
    rpc: () => refresher.rpcStatus(),
    events,
    teeEvidence: (address) => refresher.teeEvidence(address),
    clock,
  }));
  const get = async (path: string, init?: RequestInit) => {
    const response = await fetch(`${server.url}${path}`, init);
    return answer(path, init?.method ?? "get", response);
  };

  // Before the first snapshot: 503 no_snapshot everywhere, /health says starting.
  const someone = `/providers/0x${"1".repeat(40)}`;
  for (const path of ["/stats", "/models", "/providers", "/epochs", someone, "/health"]) {
    const before = await get(path);
    assert.equal(before.status, 503);
    checker.check({ ...before, path: path.replace(/0x[0-9a-f]{40}/, "{address}") });
  }

  // Serving, the settlement history synced.
  await refresher.refresh();
  await refresher.syncHistory();
  const stats = await get("/stats");
  assert.equal(stats.status, 200, stats.body);
  checker.check(stats);
  const report = JSON.parse(stats.body);
  assert.equal(report.routers.total, 4);
  assert.equal(report.routers.reachable, 3);
  assert.ok(report.rejected_ads.by_reason.commitment_mismatch >= 1);
  assert.ok(report.rejected_ads.by_reason.malformed >= 1);
  assert.ok(report.routers.list.some((r: { error: unknown }) => r.error !== null));
  assert.equal(report.settlements.synced, true);
  await checkHistoryAnswers(get, checker);
  assert.ok(JSON.parse((await get("/providers")).body).providers.length >= 3);
  await checkEvents(server.url, checker);
  assert.deepEqual(
    JSON.parse((await get("/openapi.json")).body),
    JSON.parse(JSON.stringify(INDEXER_OPENAPI)),
  );
  const head = await get("/stats", { method: "HEAD" });
  assert.equal(head.status, 200);
  checker.check(head);

  // Answers no operation owns: unknown path, wrong method.
  const missing = await get("/v1/stats");
  assert.equal(missing.status, 404);
  checker.check(missing, "NotFound");
  const post = await get("/stats", { method: "POST", body: "{}" });
  assert.equal(post.status, 405);
  checker.check(post, "MethodNotAllowed");

  // The chain goes away: the next refresh fails; the snapshot is still fresh, so the data
  // endpoints answer 200 and /health says degraded, naming the problem.
  await devnet.stop();
  now = new Date(now.getTime() + 30_000);
  await refresher.refresh();
  const degraded = await get("/health");
  assert.equal(degraded.status, 200);
  const problems = JSON.parse(degraded.body);
  assert.equal(problems.status, "degraded");
  assert.ok(problems.problems.some((p: { code: string }) => p.code === "chain_unreachable"));
  checker.check(degraded);
  assert.equal((await get("/stats")).status, 200);
  // Past the freshness bound: the data endpoints answer 503 with the reason, /health 503.
  now = new Date(now.getTime() + 31_000);
  await refresher.refresh();
  for (const path of ["/stats", "/models", "/providers", "/epochs", someone]) {
    const down = await get(path);
    assert.equal(down.status, 503);
    assert.equal(JSON.parse(down.body).error.code, "chain_unreachable");
    checker.check({ ...down, path: path.replace(/0x[0-9a-f]{40}/, "{address}") });
  }
  const health = await get("/health");
  assert.equal(health.status, 503);
  assert.equal(JSON.parse(health.body).last_error.code, "chain_unreachable");
  checker.check(health);

  // An oversized URL or header block: a JSON error in the documented shape.
  const long = await get(`/stats?pad=${"a".repeat(9000)}`);
  assert.equal(long.status, 414);
  checker.check({ ...long, path: "/stats" });
  const big = await get("/stats", { headers: { "x-pad": "a".repeat(40_000) } });
  assert.equal(big.status, 431);
  checker.check(big);

  // Every documented status of every operation was seen, except the answers any path may
  // give (404 and 405 are checked above against their components; 500 is a bug's answer).
  for (
    const [path, item] of Object.entries(
      INDEXER_OPENAPI.paths as Record<string, { get: { responses: Record<string, unknown> } }>,
    )
  ) {
    for (const status of Object.keys(item.get.responses)) {
      if (COMMON_STATUSES.has(status)) continue;
      assert.ok(checker.seen.has(`${path} get ${status}`), `${path} ${status} never checked`);
    }
  }
});

/** `/events`: a stream's first events (replayed from 0), a second stream's 503, a bad id's 400. */
async function checkEvents(url: string, checker: OpenApiChecker): Promise<void> {
  const abort = new AbortController();
  const response = await fetch(`${url}/events`, {
    headers: { "last-event-id": "0" },
    signal: abort.signal,
  });
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  // `ready`, then the replayed snapshot and settlements events.
  while ((text.match(/\n\n/g) ?? []).length < 3) text += (await reader.read()).value ?? "";
  const full = text.slice(0, text.lastIndexOf("\n\n") + 2);
  checker.check({
    path: "/events",
    method: "get",
    status: 200,
    headers: response.headers,
    body: full,
  });
  const busy = await fetch(`${url}/events`);
  checker.check(await answer("/events", "get", busy));
  assert.equal(busy.status, 503);
  abort.abort();
  await reader.cancel().catch(() => {});
  const bad = await fetch(`${url}/events?last_event_id=x`);
  checker.check(await answer("/events", "get", bad));
  assert.equal(bad.status, 400);
}

Deno.test("the checker refuses answers that break the document", () => {
  const checker = new OpenApiChecker(INDEXER_OPENAPI);
  const stats = statsView(handSnapshot(), handSync());
  const cacheable = { etag: '"abc"', "cache-control": "public, max-age=12" };
  const reply = (body: unknown, status = 200, headers: HeadersInit = cacheable) => ({
    path: "/stats",
    method: "get",
    status,
    headers: new Headers({ "content-type": "application/json; charset=utf-8", ...headers }),
    body: JSON.stringify(body),
  });
  checker.check(reply(stats));
  assert.throws(() => checker.check(reply(stats, 200, {})), /the header ETag is missing/);
  assert.throws(
    () => checker.check(reply(stats, 200, { ...cacheable, "cache-control": "no-store" })),
    /header Cache-Control: no-store/,
  );
  const extra = { ...stats, surprise: 1 };
  assert.throws(() => checker.check(reply(extra)), /must NOT have additional properties/);
  const { validators: _, ...missing } = stats;
  assert.throws(() => checker.check(reply(missing)), /must have required property 'validators'/);
  const number = { ...stats, staked_security: 5 };
  assert.throws(() => checker.check(reply(number)), /staked_security must be string/);
  const error = { error: { code: "no_snapshot", message: "No snapshot yet" } };
  assert.throws(() => checker.check(reply(error, 503)), /the header Retry-After is missing/);
  checker.check(reply(error, 503, { "retry-after": "3" }));
  assert.throws(() => checker.check(reply(error, 418)), /status 418 is not documented/);
  const plain = {
    ...reply(stats),
    headers: new Headers({ ...cacheable, "content-type": "text/html" }),
  };
  assert.throws(() => checker.check(plain), /content type text\/html is not documented/);
});

type Get = (path: string, init?: RequestInit) => ReturnType<typeof answer>;

/** The listed views with queries, one provider's history, bad queries (400), unknown (404). */
async function checkHistoryAnswers(get: Get, checker: OpenApiChecker): Promise<void> {
  const paid = JSON.parse((await get("/providers?limit=1")).body).providers[0].provider;
  const listed = [
    "/models",
    "/models?limit=1&tier=verified",
    "/providers",
    "/providers?limit=2",
    "/epochs",
    "/epochs?order=desc&limit=3",
    `/providers/${paid}`,
    "/health",
    "/openapi.json",
  ];
  for (const path of listed) {
    const ok = await get(path);
    assert.equal(ok.status, 200, `${path}: ${ok.body}`);
    checker.check({ ...ok, path: path.split("?")[0].replace(/0x[0-9a-f]{40}/, "{address}") });
  }
  for (
    const path of ["/models?limit=0", "/providers?tier=x", "/epochs?cursor=x", "/providers/0x1"]
  ) {
    const bad = await get(path);
    assert.equal(bad.status, 400, path);
    checker.check({ ...bad, path: path.split("?")[0].replace("/0x1", "/{address}") });
  }
  const unknown = await get(`/providers/0x${"9".repeat(40)}`);
  assert.equal(unknown.status, 404, unknown.body);
  checker.check({ ...unknown, path: "/providers/{address}" });
  // Cache-safe answers: the same request with the ETag it got is a 304, without a body.
  for (const path of ["/stats", "/models?limit=1", "/providers", "/epochs", `/providers/${paid}`]) {
    const first = await get(path);
    const again = await get(path, { headers: { "if-none-match": first.headers.get("etag")! } });
    assert.equal(again.status, 304, path);
    checker.check({ ...again, path: path.split("?")[0].replace(/0x[0-9a-f]{40}/, "{address}") });
  }
  // The page and its assets, fresh and revalidated; the metrics.
  for (const path of DASHBOARD_PATHS) {
    const asset = await get(path);
    assert.equal(asset.status, 200, path);
    checker.check(asset);
    const etag = dashboardAsset(path)!.etag;
    const again = await get(path, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304, path);
    checker.check(again);
  }
  const metrics = await get("/metrics");
  assert.equal(metrics.status, 200);
  checker.check(metrics);
}
