/**
 * The change stream `GET /events` (`indexer/events.ts`): over a real socket, in front of a real
 * refresher on a real anvil, every change arrives as its event — a new snapshot, a provider
 * leaving and joining the live-verified set, a tampered entry failing verification, an epoch
 * closing, the settlement history moving — counted by type; a client that drops the stream and
 * reconnects with `Last-Event-ID` gets exactly the events it missed, in order; one too far
 * behind gets `reset`. Streams end when the events close (a graceful shutdown).
 */

import assert from "node:assert/strict";
import type { ProviderAd } from "../../chain/ad.ts";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { IndexerEvents } from "../../indexer/events.ts";
import { Refresher } from "../../indexer/refresher.ts";
import { parseSse, type SseEvent } from "../../io/sse.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { serve } from "../_http.ts";
import { routerEntry } from "./_network.ts";
import { freshDataDir } from "./_stores.ts";
import { waitFor } from "../_wait.ts";

/**
 * A client of the stream: every event it has read, and its reader. The body is piped into a
 * stream of the test's own, so closing the client ends both the connection and the reading at
 * once, whatever the fetch's abort does to a read already waiting.
 */
async function connect(url: string, lastEventId?: string) {
  const abort = new AbortController();
  const response = await fetch(`${url}/events`, {
    headers: lastEventId === undefined ? {} : { "last-event-id": lastEventId },
    signal: abort.signal,
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(response.headers.get("access-control-allow-origin"), "*");
  const own = new TransformStream<Uint8Array, Uint8Array>();
  response.body!.pipeTo(own.writable, { signal: abort.signal }).catch(() => {});
  const events: SseEvent[] = [];
  let closed = false;
  const reading = (async () => {
    for await (const event of parseSse(own.readable)) events.push(event);
    closed = true;
  })();
  /** Waits until an event matches (reading on meanwhile); fails if the stream ends first. */
  const until = (what: string, match: (e: SseEvent) => boolean) =>
    waitFor(`the ${what} event`, () => events.find(match), {
      everyMs: 10,
      failed: () =>
        closed ? `the stream ended; it gave ${events.map((e) => e.event).join(", ")}` : undefined,
    });
  return {
    events,
    until,
    get closed() {
      return closed;
    },
    close: async () => {
      abort.abort();
      await reading.catch(() => {});
    },
    reading,
  };
}

const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);

Deno.test("GET /events: every change as it happens; Last-Event-ID replays what was missed", async (t) => {
  let entries: unknown[] = [];
  await using router = serve(() => Response.json({ ads: entries }));
  await using chain = await startChainFixture({ providers: 10, routerUrls: [router.url] });
  const bonded = chain.plan.providers.filter((p) =>
    chain.expected.state.providers.find((s) => s.address === p.address)?.bonded
  );
  entries = bonded.map(routerEntry);
  const events = new IndexerEvents({ capacity: 50 });
  await using refresher = new Refresher({
    rpcUrl: chain.anvil.rpcUrl,
    contracts: chain.contracts,
    confirmations: 0,
    scanFromBlock: chain.deployment.fromBlock,
    client: { retryCount: 0 },
    history: { dataDir: await freshDataDir() },
    events,
    tee: false,
    log: () => {},
  });
  await using server = serve(createIndexerHandler({
    state: () => refresher.state,
    events,
    log: () => {},
  }));
  const client = await connect(server.url);
  const ready = await client.until("ready", (e) => e.event === "ready");
  assert.deepEqual(JSON.parse(ready.data), { type: "ready", last_id: 0 });

  await t.step("a snapshot, then the history moving", async () => {
    await refresher.refresh();
    await refresher.syncHistory();
    const snapshot = await client.until("snapshot", (e) => e.event === "snapshot");
    const data = JSON.parse(snapshot.data);
    assert.equal(data.live_verified, bonded.length);
    assert.equal(snapshot.id, "1");
    await client.until("settlements", (e) => e.event === "settlements");
  });

  await t.step("a provider leaving, a tampered entry, the provider back", async () => {
    const [first] = bonded;
    const tampered = routerEntry(first);
    (tampered.ad as ProviderAd).models[0].prices.input = "1";
    entries = [tampered, ...bonded.slice(1).map(routerEntry)];
    await refresher.refresh();
    const left = await client.until("provider_left", (e) => e.event === "provider_left");
    assert.deepEqual(
      [JSON.parse(left.data).provider, JSON.parse(left.data).reason],
      [first.address.toLowerCase(), "commitment_mismatch"],
    );
    const rejected = JSON.parse(
      (await client.until("provider_rejected", (e) => e.event === "provider_rejected")).data,
    );
    assert.equal(rejected.reason, "commitment_mismatch");
    entries = bonded.map(routerEntry);
    await refresher.refresh();
    const joined = await client.until("provider_joined", (e) => e.event === "provider_joined");
    assert.equal(JSON.parse(joined.data).provider, first.address.toLowerCase());
  });

  await t.step("an epoch closing", async () => {
    const length = Number(chain.expected.state.emission.schedule.epochLength);
    await chain.rpc("evm_increaseTime", [length]);
    await chain.rpc("evm_mine");
    await refresher.refresh();
    const closed = JSON.parse(
      (await client.until("epoch_closed", (e) => e.event === "epoch_closed")).data,
    );
    assert.equal(BigInt(closed.next_epoch), BigInt(closed.epoch) + 1n);
  });

  await t.step("ids increase by one; a reconnect gets exactly what it missed", async () => {
    const seen = client.events.filter((e) => e.id !== undefined && e.event !== "ready");
    assert.deepEqual(
      seen.map((e) => Number(e.id)),
      Array.from({ length: seen.length }, (_, i) => i + 1),
    );
    const counts = Object.fromEntries(
      ["snapshot", "provider_left", "provider_rejected", "provider_joined", "epoch_closed"].map(
        (type) => [type, of(client.events, type).length],
      ),
    );
    assert.deepEqual(counts, {
      snapshot: 4,
      provider_left: 1,
      provider_rejected: 1,
      provider_joined: 1,
      epoch_closed: 1,
    });
    const lastId = seen.at(-1)!.id!;
    await client.close();
    // Changes while the client is away.
    await chain.rpc("evm_mine");
    await refresher.refresh();
    await refresher.syncHistory();
    const missed = events.lastId - Number(lastId);
    assert.ok(missed >= 1);
    const again = await connect(server.url, lastId);
    await again.until(
      "the missed events",
      () => again.events.filter((e) => e.id !== undefined).length >= missed,
    );
    const replayed = again.events.filter((e) => e.id !== undefined);
    assert.deepEqual(
      replayed.map((e) => Number(e.id)),
      Array.from({ length: missed }, (_, i) => Number(lastId) + 1 + i),
    );
    assert.ok(replayed.some((e) => e.event === "snapshot"), "the missed snapshot");
    // Live events keep coming on the new stream.
    await refresher.refresh();
    await again.until("a live snapshot", (e) => Number(e.id) > Number(lastId) + missed);
    await again.close();
  });

  await t.step("too far behind: reset; a bad id: 400", async () => {
    // More events than are kept (50) since event 1.
    for (let i = 0; i < 50; i++) {
      events.publish("health", { failing: false, code: null, message: null });
    }
    const old = await connect(server.url, "1");
    const reset = await old.until("reset", (e) => e.event === "reset");
    assert.match(JSON.parse(reset.data).reason, /no longer kept/);
    await old.close();
    const bad = await fetch(`${server.url}/events`, { headers: { "last-event-id": "x" } });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.code, "invalid_request");
  });

  await t.step("closing the events ends every open stream", async () => {
    const open = await connect(server.url);
    await open.until("ready", (e) => e.event === "ready");
    events.close();
    await open.reading;
    assert.equal(open.closed, true);
    const refused = await fetch(`${server.url}/events`);
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).error.code, "too_many_streams");
  });
});

Deno.test("IndexerEvents keeps the last events for reconnects, and no more streams than allowed", async () => {
  const events = new IndexerEvents({ capacity: 3, maxStreams: 1 });
  for (let i = 0; i < 5; i++) {
    events.publish("epoch_closed", { epoch: String(i), next_epoch: String(i + 1) });
  }
  assert.deepEqual(events.since(2)!.map((e) => e.id), [3, 4, 5]);
  assert.deepEqual(events.since(4)!.map((e) => e.id), [5]);
  assert.deepEqual(events.since(5), []);
  assert.equal(events.since(1), null, "event 2 is no longer kept");
  assert.equal(events.since(9), null, "an id from another process");
  const stream = events.stream(3)!;
  assert.ok(stream);
  assert.equal(events.stream(null), null, "one stream at most");
  const reader = stream.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  assert.match(first, /^retry: 3000\nevent: ready\n/);
  const replay = [
    new TextDecoder().decode((await reader.read()).value),
    new TextDecoder().decode((await reader.read()).value),
  ];
  assert.match(replay[0], /^id: 4\nevent: epoch_closed\n/);
  assert.match(replay[1], /^id: 5\nevent: epoch_closed\n/);
  events.close();
  assert.equal((await reader.read()).done, true);
});
