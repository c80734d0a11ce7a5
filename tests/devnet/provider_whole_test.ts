/**
 * The devnet provider's whole reply (`stream: false`, `docs/protocol.md` §7): its head as soon
 * as the engine has started, a space while it generates, then one `chat.completion`; and a
 * requester that leaves meanwhile stops the engine and frees the slot.
 */

import assert from "node:assert/strict";
import { sealHttpRequest } from "../../crypto/mod.ts";
import { startProvider } from "./_provider.ts";

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
  await using p = await startProvider(20, 50);
  const { provider, keyConfig } = p;
  // About 30 tokens at 20 ms each: some 600 ms of generation.
  const words = Array.from({ length: 18 }, (_, i) => `w${i}`).join(" ");
  const { reply } = await askWhole(p.url, keyConfig, words);
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.get("content-type"), "application/json");
  const pieces: string[] = [];
  const decoder = new TextDecoder();
  for await (const piece of reply.body) pieces.push(decoder.decode(piece));
  const text = pieces.join("");
  const spaces = text.length - text.trimStart().length;
  // Spaces come after the head and before the object: the head came while the engine ran.
  assert.ok(spaces >= 3, `${spaces} spaces before the object, in ${pieces.length} pieces`);
  const completion = JSON.parse(text);
  assert.equal(completion.object, "chat.completion");
  assert.match(completion.choices[0].message.content, /w17/);
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.ok(completion.usage.completion_tokens > 20);
  assert.equal(provider.inFlight, 0, "the slot is free once the answer is sent");
});

Deno.test("whole reply: a requester that leaves stops the engine, frees the slot and is billed what was made", async () => {
  await using p = await startProvider(20, 50);
  const { provider, keyConfig } = p;
  const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
  const { reply, abort } = await askWhole(p.url, keyConfig, words);
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
});
