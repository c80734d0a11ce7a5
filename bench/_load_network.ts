/**
 * The network of the load benchmark, in a process of its own: `providers` devnet providers
 * (`DevnetProvider`, the built-in echo model, `slots` each) behind a devnet gateway (the sealed
 * path), and as many plaintext providers — the same engine, the same slots, the same `503 busy`,
 * no sealing — behind a second gateway of the same code (the plaintext baseline's path).
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
import { GatewaySet } from "../daemon/gateway_set.ts";
import { type ChatBody, type ChatChunk, EchoEngine } from "../devnet/engine.ts";
import { createGatewayHandler, type DirectoryEntry } from "../devnet/gateway.ts";
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

/** A provider of the baseline: the same engine and slots, plain SSE instead of sealed chunks. */
function plainProvider(): { url: string; inFlight: () => number } {
  let inFlight = 0;
  const url = listen(async (req) => {
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
    const headers = { "content-type": "message/ohttp-chunked-res" };
    if (body.stream !== true) {
      let text = "";
      let last: ChatChunk | undefined;
      for (let r = await chunks.next(); !r.done; r = await chunks.next()) {
        last = r.value;
        text += r.value.choices[0]?.delta.content ?? "";
      }
      release();
      return new Response(
        JSON.stringify({
          id: last?.id,
          object: "chat.completion",
          created: last?.created,
          model: body.model,
          choices: [{
            index: 0,
            message: { role: "assistant", content: text },
            finish_reason: "stop",
          }],
          usage: last?.usage,
        }),
        { headers },
      );
    }
    // Events ready together go out together, as the sealed provider batches them into one
    // sealed chunk (`devnet/provider_chat.ts`): the baseline gets the same fewer, larger writes.
    let pending: Promise<IteratorResult<ChatChunk>> | undefined;
    let finished = false;
    const render = (r: IteratorResult<ChatChunk>) => {
      if (r.done) finished = true;
      return r.done ? "data: [DONE]\n\n" : `data: ${JSON.stringify(r.value)}\n\n`;
    };
    return new Response(
      new ReadableStream<Uint8Array>({
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
            release();
          }
        },
        cancel() {
          abort.abort();
          release();
        },
      }, { highWaterMark: 0 }),
      { headers },
    );
  });
  return { url, inFlight: () => inFlight };
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
