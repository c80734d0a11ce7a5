/**
 * The devnet provider's whole reply (`stream: false`, `docs/protocol.md` §7): its head as soon
 * as the engine has started, a space while it generates, then one `chat.completion`; and a
 * requester that leaves meanwhile stops the engine and frees the slot.
 */

import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  sealHttpRequest,
} from "../../crypto/mod.ts";
import { EchoEngine } from "../../devnet/engine.ts";
import { DevnetProvider } from "../../devnet/provider.ts";
import { serve } from "../_http.ts";

/** A provider whose echo engine takes `tokenDelayMs` per token and shows life every 50 ms. */
async function startProvider(tokenDelayMs: number) {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 3 });
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const provider = await DevnetProvider.create({
    provider: privateKeyToAccount(generatePrivateKey()).address,
    servingKey: privateKeyToAccount(generatePrivateKey()),
    tier: "verified",
    endpoint: server.url,
    engine: new EchoEngine({ tokenDelayMs, servedBy: "the whole-reply test" }),
    key,
    log: () => {},
    wholeKeepAliveMs: 50,
  });
  handler = provider.handler;
  return { provider, server, keyConfig: encodeKeyConfig(key.config) };
}

/** Sends a sealed non-streamed chat; resolves with the opened reply and when its head came. */
async function askWhole(url: string, keyConfig: Uint8Array, content: string) {
  const sealed = await sealHttpRequest(keyConfig, {
    body: { model: "devnet/echo", messages: [{ role: "user", content }], stream: false },
    headers: { date: new Date().toUTCString() },
  });
  const abort = new AbortController();
  const response = await fetch(`${url}/v1/relay`, {
    method: "POST",
    headers: { "content-type": sealed.contentType },
    body: sealed.body,
    signal: abort.signal,
  });
  assert.equal(response.status, 200);
  return { reply: await sealed.openResponse(response.body!), abort };
}

Deno.test("whole reply: the head comes at once, spaces while the engine generates, then the completion", async () => {
  const { provider, server, keyConfig } = await startProvider(20);
  try {
    // About 30 tokens at 20 ms each: some 600 ms of generation.
    const words = Array.from({ length: 18 }, (_, i) => `w${i}`).join(" ");
    const started = performance.now();
    const { reply } = await askWhole(server.url, keyConfig, words);
    const headAfter = performance.now() - started;
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get("content-type"), "application/json");
    const pieces: string[] = [];
    const decoder = new TextDecoder();
    for await (const piece of reply.body) pieces.push(decoder.decode(piece));
    const doneAfter = performance.now() - started;
    const text = pieces.join("");
    const spaces = text.length - text.trimStart().length;
    assert.ok(spaces >= 3, `${spaces} spaces before the object, in ${pieces.length} pieces`);
    assert.ok(headAfter < doneAfter / 2, `head after ${headAfter} ms, done after ${doneAfter} ms`);
    const completion = JSON.parse(text);
    assert.equal(completion.object, "chat.completion");
    assert.match(completion.choices[0].message.content, /w17/);
    assert.equal(completion.choices[0].finish_reason, "stop");
    assert.ok(completion.usage.completion_tokens > 20);
    assert.equal(provider.inFlight, 0, "the slot is free once the answer is sent");
  } finally {
    await server.close();
  }
});

Deno.test("whole reply: a requester that leaves stops the engine, frees the slot and is billed what was made", async () => {
  const { provider, server, keyConfig } = await startProvider(20);
  try {
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    const { reply, abort } = await askWhole(server.url, keyConfig, words);
    const reader = reply.body.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), " ");
    assert.equal(provider.inFlight, 1);
    abort.abort();
    await reader.cancel().catch(() => {});
    const until = performance.now() + 1000;
    while (provider.inFlight > 0 && performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(provider.inFlight, 0, "the slot is free within 1 s");
    const billed = provider.takeUsage();
    assert.ok(billed.tokens > 0n, "what was produced is billed");
    // The prompt (some 200 tokens) and the few generated: the whole reply would be over 400.
    assert.ok(billed.tokens < 300n, `${billed.tokens} tokens billed`);
  } finally {
    await server.close();
  }
});
