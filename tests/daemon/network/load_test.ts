/**
 * The daemon under a burst, against the real devnet on loopback (N providers × 4 slots each,
 * routers, gateways), over real HTTP: as many concurrent chats as slots are all served and spread
 * over every provider; three times as many are all served too, the rest waiting in the queue;
 * a full queue, or a wait past `--queue-timeout-secs`, is `503 overloaded` with `Retry-After` in
 * each dialect's shape.
 */

import assert from "node:assert/strict";
import { startDevnet } from "../../../devnet/network.ts";
import { startDaemon } from "../_e2e.ts";
import { chat, type ChatOutcome, complete, eventually, startStream, words } from "../_load.ts";

const PROVIDERS = 3;
const SLOTS = 4;

function tally(outcomes: readonly ChatOutcome[]) {
  const failures = outcomes.filter((o) => !complete(o));
  const byProvider = new Map<string, number>();
  for (const o of outcomes) {
    if (o.provider) byProvider.set(o.provider, (byProvider.get(o.provider) ?? 0) + 1);
  }
  return { failures, byProvider };
}

Deno.test("a burst of as many chats as slots: none fails, every provider serves its share", async () => {
  await using devnet = await startDevnet({
    verifiedProviders: PROVIDERS,
    teeProviders: 0,
    tokenDelayMs: 20,
  });
  await using daemon = await startDaemon({ gateway: devnet.gateways[0] });
  const burst = PROVIDERS * SLOTS;
  const outcomes = await Promise.all(
    Array.from(
      { length: burst },
      (_, i) => chat(daemon.url, { stream: i % 2 === 0, content: words(12, `b${i}-`) }),
    ),
  );
  const { failures, byProvider } = tally(outcomes);
  assert.deepEqual(failures.map((f) => `${f.status} ${f.body.slice(0, 200)}`), []);
  assert.equal(byProvider.size, PROVIDERS, `served by ${[...byProvider.keys()]}`);
  for (const [provider, served] of byProvider) {
    assert.equal(served, SLOTS, `${provider} served ${served} of the burst, expected ${SLOTS}`);
  }
  assert.deepEqual(daemon.daemon.backend.load, { inFlight: 0, queued: 0 });
});

Deno.test("a burst of three times the slots: none fails, the excess waits in the queue", async () => {
  await using devnet = await startDevnet({
    verifiedProviders: PROVIDERS,
    teeProviders: 0,
    tokenDelayMs: 20,
  });
  await using daemon = await startDaemon({ gateway: devnet.gateways[0] });
  const { backend } = daemon.daemon;
  let peakQueued = 0;
  let peakInFlight = 0;
  const sampler = setInterval(() => {
    peakQueued = Math.max(peakQueued, backend.load.queued);
    peakInFlight = Math.max(peakInFlight, backend.load.inFlight);
  }, 5);
  const burst = 3 * PROVIDERS * SLOTS;
  const outcomes = await Promise.all(
    Array.from({ length: burst }, (_, i) =>
      chat(daemon.url, {
        dialect: i % 3 === 0 ? "ollama" : "openai",
        content: words(10, `q${i}-`),
      })),
  ).finally(() => clearInterval(sampler));
  const failures = outcomes.filter((o, i) => !complete(o, i % 3 === 0 ? "ollama" : "openai"));
  assert.deepEqual(failures.map((f) => `${f.status} ${f.body.slice(0, 200)}`), []);
  assert.ok(peakQueued >= PROVIDERS * SLOTS, `at most ${peakQueued} requests waited`);
  assert.ok(peakInFlight <= PROVIDERS * SLOTS, `${peakInFlight} in flight, more than the slots`);
  for (const { provider } of devnet.providers) {
    assert.equal(provider.inFlight, 0);
  }
});

Deno.test("a full queue and an expired wait are 503 overloaded with Retry-After, in both dialects", async () => {
  await using devnet = await startDevnet({
    verifiedProviders: 1,
    teeProviders: 0,
    tokenDelayMs: 20,
  });
  await using daemon = await startDaemon({ gateway: devnet.gateways[0], maxQueue: 2 });
  const { backend } = daemon.daemon;
  // Every slot is taken by a long reply, and the queue holds its two.
  const holders = await Promise.all(
    Array.from({ length: SLOTS }, () => startStream(daemon.url, { content: words(80) })),
  );
  await eventually(() => backend.load.inFlight === SLOTS, 5000, () => `${backend.load.inFlight}`);
  const queued = [0, 1].map(() => chat(daemon.url, { content: words(3) }));
  await eventually(() => backend.load.queued === 2, 5000, () => `${backend.load.queued} queued`);

  const openai = await chat(daemon.url);
  assert.equal(openai.status, 503);
  assert.match(openai.retryAfter ?? "", /^[1-9][0-9]?$/);
  const error = JSON.parse(openai.body).error;
  assert.equal(error.code, "overloaded");
  assert.equal(error.type, "server_error");
  assert.match(error.message, /requests are waiting already.*--max-queue 2/);
  const ollama = await chat(daemon.url, { dialect: "ollama" });
  assert.equal(ollama.status, 503);
  assert.ok(ollama.retryAfter);
  assert.match(JSON.parse(ollama.body).error, /--max-queue 2/);

  for (const holder of holders) holder.abort.abort();
  for (const outcome of await Promise.all(queued)) {
    assert.ok(complete(outcome), `a queued request failed: ${outcome.status} ${outcome.body}`);
  }

  // A wait longer than --queue-timeout-secs.
  await using impatient = await startDaemon({ gateway: devnet.gateways[0], queueTimeoutSecs: 1 });
  const busy = await Promise.all(
    Array.from({ length: SLOTS }, () => startStream(impatient.url, { content: words(120) })),
  );
  await eventually(
    () => impatient.daemon.backend.load.inFlight === SLOTS,
    5000,
    () => `${impatient.daemon.backend.load.inFlight} in flight`,
  );
  const late = await chat(impatient.url, { dialect: "ollama", stream: false });
  assert.equal(late.status, 503);
  assert.ok(late.retryAfter);
  assert.match(JSON.parse(late.body).error, /every provider stayed at capacity/);
  for (const holder of busy) holder.abort.abort();
  await Promise.all(busy.map((b) => b.done));
});
