import assert from "node:assert/strict";
import {
  askPeer,
  GATEWAY_LIMITS,
  GatewaySet,
  GatewaySetError,
  loadGatewayCache,
  normalizeGatewayUrl,
  parseGatewayList,
  saveGatewayCache,
} from "../../daemon/gateway_set.ts";
import { closedPort, serve } from "../_http.ts";

const now = new Date("2026-11-22T12:00:00Z");
const clock = () => now;
const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000);

Deno.test("gateway URLs are normalized or refused with the value shown", () => {
  const good: [string, string][] = [
    ["http://127.0.0.1:9201", "http://127.0.0.1:9201"],
    ["http://127.0.0.1:9201/", "http://127.0.0.1:9201"],
    ["HTTPS://Gateway.Example:443/net/", "https://gateway.example/net"],
  ];
  for (const [input, expected] of good) assert.equal(normalizeGatewayUrl(input), expected);
  const bad: [unknown, RegExp][] = [
    ["ftp://example.com", /scheme ftp:/],
    ["javascript:alert(1)", /scheme javascript:/],
    ["file:///etc/passwd", /scheme file:/],
    ["//example.com", /absolute/],
    ["http://user:pw@example.com", /credentials/],
    ["http://example.com/?x=1", /query/],
    ["http://example.com/#x", /fragment/],
    ["http://example.com/" + "a".repeat(2100), /longer than 2048/],
    [42, /expected a string/],
  ];
  for (const [input, message] of bad) {
    assert.throws(() => normalizeGatewayUrl(input), (e: unknown) => {
      assert.ok(e instanceof GatewaySetError && e.reason === "invalid_url");
      assert.match(e.message, message);
      return true;
    });
  }
});

Deno.test("a peer's list is validated entry by entry and capped", () => {
  const { entries, refused } = parseGatewayList({
    gateways: [
      { url: "http://a.example", last_seen: "2026-11-22T11:00:00Z" },
      { url: "gopher://b.example", last_seen: "2026-11-22T11:00:00Z" },
      { url: "http://c.example", last_seen: "yesterday" },
      { url: "http://d.example", last_seen: "2999-01-01T00:00:00Z" },
      "junk",
      null,
    ],
  }, { now });
  assert.deepEqual(entries.map((e) => e.url), ["http://a.example", "http://d.example"]);
  assert.equal(entries[1].lastSeen.getTime(), now.getTime(), "future claims clamp to now");
  assert.equal(refused, 4);
  for (const bad of [null, [], "x", { gateways: {} }, { peers: [] }]) {
    assert.throws(
      () => parseGatewayList(bad, { now }),
      (e: unknown) => e instanceof GatewaySetError && e.reason === "malformed_list",
    );
  }
});

Deno.test("a flood of hearsay never displaces gateways this node reached", () => {
  const set = new GatewaySet({ maxEntries: 8, clock });
  for (let i = 0; i < 4; i++) set.markReached(`http://real-${i}.example`, minutesAgo(60));
  for (let round = 0; round < 20; round++) {
    const junk = Array.from({ length: 5000 }, (_, i) => ({
      url: `http://junk-${round}-${i}.example`,
      last_seen: now.toISOString(),
    }));
    const { added } = set.mergeList({ gateways: junk });
    assert.ok(added <= GATEWAY_LIMITS.maxPerResponse);
  }
  assert.equal(set.size, 8);
  const urls = set.entries().map((e) => e.url);
  for (let i = 0; i < 4; i++) assert.ok(urls.includes(`http://real-${i}.example`));
});

Deno.test("entries are newest first; own URL is never added; lastSeen only moves forward", () => {
  const set = new GatewaySet({ self: "http://me.example/", clock });
  assert.equal(set.add("http://me.example"), false);
  set.add("http://old.example", minutesAgo(30));
  set.markReached("http://new.example", minutesAgo(1));
  set.add("http://old.example", minutesAgo(90));
  assert.deepEqual(set.entries().map((e) => e.url), ["http://new.example", "http://old.example"]);
  assert.equal(set.entries()[1].lastSeen.getTime(), minutesAgo(30).getTime());
  assert.deepEqual(set.toJSON().gateways[0], {
    url: "http://new.example",
    last_seen: minutesAgo(1).toISOString(),
  });
});

Deno.test("the cache file round-trips and a corrupt one is reported, never fatal", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/gateways.json`;
  assert.deepEqual(await loadGatewayCache(path), { entries: [] }, "missing file is no problem");

  const set = new GatewaySet({ clock });
  set.markReached("http://a.example", minutesAgo(2));
  set.add("http://b.example", minutesAgo(5));
  await saveGatewayCache(path, set);
  const loaded = await loadGatewayCache(path, { now });
  assert.equal(loaded.problem, undefined);
  assert.deepEqual(loaded.entries.map((e) => [e.url, e.lastSeen.toISOString()]), [
    ["http://a.example", minutesAgo(2).toISOString()],
    ["http://b.example", minutesAgo(5).toISOString()],
  ]);

  const corrupt: [string, RegExp][] = [
    ["{not json", /not valid JSON/],
    ['{"gateways":[]}', /version/],
    ['{"version":1,"gateways":"x"}', /malformed/],
    [
      '{"version":1,"gateways":[{"url":"ftp://x","last_seen":"2026-01-01T00:00:00Z"}]}',
      /1 invalid/,
    ],
  ];
  for (const [text, problem] of corrupt) {
    await Deno.writeTextFile(path, text);
    const result = await loadGatewayCache(path, { now });
    assert.match(result.problem ?? "", problem, text);
    assert.deepEqual(result.entries, []);
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("askPeer merges a live peer's answer and marks it reached", async () => {
  await using peer = serve(() =>
    Response.json({
      gateways: [{ url: "http://third.example", last_seen: minutesAgo(3).toISOString() }],
    })
  );
  const set = new GatewaySet({ clock });
  assert.deepEqual(await askPeer(set, peer.url), { added: 1, refused: 0 });
  const entries = set.entries();
  assert.equal(entries[0].url, peer.url);
  assert.equal(entries[0].reached, true);
  assert.equal(entries[1].url, "http://third.example");
});

Deno.test("askPeer refuses oversized, malformed and unreachable peers with typed errors", async () => {
  await using huge = serve(() =>
    new Response("x".repeat(GATEWAY_LIMITS.maxResponseBytes + 1), {
      headers: { "content-type": "application/json" },
    })
  );
  await using nonsense = serve(() => Response.json({ hello: "world" }));
  const set = new GatewaySet({ clock });
  const cases: [string, string][] = [
    [huge.url, "unreachable"],
    [nonsense.url, "malformed_list"],
    [`http://127.0.0.1:${closedPort()}`, "unreachable"],
  ];
  for (const [url, reason] of cases) {
    await assert.rejects(askPeer(set, url, { timeoutMs: 1000 }), (e: unknown) => {
      assert.ok(e instanceof GatewaySetError, String(e));
      assert.equal(e.reason, reason, e.message);
      return true;
    });
  }
  assert.equal(set.size, 0, "nothing from a refused peer is kept, the peer itself included");
});

// Attack: a gateway (any entry of the known set, including one learned by gossip) answers
// `GET /v1/gateways` with a redirect. `fetchJson` follows it (fetch's default), so the daemon
// sends a GET to any URL the peer names, with any path, query or credentials — exactly what
// `normalizeGatewayUrl` refuses for gateway URLs — e.g. a router admin page on the user's LAN or
// a cloud metadata endpoint. The answer is not returned to the peer (blind), but GET side effects
// and reachability probing of the user's network are.
Deno.test("gossip requests do not follow a peer's redirect", async () => {
  let internalHits = 0;
  let seenUrl = "";
  await using internal = serve((req) => {
    internalHits++;
    seenUrl = req.url;
    return Response.json({ gateways: [] });
  });
  await using peer = serve(() =>
    new Response(null, {
      status: 302,
      headers: { location: `${internal.url}/cgi-bin/reboot?confirm=1` },
    })
  );
  const set = new GatewaySet();
  await assert.rejects(askPeer(set, peer.url, { timeoutMs: 2000 }), (e: unknown) => {
    assert.ok(e instanceof GatewaySetError && e.reason === "unreachable", String(e));
    assert.match(e.shortMessage, /status 302 \(a redirect to .*\), expected 2xx/);
    return true;
  });
  assert.equal(internalHits, 0, `the daemon followed the peer's redirect to ${seenUrl}`);
  assert.equal(set.size, 0, "a redirecting peer does not count as reached");
});
