/**
 * What the daemon's sealing costs, measured in one run on one machine:
 *
 * 1. **Latency added by the verified tier**: the same chat request to the same provider
 *    through the same gateway, (a) in plaintext through a local relay (an HTTP server as the
 *    daemon's, `daemon/service/serve.ts`, that forwards the plain JSON to the gateway's relay and
 *    passes the reply back: the same hops as the daemon's), (b) through the network backend
 *    (endorsement check, sealing, opening), (c) through the daemon's HTTP API. p50 and p99
 *    over many requests, with ratios against (a).
 * 2. **Streaming throughput**: tokens/s of a long streamed reply, sealed through the daemon
 *    against plaintext through the local relay and the gateway.
 * 3. **TEE attestation per request**: a TEE-tier request (fresh nonce, synthetic TDX quote
 *    built by the provider, full verification) against a verified-tier one, and
 *    `verifyAttestation` alone.
 *
 * The plaintext baseline is served by a bench-only wrapper around the same provider: a relay
 * body that is plain JSON is answered by the same engine without sealing.
 *
 * Run: `deno task bench` (or `deno bench -A bench/daemon_bench.ts`).
 *
 * @module
 */

import { setImmediate } from "node:timers";
import { privateKeyToAccount } from "viem/accounts";
import {
  ApprovedMeasurements,
  attestationBundleFromJson,
  createGatewayKey,
  generateKeyPair,
  NonceBook,
  verifyAttestation,
} from "../crypto/mod.ts";
import type { DaemonConfig } from "../daemon/service/config.ts";
import { createDaemon } from "../daemon/service/daemon.ts";
import { serveDaemon } from "../daemon/service/serve.ts";
import { GatewaySet } from "../daemon/gateway/gateway_set.ts";
import { EchoEngine } from "../devnet/engine.ts";
import { createGatewayHandler, type DirectoryEntry } from "../devnet/gateway.ts";
import { DevnetProvider } from "../devnet/provider.ts";
import { measurementsFile, syntheticTee } from "../tests/daemon/_e2e.ts";
import { serve } from "../tests/_http.ts";

const ROUNDS = 200;
const encoder = new TextEncoder();
const LONG_REPLY_WORDS = 4000;

// --- A controlled network: one verified and one TEE provider, one gateway, the daemon. -------

const engine = new EchoEngine({ tokenDelayMs: 0, servedBy: "the bench" });
const tee = await syntheticTee();

async function provider(tier: "verified" | "tee", index: number) {
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const p = await DevnetProvider.create({
    provider: privateKeyToAccount(`0x${String(index + 1).padStart(64, "0")}`).address,
    servingKey: privateKeyToAccount(`0x${String(index + 7).padStart(64, "0")}`),
    tier,
    endpoint: server.url,
    engine,
    key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
    maxConcurrency: 64,
    attester: tier === "tee" ? tee.attester : undefined,
    log: () => {},
  });
  // Bench-only: a plain JSON relay body is answered by the same engine, unsealed.
  handler = async (req) => {
    if (new URL(req.url).pathname !== "/v1/relay") return p.handler(req);
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes[0] !== 0x7b /* "{" */) {
      return p.handler(new Request(req.url, { method: "POST", headers: req.headers, body: bytes }));
    }
    const body = JSON.parse(new TextDecoder().decode(bytes));
    const chunks = engine.complete(body, req.signal)[Symbol.asyncIterator]();
    // The events ready together go out together, as the sealed provider batches them into one
    // sealed chunk (`devnet/provider_chat.ts`): the baseline gets the same fewer, larger writes.
    let pending: Promise<IteratorResult<unknown>> | undefined;
    let finished = false;
    const render = (r: IteratorResult<unknown>) => {
      finished ||= r.done === true;
      return r.done ? "data: [DONE]\n\n" : `data: ${JSON.stringify(r.value)}\n\n`;
    };
    return new Response(
      new ReadableStream({
        async pull(controller) {
          let batch = render(await (pending ?? chunks.next()));
          pending = undefined;
          const tick = new Promise<"tick">((resolve) => setImmediate(() => resolve("tick")));
          while (!finished && batch.length < 16 * 1024) {
            const step = chunks.next();
            const ready = await Promise.race([step, tick]);
            if (ready === "tick") {
              pending = step;
              break;
            }
            batch += render(ready);
          }
          controller.enqueue(encoder.encode(batch));
          if (finished) controller.close();
        },
      }),
      { headers: { "content-type": "message/ohttp-chunked-res" } },
    );
  };
  return { server, p };
}

const verified = await provider("verified", 0);
const attested = await provider("tee", 1);
const entries: DirectoryEntry[] = [verified.p, attested.p].map((p) => ({
  provider: p.ad.provider,
  tier: p.ad.tier,
  ad: p.ad,
  capacity: { max_concurrency: 64, available_concurrency: 64 },
  metrics: { tokens_per_sec: 0 },
}));
let gatewayHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
const gateway = serve((req) => gatewayHandler(req));
gatewayHandler = createGatewayHandler({
  directory: { entries: () => entries },
  peers: new GatewaySet(),
  self: gateway.url,
});

let daemonHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
const daemonServer = serve((req) => daemonHandler(req));
const config: DaemonConfig = {
  bind: { hostname: "127.0.0.1", port: daemonServer.port },
  gateway: gateway.url,
  dataDir: await Deno.makeTempDir(),
  network: null,
  bootstrap: [],
  // No chain here: the keys are the gateway's listing, as this benchmark always measured.
  evm: null,
  insecureGatewayKeys: true,
  chainGraceSecs: 600,
  auth: { required: false, apiKey: null, apiKeyFile: null },
  measurementsFile: await measurementsFile(tee.measurementIds),
  allowedOrigins: [],
  allowedHosts: [],
  maxBodyBytes: 4 << 20,
  maxQueue: 512,
  queueTimeoutSecs: 120,
  logFormat: "human",
  consumerKeyFile: null,
  maxSpend: null,
};
const daemon = createDaemon(config, {
  port: daemonServer.port,
  roots: tee.pki.roots,
  log: () => {},
});
daemonHandler = daemon.handler;

// --- The three ways to ask. ---------------------------------------------------------------------

const question = (words = 8) => ({
  model: "devnet/echo",
  messages: [{
    role: "user",
    content: Array.from({ length: words }, (_, i) => `word${i}`).join(" "),
  }],
});

// The baseline's local hop: what the daemon is to a client (an HTTP server on loopback that
// forwards the chat to the gateway), without the sealing, the trust checks and the re-rendering.
const plainRelay = await serveDaemon(async (req) => {
  const upstream = await fetch(`${gateway.url}/v1/providers/${verified.p.ad.provider}/relay`, {
    method: "POST",
    headers: { "content-type": "message/ohttp-chunked-req" },
    body: new Uint8Array(await req.arrayBuffer()),
  });
  return new Response(upstream.body, { headers: { "content-type": "text/event-stream" } });
}, { hostname: "127.0.0.1", port: 0 });

/** (a) Plaintext through the local relay and the gateway; returns the reply's token count. */
async function plaintext(words = 8): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${plainRelay.port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...question(words), stream: true }),
  });
  const text = await res.text();
  return text.split("\n\n").length;
}

/** (b) The network backend: trust, seal, relay, open. */
async function backend(words = 8): Promise<number> {
  const reply = await daemon.backend.chat({
    tier: "verified",
    model: "devnet/echo",
    body: { ...question(words), stream: true, stream_options: { include_usage: true } },
  }, new AbortController().signal);
  let n = 0;
  for await (const _ of reply.chunks) n++;
  return n;
}

/** (c) The daemon's HTTP API (OpenAI dialect). */
async function viaDaemon(tier: "verified" | "tee", stream: boolean, words = 8): Promise<number> {
  const res = await fetch(`${daemonServer.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...question(words), model: `net/${tier}/devnet/echo`, stream }),
  });
  if (!res.ok) throw new Error(`daemon answered ${res.status}: ${await res.text()}`);
  const text = await res.text();
  return stream ? text.split("\n\n").length : 1;
}

// --- Measurements. --------------------------------------------------------------------------------

async function percentiles(run: () => Promise<unknown>, rounds = ROUNDS) {
  for (let i = 0; i < 10; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(rounds * 0.5)], p99: times[Math.floor(rounds * 0.99)] };
}

const ms = (x: number) => `${x.toFixed(2)} ms`;
const ratio = (x: number, base: number) => `${(x / base).toFixed(2)}×`;

const plain = await percentiles(() => plaintext());
const sealed = await percentiles(() => backend());
const api = await percentiles(() => viaDaemon("verified", false));
console.log(
  `\nLatency of one short chat request (${ROUNDS} rounds each, same provider and gateway):`,
);
console.table({
  "plaintext via relay and gateway (baseline)": {
    p50: ms(plain.p50),
    p99: ms(plain.p99),
    "p50 ratio": "1.00×",
    "p99 ratio": "1.00×",
  },
  "sealed, network backend": {
    p50: ms(sealed.p50),
    p99: ms(sealed.p99),
    "p50 ratio": ratio(sealed.p50, plain.p50),
    "p99 ratio": ratio(sealed.p99, plain.p99),
  },
  "sealed, daemon HTTP API": {
    p50: ms(api.p50),
    p99: ms(api.p99),
    "p50 ratio": ratio(api.p50, plain.p50),
    "p99 ratio": ratio(api.p99, plain.p99),
  },
});
console.log(
  `Added by the verified tier (p50): ${ms(sealed.p50 - plain.p50)} in the backend, ${
    ms(api.p50 - plain.p50)
  } through the daemon's API.`,
);

async function throughput(run: () => Promise<number>) {
  await run();
  const t0 = performance.now();
  let tokens = 0;
  for (let i = 0; i < 5; i++) tokens += await run();
  return tokens / ((performance.now() - t0) / 1000);
}
const plainRate = await throughput(() => plaintext(LONG_REPLY_WORDS));
const sealedRate = await throughput(() => viaDaemon("verified", true, LONG_REPLY_WORDS));
console.log(`\nStreaming a ~${LONG_REPLY_WORDS}-token reply (5 replies each):`);
console.table({
  "plaintext via relay and gateway (baseline)": {
    "tokens/s": Math.round(plainRate),
    ratio: "1.00×",
  },
  "sealed through the daemon": {
    "tokens/s": Math.round(sealedRate),
    ratio: ratio(sealedRate, plainRate),
  },
});

const teeLatency = await percentiles(() => viaDaemon("tee", false), 50);
const verifiedLatency = await percentiles(() => viaDaemon("verified", false), 50);
const nonces = new NonceBook();
const approved = ApprovedMeasurements.fromList(tee.measurementIds);
const verifyTimes: number[] = [];
for (let i = 0; i < 60; i++) {
  const nonce = nonces.issue(new Date());
  const json = await tee.attester({
    nonce,
    servingKey: privateKeyToAccount(`0x${"8".padStart(64, "0")}`),
    servingPublicKey: "0x",
    keyConfig: new Uint8Array([1]),
    endorse: () => Promise.reject(new Error("unused")),
    models: [],
  });
  const t0 = performance.now();
  await verifyAttestation(attestationBundleFromJson(json), {
    nonce,
    nonces,
    approved,
    now: new Date(),
    roots: tee.pki.roots,
  });
  if (i >= 10) verifyTimes.push(performance.now() - t0);
}
verifyTimes.sort((a, b) => a - b);
const verifyP50 = verifyTimes[Math.floor(verifyTimes.length / 2)];
console.log("\nTEE tier, per request (50 rounds each):");
console.table({
  "verified-tier request (baseline)": { p50: ms(verifiedLatency.p50), ratio: "1.00×" },
  "TEE-tier request (nonce, quote, full verification)": {
    p50: ms(teeLatency.p50),
    ratio: ratio(teeLatency.p50, verifiedLatency.p50),
  },
});
console.log(
  `Attestation cost per TEE request (p50): ${
    ms(teeLatency.p50 - verifiedLatency.p50)
  } end to end ` +
    `(round trip, the provider building its quote, verification); verifyAttestation alone: ${
      ms(verifyP50)
    }.`,
);

// --- The same comparison under Deno.bench, for its own statistics and ratio summary. ----------

Deno.bench({
  name: "plaintext via relay and gateway",
  group: "verified-tier latency",
  baseline: true,
  n: 100,
}, async () => {
  await plaintext();
});
Deno.bench(
  { name: "sealed via network backend", group: "verified-tier latency", n: 100 },
  async () => {
    await backend();
  },
);
Deno.bench(
  { name: "sealed via daemon HTTP API", group: "verified-tier latency", n: 100 },
  async () => {
    await viaDaemon("verified", false);
  },
);
