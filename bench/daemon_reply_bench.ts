/**
 * What the daemon spends on a sealed reply once it arrives, measured at the handler (no socket,
 * no network): a 212-event chat reply that a provider sealed as it does (the first event, then
 * batches of up to 16 KiB, `devnet/provider_chat.ts`) is opened (`daemon/sealing/sealed_reply.ts`: the
 * chunked OHTTP open, the event-stream parse, every event checked), validated and re-rendered
 * as OpenAI SSE and as one `chat.completion` — against the same chunks already opened (the
 * surface alone). The difference is the reply path's own cost: the AEAD opens, the parse and
 * the per-event checks.
 *
 * Each iteration gets a fresh exchange (a sealed reply opens once); sealing it is not timed.
 *
 * Run: `deno bench -A bench/daemon_reply_bench.ts` (or `deno task bench`).
 *
 * @module
 */

import {
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  openHttpRequest,
  type SealedHttpRequest,
  sealHttpRequest,
} from "../crypto/mod.ts";
import type {
  ChatBackend,
  ChatCompletionChunk,
  ChatReply,
  NetworkModel,
} from "../daemon/core/backend.ts";
import { createDaemonHandler } from "../daemon/service/handler.ts";
import { openSealedReply } from "../daemon/sealing/sealed_reply.ts";
import { VerdictLog } from "../daemon/trust/verdict_log.ts";

const MODEL: NetworkModel = {
  model: "devnet/echo",
  tier: "verified",
  providers: 1,
  contextLength: 8192,
  cheapestPrice: null,
};
const base = {
  id: "chatcmpl-p",
  object: "chat.completion.chunk" as const,
  created: 1,
  model: MODEL.model,
};
const CHUNKS: ChatCompletionChunk[] = [
  {
    ...base,
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
  },
  ...Array.from({ length: 210 }, (_, i): ChatCompletionChunk => ({
    ...base,
    choices: [{ index: 0, delta: { content: ` word${i}` }, finish_reason: null }],
  })),
  { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  { ...base, choices: [], usage: { prompt_tokens: 5, completion_tokens: 211, total_tokens: 216 } },
];
const encoder = new TextEncoder();
/** The provider's body pieces: the first event with what is ready, up to 16 KiB each. */
const BATCHES: Uint8Array[] = (() => {
  const texts = [...CHUNKS.map((c) => `data: ${JSON.stringify(c)}\n\n`), "data: [DONE]\n\n"];
  const out: string[] = [];
  let batch = "";
  for (const text of texts) {
    batch += text;
    if (batch.length >= 16 * 1024) {
      out.push(batch);
      batch = "";
    }
  }
  if (batch) out.push(batch);
  return out.map((b) => encoder.encode(b));
})();

const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
const keyConfig = encodeKeyConfig(key.config);
let exchange: { sealed: SealedHttpRequest; parts: Uint8Array[] } | undefined;

/** A provider's sealed reply to a fresh sealed request. */
async function nextExchange(): Promise<void> {
  const sealed = await sealHttpRequest(keyConfig, {
    body: { model: MODEL.model, messages: [], stream: true },
  });
  const opened = await openHttpRequest(key, sealed.body);
  const parts: Uint8Array[] = [];
  for await (
    const part of opened.respond({
      status: 200,
      headers: { "content-type": "text/event-stream" },
      body: ReadableStream.from(BATCHES),
    })
  ) parts.push(part);
  exchange = { sealed, parts };
}

const served = { provider: "0xprovider", verdict: "endorsed-key", gateway: "http://gw" };

function handler(open: boolean) {
  const backend: ChatBackend = {
    listModels: () => Promise.resolve([MODEL]),
    async chat(request, signal): Promise<ChatReply> {
      if (!open) {
        return { served: { ...served, tier: request.tier }, chunks: ReadableStream.from(CHUNKS) };
      }
      const { first, rest } = await openSealedReply(
        exchange!.sealed,
        ReadableStream.from(exchange!.parts),
        { signal },
      );
      async function* chunks() {
        if (first) yield first;
        yield* rest;
      }
      return { served: { ...served, tier: request.tier }, chunks: chunks() };
    },
  } as ChatBackend;
  return createDaemonHandler({
    backend,
    gateways: () => [],
    verdicts: new VerdictLog({ capacity: 10 }),
    version: "0.0.0",
    port: 11435,
    log: () => {},
  });
}

const handlers = { opened: handler(false), sealed: handler(true) };

async function chat(which: keyof typeof handlers, stream: boolean): Promise<void> {
  const response = await handlers[which](
    new Request("http://127.0.0.1:11435/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "net/verified/devnet/echo",
        stream,
        messages: [{ role: "user", content: "hi" }],
      }),
    }),
  );
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${response.status}: ${text.slice(0, 200)}`);
}

for (const stream of [true, false]) {
  const group = `212-event reply, ${stream ? "streamed (SSE)" : "whole (chat.completion)"}`;
  Deno.bench({
    name: "the same chunks, already opened (baseline)",
    group,
    baseline: true,
    async fn(b) {
      // Timed the same way as the sealed case (explicit start and end).
      await nextExchange();
      b.start();
      await chat("opened", stream);
      b.end();
    },
  });
  Deno.bench({
    name: "sealed: opened, parsed, checked, re-rendered",
    group,
    async fn(b) {
      await nextExchange();
      b.start();
      await chat("sealed", stream);
      b.end();
    },
  });
}
