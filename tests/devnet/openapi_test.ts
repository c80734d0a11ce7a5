/**
 * The devnet's three services on the HTTP layer: each one's live route table matches its
 * generated OpenAPI document, the document is valid OpenAPI 3.1 (strict Ajv), it is what
 * `GET /openapi.json` serves, and real answers — successes and refusals, from a small network
 * of real providers, a router and a gateway on loopback — validate against it. Every error is
 * in the network's shape (`docs/protocol.md` §0), the layer's own 400/404/405 included.
 */

import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  sealHttpRequest,
} from "../../crypto/mod.ts";
import { GatewaySet } from "../../daemon/mod.ts";
import { RouterDirectory } from "../../devnet/directory.ts";
import { EchoEngine } from "../../devnet/engine.ts";
import { createGatewayService } from "../../devnet/gateway.ts";
import { DevnetProvider } from "../../devnet/provider.ts";
import { createRouterService, pollProviders } from "../../devnet/router.ts";
import type { Service } from "../../http/mod.ts";
import { okJson, serve, type TestServer } from "../_http.ts";
import { answer, OpenApiChecker } from "../_openapi.ts";
import { assertRoutesDocumented } from "../_routes.ts";

async function startProvider(tier: "verified" | "tee", index: number) {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const provider = await DevnetProvider.create({
    provider: `0x${String(index + 1).repeat(40)}`,
    servingKey: privateKeyToAccount(generatePrivateKey()),
    tier,
    endpoint: server.url,
    engine: new EchoEngine({ tokenDelayMs: 0 }),
    key,
    log: () => {},
  });
  handler = provider.handler;
  return { provider, server, keyConfig: encodeKeyConfig(key.config) };
}

/** Two providers (verified, TEE), a router carrying both and a gateway fed by the router. */
async function network() {
  const verified = await startProvider("verified", 0);
  const tee = await startProvider("tee", 1);
  const router = createRouterService({
    source: pollProviders([verified.server.url, tee.server.url], { timeoutMs: 2000 }),
  });
  const routerServer = serve(router.fetch);
  const directory = new RouterDirectory([routerServer.url], { log: () => {} });
  await directory.refresh();
  const gateway = createGatewayService({
    directory,
    peers: new GatewaySet(),
    self: "http://127.0.0.1:9999",
    passThroughTimeoutMs: 2000,
    log: () => {},
  });
  const gatewayServer = serve(gateway.fetch);
  const servers: TestServer[] = [verified.server, tee.server, routerServer, gatewayServer];
  return {
    verified,
    tee,
    router,
    routerServer,
    gateway,
    gatewayServer,
    [Symbol.asyncDispose]: async () => {
      for (const server of servers) await server.close();
    },
  };
}

/** Records `request`'s answer as the operation `method path` and checks it. */
async function check(
  checker: OpenApiChecker,
  operation: string,
  url: string,
  init?: RequestInit,
): Promise<{ status: number; body: string; headers: Headers }> {
  const [method, path] = operation.split(" ");
  const got = await answer(path, method, await fetch(url, { method, ...init }));
  checker.check(got);
  return got;
}

/** The document is valid, served as generated, and matches the live route table. */
async function documentOf(service: Service, url: string): Promise<OpenApiChecker> {
  assertRoutesDocumented(service);
  const served = await okJson(fetch(`${url}/openapi.json`));
  assert.deepEqual(served, JSON.parse(JSON.stringify(service.document())));
  return new OpenApiChecker(served);
}

function errorOf(got: { body: string }): { code: string; message: string } {
  const body = JSON.parse(got.body);
  assert.deepEqual(Object.keys(body), ["error"], got.body);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message"], got.body);
  return body.error;
}

Deno.test("router: its document matches its routes, and its answers match its document", async () => {
  await using net = await network();
  const url = net.routerServer.url;
  const checker = await documentOf(net.router, url);
  const ads = await check(checker, "GET /v1/ads", `${url}/v1/ads`);
  assert.equal(JSON.parse(ads.body).ads.length, 2);
  // A refusal that no operation owns is checked against the shape the path documents for it.
  const refused = await fetch(`${url}/v1/ads`, { method: "POST" });
  assert.equal(refused.status, 405);
  assert.equal(refused.headers.get("allow"), "GET, HEAD");
  checker.check(await answer("/v1/ads", "get", refused));
  const missing = await answer("/v1/ads", "get", await fetch(`${url}/v1/nothing`));
  assert.equal(missing.status, 404);
  assert.equal(errorOf(missing).code, "not_found");
  checker.check(missing);
});

Deno.test("gateway: its document matches its routes, and its answers match its document", async () => {
  await using net = await network();
  const url = net.gatewayServer.url;
  const checker = await documentOf(net.gateway, url);
  const a = net.verified.provider.ad.provider;
  const b = net.tee.provider.ad.provider;
  const nonce = "ab".repeat(32);
  await check(checker, "GET /v1/gateways", `${url}/v1/gateways`);
  const models = await check(checker, "GET /v1/models", `${url}/v1/models`);
  // devnet/echo and devnet/embed, in each tier.
  assert.equal(JSON.parse(models.body).models.length, 4);
  const providers = await check(checker, "GET /v1/providers", `${url}/v1/providers?tier=tee`);
  assert.deepEqual(
    JSON.parse(providers.body).providers.map((p: { provider: string }) => p.provider),
    [b],
  );
  await check(checker, "GET /v1/providers/{provider}/key", `${url}/v1/providers/${a}/key`);
  const bundle = await check(
    checker,
    "GET /v1/providers/{provider}/attestation",
    `${url}/v1/providers/${b}/attestation?nonce=${nonce}`,
  );
  assert.equal(JSON.parse(bundle.body).format, "mock");
  const notTee = await check(
    checker,
    "GET /v1/providers/{provider}/attestation",
    `${url}/v1/providers/${a}/attestation?nonce=${nonce}`,
  );
  assert.equal(errorOf(notTee).code, "not_tee", "the provider's refusal is passed through");

  const sealed = await sealHttpRequest(net.verified.keyConfig, {
    body: { model: "devnet/echo", messages: [{ role: "user", content: "hi" }] },
    headers: { date: new Date().toUTCString() },
  });
  const relayed = await fetch(`${url}/v1/providers/${a}/relay`, {
    method: "POST",
    headers: { "content-type": sealed.contentType },
    body: sealed.body,
  });
  assert.equal(relayed.status, 200);
  const reply = await sealed.openResponse(relayed.body!);
  assert.match(await new Response(reply.body).text(), /You said: \\"hi\\"/);
  assert.equal(relayed.headers.get("content-type"), "message/ohttp-chunked-res");

  const refusals: [string, string, number, string, RequestInit?][] = [
    ["GET /v1/providers", "/v1/providers?tier=gold", 400, "invalid_tier"],
    ["GET /v1/providers", "/v1/providers?tier=tee&tier=tee", 400, "invalid_tier"],
    ["GET /v1/providers", "/v1/providers?model=no-slash", 400, "invalid_model"],
    ["GET /v1/providers/{provider}/key", "/v1/providers/0x1234/key", 400, "invalid_provider"],
    [
      "GET /v1/providers/{provider}/key",
      `/v1/providers/0x${"9".repeat(40)}/key`,
      404,
      "unknown_provider",
    ],
    [
      "GET /v1/providers/{provider}/attestation",
      `/v1/providers/${b}/attestation?nonce=xyz`,
      400,
      "invalid_nonce",
    ],
    [
      "GET /v1/providers/{provider}/attestation",
      `/v1/providers/${b}/attestation`,
      400,
      "invalid_nonce",
    ],
    [
      "POST /v1/providers/{provider}/relay",
      `/v1/providers/${a}/relay`,
      415,
      "unsupported_media_type",
      { body: "{}", headers: { "content-type": "application/json" } },
    ],
  ];
  for (const [operation, path, status, code, init] of refusals) {
    const got = await check(checker, operation, `${url}${path}`, init);
    assert.equal(got.status, status, path);
    assert.equal(errorOf(got).code, code, path);
  }
  const wrongMethod = await fetch(`${url}/v1/providers/${a}/relay`);
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get("allow"), "POST");
  const got = await answer("/v1/providers/{provider}/relay", "post", wrongMethod);
  assert.equal(errorOf(got).code, "method_not_allowed");
  checker.check(got);
});

Deno.test("provider: its document matches its routes, and its answers match its document", async () => {
  await using net = await network();
  const nonce = "cd".repeat(32);
  for (const { provider, server, keyConfig } of [net.verified, net.tee]) {
    const url = server.url;
    const checker = await documentOf(provider.service, url);
    await check(checker, "GET /v1/ad", `${url}/v1/ad`);
    await check(checker, "GET /v1/key", `${url}/v1/key`);
    const attestation = await check(
      checker,
      "GET /v1/attestation",
      `${url}/v1/attestation?nonce=${nonce}`,
    );
    assert.equal(attestation.status, provider.ad.tier === "tee" ? 200 : 404);
    const badNonce = await check(checker, "GET /v1/attestation", `${url}/v1/attestation?nonce=z`);
    assert.equal(errorOf(badNonce).code, "invalid_nonce");

    const sealed = await sealHttpRequest(keyConfig, {
      body: { model: "devnet/echo", messages: [{ role: "user", content: "hi" }], stream: true },
      headers: { date: new Date().toUTCString() },
    });
    const relayed = await check(checker, "POST /v1/relay", `${url}/v1/relay`, {
      headers: { "content-type": sealed.contentType },
      body: await new Response(sealed.body).arrayBuffer(),
    });
    assert.equal(relayed.status, 200);
    const garbage = await check(checker, "POST /v1/relay", `${url}/v1/relay`, {
      headers: { "content-type": "message/ohttp-chunked-req" },
      body: new Uint8Array(100),
    });
    assert.deepEqual(errorOf(garbage), {
      code: "cannot_open",
      message: "The sealed request could not be opened",
    });
    const wrongType = await check(checker, "POST /v1/relay", `${url}/v1/relay`, { body: "x" });
    assert.equal(errorOf(wrongType).code, "unsupported_media_type");
    const wrongMethod = await fetch(`${url}/v1/relay`);
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get("allow"), "POST");
    checker.check(await answer("/v1/relay", "post", wrongMethod));
  }
});

Deno.test("the layer's limits and unexpected failures answer in the network's shape, without the cause", async () => {
  const logged: string[] = [];
  const router = createRouterService({
    source: () => {
      throw new Error("database password is hunter2");
    },
    log: (line) => logged.push(line),
  });
  await using server = serve(router.fetch);
  const checker = new OpenApiChecker(router.document());
  const failed = await answer("/v1/ads", "get", await fetch(`${server.url}/v1/ads`));
  assert.equal(failed.status, 500);
  assert.deepEqual(errorOf(failed), {
    code: "internal_error",
    message: "The router failed to answer",
  });
  checker.check(failed);
  assert.ok(logged.some((line) => line.includes("hunter2")), "the cause is logged");
  const long = await answer(
    "/v1/ads",
    "get",
    await fetch(`${server.url}/v1/ads?pad=${"x".repeat(9000)}`),
  );
  assert.equal(long.status, 414);
  assert.equal(errorOf(long).code, "url_too_long");
  checker.check(long);
});
