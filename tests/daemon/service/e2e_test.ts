/**
 * The daemon end to end: the real daemon in front of the real devnet (anvil, contracts,
 * providers, routers, gateways), driven by the real `openai` and `ollama` client libraries.
 * Every seed rule is attacked here: mock and stale attestations, quotes bound to another key,
 * unapproved measurements, keys not endorsed by the attested key, a gateway swapping keys,
 * and tampered or truncated replies — each refused with its code, nothing sent in the clear.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { Ollama } from "ollama";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  createGatewayKey,
  encodeKeyConfig,
  endorseKey,
  endorsementToJson,
  generateKeyPair,
} from "../../../crypto/mod.ts";
import { registryAbi } from "../../../chain/abi.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { createSigner, devAccounts, sendAndConfirm } from "../../../devnet/signer.ts";
import { okJson, serve } from "../../_http.ts";
import { containsBytes, tcpProxy } from "../../_tcp_proxy.ts";
import {
  devnetEvm,
  editStream,
  maliciousGateway,
  measurementsFile,
  startDaemon,
  syntheticTee,
} from "../_e2e.ts";

const encoder = new TextEncoder();

function openai(url: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
}

/** Asserts an OpenAI SDK error with this status and code. */
async function refusedWith(promise: Promise<unknown>, status: number, code: string) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof OpenAI.APIError, `expected an APIError, got ${error}`);
    assert.equal(error.status, status, error.message);
    assert.equal(error.code, code, error.message);
    return true;
  });
}

Deno.test("openai SDK: models, chat, streaming and usage through the real network", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const client = openai(daemon.url);

  const ids = (await client.models.list()).data.map((m) => m.id).sort();
  assert.deepEqual(ids, [
    "net/tee/devnet/echo",
    "net/tee/devnet/embed",
    "net/verified/devnet/echo",
    "net/verified/devnet/embed",
  ]);

  const { data: completion, response } = await client.chat.completions.create({
    model: "net/verified/devnet/echo",
    messages: [{ role: "user", content: "What is the capital of France?" }],
  }).withResponse();
  assert.match(completion.choices[0].message.content ?? "", /What is the capital of France\?/);
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.ok(completion.usage!.prompt_tokens > 0 && completion.usage!.completion_tokens > 0);
  const provider = response.headers.get("x-net-provider");
  assert.ok(devnet.providers.some((p) => p.address === provider && p.tier === "verified"));
  assert.equal(response.headers.get("x-net-tier"), "verified");
  // The serving key abbreviated in ASCII (`0x07c5...`), never a `…` made `?`.
  assert.match(
    response.headers.get("x-net-verdict") ?? "",
    /^endorsed-key by 0x[0-9a-f]{10}\.\.\., /,
  );

  const stream = await client.chat.completions.create({
    model: "net/verified/devnet/echo:latest",
    messages: [{ role: "user", content: "stream me" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let usage;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    usage = chunk.usage ?? usage;
  }
  assert.match(text, /stream me/);
  assert.ok(usage && usage.total_tokens === usage.prompt_tokens + usage.completion_tokens);

  const verdicts = await okJson(fetch(`${daemon.url}/v1/verdicts`));
  assert.ok(JSON.stringify(verdicts).includes("accepted"));
});

Deno.test("ollama library: tags, chat and generate stream to done:true", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const ollama = new Ollama({ host: daemon.url });
  const tags = await ollama.list();
  assert.ok(tags.models.some((m) => m.name === "net/verified/devnet/echo:latest"));

  let content = "";
  let last;
  for await (
    const part of await ollama.chat({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content: "hello from ollama" }],
      stream: true,
    })
  ) {
    content += part.message.content;
    last = part;
  }
  assert.match(content, /hello from ollama/);
  assert.equal(last?.done, true);
  assert.ok((last?.eval_count ?? 0) > 0);

  const generated = await ollama.generate({
    model: "net/verified/devnet/echo:latest",
    prompt: "one shot",
  });
  assert.match(generated.response ?? "", /one shot/);
  assert.equal(generated.done, true);
});

Deno.test("the bytes the gateway receives and sends never contain the prompt or the reply", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  const gateway = new URL(devnet.gateways[0]);
  await using wire = tcpProxy({ hostname: gateway.hostname, port: Number(gateway.port) });
  await using daemon = await startDaemon({ gateway: wire.url });
  const secret = "zebra-quartz-7731 my bank PIN";
  const completion = await openai(daemon.url).chat.completions.create({
    model: "net/verified/devnet/echo",
    messages: [{ role: "user", content: secret }],
  });
  assert.match(
    completion.choices[0].message.content ?? "",
    /zebra-quartz-7731/,
    "the reply echoes it",
  );
  const sent = wire.sent();
  const received = wire.received();
  assert.ok(
    containsBytes(sent, encoder.encode("POST /v1/providers/")),
    "the relay went through the proxy",
  );
  for (const needle of ["zebra-quartz-7731", "bank PIN", "You said"]) {
    assert.ok(
      !containsBytes(sent, encoder.encode(needle)),
      `"${needle}" left the machine in the clear`,
    );
    assert.ok(
      !containsBytes(received, encoder.encode(needle)),
      `"${needle}" came back in the clear`,
    );
  }
});

Deno.test("TEE tier: a mock attestation is refused and nothing is relayed", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 0,
    teeProviders: 1,
  });
  const gateway = new URL(devnet.gateways[0]);
  await using wire = tcpProxy({ hostname: gateway.hostname, port: Number(gateway.port) });
  const measurements = await measurementsFile(["0x" + "ab".repeat(32)]);
  await using daemon = await startDaemon({ gateway: wire.url, measurementsFile: measurements });
  await refusedWith(
    openai(daemon.url).chat.completions.create({
      model: "net/tee/devnet/echo",
      messages: [{ role: "user", content: "secret for the enclave" }],
    }),
    403,
    "attestation_mock",
  );
  assert.ok(!containsBytes(wire.sent(), encoder.encode("/relay")), "a request was relayed");
  assert.ok(!containsBytes(wire.sent(), encoder.encode("secret for the enclave")));
  const { verdicts } = await okJson(fetch(`${daemon.url}/v1/verdicts`));
  assert.equal(verdicts[0].outcome, "refused");
  assert.equal(verdicts[0].code, "attestation_mock");
});

Deno.test("TEE tier: without an approved set the tier is refused with a clear error", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 0,
    teeProviders: 1,
  });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  await assert.rejects(
    openai(daemon.url).chat.completions.create({
      model: "net/tee/devnet/echo",
      messages: [{ role: "user", content: "x" }],
    }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 503);
      assert.match(error.message, /approved measurement set/);
      return true;
    },
  );
});

Deno.test("TEE tier: a verified synthetic enclave is served, and each broken binding is refused", async (t) => {
  const cases: {
    name: string;
    tee: Parameters<typeof syntheticTee>[0];
    approve?: boolean;
    status?: number;
    code?: string;
  }[] = [
    { name: "a valid quote under the test root is accepted", tee: {} },
    {
      name: "a measurement that is not approved",
      tee: {},
      approve: false,
      status: 403,
      code: "measurement_not_approved",
    },
    {
      name: "a quote bound to another serving key",
      tee: { otherServingKey: privateKeyToAccount(generatePrivateKey()) },
      status: 403,
      code: "attestation_failed",
    },
    {
      name: "an HPKE key not endorsed by the attested key",
      tee: { endorsementSigner: privateKeyToAccount(generatePrivateKey()) },
      status: 403,
      code: "key_not_vouched",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const tee = await syntheticTee(c.tee);
      await using devnet = await startDevnet({
        tokenDelayMs: 0,
        verifiedProviders: 0,
        teeProviders: 1,
        attester: () => tee.attester,
      });
      const file = await measurementsFile(
        c.approve === false ? ["0x" + "cd".repeat(32)] : tee.measurementIds,
      );
      let relayed = 0;
      await using counting = maliciousGateway(devnet.gateways[0], (req, upstream) => {
        if (new URL(req.url).pathname.endsWith("/relay")) relayed++;
        return upstream;
      });
      await using daemon = await startDaemon({
        gateway: counting.url,
        measurementsFile: file,
        roots: tee.pki.roots,
      });
      const request = openai(daemon.url).chat.completions.create({
        model: "net/tee/devnet/echo",
        messages: [{ role: "user", content: "attested hello" }],
      }).withResponse();
      if (!c.code) {
        const { data, response } = await request;
        assert.match(data.choices[0].message.content ?? "", /attested hello/);
        assert.match(response.headers.get("x-net-verdict") ?? "", /^tee:tdx measurement 0x/);
        assert.equal(relayed, 1);
      } else {
        await refusedWith(request, c.status!, c.code);
        assert.equal(relayed, 0, "a request was sealed and relayed to a refused enclave");
      }
    });
  }
});

Deno.test("TEE tier: a replayed attestation (stale nonce) is refused", async () => {
  const tee = await syntheticTee({ replay: true });
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 0,
    teeProviders: 1,
    attester: () => tee.attester,
  });
  let relayed = 0;
  await using counting = maliciousGateway(devnet.gateways[0], (req, upstream) => {
    if (new URL(req.url).pathname.endsWith("/relay")) relayed++;
    return upstream;
  });
  await using daemon = await startDaemon({
    gateway: counting.url,
    measurementsFile: await measurementsFile(tee.measurementIds),
    roots: tee.pki.roots,
  });
  const client = openai(daemon.url);
  const body = {
    model: "net/tee/devnet/echo",
    messages: [{ role: "user" as const, content: "x" }],
  };
  await client.chat.completions.create(body); // the first bundle answers its own nonce
  assert.equal(relayed, 1);
  await refusedWith(client.chat.completions.create(body), 403, "attestation_stale");
  assert.equal(relayed, 1, "a request was relayed after a stale attestation");
});

Deno.test("TEE tier: the approved set comes from the Registry, and an explicit file wins", async () => {
  const tee = await syntheticTee();
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 0,
    teeProviders: 1,
    attester: () => tee.attester,
  });
  const evm = devnetEvm(devnet);
  const ask = (url: string) =>
    openai(url).chat.completions.create({
      model: "net/tee/devnet/echo",
      messages: [{ role: "user", content: "approved on chain?" }],
    });

  // Not (yet) in the Registry's approved set: refused.
  await using before = await startDaemon({ bootstrap: devnet.gateways, evm, roots: tee.pki.roots });
  await refusedWith(ask(before.url), 403, "measurement_not_approved");

  // Governance approves the enclave's and the GPU's measurements on chain: served, no file.
  const owner = createSigner(devnet.rpcUrl, devAccounts().owner, { chainId: devnet.chainId });
  for (const id of tee.measurementIds) {
    await sendAndConfirm(owner, {
      address: devnet.contracts.registry,
      abi: registryAbi,
      functionName: "approveMeasurement",
      args: [id as `0x${string}`],
    });
  }
  await using after = await startDaemon({ bootstrap: devnet.gateways, evm, roots: tee.pki.roots });
  assert.match((await ask(after.url)).choices[0].message.content ?? "", /approved on chain\?/);

  // An explicit measurements file wins over the chain's set.
  await using pinned = await startDaemon({
    bootstrap: devnet.gateways,
    evm,
    roots: tee.pki.roots,
    measurementsFile: await measurementsFile(["0x" + "ee".repeat(32)]),
  });
  await refusedWith(ask(pinned.url), 403, "measurement_not_approved");
});

Deno.test("a gateway that swaps the key configuration gets nothing sealed to its key", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
  });
  let relayed = 0;
  await using mitm = maliciousGateway(devnet.gateways[0], async (req, upstream) => {
    if (new URL(req.url).pathname.endsWith("/relay")) relayed++;
    if (!new URL(req.url).pathname.endsWith("/key")) return upstream;
    const answer = await upstream.json();
    // Swap in the attacker's own key configuration (same shape, different public key).
    const config = answer.endorsement.key_config as string;
    answer.endorsement.key_config = config.slice(0, 12) + "ff".repeat(32) + config.slice(12 + 64);
    return Response.json(answer);
  });
  await using daemon = await startDaemon({ gateway: mitm.url });
  await refusedWith(
    openai(daemon.url).chat.completions.create({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content: "x" }],
    }),
    403,
    "key_not_vouched",
  );
  assert.equal(relayed, 0, "a request was sealed to the swapped key and relayed");
});

Deno.test("a tampered or truncated reply stream is refused, never delivered as a normal end", async (t) => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
  });
  const attacks: [string, (chunk: Uint8Array, offset: number) => Uint8Array | null, string][] = [
    ["a flipped bit", (chunk, offset) => {
      const copy = chunk.slice();
      if (offset <= 40 && offset + copy.length > 40) copy[40 - offset] ^= 1;
      return copy;
    }, "decryption_failed"],
    [
      "a cut after the head",
      (chunk, offset) => (offset >= 60 ? null : chunk.slice(0, Math.max(0, 60 - offset))),
      "stream_truncated",
    ],
  ];
  for (const [name, edit, code] of attacks) {
    await t.step(name, async () => {
      await using mitm = maliciousGateway(
        devnet.gateways[0],
        (req, upstream) =>
          new URL(req.url).pathname.endsWith("/relay")
            ? new Response(editStream(upstream.body!, edit), { headers: upstream.headers })
            : upstream,
      );
      await using daemon = await startDaemon({ gateway: mitm.url });
      const client = openai(daemon.url);
      const outcome = await (async () => {
        try {
          const stream = await client.chat.completions.create({
            model: "net/verified/devnet/echo",
            messages: [{ role: "user", content: "a b c d e f g h i j k l m n o p" }],
            stream: true,
          });
          for await (const _ of stream) { /* consume */ }
          return "completed normally";
        } catch (error) {
          return error;
        }
      })();
      assert.notEqual(outcome, "completed normally");
      if (outcome instanceof OpenAI.APIError && outcome.status) {
        assert.equal(outcome.status, 502);
        assert.equal(outcome.code, code);
      } else {
        // Failed after the first chunk: the SDK raises the in-stream error.
        assert.match(
          String(outcome),
          new RegExp(code === "stream_truncated" ? "truncat|ended" : "opened|decrypt", "i"),
        );
      }
    });
  }
});

Deno.test("failover: a provider that is down before the first byte is skipped", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 2,
    teeProviders: 0,
  });
  let refusedOnce = false;
  await using mitm = maliciousGateway(devnet.gateways[0], (req, upstream) => {
    if (new URL(req.url).pathname.endsWith("/relay") && !refusedOnce) {
      refusedOnce = true;
      return Response.json({ error: { code: "provider_unreachable", message: "down" } }, {
        status: 502,
      });
    }
    return upstream;
  });
  await using daemon = await startDaemon({ gateway: mitm.url });
  const completion = await openai(daemon.url).chat.completions.create({
    model: "net/verified/devnet/echo",
    messages: [{ role: "user", content: "still served" }],
  });
  assert.ok(refusedOnce);
  assert.match(completion.choices[0].message.content ?? "", /still served/);
});

Deno.test("with the chain configured, a gateway forging the ad and its key is refused before sealing", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
  });
  const evm = devnetEvm(devnet);

  // Honest path: the verdict says the trust root was checked on chain.
  await using honest = await startDaemon({ bootstrap: devnet.gateways, evm });
  const { response } = await openai(honest.url).chat.completions.create({
    model: "net/verified/devnet/echo",
    messages: [{ role: "user", content: "hi" }],
  }).withResponse();
  assert.match(response.headers.get("x-net-verdict") ?? "", /on-chain trust root/);

  // The attacker replaces the ad's serving key with its own and endorses its own HPKE key.
  const attacker = privateKeyToAccount(generatePrivateKey());
  const attackerKey = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  let relayed = 0;
  await using mitm = maliciousGateway(devnet.gateways[0], async (req, upstream) => {
    const path = new URL(req.url).pathname;
    if (path.endsWith("/relay")) relayed++;
    if (path === "/v1/providers") {
      const answer = await upstream.json();
      for (const p of answer.providers) p.ad.serving_key = attacker.address.toLowerCase();
      return Response.json(answer);
    }
    if (path.endsWith("/key")) {
      const answer = await upstream.json();
      answer.endorsement = endorsementToJson(
        await endorseKey(attacker, {
          keyConfig: encodeKeyConfig(attackerKey.config),
          expiresAt: Math.floor(Date.now() / 1000) + 600,
        }),
      );
      return Response.json(answer);
    }
    return upstream;
  });
  await using daemon = await startDaemon({ gateway: mitm.url, evm });
  await refusedWith(
    openai(daemon.url).chat.completions.create({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content: "for the provider only" }],
    }),
    403,
    "key_not_vouched",
  );
  assert.equal(relayed, 0, "a request was sealed to the attacker's key");
});

Deno.test("a verified key is checked once and reused; a failure with it forgets it", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
  });
  let keyFetches = 0;
  let failNextRelay = false;
  await using counting = maliciousGateway(devnet.gateways[0], (req, upstream) => {
    const path = new URL(req.url).pathname;
    if (path.endsWith("/key")) keyFetches++;
    if (path.endsWith("/relay") && failNextRelay) {
      failNextRelay = false;
      return Response.json({ error: { code: "provider_error", message: "x" } }, { status: 502 });
    }
    return upstream;
  });
  await using daemon = await startDaemon({ gateway: counting.url });
  const client = openai(daemon.url);
  const ask = () =>
    client.chat.completions.create({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content: "again" }],
    });
  await ask();
  await ask();
  await ask();
  assert.equal(keyFetches, 1, "the endorsement was fetched again while still valid");
  failNextRelay = true;
  await assert.rejects(ask()); // the only provider fails: nothing to fail over to
  await ask();
  assert.equal(keyFetches, 2, "the key was not fetched again after a failure");
});

Deno.test("gossip cannot plant the daemon's own address in its known set", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
  });
  let daemonUrl = "";
  await using liar = maliciousGateway(devnet.gateways[0], (_req, upstream) => upstream);
  // The lying gateway names the daemon itself (and its localhost spelling) as gateways.
  await using planting = serve(() =>
    Response.json({
      gateways: [
        { url: daemonUrl, last_seen: new Date().toISOString() },
        { url: daemonUrl.replace("127.0.0.1", "localhost"), last_seen: new Date().toISOString() },
        { url: liar.url, last_seen: new Date().toISOString() },
      ],
    })
  );
  await using daemon = await startDaemon({ bootstrap: [planting.url] });
  daemonUrl = daemon.url;
  await (await fetch(`${daemon.url}/v1/models`)).body?.cancel();
  const { gateways } = await okJson(fetch(`${daemon.url}/v1/gateways`));
  const urls = gateways.map((g: { url: string }) => g.url);
  assert.ok(urls.includes(liar.url), `gossip was not merged: ${urls}`);
  assert.ok(
    !urls.some((u: string) => u.endsWith(`:${daemon.port}`)),
    `the daemon lists itself: ${urls}`,
  );
});

Deno.test("a relay that stalls before the first chunk costs one attempt, then the next provider serves", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 2,
    teeProviders: 0,
  });
  let stalled = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await using stalling = maliciousGateway(devnet.gateways[0], async (req, upstream) => {
    if (new URL(req.url).pathname.endsWith("/relay") && stalled++ === 0) {
      // Headers never come while the daemon waits; the stall ends when the daemon hangs up
      // or, since a pooled connection may stay open, when the test is done.
      await Promise.race([
        released,
        new Promise((resolve) => req.signal.addEventListener("abort", resolve, { once: true })),
      ]);
      await upstream.body?.cancel();
      return new Response(null, { status: 499 });
    }
    return upstream;
  });
  await using daemon = await startDaemon({ gateway: stalling.url, attemptTimeoutMs: 500 });
  let completion;
  try {
    completion = await openai(daemon.url).chat.completions.create({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content: "after a stall" }],
    });
  } finally {
    release();
  }
  assert.equal(stalled, 2, "the second attempt went to the next provider");
  assert.match(completion.choices[0].message.content ?? "", /after a stall/);
});
