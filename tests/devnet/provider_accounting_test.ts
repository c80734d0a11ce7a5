/**
 * Found by review: the devnet provider's usage accounting (`devnet/provider.ts`), which
 * `startDevnet` settles to the Escrow every 10 s and the indexer reports as settled volume and
 * reputation.
 *
 * 1. Replay. The provider opens and serves any sealed request it is given, as often as it is
 *    given it: there is no replay protection (RFC 9458 §6.5) — no freshness in the sealed
 *    request, no memory of encapsulated keys already used. A relay (the gateway is untrusted,
 *    architecture §5) that copies one sealed request and sends it N times makes the provider
 *    run the inference N times and bill the consumer for N requests. The relay learns nothing
 *    from the replies, but it inflates settled amounts at will and burns the provider's GPU.
 *
 * 2. Cancelled streams are free. Usage is counted only from the engine's final usage chunk;
 *    a client that reads the tokens it wants and then cancels (or a user who presses "stop")
 *    is billed nothing, however many tokens were generated and delivered.
 *
 * The tests guard the fixes.
 */

import assert from "node:assert/strict";
import { sealHttpRequest } from "../../crypto/mod.ts";
import { parseSse } from "../../io/sse.ts";
import { startProvider } from "./_provider.ts";

const CHAT = {
  model: "devnet/echo",
  messages: [{ role: "user", content: "one two three four five six seven eight nine ten" }],
  stream: true,
  stream_options: { include_usage: true },
};

/** POSTs sealed bytes to the provider's relay and reads the whole (sealed) answer. */
async function post(url: string, sealed: Uint8Array<ArrayBuffer>): Promise<number> {
  const response = await fetch(`${url}/v1/relay`, {
    method: "POST",
    headers: { "content-type": "message/ohttp-chunked-req" },
    body: sealed,
  });
  await response.arrayBuffer();
  return response.status;
}

Deno.test("a replayed sealed request is not served and billed a second time", async () => {
  await using p = await startProvider(0);
  const sealed = await sealHttpRequest(p.keyConfig, {
    body: CHAT,
    headers: { date: new Date().toUTCString() },
  });
  // What the relay saw go by: the daemon's sealed request, byte for byte.
  const bytes = new Uint8Array(await new Response(sealed.body).arrayBuffer());

  assert.equal(await post(p.url, bytes), 200);
  const first = p.provider.takeUsage();
  assert.ok(first.tokens > 0n, "the original request is billed");

  // The relay sends the same bytes again, twice.
  await post(p.url, bytes);
  await post(p.url, bytes);
  const replayed = p.provider.takeUsage();
  assert.equal(
    replayed.tokens,
    0n,
    `a relay replayed one sealed request and the provider billed ${replayed.tokens} more tokens ` +
      `(${replayed.amount} more units) for it`,
  );
});

Deno.test("tokens delivered to a client that cancels the stream are billed", async () => {
  await using p = await startProvider(40);
  const sealed = await sealHttpRequest(p.keyConfig, {
    body: CHAT,
    headers: { date: new Date().toUTCString() },
  });
  const abort = new AbortController();
  const response = await fetch(`${p.url}/v1/relay`, {
    method: "POST",
    headers: { "content-type": sealed.contentType },
    body: sealed.body,
    signal: abort.signal,
    // @ts-ignore: Deno needs duplex to stream a request body
    duplex: "half",
  });
  const reply = await sealed.openResponse(response.body!);
  let delivered = 0;
  for await (const event of parseSse(reply.body)) {
    const chunk = JSON.parse(event.data);
    if (chunk.choices?.[0]?.delta?.content) delivered++;
    if (delivered === 6) break; // the client has what it wanted, and stops
  }
  abort.abort();
  await new Promise((resolve) => setTimeout(resolve, 300)); // the provider notices
  const usage = p.provider.takeUsage();
  assert.ok(
    usage.tokens >= BigInt(delivered),
    `${delivered} tokens were generated and delivered, the provider billed ${usage.tokens}`,
  );
});
