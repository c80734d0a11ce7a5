/**
 * The TEE tier end to end (`docs/attestation.md`, `docs/protocol.md` §6, §8): the real daemon
 * in front of the real devnet, whose TEE provider answers synthetic evidence in the real formats
 * (a TDX quote, one NVIDIA GPU's SPDM report, their collateral) under test roots the daemon is
 * told to trust. A reply is served with a receipt the daemon verified, kept and serves at
 * `GET /v1/verdicts/{id}`, and that re-verifies offline; each way of breaking the CPU, the GPU,
 * the binding, the model's identity or the receipt is refused with its own code.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { Ollama } from "ollama";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { receiptRecordFromJson, verifyReceiptRecord } from "../../../crypto/tee/mod.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { devnetWeightsDigest } from "../../../devnet/provider_receipt.ts";
import { verifyReceiptFile } from "../../../tools/verify_receipt.ts";
import { maliciousGateway, measurementsFile, startDaemon, syntheticTee } from "../_e2e.ts";
import { okJson } from "../../_http.ts";

function openai(url: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
}

/** A devnet with one TEE provider attesting through `tee`, and a daemon trusting its roots. */
async function network(
  tee: Awaited<ReturnType<typeof syntheticTee>>,
  options: { approve?: string[]; receiptKey?: ReturnType<typeof privateKeyToAccount> | null } = {},
) {
  const devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 0,
    teeProviders: 1,
    attester: () => tee.attester,
    ...(options.receiptKey !== undefined ? { receiptKey: () => options.receiptKey } : {}),
  });
  let relayed = 0;
  const counting = maliciousGateway(devnet.gateways[0], (req, upstream) => {
    if (new URL(req.url).pathname.endsWith("/relay")) relayed++;
    return upstream;
  });
  const daemon = await startDaemon({
    gateway: counting.url,
    measurementsFile: await measurementsFile(options.approve ?? tee.measurementIds),
    roots: tee.pki.roots,
  });
  return {
    daemon,
    relayed: () => relayed,
    async [Symbol.asyncDispose]() {
      await daemon[Symbol.asyncDispose]();
      await counting[Symbol.asyncDispose]();
      await devnet[Symbol.asyncDispose]();
    },
  };
}

Deno.test("TEE tier: a reply's receipt is verified, served by its id and re-verified offline", async () => {
  const tee = await syntheticTee();
  await using net = await network(tee);
  const { url } = net.daemon;
  for (const stream of [false, true]) {
    const client = openai(url);
    const body = {
      model: "net/tee/devnet/echo",
      messages: [{ role: "user" as const, content: `kept receipt ${stream}` }],
    };
    let id: string;
    if (stream) {
      const { data, response } = await client.chat.completions.create({ ...body, stream: true })
        .withResponse();
      let text = "";
      for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? "";
      assert.match(text, /kept receipt true/);
      id = response.headers.get("x-net-receipt") ?? "";
    } else {
      const { data, response } = await client.chat.completions.create(body).withResponse();
      assert.match(data.choices[0].message.content ?? "", /kept receipt false/);
      assert.match(response.headers.get("x-net-verdict") ?? "", /1 GPU .* approved, weights 0x/);
      id = response.headers.get("x-net-receipt") ?? "";
    }
    assert.match(id, /^r[0-9a-f]{32}$/);
    const served = await fetch(`${url}/v1/verdicts/${id}`);
    assert.equal(served.status, 200);
    const json = await served.json();
    assert.equal(json.receipt.model, "devnet/echo");
    assert.equal(json.receipt.weights_digest, devnetWeightsDigest("devnet/echo"));
    assert.ok(json.receipt.usage.completion_tokens > 0);
    // Offline: the library, and the command a user runs on the saved file.
    const again = await verifyReceiptRecord(receiptRecordFromJson(json), { roots: tee.pki.roots });
    assert.equal(again.verdict.gpus.length, 1);
    const file = await Deno.makeTempFile({ suffix: ".json" });
    const roots = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(file, JSON.stringify(json));
    await Deno.writeTextFile(
      roots,
      JSON.stringify({
        intel: tee.pki.roots.intel.map((der) => pemOf(der as Uint8Array)),
        nvidia: tee.pki.roots.nvidia!.map((der) => pemOf(der as Uint8Array)),
      }),
    );
    const lines = await verifyReceiptFile(file, { roots });
    assert.match(lines[0], /^receipt verified: provider 0x/);
    assert.match(lines.join("\n"), /GPU #0: Test GH100 A01 GSP FMC LF, driver 550\.90\.07/);
    // Under the pinned roots (what a user runs by default) the synthetic evidence is refused.
    await assert.rejects(verifyReceiptFile(file), /chain/);
    await Deno.remove(file);
    await Deno.remove(roots);
  }
  // Embeddings in the TEE tier end with a receipt too.
  const embedded = await fetch(`${url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "net/tee/devnet/embed", input: ["receipts for vectors"] }),
  });
  assert.equal(embedded.status, 200);
  assert.equal((await embedded.json()).data.length, 1);
  const vectorReceipt = await fetch(`${url}/v1/verdicts/${embedded.headers.get("x-net-receipt")}`);
  assert.equal(vectorReceipt.status, 200);
  assert.equal((await vectorReceipt.json()).receipt.model, "devnet/embed");
  // An unknown id, or one that is not an id.
  assert.equal((await fetch(`${url}/v1/verdicts/r${"0".repeat(32)}`)).status, 404);
  const bad = await fetch(`${url}/v1/verdicts/not-an-id`);
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
});

Deno.test("TEE tier: /v1/models and /api/show name each model's weights digest", async () => {
  const tee = await syntheticTee();
  await using net = await network(tee);
  const models = await okJson(fetch(`${net.daemon.url}/v1/models`));
  const echo = models.data.find((m: { id: string }) => m.id === "net/tee/devnet/echo");
  assert.deepEqual(echo.net.weights_digests, [devnetWeightsDigest("devnet/echo")]);
  const shown = await new Ollama({ host: net.daemon.url }).show({ model: "net/tee/devnet/echo" });
  assert.deepEqual(
    (shown.model_info as unknown as Record<string, unknown>)["net.weights_digests"],
    [devnetWeightsDigest("devnet/echo")],
  );
});

Deno.test("TEE tier: each broken part of the machine is refused with its own code", async (t) => {
  const cases: {
    name: string;
    tee: Parameters<typeof syntheticTee>[0];
    approve?: "cpu-only";
    code: string;
  }[] = [
    { name: "no GPU evidence", tee: { gpus: 0 }, code: "gpu_not_attested" },
    {
      name: "a GPU under an untrusted root",
      tee: { untrustedGpu: true },
      code: "gpu_attestation_failed",
    },
    {
      name: "a GPU whose measurements are not approved",
      tee: {},
      approve: "cpu-only",
      code: "gpu_measurement_not_approved",
    },
    {
      name: "a quote that binds other models than the bundle names",
      tee: { bindOtherModels: true },
      code: "attestation_binding_failed",
    },
    {
      name: "an enclave attesting other weights than the ad names",
      tee: { otherWeights: true },
      code: "model_not_attested",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const tee = await syntheticTee(c.tee);
      await using net = await network(tee, {
        approve: c.approve === "cpu-only" ? [tee.measurementId] : undefined,
      });
      await assert.rejects(
        openai(net.daemon.url).chat.completions.create({
          model: "net/tee/devnet/echo",
          messages: [{ role: "user", content: "refuse me" }],
        }),
        (error: unknown) => {
          assert.ok(error instanceof OpenAI.APIError, String(error));
          assert.equal(error.status, 403, error.message);
          assert.equal(error.code, c.code, error.message);
          return true;
        },
      );
      assert.equal(net.relayed(), 0, "a request was sealed to a refused machine");
    });
  }
});

Deno.test("TEE tier: a reply without a valid receipt ends with receipt_invalid, never a success", async (t) => {
  for (
    const [name, receiptKey] of [
      ["a receipt signed by another key", privateKeyToAccount(generatePrivateKey())],
      ["no receipt at all", null],
    ] as const
  ) {
    await t.step(name, async () => {
      const tee = await syntheticTee();
      await using net = await network(tee, { receiptKey });
      const client = openai(net.daemon.url);
      const body = {
        model: "net/tee/devnet/echo",
        messages: [{ role: "user" as const, content: "no receipt, no success" }],
      };
      // Streamed: the content arrives, then the stream's last event is the refusal.
      const streamed = await fetch(`${net.daemon.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...body, stream: true }),
      });
      assert.equal(streamed.status, 200);
      const id = streamed.headers.get("x-net-receipt");
      const events = (await streamed.text()).trim().split("\n\n");
      assert.match(events.at(-1)!, /"code":"receipt_invalid"/);
      assert.ok(!events.includes("data: [DONE]"), "a refused stream must not end normally");
      const text = events.slice(0, -1).map((event) =>
        JSON.parse(event.slice("data: ".length)).choices[0]?.delta?.content ?? ""
      ).join("");
      assert.match(text, /no receipt, no success/, "the content came before the refusal");
      // Nothing is kept under its id.
      assert.equal((await fetch(`${net.daemon.url}/v1/verdicts/${id}`)).status, 404);
      // Whole: the client gets the refusal instead of the reply.
      await assert.rejects(client.chat.completions.create(body), (error: unknown) => {
        assert.ok(error instanceof OpenAI.APIError, String(error));
        assert.equal(error.status, 502, error.message);
        assert.equal(error.code, "receipt_invalid", error.message);
        return true;
      });
    });
  }
});

function pemOf(der: Uint8Array): string {
  const base64 = btoa(String.fromCharCode(...der));
  return `-----BEGIN CERTIFICATE-----\n${
    base64.match(/.{1,64}/g)!.join("\n")
  }\n-----END CERTIFICATE-----\n`;
}
