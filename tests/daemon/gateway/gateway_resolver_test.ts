import assert from "node:assert/strict";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import { GatewayResolver } from "../../../daemon/gateway/gateway_resolver.ts";
import { GatewaySetError } from "../../../daemon/gateway/gateway_url.ts";
import type { NetError } from "../../../errors.ts";
import { closedPort, okJson, serve } from "../../_http.ts";
import { startDaemon } from "../_e2e.ts";

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
  // The bootstrap gateway ranks above cached hearsay (whatever its last_seen) and answers.
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

// Attack: eclipse the daemon's gateway choice with one malicious gateway M.
//
// The set is bounded at 256 entries and, per the module's own doc, "a flood can only displace
// other hearsay" because entries the daemon reached itself are evicted last. But `gateways.json`
// does not keep the `reached` flag: after a restart every entry (and every compiled-in
// bootstrap gateway, added with `last_seen` = 1970) is hearsay again. M answers each gossip
// request with 64 fresh URLs claiming `last_seen` = now (clamped to now, i.e. always the newest),
// and M itself is the most recently reached gateway, so it is asked first on every start.
// Four restarts later the 256 slots hold M's entries, the honest gateways the daemon used before
// are evicted, and the bootstrap list is evicted again the moment it is re-added (it is the
// oldest hearsay). When M then stops answering, the daemon only ever tries M's URLs: a
// persistent denial of service, or, when M's URLs are live attacker gateways, every request of
// the user relayed (and its metadata seen) by the attacker. One contact with M is enough.
Deno.test("gossip from one gateway cannot evict the bootstrap gateways across restarts", async () => {
  let t = Date.parse("2026-11-22T12:00:00Z");
  const clock = () => new Date(t += 1000);
  const dead = closedPort(); // M's entries: distinct URLs that refuse connections at once
  let round = 0;
  let malicious = true;
  await using m = serve(() => {
    if (!malicious) return new Response("gone", { status: 503 });
    round++;
    const stamp = new Date(t + 3_600_000).toISOString(); // "future": clamped to now
    return Response.json({
      gateways: Array.from({ length: 64 }, (_, i) => ({
        url: `http://127.0.0.1:${dead}/m${round}-${i}`,
        last_seen: stamp,
      })),
    });
  });
  let honestUp = true;
  await using honest = serve(() =>
    honestUp
      ? Response.json({ gateways: [{ url: m.url, last_seen: new Date(t).toISOString() }] })
      : new Response("down", { status: 503 })
  );
  const cachePath = `${await Deno.makeTempDir()}/gateways.json`;
  const start = () =>
    new GatewayResolver({
      bootstrap: [honest.url], // the compiled-in list
      cachePath,
      clock,
      timeoutMs: 2000,
      ...quiet(),
    });

  // Session 1: the honest bootstrap gateway is reached; it mentions M (a gateway it heard of).
  assert.equal(await start().resolve(), honest.url);
  // Session 2: the honest gateway has an outage; the daemon fails over to M.
  honestUp = false;
  assert.equal(await start().resolve(), m.url);
  honestUp = true;
  // Sessions 3–5: M is now the most recently seen entry and is asked first every time.
  for (let i = 0; i < 3; i++) assert.equal(await start().resolve(), m.url);
  // M goes away. The honest bootstrap gateway is up and must still be found.
  malicious = false;
  const resolver = start();
  let chosen: string | undefined;
  try {
    chosen = await resolver.resolve();
  } catch (error) {
    chosen = `error: ${(error as NetError).shortMessage}`;
  }
  assert.equal(
    chosen,
    honest.url,
    `the compiled-in bootstrap gateway was evicted by one peer's gossip (known set: ${resolver.known.size} entries, ` +
      `bootstrap present: ${resolver.known.has(honest.url)})`,
  );
});

Deno.test("the daemon's own listen URL (self) never enters its known set", async () => {
  await using up = gossipGateway([
    { url: "http://127.0.0.1:11435", last_seen: ago(1) },
    { url: "http://localhost:11435", last_seen: ago(1) },
    { url: "http://peer-b.example", last_seen: ago(1) },
  ]);
  const resolver = new GatewayResolver({
    bootstrap: [up.url],
    self: "http://127.0.0.1:11435",
    clock,
    ...quiet(),
  });
  assert.equal(await resolver.resolve(), up.url);
  assert.deepEqual(resolver.known.entries().map((e) => e.url), [up.url, "http://peer-b.example"]);
});

Deno.test("a bootstrap gateway that was never reached survives floods from many peers across restarts", async () => {
  let t = now.getTime();
  const tick = () => new Date(t += 1000);
  const down = `http://127.0.0.1:${closedPort()}`; // the bootstrap gateway, down all along
  const dead = closedPort();
  // Ten colluding peers, each listing 64 fresh entries (and each other).
  const peers = await Promise.all(Array.from({ length: 10 }, (_, p) => {
    let round = 0;
    return serve(() => {
      round++;
      return Response.json({
        gateways: Array.from({ length: 64 }, (_, i) => ({
          url: `http://127.0.0.1:${dead}/p${p}-r${round}-${i}`,
          last_seen: new Date(t).toISOString(),
        })),
      });
    });
  }));
  try {
    const cachePath = `${await Deno.makeTempDir()}/gateways.json`;
    await Deno.writeTextFile(
      cachePath,
      JSON.stringify({
        version: 1,
        gateways: peers.map((p) => ({ url: p.url, last_seen: new Date(t).toISOString() })),
      }),
    );
    for (let session = 0; session < 12; session++) {
      const resolver = new GatewayResolver({
        bootstrap: [down],
        cachePath,
        clock: tick,
        timeoutMs: 1000,
        ...quiet(),
      });
      const url = await resolver.resolve();
      resolver.reportFailure(url);
      // Ask every other peer too, as a long-running daemon would over time.
      for (const peer of peers) {
        if (peer.url !== url) await resolver.resolve().then((u) => resolver.reportFailure(u));
      }
      assert.ok(resolver.known.has(down), `session ${session}: the bootstrap gateway was evicted`);
      // It also ranks above every entry this daemon never reached, whatever they claim.
      const unreached = resolver.known.entries().filter((e) => !e.reached);
      assert.equal(unreached[0].url, down, `session ${session}: hearsay ranks above bootstrap`);
      assert.ok(resolver.known.size <= 256 + 1);
    }
  } finally {
    await Promise.all(peers.map((p) => p.close()));
  }
});

Deno.test("periodic gossip picks up a gateway that appears after start, and persists it", async () => {
  let peers: { url: string; last_seen: string }[] = [];
  await using first = serve(() => Response.json({ gateways: peers }));
  const cachePath = `${await Deno.makeTempDir()}/gateways.json`;
  const { log } = quiet();
  const resolver = new GatewayResolver({ bootstrap: [first.url], cachePath, log });
  assert.equal(await resolver.resolve(), first.url);
  assert.equal(resolver.known.size, 1);
  // A gateway that did not exist when the daemon connected.
  await using later = gossipGateway();
  peers = [{ url: later.url, last_seen: new Date().toISOString() }];
  using _gossip = resolver.startGossip({ intervalMs: 20 });
  while (!resolver.known.has(later.url)) await new Promise((r) => setTimeout(r, 10));
  // Merged under the usual rules: hearsay from the gateway that named it, below it in rank.
  const entry = resolver.known.entries().find((e) => e.url === later.url)!;
  assert.equal(entry.reached, false);
  assert.equal(entry.source, first.url);
  resolver.stopGossip();
  await resolver.gossip();
  const cached = JSON.parse(await Deno.readTextFile(cachePath));
  assert.ok(
    cached.gateways.some((g: { url: string }) => g.url === later.url),
    "the union is written back to gateways.json",
  );
});

Deno.test("a gossip round with a gateway that stopped answering moves on to the next one", async () => {
  await using next = gossipGateway();
  const dying = gossipGateway();
  const { log, lines } = quiet();
  const resolver = new GatewayResolver({ bootstrap: [dying.url, next.url], log, timeoutMs: 1000 });
  assert.equal(await resolver.resolve(), dying.url);
  await dying.close();
  await resolver.gossip(); // the current gateway does not answer: it is dropped
  assert.match(lines.join("\n"), /no longer the current gateway/);
  await resolver.gossip(); // no current gateway: connect to the first reachable one
  assert.equal(await resolver.resolve(), next.url);
  assert.throws(() => resolver.startGossip({ intervalMs: 0 }), RangeError);
});

Deno.test("temporary files of interrupted cache writes are removed at start", async () => {
  const dir = await Deno.makeTempDir();
  const cachePath = `${dir}/gateways.json`;
  await Deno.writeTextFile(`${dir}/.gateways.json.0123456789ab.tmp`, '{"version":1,"gat');
  await Deno.writeTextFile(`${dir}/.gateways.json.ffffffffffff.tmp`, "");
  await Deno.writeTextFile(`${dir}/other.tmp`, "not ours");
  const { log, lines } = quiet();
  const resolver = new GatewayResolver({ bootstrap: [], cachePath, log });
  await assert.rejects(resolver.resolve(), DaemonError);
  const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  assert.deepEqual(names, ["other.tmp"]);
  assert.match(lines.join("\n"), /removed 2 temporary file/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a running daemon (Daemon.start) serves on /v1/gateways a gateway that appeared after it started", async () => {
  let peers: { url: string; last_seen: string }[] = [];
  await using first = serve(() => Response.json({ gateways: peers }));
  await using daemon = await startDaemon({ bootstrap: [first.url], gossipIntervalMs: 20 });
  const listed = async () => {
    const body = await okJson(fetch(`${daemon.url}/v1/gateways`));
    return (body.gateways as { url: string }[]).map((g) => g.url);
  };
  daemon.daemon.start();
  try {
    while (!daemon.daemon.resolver.known.entries().some((e) => e.reached)) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await using later = gossipGateway();
    peers = [{ url: later.url, last_seen: new Date().toISOString() }];
    while (!(await listed()).includes(later.url)) await new Promise((r) => setTimeout(r, 10));
  } finally {
    // The gossip round under way (every 20 ms) ends before the servers and the data go.
    await daemon.daemon.close();
  }
});
