import assert from "node:assert/strict";
import { DaemonError } from "../../daemon/daemon_error.ts";
import { GatewayResolver } from "../../daemon/gateway_resolver.ts";
import { GatewaySetError } from "../../daemon/gateway_set.ts";
import { closedPort, serve } from "../_http.ts";

const now = new Date("2026-11-22T12:00:00Z");
const clock = () => now;
const ago = (s: number) => new Date(now.getTime() - s * 1000).toISOString();

/** A gateway that answers gossip with the given peers and counts how often it was asked. */
function gossipGateway(peers: { url: string; last_seen: string }[] = []) {
  let asked = 0;
  const server = serve(() => {
    asked++;
    return Response.json({ gateways: peers });
  });
  return Object.assign(server, { asked: () => asked });
}

async function cacheWith(entries: { url: string; last_seen: string }[]): Promise<string> {
  const path = `${await Deno.makeTempDir()}/gateways.json`;
  await Deno.writeTextFile(path, JSON.stringify({ version: 1, gateways: entries }));
  return path;
}

function quiet(): { log: (m: string) => void; lines: string[] } {
  const lines: string[] = [];
  return { log: (m) => lines.push(m), lines };
}

Deno.test("a pinned gateway is used, and never replaced by the known set", async () => {
  await using pinned = gossipGateway();
  await using other = gossipGateway();
  const resolver = new GatewayResolver({
    pinned: pinned.url,
    bootstrap: [other.url],
    clock,
    ...quiet(),
  });
  assert.equal(await resolver.resolve(), pinned.url);
  assert.equal(other.asked(), 0);
  resolver.reportFailure(pinned.url);
  assert.equal(await resolver.resolve(), pinned.url);
});

Deno.test("an unreachable pinned gateway is a no_gateway error, with no fallback", async () => {
  await using other = gossipGateway();
  const down = `http://127.0.0.1:${closedPort()}`;
  const resolver = new GatewayResolver({
    pinned: down,
    bootstrap: [other.url],
    clock,
    timeoutMs: 1000,
    ...quiet(),
  });
  await assert.rejects(resolver.resolve(), (e: unknown) => {
    assert.ok(e instanceof DaemonError);
    assert.equal(e.code, "no_gateway");
    assert.equal(e.status, 503);
    assert.match(e.message, /pinned gateway/);
    return true;
  });
  assert.equal(other.asked(), 0);
  assert.throws(() => new GatewayResolver({ pinned: "ftp://x" }), GatewaySetError);
});

Deno.test("the first reachable gateway wins, most recently seen first; the dead are skipped", async () => {
  await using older = gossipGateway();
  await using newer = gossipGateway();
  const dead = `http://127.0.0.1:${closedPort()}`;
  const cachePath = await cacheWith([
    { url: older.url, last_seen: ago(600) },
    { url: dead, last_seen: ago(1) },
    { url: newer.url, last_seen: ago(60) },
  ]);
  const resolver = new GatewayResolver({
    bootstrap: [],
    cachePath,
    clock,
    timeoutMs: 1000,
    ...quiet(),
  });
  assert.equal(await resolver.resolve(), newer.url);
  assert.equal(older.asked(), 0, "a later candidate is not asked once one answered");
});

Deno.test("on connect the reached gateway's peers are merged and the union persisted", async () => {
  await using first = gossipGateway([
    { url: "http://peer-a.example", last_seen: ago(5) },
    { url: "not a url", last_seen: ago(5) },
  ]);
  const cached = `http://127.0.0.1:${closedPort()}`;
  const cachePath = await cacheWith([{ url: cached, last_seen: ago(3600) }]);
  const resolver = new GatewayResolver({ bootstrap: [first.url], cachePath, clock, ...quiet() });
  // The cached entry is tried first (seen more recently) but is down; the bootstrap one answers.
  assert.equal(await resolver.resolve(), first.url);
  const saved = JSON.parse(await Deno.readTextFile(cachePath));
  assert.equal(saved.version, 1);
  assert.deepEqual(
    saved.gateways.map((g: { url: string }) => g.url).sort(),
    [first.url, cached, "http://peer-a.example"].sort(),
  );
});

Deno.test("a corrupt cache file is reported and replaced, never fatal", async () => {
  await using up = gossipGateway();
  const cachePath = `${await Deno.makeTempDir()}/gateways.json`;
  await Deno.writeTextFile(cachePath, "{ definitely not json");
  const { log, lines } = quiet();
  const resolver = new GatewayResolver({ bootstrap: [up.url], cachePath, clock, log });
  assert.equal(await resolver.resolve(), up.url);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /not valid JSON/);
  const saved = JSON.parse(await Deno.readTextFile(cachePath));
  assert.deepEqual(saved.gateways.map((g: { url: string }) => g.url), [up.url]);
});

Deno.test("after a reported failure the next reachable gateway takes over", async () => {
  await using a = gossipGateway();
  await using b = gossipGateway();
  const cachePath = await cacheWith([
    { url: a.url, last_seen: ago(1) },
    { url: b.url, last_seen: ago(2) },
  ]);
  const resolver = new GatewayResolver({ bootstrap: [], cachePath, clock, ...quiet() });
  assert.equal(await resolver.resolve(), a.url);
  resolver.reportFailure(a.url);
  assert.equal(await resolver.resolve(), b.url);
});

Deno.test("concurrent callers share one connect; no gateway at all is a clear error", async () => {
  await using up = gossipGateway();
  const resolver = new GatewayResolver({ bootstrap: [up.url], clock, ...quiet() });
  const urls = await Promise.all([resolver.resolve(), resolver.resolve(), resolver.resolve()]);
  assert.deepEqual(urls, [up.url, up.url, up.url]);
  assert.equal(up.asked(), 1);

  const empty = new GatewayResolver({ bootstrap: [], clock, ...quiet() });
  await assert.rejects(empty.resolve(), (e: unknown) => {
    assert.ok(e instanceof DaemonError && e.code === "no_gateway");
    assert.match(e.message, /known set is empty/);
    return true;
  });
});
