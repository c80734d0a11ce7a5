/**
 * What opening a streamed sealed reply costs per token, in the shape the saturated load case
 * sends it (`daemon_load_bench.ts`, 15 ms per token): one event per sealed chunk, each chunk
 * read on its own. A 212-event chat reply, sealed by the provider's code (`openHttpRequest`'s
 * `respond`, not timed), is read by the daemon's reply reader (`openSealedReply`: opened,
 * parsed, every chunk checked) — against the baseline, the plaintext relay's reading of the same
 * events (`_plain_relay.ts`: the same reader over a response that needs no opening). Two stages
 * of the sealed path are timed too: the chunked OHTTP open alone (`openChunkedResponseReader`,
 * the AEAD open per chunk) and the Binary HTTP decoding over it (`openResponse`).
 *
 * Each round runs every case once, the order rotating from round to round; the table gives each
 * case's median CPU time per event (the process's, user and system: on a busy machine, waiting
 * for a core is not counted) and its ratio to the baseline.
 *
 * Environment: `NET_BENCH_STREAM_ROUNDS` (default 60).
 *
 * Run: `deno run -A bench/sealed_stream_bench.ts` (or `deno task bench`).
 *
 * @module
 */

import {
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  type OpenedHttpResponse,
  openHttpRequest,
  type SealedHttpRequest,
  sealHttpRequest,
} from "../crypto/mod.ts";
import {
  createChunkedRequest,
  openChunkedRequest,
  openChunkedResponseReader,
} from "../crypto/ohttp/chunked.ts";
import { openSealedReply } from "../daemon/sealing/sealed_reply.ts";
import process from "node:process";

const ROUNDS = Number(Deno.env.get("NET_BENCH_STREAM_ROUNDS") ?? 60);
const WARMUP = 10;

const encoder = new TextEncoder();
const base = {
  id: "chatcmpl-p",
  object: "chat.completion.chunk",
  created: 1,
  model: "devnet/echo",
};
const EVENTS: Uint8Array[] = [
  { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" } }] },
  ...Array.from({ length: 210 }, (_, i) => ({
    ...base,
    choices: [{ index: 0, delta: { content: ` word${i}` }, finish_reason: null }],
  })),
].map((chunk) => encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
EVENTS.push(encoder.encode("data: [DONE]\n\n"));

const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
const keyConfig = encodeKeyConfig(key.config);

/** A sealed exchange and its reply, sealed as the provider seals it (one chunk per event). */
async function sealedReply(): Promise<{ sealed: SealedHttpRequest; parts: Uint8Array[] }> {
  const sealed = await sealHttpRequest(keyConfig, { body: { model: "m", stream: true } });
  const opened = await openHttpRequest(key, sealed.body);
  const parts: Uint8Array[] = [];
  const reply = opened.respond({
    status: 200,
    headers: { "content-type": "text/event-stream" },
    body: ReadableStream.from(EVENTS),
  });
  for await (const part of reply) parts.push(part);
  return { sealed, parts };
}

/** The chunked OHTTP layer alone: a reply of the events as they are, one chunk each. */
async function chunkedReply() {
  const client = await createChunkedRequest(keyConfig);
  const gateway = await openChunkedRequest(key, client.sealRequest(new Uint8Array(1)));
  await new Response(gateway.request).arrayBuffer();
  const parts: Uint8Array[] = [];
  for await (const part of gateway.sealResponse(ReadableStream.from(EVENTS))) parts.push(part);
  return { client, parts };
}

/** The plaintext relay's response: status 200, the body as it came. */
const plaintext = {
  openResponse: (body: ReadableStream<Uint8Array>): Promise<OpenedHttpResponse> =>
    Promise.resolve({
      status: 200,
      headers: new Headers({ "content-type": "text/event-stream" }),
      informational: [],
      body,
      trailers: Promise.resolve(new Headers()),
    }),
};

async function readReply(
  sealed: Pick<SealedHttpRequest, "openResponse">,
  parts: Uint8Array[],
): Promise<void> {
  const { first, rest } = await openSealedReply(sealed, ReadableStream.from(parts));
  let chunks = first ? 1 : 0;
  for await (const _ of rest) chunks++;
  if (chunks !== EVENTS.length - 1) {
    throw new Error(`benchmark self-check failed: ${chunks} chunks, expected ${EVENTS.length - 1}`);
  }
}

async function drain(reader: { read(): Promise<ReadableStreamReadResult<Uint8Array>> }) {
  let bytes = 0;
  while (true) {
    const step = await reader.read();
    if (step.done) break;
    bytes += step.value.length;
  }
  return bytes;
}

/** Each case: its setup (not timed), then the timed run. */
const CASES: Record<string, () => Promise<() => Promise<unknown>>> = {
  "plaintext reply, read and checked (baseline)": () =>
    Promise.resolve(() => readReply(plaintext, EVENTS)),
  "sealed: chunked OHTTP open only": async () => {
    const { client, parts } = await chunkedReply();
    return () => drain(openChunkedResponseReader(client, ReadableStream.from(parts)));
  },
  "sealed: + Binary HTTP decoding": async () => {
    const { sealed, parts } = await sealedReply();
    return async () => {
      const opened = await sealed.openResponse(ReadableStream.from(parts));
      await drain(opened.body.getReader());
      await opened.trailers;
    };
  },
  "sealed: read and checked (the daemon)": async () => {
    const { sealed, parts } = await sealedReply();
    return () => readReply(sealed, parts);
  },
};

const names = Object.keys(CASES);
const samples = new Map<string, number[]>(names.map((name) => [name, []]));
for (let round = 0; round < WARMUP + ROUNDS; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length]);
  for (const name of order) {
    const run = await CASES[name]();
    const started = process.cpuUsage();
    await run();
    const { user, system } = process.cpuUsage(started);
    const us = (user + system) / EVENTS.length;
    if (round >= WARMUP) samples.get(name)!.push(us);
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const baseline = median(samples.get(names[0])!);
console.log(
  `\nOpening a ${EVENTS.length}-event reply sent one event per sealed chunk, ${ROUNDS} rounds ` +
    "(median per event; ratios against the plaintext reply):",
);
console.table(Object.fromEntries(names.map((name) => {
  const us = median(samples.get(name)!);
  return [name, {
    "µs/event": us.toFixed(2),
    "over baseline, µs": (us - baseline).toFixed(2),
    ratio: `${(us / baseline).toFixed(2)}×`,
  }];
})));
