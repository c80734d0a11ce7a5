/**
 * Review reproductions for the daemon's gateway gossip (`daemon/gateway_set.ts`,
 * `daemon/gateway_resolver.ts`, `io/fetch_json.ts`).
 *
 * Each test FAILS while the bug it describes exists.
 *
 * @module
 */

import assert from "node:assert/strict";
import { GatewayResolver } from "../../daemon/gateway_resolver.ts";
import { GatewaySet } from "../../daemon/gateway_set.ts";
import type { NetError } from "../../errors.ts";
import { closedPort, serve } from "../_http.ts";

function quiet(): { log: (m: string) => void } {
  return { log: () => {} };
}

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
Deno.test("review: gossip from one gateway cannot evict the bootstrap gateways across restarts", async () => {
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

// Decision (see the report): a gossip peer must not be able to make the daemon contact
// link-local or unspecified addresses. 169.254.0.0/16 (and fe80::/10) is where cloud metadata
// services live (169.254.169.254) and is never a gateway of the network; 0.0.0.0 / [::] mean
// "this host". Loopback stays allowed so the devnet keeps
// working (its gateways are on 127.0.0.1). Today every such URL is merged and later contacted.
Deno.test("review: gossip refuses link-local and unspecified gateway URLs", () => {
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
