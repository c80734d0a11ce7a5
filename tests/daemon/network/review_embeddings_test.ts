/**
 * Review of embeddings against a hostile provider, through the real network backend (a tiny
 * gateway and real devnet providers on loopback, each sealed reply opened and checked): every
 * malformed answer is refused as a `provider_error`, the next provider serves when there is
 * one, and the provider slot is always given back (the backend's load returns to 0).
 */

import assert from "node:assert/strict";
import { privateKeyToAccount } from "viem/accounts";
import { createGatewayKey, generateKeyPair, NonceBook } from "../../../crypto/mod.ts";
import type { EmbeddingsRequest } from "../../../daemon/core/backend.ts";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import { checkedEmbeddings } from "../../../daemon/network/_embeddings_reply.ts";
import { MAX_EMBEDDINGS_REPLY_BYTES } from "../../../daemon/network/exchanges.ts";
import { GatewayResolver } from "../../../daemon/gateway/gateway_resolver.ts";
import { GatewaySet } from "../../../daemon/gateway/gateway_set.ts";
import { NetworkBackend } from "../../../daemon/network/network_backend.ts";
import { ProviderReputation } from "../../../daemon/network/provider_reputation.ts";
import { ProviderScheduler } from "../../../daemon/network/scheduler.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import type { EmbedBody, EmbeddingList } from "../../../devnet/dev_embed.ts";
import { EchoEngine, EMBED_MODEL } from "../../../devnet/engine.ts";
import { createGatewayHandler, type DirectoryEntry } from "../../../devnet/gateway.ts";
import { DevnetProvider } from "../../../devnet/provider.ts";
import { serve, type TestServer } from "../../_http.ts";
import { post, surface } from "../_surface.ts";

/** What a hostile engine answers instead of the dev model's list (`provider`: whose engine). */
type Forge = (honest: EmbeddingList, provider: number) => unknown;

/** The dev engine, whose embeddings answer is rewritten by `forge` (when given). */
class ForgingEngine extends EchoEngine {
  readonly #forge?: Forge;
  readonly #provider: number;
  constructor(provider: number, forge?: Forge) {
    super({ tokenDelayMs: 0 });
    this.#provider = provider;
    this.#forge = forge;
  }
  override async embed(body: EmbedBody, signal: AbortSignal): Promise<EmbeddingList> {
    const honest = await super.embed(body, signal);
    return (this.#forge ? this.#forge(honest, this.#provider) : honest) as EmbeddingList;
  }
}

const key = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as const;

async function startProvider(index: number, forge?: Forge) {
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const p = await DevnetProvider.create({
    provider: privateKeyToAccount(key(index + 1)).address,
    servingKey: privateKeyToAccount(key(index + 101)),
    tier: "verified",
    endpoint: server.url,
    engine: new ForgingEngine(index, forge),
    key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
    maxConcurrency: 4,
    log: () => {},
  });
  handler = p.handler;
  return { server, p };
}

/** Providers, each with its engine's forgery (if any), behind one gateway; a backend. */
async function startNetwork(
  forges: (Forge | undefined)[],
  reputation = new ProviderReputation(),
) {
  const started = await Promise.all(forges.map((forge, i) => startProvider(i, forge)));
  const entries: DirectoryEntry[] = started.map(({ p }) => ({
    provider: p.ad.provider,
    tier: p.ad.tier,
    ad: p.ad as DirectoryEntry["ad"],
    capacity: { max_concurrency: 4, available_concurrency: 4 },
    metrics: { tokens_per_sec: 0 },
  }));
  let gatewayHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const gateway: TestServer = serve((req) => gatewayHandler(req));
  gatewayHandler = createGatewayHandler({
    directory: { entries: () => entries },
    peers: new GatewaySet(),
    self: gateway.url,
  });
  const backend = new NetworkBackend({
    resolver: new GatewayResolver({ pinned: gateway.url, bootstrap: [], log: () => {} }),
    trust: { nonces: new NonceBook() },
    verdicts: new VerdictLog(),
    reputation,
    scheduler: new ProviderScheduler({ random: () => 0 }),
  });
  const providers = started.map(({ p }) => p);
  return {
    backend,
    providers,
    async [Symbol.asyncDispose]() {
      await gateway.close();
      await Promise.all(started.map(({ server }) => server.close()));
    },
  };
}

function request(input: EmbeddingsRequest["body"]["input"], dimensions?: number) {
  return {
    tier: "verified" as const,
    model: EMBED_MODEL,
    body: {
      model: EMBED_MODEL,
      input,
      encoding_format: "float" as const,
      ...(dimensions === undefined ? {} : { dimensions }),
    },
  };
}

const FORGERIES: [string, Forge][] = [
  ["one vector too few", (l) => ({ ...l, data: l.data.slice(1) })],
  ["one vector too many", (l) => ({ ...l, data: [...l.data, { ...l.data[0], index: 2 }] })],
  ["a null component (NaN in JSON)", (l) => {
    l.data[0].embedding[3] = NaN;
    return l;
  }],
  ["a string component", (l) => {
    (l.data[1].embedding as unknown[])[0] = "0.5";
    return l;
  }],
  [
    "nested arrays",
    (l) => ({ ...l, data: l.data.map((d) => ({ ...d, embedding: [d.embedding] })) }),
  ],
  ["vectors of different lengths", (l) => {
    l.data[1].embedding.pop();
    return l;
  }],
  ["an empty vector", (l) => ({ ...l, data: l.data.map((d) => ({ ...d, embedding: [] })) })],
  ["two vectors for one input", (l) => ({ ...l, data: l.data.map((d) => ({ ...d, index: 0 })) })],
  [
    "an index out of range",
    (l) => ({ ...l, data: l.data.map((d, i) => ({ ...d, index: i + 5 })) }),
  ],
  ["base64 although floats were asked", (l) => ({
    ...l,
    data: l.data.map((d) => ({ ...d, embedding: "AAAAPw==" })),
  })],
  ["no data", (l) => ({ ...l, data: undefined })],
  ["not an object", () => [1, 2, 3]],
];

Deno.test("embeddings from a hostile provider: each malformed answer is a provider_error, and the slot is given back", async () => {
  for (const [what, forge] of FORGERIES) {
    await using net = await startNetwork([forge]);
    const error = await net.backend.embed(
      request(["alpha beta", "gamma"]),
      new AbortController().signal,
    ).then(() => undefined, (e) => e);
    assert.ok(error instanceof DaemonError, `${what}: ${error}`);
    assert.equal(error.code, "provider_error", `${what}: ${error.message}`);
    assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 }, what);
    assert.equal(net.providers[0].inFlight, 0, `${what}: the provider's slot`);
  }
});

Deno.test("embeddings from a hostile provider: the next provider serves, and the slots are given back", async () => {
  // Whichever provider is asked first forges; the other answers honestly.
  const forgers: number[] = [];
  const forge: Forge = (l, provider) => {
    if (forgers.length > 0 && forgers[0] !== provider) return l;
    forgers.push(provider);
    return { ...l, data: l.data.slice(1) };
  };
  await using net = await startNetwork([forge, forge]);
  const reply = await net.backend.embed(
    request(["alpha beta", "gamma"], 8),
    new AbortController().signal,
  );
  assert.equal(reply.vectors.length, 2);
  assert.deepEqual(reply.vectors.map((v) => v.length), [8, 8]);
  assert.equal(forgers.length, 1, "the hostile provider was asked once");
  assert.equal(reply.served.provider, net.providers[1 - forgers[0]].ad.provider);
  assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 });
});

Deno.test("embeddings from a hostile provider: vectors of another length than the dimensions asked are refused", async () => {
  await using net = await startNetwork([(l) => ({
    ...l,
    data: l.data.map((d) => ({ ...d, embedding: [...d.embedding, 0.5] })),
  })]);
  const error = await net.backend.embed(request("alpha", 8), new AbortController().signal)
    .then(() => undefined, (e) => e);
  assert.ok(error instanceof DaemonError);
  assert.equal(error.code, "provider_error");
  assert.match(error.message, /9 dimensions, expected 8/);
  assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 });
});

Deno.test("embeddings from a hostile provider: an answer over 64 MiB is refused without holding it, the slot given back", async () => {
  const huge = Math.ceil(MAX_EMBEDDINGS_REPLY_BYTES / "0.125,".length) + 1024;
  await using net = await startNetwork([(l) => ({
    ...l,
    data: [{ ...l.data[0], embedding: new Array(huge).fill(0.125) }],
  })]);
  const error = await net.backend.embed(request("alpha"), new AbortController().signal)
    .then(() => undefined, (e) => e);
  assert.ok(error instanceof DaemonError, String(error));
  assert.equal(error.code, "provider_error");
  assert.match(error.message, /larger than 67108864 bytes/);
  assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 });
});

Deno.test("checkedEmbeddings: usage that is negative, fractional or not a number counts as 0", () => {
  for (const prompt_tokens of [-5, 1.5, "7", null, Number.MAX_VALUE]) {
    const checked = checkedEmbeddings(
      {
        data: [{ index: 0, embedding: [0.5] }],
        usage: { prompt_tokens },
      },
      1,
      undefined,
    );
    assert.equal(checked.promptTokens, 0, String(prompt_tokens));
  }
});

Deno.test("embeddings: a bad item of input is named by its index, with what was found there", async () => {
  const fixture = surface();
  const cases: [string, unknown, string, RegExp][] = [
    ["/v1/embeddings", ["ok", null], "input[1]", /input\[1\] must be .*; found null/],
    ["/v1/embeddings", [1.5], "input[0]", /input\[0\] must be .*; found a number \(1\.5\)/],
    ["/v1/embeddings", [[]], "input[0]", /input\[0\] must be .*; found an array/],
    ["/api/embed", ["ok", ""], "", /input\[1\] must be a non-empty string; found ""/],
  ];
  for (const [path, input, param, message] of cases) {
    const answer = await fixture.handler(
      post(path, { model: "net/verified/devnet/embed", input }),
    );
    assert.equal(answer.status, 400, `${path} ${JSON.stringify(input)}`);
    const body = await answer.json();
    const text = typeof body.error === "string" ? body.error : body.error.message;
    assert.match(text, message);
    if (param) assert.equal(body.error.param, param);
  }
});

Deno.test("a chat with an embedding model (or embeddings with a chat model) is refused before anything is sealed, no provider blamed", async () => {
  const reputation = new ProviderReputation();
  await using net = await startNetwork([undefined, undefined], reputation);
  const error = await net.backend.chat({
    tier: "verified",
    model: EMBED_MODEL,
    body: {
      model: EMBED_MODEL,
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    },
  }, new AbortController().signal).then(() => undefined, (e) => e);
  assert.ok(error instanceof DaemonError, String(error));
  assert.equal(error.code, "invalid_request_error", error.message);
  assert.equal(error.param, "model");
  assert.match(error.message, /embedding model/);
  const wrong = await net.backend.embed(request("alpha"), new AbortController().signal)
    .then(() => undefined, (e) => e);
  assert.equal(wrong, undefined, "an embedding model still embeds");
  const chatModel = await net.backend.embed({
    ...request("alpha"),
    model: "devnet/echo",
    body: { ...request("alpha").body, model: "devnet/echo" },
  }, new AbortController().signal).then(() => undefined, (e) => e);
  assert.ok(chatModel instanceof DaemonError, String(chatModel));
  assert.equal(chatModel.code, "invalid_request_error", chatModel.message);
  for (const p of net.providers) {
    assert.equal(reputation.score(p.ad.provider) >= 0.5, true, "no provider was blamed");
  }
  assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 });
});

Deno.test("embeddings from a hostile provider: without dimensions asked, vectors of another length than its ad gives are refused", async () => {
  await using net = await startNetwork([(l) => ({
    ...l,
    data: l.data.map((d) => ({ ...d, embedding: d.embedding.slice(0, 3) })),
  })]);
  const advertised = net.providers[0].ad.models.find((m) => m.id === EMBED_MODEL)
    ?.embedding_dimensions;
  assert.equal(advertised, 256, "the dev model's ad gives its length");
  const error = await net.backend.embed(request(["alpha", "beta"]), new AbortController().signal)
    .then(() => undefined, (e) => e);
  assert.ok(error instanceof DaemonError, String(error));
  assert.equal(error.code, "provider_error");
  assert.match(error.message, /3 dimensions, expected 256/);
  assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 });
});

Deno.test("checkedEmbeddings: a component beyond float32's range is refused (base64 would carry Infinity)", () => {
  for (const x of [1e39, -1e39, Number.MAX_VALUE]) {
    assert.throws(
      () => checkedEmbeddings({ data: [{ index: 0, embedding: [0.5, x] }] }, 1, undefined),
      (e: unknown) => e instanceof DaemonError && e.code === "provider_error",
      String(x),
    );
  }
  const edge = checkedEmbeddings({ data: [{ embedding: [3.4028234663852886e38, -1e-45] }] }, 1, 2);
  assert.deepEqual(edge.vectors, [[3.4028234663852886e38, -1e-45]]);
});
