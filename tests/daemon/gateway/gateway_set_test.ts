import assert from "node:assert/strict";
import { loadGatewayCache, saveGatewayCache } from "../../../daemon/gateway/gateway_cache.ts";
import { parseGatewayList } from "../../../daemon/gateway/gateway_list.ts";
import { askPeer } from "../../../daemon/gateway/gateway_peer.ts";
import { GatewaySet } from "../../../daemon/gateway/gateway_set.ts";
import {
  GATEWAY_LIMITS,
  GatewaySetError,
  normalizeGatewayUrl,
} from "../../../daemon/gateway/gateway_url.ts";
import { closedPort, serve } from "../../_http.ts";

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

// Decision (security review): a gossip peer must not be able to make the daemon contact
// link-local or unspecified addresses. 169.254.0.0/16 (and fe80::/10) is where cloud metadata
// services live (169.254.169.254) and is never a gateway of the network; 0.0.0.0 / [::] mean
// "this host". Loopback stays allowed so the devnet keeps
// working (its gateways are on 127.0.0.1). Today every such URL is merged and later contacted.
Deno.test("gossip refuses link-local and unspecified gateway URLs", () => {
  const set = new GatewaySet({ clock: () => new Date("2026-11-22T12:00:00Z") });
  const last_seen = "2026-11-22T11:00:00Z";
  const result = set.mergeList({
    gateways: [
      { url: "http://169.254.169.254", last_seen },
      { url: "http://[fe80::1]:8080", last_seen },
      { url: "http://0.0.0.0:11434", last_seen },
      { url: "http://[::]:8545", last_seen },
    ],
  });
  assert.deepEqual(
    set.entries().map((e) => e.url),
    [],
    `merged ${result.added} link-local/unspecified URLs into the known set`,
  );
});

Deno.test("ranking follows this node's own reach history, never a peer's claims", () => {
  const set = new GatewaySet({ clock });
  set.add("http://boot.example", new Date(0), { permanent: true });
  // Hearsay claiming "seen just now" ranks below the bootstrap entry all the same.
  set.mergeList(
    { gateways: [{ url: "http://claims-fresh.example", last_seen: now.toISOString() }] },
    { source: "http://peer.example" },
  );
  set.mergeList(
    { gateways: [{ url: "http://claims-old.example", last_seen: minutesAgo(600).toISOString() }] },
    { source: "http://peer.example" },
  );
  set.markReached("http://reached-long-ago.example", minutesAgo(300));
  set.markReached("http://reached-lately.example", minutesAgo(5));
  // A peer repeating an old entry with a fresh claim does not lift it above what we reached.
  set.mergeList(
    { gateways: [{ url: "http://reached-long-ago.example", last_seen: now.toISOString() }] },
    { source: "http://peer.example" },
  );
  assert.deepEqual(set.entries().map((e) => [e.url, e.reached, e.permanent]), [
    ["http://reached-lately.example", true, false],
    ["http://reached-long-ago.example", true, false],
    ["http://boot.example", false, true],
    ["http://claims-fresh.example", false, false],
    ["http://claims-old.example", false, false],
  ]);
  assert.equal(set.entries()[3].source, "http://peer.example");
  // The wire format of GET /v1/gateways stays {url, last_seen}.
  for (const entry of set.toJSON().gateways) {
    assert.deepEqual(Object.keys(entry).sort(), ["last_seen", "url"]);
  }
});

Deno.test("permanent entries (bootstrap, pinned) are never evicted, not even by reached ones", () => {
  const set = new GatewaySet({ maxEntries: 4, clock });
  for (const name of ["boot-1", "boot-2", "pinned"]) {
    set.add(`http://${name}.example`, new Date(0), { permanent: true });
  }
  for (let i = 0; i < 10; i++) set.markReached(`http://reached-${i}.example`, minutesAgo(60 - i));
  for (let round = 0; round < 5; round++) {
    set.mergeList({
      gateways: Array.from({ length: 64 }, (_, i) => ({
        url: `http://flood-${round}-${i}.example`,
        last_seen: now.toISOString(),
      })),
    }, { source: `http://peer-${round}.example` });
  }
  const urls = set.entries().map((e) => e.url);
  assert.equal(set.size, 4);
  for (const name of ["boot-1", "boot-2", "pinned"]) {
    assert.ok(urls.includes(`http://${name}.example`));
  }
  // The one slot left holds the most recently reached gateway; hearsay went first.
  assert.ok(urls.includes("http://reached-9.example"), urls.join(" "));
  // Only permanent entries may exceed the bound.
  const tight = new GatewaySet({ maxEntries: 1, clock });
  tight.add("http://a.example", new Date(0), { permanent: true });
  tight.add("http://b.example", new Date(0), { permanent: true });
  assert.equal(tight.add("http://c.example", now), false, "hearsay does not fit");
  assert.equal(tight.markReached("http://d.example"), false, "nor does a reached entry");
  assert.deepEqual(tight.entries().map((e) => e.url), ["http://a.example", "http://b.example"]);
  // add() marks an existing entry permanent.
  const upgrade = new GatewaySet({ clock });
  upgrade.add("http://x.example", minutesAgo(1));
  upgrade.add("http://x.example", new Date(0), { permanent: true });
  assert.equal(upgrade.entries()[0].permanent, true);
});

Deno.test("one peer contributes at most maxPerSource hearsay entries and only displaces its own", () => {
  assert.equal(GATEWAY_LIMITS.maxPerSource, 32);
  const set = new GatewaySet({ maxEntries: 64, clock });
  const honest = Array.from({ length: 20 }, (_, i) => ({
    url: `http://honest-${i}.example`,
    last_seen: minutesAgo(120).toISOString(), // older claims than the flood's
  }));
  set.mergeList({ gateways: honest }, { source: "http://honest-peer.example" });
  for (let round = 0; round < 10; round++) {
    const { added } = set.mergeList({
      gateways: Array.from({ length: 64 }, (_, i) => ({
        url: `http://m-${round}-${i}.example`,
        last_seen: now.toISOString(),
      })),
    }, { source: "http://malicious.example" });
    assert.ok(added <= 32, `round ${round}: ${added} entries kept from one response`);
  }
  const entries = set.entries();
  const fromM = entries.filter((e) => e.source === "http://malicious.example");
  assert.equal(fromM.length, 32, "the flooding peer is capped");
  assert.ok(fromM.every((e) => e.url.startsWith("http://m-9-")), "it displaced its own entries");
  assert.equal(entries.filter((e) => e.url.startsWith("http://honest-")).length, 20);
  // When the set is full, the peer holding the most hearsay loses first.
  const full = new GatewaySet({ maxEntries: 40, maxPerSource: 32, clock });
  full.mergeList({ gateways: honest }, { source: "http://honest-peer.example" });
  full.mergeList({
    gateways: Array.from({ length: 64 }, (_, i) => ({
      url: `http://m-${i}.example`,
      last_seen: now.toISOString(),
    })),
  }, { source: "http://malicious.example" });
  assert.equal(full.size, 40);
  assert.equal(full.entries().filter((e) => e.url.startsWith("http://honest-")).length, 20);
  assert.throws(() => new GatewaySet({ maxPerSource: 0 }), RangeError);
});

Deno.test("reach times and sources survive a restart; a peer cannot claim reached_at", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/gateways.json`;
  const set = new GatewaySet({ clock });
  set.markReached("http://mine.example", minutesAgo(10));
  set.add("http://mine.example", minutesAgo(2)); // a later claim does not move the reach time
  set.mergeList({
    gateways: [{ url: "http://heard.example", last_seen: minutesAgo(1).toISOString() }],
  }, { source: "http://peer.example" });
  set.add("http://boot.example", new Date(0), { permanent: true });
  await saveGatewayCache(path, set);
  const saved = JSON.parse(await Deno.readTextFile(path));
  assert.deepEqual(saved, {
    version: 1,
    gateways: [
      {
        url: "http://mine.example",
        last_seen: minutesAgo(2).toISOString(),
        reached_at: minutesAgo(10).toISOString(),
      },
      { url: "http://boot.example", last_seen: new Date(0).toISOString() },
      {
        url: "http://heard.example",
        last_seen: minutesAgo(1).toISOString(),
        source: "http://peer.example",
      },
    ],
  });
  const { entries, problem } = await loadGatewayCache(path, { now });
  assert.equal(problem, undefined);
  assert.deepEqual(
    entries.map((e) => [e.url, e.reachedAt?.toISOString(), e.source]),
    [
      ["http://mine.example", minutesAgo(10).toISOString(), undefined],
      ["http://boot.example", undefined, undefined],
      ["http://heard.example", undefined, "http://peer.example"],
    ],
  );
  // Gossip carries url and last_seen only: a claimed reached_at is ignored.
  const gossip = parseGatewayList({
    gateways: [{ url: "http://liar.example", last_seen: now.toISOString(), reached_at: "x" }],
  }, { now, source: "http://peer.example" });
  assert.equal(gossip.entries[0].reached, false);
  assert.equal(gossip.entries[0].reachedAt, undefined);
  // A cache entry with a bad reached_at or source is dropped and reported.
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      version: 1,
      gateways: [
        { url: "http://a.example", last_seen: now.toISOString(), reached_at: "yesterday" },
        { url: "http://b.example", last_seen: now.toISOString(), source: "ftp://x" },
        { url: "http://127.0.0.1:1", last_seen: now.toISOString(), source: "http://pub.example" },
        { url: "http://c.example", last_seen: now.toISOString() },
      ],
    }),
  );
  const partial = await loadGatewayCache(path, { now });
  assert.deepEqual(partial.entries.map((e) => e.url), ["http://c.example"]);
  assert.match(partial.problem ?? "", /3 invalid entries dropped/);
  await Deno.remove(dir, { recursive: true });
});

// Attack: a public gateway lists loopback and LAN addresses, so that the daemon (which asks
// each entry for its peers) probes and sends requests to services on the user's machine and
// network (the browser's Private Network Access threat). Only a peer that is itself at least
// as private may introduce them; the all-loopback devnet keeps working.
Deno.test("a peer may only introduce IP literals at most as private as itself", () => {
  const last_seen = now.toISOString();
  const targets = [
    "http://gateway.example", // a DNS name: public
    "http://8.8.8.8:9201", // public
    "http://192.168.1.1:9201", // private
    "http://10.0.0.7", // private
    "http://[fd00::7]:9201", // private
    "http://127.0.0.1:9201", // loopback
    "http://localhost:9201", // loopback
    "http://[::1]:9201", // loopback
  ];
  const accepted = (source: string | undefined) =>
    parseGatewayList({ gateways: targets.map((url) => ({ url, last_seen })) }, { now, source })
      .entries.map((e) => e.url);
  const publicOnly = ["http://gateway.example", "http://8.8.8.8:9201"];
  const upToPrivate = [
    ...publicOnly,
    "http://192.168.1.1:9201",
    "http://10.0.0.7",
    "http://[fd00::7]:9201",
  ];
  assert.deepEqual(accepted("https://gw.example"), publicOnly);
  assert.deepEqual(accepted("http://203.0.113.9:9201"), publicOnly);
  assert.deepEqual(accepted(undefined), publicOnly, "an anonymous peer counts as public");
  assert.deepEqual(accepted("http://192.168.1.20:9201"), upToPrivate);
  assert.deepEqual(accepted("http://127.0.0.1:8701"), targets.map(normalizeGatewayUrl));
  assert.deepEqual(accepted("http://localhost:8701"), targets.map(normalizeGatewayUrl));

  const set = new GatewaySet({ clock });
  assert.throws(
    () => set.add("http://127.0.0.1:9", now, { source: "https://gw.example" }),
    (e: unknown) => {
      assert.ok(e instanceof GatewaySetError && e.reason === "invalid_url");
      assert.match(e.shortMessage, /a public peer cannot introduce a loopback address/);
      return true;
    },
  );
  const { added, refused } = set.mergeList(
    { gateways: targets.map((url) => ({ url, last_seen })) },
    { source: "https://gw.example" },
  );
  assert.deepEqual([added, refused], [2, 6]);
});

Deno.test("this node's own URL is never added, in any loopback spelling", () => {
  const set = new GatewaySet({ self: "http://127.0.0.1:11435", clock });
  const last_seen = now.toISOString();
  const { added } = set.mergeList({
    gateways: [
      { url: "http://127.0.0.1:11435", last_seen },
      { url: "http://localhost:11435/", last_seen },
      { url: "http://[::1]:11435", last_seen },
      { url: "http://127.0.0.1:11436", last_seen }, // another port: another node
      { url: "https://127.0.0.1:11435", last_seen }, // another scheme
    ],
  }, { source: "http://127.0.0.1:8701" });
  assert.equal(added, 2);
  assert.deepEqual(set.entries().map((e) => e.url).sort(), [
    "http://127.0.0.1:11436",
    "https://127.0.0.1:11435",
  ]);
  assert.equal(set.markReached("http://localhost:11435"), false);
});
