/**
 * A TEE devnet provider's ad and receipts (`docs/protocol.md` §1, §8): its ad names each
 * model's weights digest and its attester binds them; every reply to a request sealed under one
 * of its attestations ends with a receipt, signed by the attested serving key, over the request,
 * the reply's exact content, the model, the evidence and the usage.
 */

import assert from "node:assert/strict";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  ApprovedMeasurements,
  ATTESTATION_NONCE_HEADER,
  attestationBundleFromJson,
  checkReceipt,
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  NonceBook,
  RECEIPT_TRAILER,
  receiptFromJson,
  sealHttpRequest,
  verifyAttestation,
} from "../../crypto/mod.ts";
import { EchoEngine } from "../../devnet/engine.ts";
import { DevnetProvider } from "../../devnet/provider.ts";
import { devnetWeightsDigest } from "../../devnet/provider_receipt.ts";
import { serve } from "../_http.ts";
import { syntheticTee } from "../daemon/_e2e.ts";

async function startTeeProvider() {
  const tee = await syntheticTee();
  const key = createGatewayKey(await generateKeyPair(), { keyId: 9 });
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const provider = await DevnetProvider.create({
    provider: `0x${"7e".repeat(20)}`,
    servingKey: privateKeyToAccount(generatePrivateKey()),
    tier: "tee",
    endpoint: server.url,
    engine: new EchoEngine({ tokenDelayMs: 0 }),
    key,
    attester: tee.attester,
    log: () => {},
  });
  handler = provider.handler;
  return {
    provider,
    tee,
    url: server.url,
    keyConfig: encodeKeyConfig(key.config),
    [Symbol.asyncDispose]: () => server.close(),
  };
}

/** Attests as a daemon does: a nonce, the bundle, its verdict. */
async function attest(url: string, tee: Awaited<ReturnType<typeof syntheticTee>>) {
  const nonces = new NonceBook();
  const nonce = nonces.issue(new Date());
  const response = await fetch(`${url}/v1/attestation?nonce=${bytesToHex(nonce).slice(2)}`);
  assert.equal(response.status, 200);
  const verdict = await verifyAttestation(attestationBundleFromJson(await response.json()), {
    nonce,
    nonces,
    now: new Date(),
    roots: tee.pki.roots,
    approved: ApprovedMeasurements.fromList(tee.measurementIds),
  });
  return { nonce, verdict };
}

/** Sends a sealed chat and returns the status, the content's bytes and the trailers. */
async function ask(
  url: string,
  keyConfig: Uint8Array,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const sealed = await sealHttpRequest(keyConfig, {
    body,
    headers: { date: new Date().toUTCString(), ...headers },
  });
  const response = await fetch(`${url}/v1/relay`, {
    method: "POST",
    headers: { "content-type": sealed.contentType },
    body: sealed.body,
  });
  assert.equal(response.status, 200);
  const reply = await sealed.openResponse(response.body!);
  const content = new Uint8Array(await new Response(reply.body).arrayBuffer());
  return {
    status: reply.status,
    content,
    trailers: await reply.trailers,
    request: new TextEncoder().encode(JSON.stringify(body)),
  };
}

Deno.test("a TEE provider's ad names each model's weights digest, and its attestation binds them", async () => {
  await using p = await startTeeProvider();
  for (const model of p.provider.ad.models) {
    assert.equal(model.weights_digest, devnetWeightsDigest(model.id));
  }
  const { verdict } = await attest(p.url, p.tee);
  assert.deepEqual(
    verdict.models.map((m) => [m.id, bytesToHex(m.weightsDigest)]),
    p.provider.ad.models.map((m) => [m.id, m.weights_digest]).sort(),
  );
});

Deno.test("every reply under an attestation ends with a receipt over its exact bytes", async () => {
  await using p = await startTeeProvider();
  for (const stream of [true, false]) {
    const { nonce, verdict } = await attest(p.url, p.tee);
    const body = {
      model: "devnet/echo",
      messages: [{ role: "user", content: `receipt please ${stream}` }],
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    };
    const reply = await ask(p.url, p.keyConfig, body, {
      [ATTESTATION_NONCE_HEADER]: bytesToHex(nonce).slice(2),
    });
    assert.equal(reply.status, 200);
    const text = reply.trailers.get(RECEIPT_TRAILER);
    assert.ok(text, "a receipt trailer");
    const receipt = receiptFromJson(JSON.parse(text));
    const signer = await checkReceipt(receipt, {
      nonce,
      requestDigest: sha256(reply.request),
      replyDigest: sha256(reply.content),
      status: 200,
      model: "devnet/echo",
      verdict,
    });
    assert.equal(signer, p.provider.ad.serving_key);
    // The usage the receipt counts is the usage the reply reports.
    const content = new TextDecoder().decode(reply.content);
    const usage = stream
      ? JSON.parse(content.split("\n\n").filter((e) => e.includes('"usage"')).at(-1)!.slice(6))
        .usage
      : JSON.parse(content).usage;
    assert.equal(receipt.usage.promptTokens, usage.prompt_tokens);
    assert.equal(receipt.usage.completionTokens, usage.completion_tokens);
    assert.ok(receipt.usage.completionTokens > 0);
  }
});

Deno.test("no receipt without an attestation the provider answered", async () => {
  await using p = await startTeeProvider();
  const body = { model: "devnet/echo", messages: [{ role: "user", content: "hi" }] };
  const none = await ask(p.url, p.keyConfig, body);
  assert.equal(none.trailers.get(RECEIPT_TRAILER), null);
  const unknown = await ask(p.url, p.keyConfig, body, {
    [ATTESTATION_NONCE_HEADER]: "ab".repeat(32),
  });
  assert.equal(unknown.status, 200);
  assert.equal(unknown.trailers.get(RECEIPT_TRAILER), null);
});
