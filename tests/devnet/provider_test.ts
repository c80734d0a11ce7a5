import assert from "node:assert/strict";
import { hexToBytes } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { adCommitment, parseAd } from "../../chain/ad.ts";
import {
  createGatewayKey,
  encodeKeyConfig,
  endorsementFromJson,
  generateKeyPair,
  sealHttpRequest,
  verifyEndorsement,
} from "../../crypto/mod.ts";
import { EchoEngine } from "../../devnet/engine.ts";
import { DevnetProvider } from "../../devnet/provider.ts";
import { parseSse } from "../../io/sse.ts";
import { okJson, serve } from "../_http.ts";

const PROVIDER = "0x" + "7a".repeat(20) as `0x${string}`;

async function startProvider(tier: "verified" | "tee" = "verified") {
  const servingKey = privateKeyToAccount(generatePrivateKey());
  const key = createGatewayKey(await generateKeyPair(), { keyId: 7 });
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const provider = await DevnetProvider.create({
    provider: PROVIDER,
    servingKey,
    tier,
    endpoint: server.url,
    engine: new EchoEngine({ tokenDelayMs: 0, servedBy: "the test provider" }),
    key,
    prices: { input: 1_000_000n, output: 2_000_000n },
    log: () => {},
  });
  handler = provider.handler;
  return { provider, server, servingKey, key, [Symbol.asyncDispose]: () => server.close() };
}

async function relay(url: string, keyConfig: Uint8Array, body: unknown) {
  const sealed = await sealHttpRequest(keyConfig, {
    body,
    headers: { date: new Date().toUTCString() },
  });
  const response = await fetch(`${url}/v1/relay`, {
    method: "POST",
    headers: { "content-type": sealed.contentType },
    body: sealed.body,
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "message/ohttp-chunked-res");
  return await sealed.openResponse(response.body!);
}

Deno.test("the ad is valid, committed, and served with live capacity and metrics", async () => {
  await using p = await startProvider();
  const answer = await okJson(fetch(`${p.server.url}/v1/ad`));
  const ad = parseAd(JSON.stringify(answer.ad));
  assert.equal(adCommitment(ad), p.provider.commitment);
  assert.equal(ad.serving_key, p.servingKey.address.toLowerCase());
  assert.deepEqual(ad.models.map((m) => [m.id, m.prices]), [
    ["devnet/echo", { input: "1000000", output: "2000000" }],
    // An embedding model generates nothing: its output price is 0.
    ["devnet/embed", { input: "1000000", output: "0" }],
  ]);
  assert.deepEqual(answer.capacity, { max_concurrency: 4, available_concurrency: 4 });
  assert.equal(answer.metrics.tokens_per_sec, 0);
});

Deno.test("the key is endorsed by the serving key", async () => {
  await using p = await startProvider();
  const answer = await okJson(fetch(`${p.server.url}/v1/key`));
  assert.equal(answer.provider, PROVIDER);
  const endorsement = endorsementFromJson(answer.endorsement);
  assert.deepEqual(endorsement.keyConfig, encodeKeyConfig(p.key.config));
  const signer = await verifyEndorsement(endorsement, {
    now: new Date(),
    signer: p.servingKey.address,
  });
  assert.equal(signer, p.servingKey.address.toLowerCase());
});

Deno.test("a streamed chat is sealed event by event and usage is accounted", async () => {
  await using p = await startProvider();
  const keyConfig = encodeKeyConfig(p.key.config);
  const reply = await relay(p.server.url, keyConfig, {
    model: "devnet/echo",
    messages: [{ role: "user", content: "hello sealed world" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.get("content-type"), "text/event-stream");
  const data: string[] = [];
  for await (const event of parseSse(reply.body)) data.push(event.data);
  assert.equal(data.at(-1), "[DONE]");
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  const text = chunks.flatMap((c) =>
    c.choices.map((x: { delta: { content?: string } }) => x.delta.content ?? "")
  ).join("");
  assert.match(text, /hello sealed world/);
  const usage = chunks.at(-1).usage;
  assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0);
  assert.deepEqual(p.provider.takeUsage(), {
    tokens: BigInt(usage.total_tokens),
    amount: BigInt(usage.prompt_tokens) * 1n + BigInt(usage.completion_tokens) * 2n,
  });
  assert.deepEqual(p.provider.takeUsage(), { tokens: 0n, amount: 0n }, "usage is taken once");
  const after = await okJson(fetch(`${p.server.url}/v1/ad`));
  assert.ok(after.metrics.tokens_per_sec > 0);
  assert.equal(after.capacity.available_concurrency, 4, "the slot is released");
});

Deno.test("a non-streamed chat is one sealed chat.completion", async () => {
  await using p = await startProvider();
  const reply = await relay(p.server.url, encodeKeyConfig(p.key.config), {
    model: "devnet/echo",
    messages: [{ role: "user", content: "once" }],
  });
  const body = await new Response(reply.body).json();
  assert.equal(body.object, "chat.completion");
  assert.match(body.choices[0].message.content, /once/);
  assert.equal(body.choices[0].finish_reason, "stop");
  assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);
});

Deno.test("refusals are sealed statuses; garbage is refused without detail", async () => {
  await using p = await startProvider();
  const keyConfig = encodeKeyConfig(p.key.config);
  const unknown = await relay(p.server.url, keyConfig, {
    model: "devnet/nope",
    messages: [{ role: "user", content: "x" }],
  });
  assert.equal(unknown.status, 404);
  assert.equal((await new Response(unknown.body).json()).error.code, "model_not_found");
  const notChat = await relay(p.server.url, keyConfig, "just a string");
  assert.equal(notChat.status, 400);
  await notChat.body.cancel();

  const garbage = await fetch(`${p.server.url}/v1/relay`, {
    method: "POST",
    headers: { "content-type": "message/ohttp-chunked-req" },
    body: new Uint8Array(100),
  });
  assert.equal(garbage.status, 400);
  assert.deepEqual((await garbage.json()).error, {
    code: "cannot_open",
    message: "The sealed request could not be opened",
  });
  const wrongType = await fetch(`${p.server.url}/v1/relay`, { method: "POST", body: "x" });
  assert.equal(wrongType.status, 415);
  await wrongType.body?.cancel();
});

Deno.test("attestation: a TEE provider answers an honest mock bundle; verified has none", async () => {
  await using tee = await startProvider("tee");
  const nonce = "ab".repeat(32);
  const bundle = await okJson(fetch(`${tee.server.url}/v1/attestation?nonce=${nonce}`));
  assert.equal(bundle.format, "mock");
  assert.equal(bundle.nonce, `0x${nonce}`);
  assert.equal(bundle.serving_public_key, tee.servingKey.publicKey);
  const endorsement = endorsementFromJson(bundle.endorsement);
  assert.deepEqual(endorsement.nonce, hexToBytes(`0x${nonce}`));
  await verifyEndorsement(endorsement, {
    now: new Date(),
    nonce: hexToBytes(`0x${nonce}`),
    signer: tee.servingKey.address,
  });
  const bad = await fetch(`${tee.server.url}/v1/attestation?nonce=zz`);
  assert.equal(bad.status, 400);
  await bad.body?.cancel();

  await using verified = await startProvider("verified");
  const none = await fetch(`${verified.server.url}/v1/attestation?nonce=${nonce}`);
  assert.equal(none.status, 404);
  assert.equal((await none.json()).error.code, "not_tee");
});
