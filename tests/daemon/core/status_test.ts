/**
 * Honest status codes, over real HTTP against real servers on loopback: a model the network
 * does not offer is 404 `model_not_found`; a model it offers that no provider can serve right
 * now (every provider down) is 503 `no_provider` with `Retry-After` — never a 404, which SDKs
 * treat as permanent; every refusal of trust is a 403 with a code per reason and its fixed
 * message, in both dialects, so the `openai` npm client with its default retries surfaces it
 * after one request.
 */

import assert from "node:assert/strict";
import OpenAI, { PermissionDeniedError } from "openai";
import { privateKeyToAccount } from "viem/accounts";
import { createGatewayKey, generateKeyPair } from "../../../crypto/mod.ts";
import { DaemonError, type DaemonErrorCode } from "../../../daemon/core/daemon_error.ts";
import { GatewaySet } from "../../../daemon/gateway/gateway_set.ts";
import { publicMessage } from "../../../daemon/core/http_error.ts";
import { EchoEngine } from "../../../devnet/engine.ts";
import { createGatewayHandler, type DirectoryEntry } from "../../../devnet/gateway.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { DevnetProvider } from "../../../devnet/provider.ts";
import { serve, type TestServer } from "../../_http.ts";
import {
  devnetEvm,
  maliciousGateway,
  measurementsFile,
  startDaemon,
  syntheticTee,
} from "../_e2e.ts";
import { chat, complete } from "../_load.ts";

/** Two providers behind a gateway whose directory the test edits; both can be shut down. */
async function smallNetwork() {
  const engine = new EchoEngine({ tokenDelayMs: 0 });
  const providers: { server: TestServer; p: DevnetProvider }[] = [];
  for (const i of [1, 2]) {
    let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
    const server = serve((req) => handler(req));
    const p = await DevnetProvider.create({
      provider: privateKeyToAccount(`0x${String(i).padStart(64, "0")}`).address,
      servingKey: privateKeyToAccount(`0x${String(i + 50).padStart(64, "0")}`),
      tier: "verified",
      endpoint: server.url,
      engine,
      key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
      log: () => {},
    });
    handler = p.handler;
    providers.push({ server, p });
  }
  const entries: DirectoryEntry[] = providers.map(({ p }) => ({
    provider: p.ad.provider,
    tier: p.ad.tier,
    ad: p.ad,
    capacity: { max_concurrency: 4, available_concurrency: 4 },
    metrics: { tokens_per_sec: 0 },
  }));
  let gatewayHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const gateway = serve((req) => gatewayHandler(req));
  gatewayHandler = createGatewayHandler({
    directory: { entries: () => entries },
    peers: new GatewaySet(),
    self: gateway.url,
    log: () => {},
  });
  return {
    gateway,
    entries,
    stopProviders: () => Promise.all(providers.map(({ server }) => server.close())),
    async [Symbol.asyncDispose]() {
      await gateway.close();
      await Promise.all(providers.map(({ server }) => server.close()));
    },
  };
}

Deno.test("every provider down: 503 no_provider with Retry-After, listed or no longer listed; never offered: 404", async () => {
  await using net = await smallNetwork();
  await using daemon = await startDaemon({ gateway: net.gateway.url });
  assert.ok(complete(await chat(daemon.url)), "served while the providers are up");

  await net.stopProviders();
  for (const dialect of ["openai", "ollama"] as const) {
    const down = await chat(daemon.url, { dialect });
    assert.equal(down.status, 503, down.body);
    assert.match(down.retryAfter ?? "", /^[1-9][0-9]*$/, "Retry-After");
    const error = JSON.parse(down.body).error;
    if (dialect === "openai") {
      assert.equal(error.code, "no_provider");
      assert.match(error.message, /right now: all 2 listed could not be reached/);
    } else assert.match(error, /No provider can serve devnet\/echo in the verified tier right now/);
  }

  // The routers drop them: the gateway lists nobody, and no longer offers the model.
  net.entries.splice(0);
  await new Promise((resolve) => setTimeout(resolve, 2100)); // past the candidate list's 2 s
  await chat(daemon.url); // uses the list it has, and reads it again in the background
  const unlisted = await chat(daemon.url);
  assert.equal(unlisted.status, 503, unlisted.body);
  assert.ok(unlisted.retryAfter);
  assert.equal(JSON.parse(unlisted.body).error.code, "no_provider");
  assert.match(JSON.parse(unlisted.body).error.message, /offered it within the last hour/);

  const never = await chat(daemon.url, { model: "net/verified/devnet/never-offered" });
  assert.equal(never.status, 404);
  assert.equal(JSON.parse(never.body).error.code, "model_not_found");
});

/** How an attacker (or a broken provider) makes the daemon refuse, and the refusal expected. */
interface RefusalCase {
  code: DaemonErrorCode;
  model: string;
  /** Rewrites the answers of the real gateway (at `real`). */
  rewrite?: (path: string, upstream: Response, real: string) => Response | Promise<Response>;
  /** Approve another measurement than the enclave's. */
  unapproved?: boolean;
  /** Ask once first (the stale case replays that first attestation). */
  warmUp?: boolean;
}

const TEE = "net/tee/devnet/echo";
const VERIFIED = "net/verified/devnet/echo";

function refusalCases(): RefusalCase[] {
  let firstBundle: unknown;
  return [
    {
      code: "attestation_mock",
      model: TEE,
      rewrite: async (path, upstream) => {
        if (!path.endsWith("/attestation")) return upstream;
        return Response.json({ ...await upstream.json(), format: "mock", quote: "0x" });
      },
    },
    {
      code: "attestation_stale",
      model: TEE,
      warmUp: true,
      rewrite: async (path, upstream) => {
        if (!path.endsWith("/attestation")) return upstream;
        firstBundle ??= await upstream.json();
        return Response.json(firstBundle); // the first nonce's bundle, replayed
      },
    },
    { code: "measurement_not_approved", model: TEE, unapproved: true },
    {
      code: "key_not_vouched",
      model: VERIFIED,
      rewrite: async (path, upstream) => {
        if (!path.endsWith("/key")) return upstream;
        const answer = await upstream.json();
        const config = answer.endorsement.key_config as string;
        answer.endorsement.key_config = config.slice(0, 12) + "ff".repeat(32) +
          config.slice(12 + 64);
        return Response.json(answer);
      },
    },
    {
      code: "tier_mismatch",
      model: TEE,
      // The verified provider, listed as a TEE one: the Registry says otherwise.
      rewrite: async (path, upstream, real) => {
        if (path !== "/v1/providers") return upstream;
        await upstream.body?.cancel();
        const listed = await (await fetch(`${real}/v1/providers?model=devnet/echo&tier=verified`))
          .json();
        for (const p of listed.providers) {
          p.tier = "tee";
          p.ad.tier = "tee";
        }
        return Response.json(listed);
      },
    },
    {
      code: "attestation_failed",
      model: TEE,
      rewrite: async (path, upstream) => {
        if (!path.endsWith("/attestation")) return upstream;
        const bundle = await upstream.json();
        const quote = bundle.quote as string;
        bundle.quote = quote.slice(0, -4) + (quote.endsWith("00") ? "0101" : "0000");
        return Response.json(bundle);
      },
    },
  ];
}

Deno.test("every refusal of trust is a 403 with its code and fixed message, in both dialects", async (t) => {
  const tee = await syntheticTee();
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 1,
    attester: () => tee.attester,
  });
  const evm = devnetEvm(devnet);
  const real = devnet.gateways[0];
  for (const c of refusalCases()) {
    await t.step(c.code, async () => {
      let relayed = 0;
      await using mitm = maliciousGateway(real, async (req, upstream) => {
        const url = new URL(req.url);
        if (url.pathname.endsWith("/relay")) relayed++;
        return c.rewrite ? await c.rewrite(url.pathname, upstream, real) : upstream;
      });
      await using daemon = await startDaemon({
        gateway: mitm.url,
        evm,
        roots: tee.pki.roots,
        measurementsFile: await measurementsFile(
          c.unapproved ? [`0x${"cd".repeat(32)}`] : tee.measurementIds,
        ),
      });
      if (c.warmUp) assert.ok(complete(await chat(daemon.url, { model: c.model })));
      const before = relayed;
      const message = publicMessage(new DaemonError(c.code, "detail"));
      const openai = await chat(daemon.url, { model: c.model, stream: true });
      assert.equal(openai.status, 403, openai.body);
      assert.deepEqual(JSON.parse(openai.body).error, {
        message,
        type: "permission_error",
        param: null,
        code: c.code,
      });
      const ollama = await chat(daemon.url, { model: c.model, dialect: "ollama" });
      assert.equal(ollama.status, 403, ollama.body);
      assert.deepEqual(JSON.parse(ollama.body), { error: message });
      assert.equal(relayed, before, "nothing was sealed and relayed to a refused provider");
    });
  }
});

Deno.test("the openai npm client, with its default retries, surfaces a refusal after one request", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 0,
    teeProviders: 1, // a mock attestation: refused
  });
  await using daemon = await startDaemon({
    bootstrap: devnet.gateways,
    measurementsFile: await measurementsFile([`0x${"ab".repeat(32)}`]),
  });
  let requests = 0;
  const client = new OpenAI({
    baseURL: `${daemon.url}/v1`,
    apiKey: "unused",
    // Default retries (2): a 5xx would be asked three times, after waits.
    fetch: (input: string | URL | Request, init?: RequestInit) => {
      requests++;
      return fetch(input, init);
    },
  });
  await assert.rejects(
    client.chat.completions.create({
      model: TEE,
      messages: [{ role: "user", content: "for the enclave only" }],
    }),
    (error: unknown) => error instanceof PermissionDeniedError && error.code === "attestation_mock",
  );
  assert.equal(requests, 1, "the client did not retry the refusal");
});
