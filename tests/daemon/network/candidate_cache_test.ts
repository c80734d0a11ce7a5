import assert from "node:assert/strict";
import { CandidateCache } from "../../../daemon/network/candidate_cache.ts";
import type { GatewayClient, ProviderCandidate } from "../../../daemon/gateway/gateway_client.ts";

/** A gateway whose `/v1/providers` answers are counted and can be held back or failed. */
function gateway() {
  let calls = 0;
  let release: (() => void) | undefined;
  let fail = false;
  const client = {
    url: "http://gateway.test",
    providers(): Promise<ProviderCandidate[]> {
      const n = ++calls;
      return new Promise((resolve, reject) => {
        const answer = () =>
          fail
            ? reject(new Error("gateway down"))
            : resolve([{ provider: `0x${n}` } as unknown as ProviderCandidate]);
        if (release === undefined) answer();
        else release = answer;
      });
    },
  } as unknown as GatewayClient;
  return {
    client,
    calls: () => calls,
    hold: () => (release = () => {}),
    release: () => {
      const pending = release;
      release = undefined;
      pending?.();
    },
    failing: (value: boolean) => (fail = value),
  };
}

const REQUEST = { model: "devnet/echo", tier: "verified" } as const;
const signal = new AbortController().signal;
const first = (list: readonly ProviderCandidate[]) => list[0]?.provider;

Deno.test("candidate cache: a fresh list costs no gateway round trip; a stale one is refreshed in the background", async () => {
  let now = 0;
  let refreshed = 0;
  const cache = new CandidateCache({ now: () => now, onRefresh: () => refreshed++ });
  const g = gateway();
  assert.equal(first(await cache.get(g.client, REQUEST, signal)), "0x1");
  now = 1999;
  assert.equal(first(await cache.get(g.client, REQUEST, signal)), "0x1");
  assert.equal(g.calls(), 1, "fresh for 2 s");

  now = 2000;
  g.hold();
  assert.equal(first(await cache.get(g.client, REQUEST, signal)), "0x1", "stale is used at once");
  assert.equal(g.calls(), 2, "while a refresh runs");
  assert.equal(first(await cache.get(g.client, REQUEST, signal)), "0x1");
  assert.equal(g.calls(), 2, "one refresh at a time");
  g.release();
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(first(cache.peek(g.client.url, REQUEST.model, REQUEST.tier)!), "0x2");
  assert.equal(refreshed, 2, "each list read announces itself");

  now = 2000 + 30_000;
  assert.equal(first(await cache.get(g.client, REQUEST, signal)), "0x3", "too old: read now");
  assert.equal(first(await cache.get(g.client, { ...REQUEST, fresh: true }, signal)), "0x4");
});

Deno.test("candidate cache: lists are kept per gateway, model and tier; a failure caches nothing", async () => {
  const cache = new CandidateCache();
  const g = gateway();
  await cache.get(g.client, REQUEST, signal);
  await cache.get(g.client, { ...REQUEST, tier: "tee" }, signal);
  await cache.get(g.client, { ...REQUEST, model: "devnet/other" }, signal);
  assert.equal(g.calls(), 3);
  g.failing(true);
  await assert.rejects(cache.get(g.client, { ...REQUEST, model: "devnet/new" }, signal), /down/);
  assert.equal(cache.peek(g.client.url, "devnet/new", "verified"), undefined);
  g.failing(false);
  assert.equal(
    first(await cache.get(g.client, { ...REQUEST, model: "devnet/new" }, signal)),
    "0x5",
  );
});

Deno.test("candidate cache: a caller that goes away stops waiting; the shared read goes on for the others", async () => {
  const cache = new CandidateCache();
  const g = gateway();
  g.hold();
  const leaving = new AbortController();
  const gone = cache.get(g.client, REQUEST, leaving.signal);
  const staying = cache.get(g.client, REQUEST, signal);
  leaving.abort(new Error("client gone"));
  await assert.rejects(gone, /client gone/);
  g.release();
  assert.equal(first(await staying), "0x1");
  assert.equal(g.calls(), 1);
});
