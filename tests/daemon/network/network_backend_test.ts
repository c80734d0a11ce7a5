import assert from "node:assert/strict";
import type { Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { ProviderAd } from "../../../chain/ad.ts";
import { createGatewayKey, generateKeyPair, NonceBook } from "../../../crypto/mod.ts";
import type { ChatRequest, Tier } from "../../../daemon/core/backend.ts";
import { DaemonError, type DaemonErrorCode } from "../../../daemon/core/daemon_error.ts";
import type { ProviderCandidate } from "../../../daemon/gateway/gateway_client.ts";
import { GatewayResolver } from "../../../daemon/gateway/gateway_resolver.ts";
import { GatewaySet } from "../../../daemon/gateway/gateway_set.ts";
import { publicMessage } from "../../../daemon/core/http_error.ts";
import { NetworkBackend, rank } from "../../../daemon/network/network_backend.ts";
import { ProviderReputation } from "../../../daemon/network/provider_reputation.ts";
import { ProviderScheduler } from "../../../daemon/network/scheduler.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import { type ChatBody, type ChatChunk, EchoEngine } from "../../../devnet/engine.ts";
import { createGatewayHandler, type DirectoryEntry } from "../../../devnet/gateway.ts";
import { DevnetProvider } from "../../../devnet/provider.ts";
import { Prng } from "../../crypto/_helpers.ts";
import { closedPort, serve, type TestServer } from "../../_http.ts";
import { eventually } from "../_load.ts";

const MODEL = "devnet/echo";

// ---------------------------------------------------------------------------------------------
// rank()

/** One candidate of a ranking case; its address is `0x…` + `id`, so ids order addresses. */
interface Spec {
  id: number;
  available?: number;
  tokensPerSec?: number;
  input?: string;
  output?: string;
  /** The daemon's score of it; absent: unknown (the default score function's ½). */
  score?: number;
  /** Other models in the ad, priced independently. */
  others?: { id: string; input: string; output: string }[];
}

const addressOf = (id: number) => `0x${id.toString(16).padStart(40, "0")}` as Address;

function candidate(spec: Spec): ProviderCandidate {
  const ad: ProviderAd = {
    version: 1,
    provider: addressOf(spec.id),
    tier: "verified",
    serving_key: addressOf(0xffff),
    endpoint: "http://127.0.0.1:9301",
    models: [
      ...(spec.others ?? []).map((m) => ({
        id: m.id,
        prices: { input: m.input, output: m.output },
        context_length: 8192,
      })),
      {
        id: MODEL,
        prices: { input: spec.input ?? "100", output: spec.output ?? "100" },
        context_length: 8192,
      },
    ],
  };
  return {
    provider: addressOf(spec.id),
    tier: "verified",
    ad,
    available: spec.available ?? 1,
    tokensPerSec: spec.tokensPerSec ?? 0,
  };
}

function scoreOf(specs: readonly Spec[]): (provider: string) => number {
  const scores = new Map(specs.map((s) => [addressOf(s.id), s.score]));
  return (provider) => scores.get(provider as Address) ?? 0.5;
}

const ids = (ranked: readonly ProviderCandidate[]) =>
  ranked.map((c) => parseInt(c.provider.slice(2), 16));

const UINT256_MAX = ((1n << 256n) - 1n).toString();

Deno.test("rank(): capacity, then reliability, then exact blended price, then score, tokens/s, address", () => {
  const cases: [string, Spec[], number[]][] = [
    [
      "free capacity first, even when pricier",
      [{ id: 1, available: 0, input: "1" }, { id: 2, available: 1, input: "900" }],
      [2, 1],
    ],
    [
      "capacity before reliability",
      [{ id: 1, available: 0, score: 0.9 }, { id: 2, available: 3, score: 0.1 }],
      [2, 1],
    ],
    [
      "a reliable provider before a failing one (score below ½), whatever the price",
      [{ id: 1, score: 0.49, input: "1" }, { id: 2, score: 0.5, input: "900" }],
      [2, 1],
    ],
    [
      "½ counts as reliable: among the reliable, price before score",
      [{ id: 1, score: 0.95, input: "900" }, { id: 2, score: 0.5, input: "1" }],
      [2, 1],
    ],
    [
      "among the failing, price before score",
      [{ id: 1, score: 0.45, input: "900" }, { id: 2, score: 0.05, input: "1" }],
      [2, 1],
    ],
    [
      "blended price: input + output",
      [{ id: 1, input: "1", output: "100" }, { id: 2, input: "50", output: "50" }],
      [2, 1],
    ],
    [
      "exact: 2^53 + 1 is dearer than 2^53 (equal as numbers)",
      [{ id: 1, input: "9007199254740993", output: "0" }, {
        id: 2,
        input: "9007199254740992",
        output: "0",
      }],
      [2, 1],
    ],
    [
      "exact near uint256's top: the sum does not overflow or round",
      [{ id: 1, input: UINT256_MAX, output: UINT256_MAX }, {
        id: 2,
        input: UINT256_MAX,
        output: (BigInt(UINT256_MAX) - 1n).toString(),
      }],
      [2, 1],
    ],
    [
      "the price of the asked model, not of the ad's others",
      [
        { id: 1, input: "500", others: [{ id: "meta/cheap", input: "0", output: "0" }] },
        { id: 2, input: "400", others: [{ id: "meta/dear", input: "9999", output: "9999" }] },
      ],
      [2, 1],
    ],
    [
      "same price: the better score first",
      [{ id: 1, score: 0.6 }, { id: 2, score: 0.9 }, { id: 3, score: 0.75 }],
      [2, 3, 1],
    ],
    [
      "same price and score: the higher tokens/s first",
      [{ id: 1, tokensPerSec: 10 }, { id: 2, tokensPerSec: 30 }, { id: 3, tokensPerSec: 20 }],
      [2, 3, 1],
    ],
    [
      "all else equal: by address",
      [{ id: 3 }, { id: 1 }, { id: 2 }],
      [1, 2, 3],
    ],
    [
      "a full mix",
      [
        { id: 1, available: 0, input: "1", score: 0.99 },
        { id: 2, score: 0.2, input: "1" },
        { id: 3, input: "300", score: 0.7 },
        { id: 4, input: "200", score: 0.55 },
        { id: 5, input: "200", score: 0.8 },
        { id: 6, input: "200", score: 0.8, tokensPerSec: 5 },
        { id: 7, score: 0.3, input: "500" },
        { id: 8, available: 0, input: "2", score: 0.1 },
      ],
      [6, 5, 4, 3, 2, 7, 1, 8],
    ],
  ];
  for (const [label, specs, expected] of cases) {
    const input = specs.map(candidate);
    const before = input.map((c) => c.provider);
    assert.deepEqual(ids(rank(input, MODEL, scoreOf(specs))), expected, label);
    assert.deepEqual(input.map((c) => c.provider), before, `${label}: the input is not reordered`);
  }
});

Deno.test("rank(): unknown providers score ½, so they rank with the reliable ones", () => {
  // Without a score function every provider is unknown: price decides.
  const plain = [{ id: 1, input: "900" }, { id: 2, input: "1" }].map(candidate);
  assert.deepEqual(ids(rank(plain, MODEL)), [2, 1]);

  // A provider this daemon saw fail once scores ⅓: an unknown one goes first, though dearer.
  const reputation = new ProviderReputation();
  reputation.record(addressOf(2), false);
  const known = [{ id: 1, input: "900" }, { id: 2, input: "1" }].map(candidate);
  assert.deepEqual(ids(rank(known, MODEL, (p) => reputation.score(p))), [1, 2]);
  reputation.record(addressOf(2), true);
  assert.deepEqual(
    ids(rank(known, MODEL, (p) => reputation.score(p))),
    [2, 1],
    "one success back: ½ again, and the price decides",
  );
});

Deno.test("rank(): the order is total: any shuffle of the input ranks the same (seeded)", () => {
  const prng = new Prng(0x7a4e_0001);
  const specs: Spec[] = Array.from({ length: 24 }, (_, i) => ({
    id: i + 1,
    available: prng.pick([0, 1, 4]),
    tokensPerSec: prng.pick([0, 10, 20]),
    input: String(prng.pick([1, 2, 3])),
    output: String(prng.pick([1, 2])),
    score: prng.pick([0.2, 0.5, 0.5, 0.8]),
  }));
  const score = scoreOf(specs);
  const reference = ids(rank(specs.map(candidate), MODEL, score));
  assert.equal(reference.length, specs.length);
  for (let round = 0; round < 20; round++) {
    const shuffled = specs.map(candidate);
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = prng.int(0, i);
      [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
    }
    assert.deepEqual(ids(rank(shuffled, MODEL, score)), reference, `round ${round}`);
  }
  // And the reference respects the rules pairwise.
  const byId = new Map(specs.map((s) => [s.id, s]));
  for (let i = 1; i < reference.length; i++) {
    const a = byId.get(reference[i - 1])!;
    const b = byId.get(reference[i])!;
    const key = (s: Spec) => [
      s.available! > 0 ? 0 : 1,
      s.score! >= 0.5 ? 0 : 1,
      Number(s.input) + Number(s.output),
      -s.score!,
      -s.tokensPerSec!,
      s.id,
    ];
    const [ka, kb] = [key(a), key(b)];
    const first = ka.findIndex((v, k) => v !== kb[k]);
    assert.ok(first >= 0 && ka[first] < kb[first], `${a.id} before ${b.id}: ${ka} vs ${kb}`);
  }
});

// ---------------------------------------------------------------------------------------------
// NetworkBackend against a tiny gateway and real devnet providers on loopback (no chain)

/** The echo engine, remembering what each request asked for. */
class RecordingEngine extends EchoEngine {
  readonly bodies: ChatBody[] = [];
  override complete(body: ChatBody, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    this.bodies.push(body);
    return super.complete(body, signal);
  }
}

const engine = new RecordingEngine({ tokenDelayMs: 0, servedBy: "the network backend test" });

const privateKey = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as const;

/** A devnet provider served on loopback. */
async function startProvider(index: number): Promise<{ server: TestServer; p: DevnetProvider }> {
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const p = await DevnetProvider.create({
    provider: privateKeyToAccount(privateKey(index + 1)).address,
    servingKey: privateKeyToAccount(privateKey(index + 101)),
    tier: "verified",
    endpoint: server.url,
    engine,
    key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
    maxConcurrency: 8,
    log: () => {},
  });
  handler = p.handler;
  return { server, p };
}

function entryOf(p: DevnetProvider, ad: unknown = p.ad): DirectoryEntry {
  return {
    provider: p.ad.provider,
    tier: p.ad.tier,
    ad: ad as DirectoryEntry["ad"],
    capacity: { max_concurrency: 8, available_concurrency: 8 },
    metrics: { tokens_per_sec: 0 },
  };
}

/** A network of `count` providers (sorted by address) behind one gateway, and a backend. */
async function startNetwork(count: number) {
  const providers = await Promise.all(Array.from({ length: count }, (_, i) => startProvider(i)));
  providers.sort((a, b) => (a.p.ad.provider < b.p.ad.provider ? -1 : 1));
  const entries: DirectoryEntry[] = providers.map(({ p }) => entryOf(p));
  let gatewayHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  /** The path of every request the gateway got. */
  const asked: string[] = [];
  /** Relays of these providers are answered "busy" (as a gateway passes a provider's on). */
  const busy = new Set<string>();
  const gateway = serve(async (req) => {
    const path = new URL(req.url).pathname;
    asked.push(path);
    const provider = /^\/v1\/providers\/(0x[0-9a-f]{40})\/relay$/.exec(path)?.[1];
    if (provider && busy.has(provider)) {
      await req.body?.cancel();
      return Response.json({ error: { code: "provider_busy", message: "busy" } }, {
        status: 503,
        headers: { "retry-after": "1" },
      });
    }
    return gatewayHandler(req);
  });
  gatewayHandler = createGatewayHandler({
    directory: { entries: () => entries },
    peers: new GatewaySet(),
    self: gateway.url,
  });
  const verdicts = new VerdictLog();
  const reputation = new ProviderReputation();
  const backend = new NetworkBackend({
    resolver: new GatewayResolver({ pinned: gateway.url, bootstrap: [], log: () => {} }),
    trust: { nonces: new NonceBook() },
    verdicts,
    reputation,
    // Ties are broken at random to spread load; here the first of the preference order wins,
    // so which provider is tried first is known.
    scheduler: new ProviderScheduler({ random: () => 0 }),
  });
  return {
    providers: providers.map(({ p }) => p),
    entries,
    gateway,
    relays: () => asked.filter((path) => path.endsWith("/relay")),
    keys: () => asked.filter((path) => path.endsWith("/key")),
    busy,
    verdicts,
    reputation,
    backend,
    async [Symbol.asyncDispose]() {
      await gateway.close();
      await Promise.all(providers.map(({ server }) => server.close()));
    },
  };
}

function request(model = MODEL, tier: Tier = "verified", content = "hello there"): ChatRequest {
  return {
    tier,
    model,
    body: {
      model,
      messages: content === "" ? [] : [{ role: "user", content }],
      stream: true,
      stream_options: { include_usage: true },
    },
  };
}

/** Runs a chat to its end; returns who served it and the text. */
async function chat(backend: NetworkBackend, req: ChatRequest = request()) {
  const reply = await backend.chat(req, new AbortController().signal);
  let text = "";
  for await (const chunk of reply.chunks) text += chunk.choices[0]?.delta.content ?? "";
  return { served: reply.served, text };
}

async function refusedWith(promise: Promise<unknown>, code: DaemonErrorCode): Promise<DaemonError> {
  let caught: unknown;
  await assert.rejects(promise, (error: unknown) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof DaemonError, `expected DaemonError, got ${caught}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

/** An address no provider uses, as a serving key the provider never signs with. */
const IMPOSTOR_KEY = privateKeyToAccount(privateKey(0xbad)).address.toLowerCase() as Address;

Deno.test("NetworkBackend: a request is sealed to a trusted provider and its reply streamed", async () => {
  await using net = await startNetwork(1);
  const { served, text } = await chat(net.backend);
  assert.match(text, /You said: "hello there"/);
  assert.equal(served.provider, net.providers[0].ad.provider);
  assert.equal(served.gateway, net.gateway.url);
  assert.match(served.verdict, /^endorsed-key by 0x[0-9a-f]{10}…, gateway-listed key$/);
  const [record] = net.verdicts.latest();
  assert.equal(record.outcome, "accepted");
  assert.equal(record.provider, served.provider);
  assert.ok(net.reputation.score(served.provider) > 0.5, "a served request raised its score");
});

Deno.test("NetworkBackend: a whole reply is asked for as one chat.completion and reads as the same chunks", async () => {
  await using net = await startNetwork(1);
  const streamed = await chat(net.backend);
  assert.equal(engine.bodies.at(-1)?.stream, true);
  const whole = await chat(net.backend, { ...request(), whole: true });
  const sent = engine.bodies.at(-1)!;
  assert.equal(sent.stream, false, "the provider is asked for a whole reply");
  assert.equal(sent.stream_options, undefined, "usage comes in the object itself");
  assert.equal(whole.text, streamed.text);
  assert.equal(whole.served.provider, streamed.served.provider);
  assert.equal(net.providers[0].inFlight, 0, "the slot is free once the reply was read");
});

Deno.test("NetworkBackend: the provider's slot is free once its reply came in, however slowly the client reads", async () => {
  await using net = await startNetwork(1);
  const reply = await net.backend.chat(request(), new AbortController().signal);
  const chunks = reply.chunks[Symbol.asyncIterator]();
  const first = await chunks.next();
  assert.equal(first.done, false);
  // The client reads nothing more: the reply is read ahead of it, and its end frees the slot.
  await eventually(
    () => net.backend.load.inFlight === 0,
    30_000,
    () => `${net.backend.load.inFlight} slot(s) still held with the reply unread`,
  );
  let text = "";
  for (let step = await chunks.next(); !step.done; step = await chunks.next()) {
    text += step.value.choices[0]?.delta.content ?? "";
  }
  assert.match(text, /You said: "hello there"/, "the whole reply still reaches the client");
  assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 });
});

Deno.test("NetworkBackend: no such model is model_not_found; a listed model nobody can serve is no_provider", async () => {
  await using net = await startNetwork(1);
  // The gateway also lists a provider of devnet/listed whose ad does not validate: the model is
  // on offer, yet there is no candidate. (Listed before the first request: the backend reuses
  // a model list for 10 s.)
  const [p] = net.providers;
  const listed = {
    ...p.ad,
    provider: addressOf(0xabc),
    version: 2,
    models: [{ id: "devnet/listed", prices: { input: "1", output: "1" }, context_length: 8 }],
  };
  net.entries.push({ ...entryOf(p, listed), provider: addressOf(0xabc) });
  const absent = await refusedWith(chat(net.backend, request("devnet/absent")), "model_not_found");
  assert.equal(absent.status, 404);
  assert.equal(absent.param, "model");
  assert.match(absent.shortMessage, /offers no model devnet\/absent in the verified tier/);

  const otherTier = await refusedWith(chat(net.backend, request(MODEL, "tee")), "model_not_found");
  assert.match(otherTier.shortMessage, /in the tee tier/);

  const none = await refusedWith(
    chat(net.backend, request("devnet/listed")),
    "no_provider",
  );
  assert.equal(none.status, 503);
  assert.match(none.shortMessage, /No provider can serve devnet\/listed in the verified tier/);
  assert.equal(net.verdicts.size, 0, "nothing was checked, so nothing was recorded");
});

Deno.test("NetworkBackend: a refused provider is logged with the fixed public message, the next one serves, and the refused one ranks last", async () => {
  await using net = await startNetwork(2);
  const [bad, good] = net.providers; // bad has the lower address: tried first while unknown
  // The gateway lists bad's ad with a serving key bad never signs with: its endorsement fails.
  net.entries[0] = entryOf(bad, { ...bad.ad, serving_key: IMPOSTOR_KEY });

  const { served } = await chat(net.backend);
  assert.equal(served.provider, good.ad.provider);
  const [accepted, refused] = net.verdicts.latest();
  assert.equal(accepted.outcome, "accepted");
  assert.equal(accepted.provider, good.ad.provider);
  assert.equal(refused.outcome, "refused");
  assert.equal(refused.provider, bad.ad.provider);
  assert.equal(refused.code, "key_not_vouched");
  // The log is served to clients: the fixed message of the code, never which check failed.
  assert.equal(refused.verdict, publicMessage(new DaemonError("key_not_vouched", "detail")));
  assert.doesNotMatch(refused.verdict, /signed by|expected|0x/);

  assert.ok(net.reputation.score(bad.ad.provider) < 0.5, "the refusal lowered bad's score");
  assert.ok(net.reputation.score(good.ad.provider) > 0.5, "serving raised good's score");

  // Next request: bad now ranks after good, so good serves without bad being tried again.
  const again = await chat(net.backend);
  assert.equal(again.served.provider, good.ad.provider);
  assert.equal(net.verdicts.size, 3);
  assert.deepEqual(
    net.verdicts.latest().map((r) => [r.outcome, r.provider]),
    [
      ["accepted", good.ad.provider],
      ["accepted", good.ad.provider],
      ["refused", bad.ad.provider],
    ],
  );
});

Deno.test("NetworkBackend: when every provider is refused, the refusal is the answer", async () => {
  await using net = await startNetwork(2);
  net.entries.splice(
    0,
    2,
    ...net.providers.map((p) => entryOf(p, { ...p.ad, serving_key: IMPOSTOR_KEY })),
  );
  await refusedWith(chat(net.backend), "key_not_vouched");
  assert.deepEqual(net.verdicts.latest().map((r) => [r.outcome, r.code]), [
    ["refused", "key_not_vouched"],
    ["refused", "key_not_vouched"],
  ]);
});

Deno.test("NetworkBackend: an unreachable provider is skipped and scored down, but is no refusal", async () => {
  await using net = await startNetwork(2);
  const [down, up] = net.providers;
  // down's endpoint stops answering: the gateway cannot reach it for its key.
  net.entries[0] = entryOf(down, { ...down.ad, endpoint: `http://127.0.0.1:${closedPort()}` });
  const { served } = await chat(net.backend);
  assert.equal(served.provider, up.ad.provider);
  assert.ok(net.reputation.score(down.ad.provider) < 0.5, "its failure lowered its score");
  assert.deepEqual(
    net.verdicts.latest().map((r) => [r.outcome, r.provider]),
    [["accepted", up.ad.provider]],
    "a provider that could not be reached was not refused on trust",
  );
});

Deno.test("NetworkBackend: the client's own bad request is not held against the provider", async () => {
  await using net = await startNetwork(2);
  const error = await refusedWith(
    chat(net.backend, request(MODEL, "verified", "")),
    "provider_error",
  );
  assert.equal(error.status, 400, "the provider's 400 passes through");
  for (const p of net.providers) {
    assert.equal(net.reputation.score(p.ad.provider), 0.5, "no provider was scored down");
  }
  assert.deepEqual(
    net.relays(),
    [`/v1/providers/${net.providers[0].ad.provider}/relay`],
    "only the first provider was tried: another would refuse the request too",
  );
});

Deno.test("NetworkBackend: a busy provider costs nothing: the request goes to another, no reputation is lost, the key is kept", async () => {
  await using net = await startNetwork(2);
  const [first, second] = net.providers; // first has the lower address: chosen first while idle
  await chat(net.backend); // served by first: its key is fetched once
  const scores = net.providers.map((p) => net.reputation.score(p.ad.provider));
  const firstKey = `/v1/providers/${first.ad.provider}/key`;
  const keys = net.keys().filter((path) => path === firstKey).length;
  assert.equal(keys, 1);
  net.busy.add(first.ad.provider);
  const { served } = await chat(net.backend);
  assert.equal(served.provider, second.ad.provider, "the request moved on");
  // (Scores decay with time; a failure would have taken it from ⅔ to ½.)
  assert.ok(
    Math.abs(net.reputation.score(first.ad.provider) - scores[0]) < 0.01,
    `being busy cost reputation: ${scores[0]} → ${net.reputation.score(first.ad.provider)}`,
  );
  assert.equal(
    net.keys().filter((path) => path === firstKey).length,
    keys,
    "the busy provider's key was kept (not fetched again)",
  );
  assert.ok(net.relays().includes(`/v1/providers/${first.ad.provider}/relay`), "it was asked");
  assert.deepEqual(net.backend.load, { inFlight: 0, queued: 0 });
});
