/**
 * A client's cancel travels to the provider, against the real devnet on loopback over real
 * HTTP, with a counting TCP proxy between the daemon and the gateway: in both dialects, a chat
 * cancelled 0.1 s in, after seconds of streaming, or while it waits in the queue, frees the
 * provider's slot (its in-flight count back to 0, only what was produced billed; within 1 s on
 * a quiet machine, waited for as a state here),
 * leaves no daemon socket open to the gateway for it, and is logged as one line — a cancel,
 * never a refusal, no stack.
 */

import assert from "node:assert/strict";
import { startDevnet } from "../../../devnet/network.ts";
import { containsBytes, type TcpProxy, tcpProxy } from "../../_tcp_proxy.ts";
import { startDaemon } from "../_e2e.ts";
import { chat, type Dialect, eventually, startStream, words } from "../_load.ts";

const SLOTS = 4;
const RELAY = new TextEncoder().encode("/relay HTTP/1.1");

/** The devnet (one provider, 4 slots), a counting proxy before its gateway, a daemon behind. */
async function setup() {
  const devnet = await startDevnet({ verifiedProviders: 1, teeProviders: 0, tokenDelayMs: 20 });
  const gateway = new URL(devnet.gateways[0]);
  const wire = tcpProxy({ hostname: gateway.hostname, port: Number(gateway.port) });
  const lines: { message: string; error: unknown }[] = [];
  const daemon = await startDaemon({
    gateway: wire.url,
    log: (message: string, error?: unknown) => lines.push({ message, error }),
  });
  const provider = devnet.providers[0].provider;
  return {
    daemon,
    wire,
    provider,
    lines,
    async [Symbol.asyncDispose]() {
      await daemon[Symbol.asyncDispose]();
      await wire.close();
      await devnet.stop();
    },
  };
}

/** The daemon's connections to the gateway that carried a relay (a sealed chat). */
function relays(wire: TcpProxy) {
  return wire.connections().filter((c) => containsBytes(c.sent(), RELAY));
}

/** The slot is free and every socket that relayed is closed (promised within 1 s). */
async function released(s: Awaited<ReturnType<typeof setup>>, label: string) {
  await eventually(
    () => s.provider.inFlight === 0 && relays(s.wire).every((c) => !c.open),
    1000,
    () =>
      `${label}: provider in flight ${s.provider.inFlight}, relay sockets open ${
        relays(s.wire).filter((c) => c.open).length
      } of ${relays(s.wire).length}`,
  );
  assert.deepEqual(s.daemon.daemon.backend.load, { inFlight: 0, queued: 0 }, label);
}

/** Exactly one log line for the cancel, a cancel, with no error attached; nothing refused. */
function loggedOneCancel(lines: { message: string; error: unknown }[], label: string) {
  const cancels = lines.filter((l) => /cancelled by the client/.test(l.message));
  assert.equal(cancels.length, 1, `${label}: ${JSON.stringify(lines.map((l) => l.message))}`);
  assert.equal(cancels[0].error, undefined, `${label}: a cancel is logged without an error`);
  assert.ok(!cancels[0].message.includes("\n"), `${label}: one line`);
  assert.ok(
    !lines.some((l) => /refused|stream_truncated|unexpected/.test(l.message)),
    `${label}: ${JSON.stringify(lines.map((l) => l.message))}`,
  );
}

for (const dialect of ["openai", "ollama"] as const satisfies readonly Dialect[]) {
  for (const [when, afterMs] of [["0.1 s in", 100], ["after 2.5 s of streaming", 2500]] as const) {
    Deno.test(`cancel (${dialect}, ${when}): the provider's slot is freed and no socket stays open`, async () => {
      await using s = await setup();
      const stream = await startStream(s.daemon.url, { dialect, content: words(300) });
      await new Promise((resolve) => setTimeout(resolve, afterMs));
      assert.equal(s.provider.inFlight, 1, "the reply is still being generated");
      const before = s.provider.takeUsage();
      stream.abort.abort();
      const outcome = await stream.done;
      assert.equal(outcome.status, 200);
      await released(s, `${dialect} ${when}`);
      loggedOneCancel(s.lines, `${dialect} ${when}`);
      // Only what was produced is billed: far less than the 300-odd tokens of the whole reply.
      const billed = before.tokens + s.provider.takeUsage().tokens;
      assert.ok(billed > 0n && billed < 300n + 320n, `billed ${billed} tokens`);
      if (afterMs > 1000) assert.ok(billed > 50n, `billed only ${billed} after seconds`);
    });
  }
}

Deno.test("cancel (stream: false, 0.1 s in): the slot is freed and the cancel logged as one line", async () => {
  await using s = await setup();
  const abort = new AbortController();
  const pending = chat(s.daemon.url, {
    stream: false,
    content: words(300),
    signal: abort.signal,
  }).catch((error) => error);
  await eventually(() => s.provider.inFlight === 1, 2000, () => "the provider never started");
  abort.abort();
  assert.equal((await pending as Error).name, "AbortError");
  await released(s, "stream: false");
  loggedOneCancel(s.lines, "stream: false");
});

Deno.test("cancel while queued (both dialects): the request leaves the queue at once and nothing is relayed for it", async () => {
  await using s = await setup();
  const { backend } = s.daemon.daemon;
  const holders = await Promise.all(
    Array.from({ length: SLOTS }, () => startStream(s.daemon.url, { content: words(300) })),
  );
  await eventually(() => s.provider.inFlight === SLOTS, 5000, () => `${s.provider.inFlight}`);
  // Prompts over a kilobyte: their bodies arrive in more than one read (Deno.serve would not
  // notice these clients leaving while they wait; `daemon/service/serve.ts`).
  const queued = (["openai", "ollama"] as const).map((dialect) => {
    const abort = new AbortController();
    const done = chat(s.daemon.url, { dialect, signal: abort.signal, content: words(400) })
      .catch((error) => error);
    return { abort, done };
  });
  await eventually(() => backend.load.queued === 2, 2000, () => `${backend.load.queued} queued`);
  for (const q of queued) q.abort.abort();
  await eventually(() => backend.load.queued === 0, 1000, () => `${backend.load.queued} queued`);
  for (const q of queued) assert.equal((await q.done as Error).name, "AbortError");
  assert.equal(relays(s.wire).length, SLOTS, "only the four holders were relayed");
  assert.equal(s.provider.inFlight, SLOTS, "the holders keep their slots");
  const cancels = s.lines.filter((l) =>
    /cancelled by the client before its reply started/.test(
      l.message,
    )
  );
  assert.equal(cancels.length, 2, JSON.stringify(s.lines.map((l) => l.message)));

  for (const holder of holders) holder.abort.abort();
  await Promise.all(holders.map((h) => h.done));
  await released(s, "holders");
});
