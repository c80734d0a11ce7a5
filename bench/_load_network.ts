/**
 * The network of the load benchmark, in a process of its own: `providers` devnet providers
 * (`DevnetProvider`, the built-in echo model, `slots` each) behind a devnet gateway (the sealed
 * path), and as many plaintext providers — the same engine, slots, batching, HTTP layer and
 * `503 busy`, no sealing — behind a second gateway of the same code (the plaintext baseline's
 * path, `_plain_relay.ts`).
 *
 * Run: `deno run -A bench/_load_network.ts <providers> <slots> <token delay ms>`. It prints one
 * JSON line, `{"sealed": <gateway URL>, "plain": <gateway URL>}`, then serves until stdin closes.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import type { Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { ProviderAd } from "../chain/ad.ts";
import { createGatewayKey, generateKeyPair } from "../crypto/mod.ts";
import { GatewaySet } from "../daemon/gateway/gateway_set.ts";
import { type ChatBody, type ChatChunk, EchoEngine } from "../devnet/engine.ts";
import { createGatewayHandler, type DirectoryEntry } from "../devnet/gateway.ts";
import { COMMON_RESPONSES, renderNetworkError } from "../devnet/_errors.ts";
import { Sealed, SEALED_REQUEST, SEALED_RESPONSE } from "../devnet/_wire.ts";
import { createService, defineRoute } from "../http/mod.ts";
import { DevnetProvider } from "../devnet/provider.ts";

const [providers, slots, tokenDelayMs] = Deno.args.map(Number);
const encoder = new TextEncoder();
const READY = Symbol("ready");
const readyNow = () => new Promise<typeof READY>((resolve) => setImmediate(() => resolve(READY)));
const engine = new EchoEngine({ tokenDelayMs, servedBy: "the load bench" });
const servers: Deno.HttpServer[] = [];

function listen(handler: (req: Request) => Response | Promise<Response>): string {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  servers.push(server);
  return `http://127.0.0.1:${server.addr.port}`;
}

/**
 * A provider of the baseline: the same engine, slots and batching, and the same HTTP layer
 * (`createService`, one `POST /v1/relay` route declared as the devnet provider's), answering in
 * plaintext what the sealed provider seals: a stream's events, batched the same way, or a whole
 * reply's head at once and its `chat.completion` when the engine is done.
 */
function plainProvider(): { url: string; inFlight: () => number } {
  let inFlight = 0;
  const service = createService({
    info: { title: "plaintext provider", version: "0" },
    renderError: renderNetworkError("provider", () => {}),
    commonResponses: COMMON_RESPONSES,
    routes: [defineRoute({
      method: "post",
      path: "/v1/relay",
      summary: "Answers a plaintext chat (the load benchmark's baseline)",
      body: { schema: Sealed, mediaType: SEALED_REQUEST, description: "The plain request" },
      responses: {
        200: { description: "The reply", content: { [SEALED_RESPONSE]: { schema: Sealed } } },
      },
      handler: (c) => answer(c.req.raw),
    })],
  });
  const answer = async (req: Request): Promise<Response> => {
    if (inFlight >= slots) {
      await req.body?.cancel();
      return Response.json({ error: { code: "busy", message: "All slots are busy" } }, {
        status: 503,
        headers: { "retry-after": "1" },
      });
    }
    inFlight++;
    let released = false;
    const release = () => {
      if (!released) inFlight--;
      released = true;
    };
    const body = await req.json() as ChatBody;
    const abort = new AbortController();
    const chunks = engine.complete(body, abort.signal)[Symbol.asyncIterator]();
    const first = await chunks.next();
    const headers = { "content-type": SEALED_RESPONSE, "cache-control": "no-store" };
    if (body.stream !== true) return new Response(whole(first, chunks, release), { headers });
    return new Response(events(first, chunks, { abort, release }), { headers });
  };
  return { url: listen((req) => service.fetch(req)), inFlight: () => inFlight };
}

/** A whole reply: nothing until the engine is done, then the `chat.completion`. */
function whole(
  first: IteratorResult<ChatChunk>,
  chunks: AsyncIterator<ChatChunk>,
  release: () => void,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      let text = "";
      let last: ChatChunk | undefined;
      for (let r = first; !r.done; r = await chunks.next()) {
        last = r.value;
        text += r.value.choices[0]?.delta.content ?? "";
      }
      release();
      controller.enqueue(encoder.encode(JSON.stringify({
        id: last?.id,
        object: "chat.completion",
        created: last?.created,
        model: last?.model,
        choices: [{
          index: 0,
          message: { role: "assistant", content: text },
          finish_reason: "stop",
        }],
        usage: last?.usage,
      })));
      controller.close();
    },
  });
}

/** A stream's events: those ready together go out together, as the sealed provider batches. */
function events(
  first: IteratorResult<ChatChunk>,
  chunks: AsyncIterator<ChatChunk>,
  run: { abort: AbortController; release: () => void },
): ReadableStream<Uint8Array> {
  let pending: Promise<IteratorResult<ChatChunk>> | undefined = Promise.resolve(first);
  let finished = false;
  const render = (r: IteratorResult<ChatChunk>) => {
    if (r.done) finished = true;
    return r.done ? "data: [DONE]\n\n" : `data: ${JSON.stringify(r.value)}\n\n`;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let batch = render(await (pending ?? chunks.next()));
      pending = undefined;
      const tick = readyNow();
      while (!finished && batch.length < 16 * 1024) {
        const step = chunks.next();
        const ready = await Promise.race([step, tick]);
        if (ready === READY) {
          pending = step;
          break;
        }
        batch += render(ready);
      }
      controller.enqueue(encoder.encode(batch));
      if (finished) {
        controller.close();
        run.release();
      }
    },
    cancel() {
      run.abort.abort();
      run.release();
    },
  }, { highWaterMark: 0 });
}

function gateway(entries: () => DirectoryEntry[]): string {
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const url = listen((req) => handler(req));
  handler = createGatewayHandler({
    directory: { entries },
    peers: new GatewaySet(),
    self: url,
    log: () => {},
  });
  return url;
}

const sealed: DevnetProvider[] = [];
const plain: { ad: ProviderAd; inFlight: () => number }[] = [];
for (let i = 0; i < providers; i++) {
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const url = listen((req) => handler(req));
  const provider = await DevnetProvider.create({
    provider: privateKeyToAccount(`0x${(i + 1).toString(16).padStart(64, "0")}`).address,
    servingKey: privateKeyToAccount(`0x${(i + 1001).toString(16).padStart(64, "0")}`),
    tier: "verified",
    endpoint: url,
    engine,
    key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
    maxConcurrency: slots,
    log: () => {},
  });
  handler = provider.handler;
  sealed.push(provider);
  const baseline = plainProvider();
  const address = privateKeyToAccount(`0x${(i + 2001).toString(16).padStart(64, "0")}`).address
    .toLowerCase() as Address;
  plain.push({
    ad: { ...provider.ad, provider: address, endpoint: baseline.url },
    inFlight: baseline.inFlight,
  });
}

const entry = (ad: ProviderAd, inFlight: number): DirectoryEntry => ({
  provider: ad.provider,
  tier: ad.tier,
  ad,
  capacity: { max_concurrency: slots, available_concurrency: Math.max(0, slots - inFlight) },
  metrics: { tokens_per_sec: 0 },
});

const urls = {
  sealed: gateway(() => sealed.map((p) => entry(p.ad, p.inFlight))),
  plain: gateway(() => plain.map((p) => entry(p.ad, p.inFlight()))),
};
console.log(JSON.stringify(urls));

// Serve until the bench closes our stdin.
for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
await Promise.all(servers.map((s) => s.shutdown()));
