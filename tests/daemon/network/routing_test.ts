/**
 * Routing preferences end to end: a daemon reading the real chain in front of the real devnet
 * (two verified providers staked 2,000 and 2,500, one TEE provider), with the official clients:
 * `only`, `ignore`, `order` and `min_stake` decide who serves (reported in `x-net-provider` as
 * always), a preference no provider satisfies is a 404 naming it, and `require_tier: "tee"`
 * sends a verified model id to the TEE tier (whose mock attestation is then refused, as any TEE
 * request's would be).
 */

import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { parseEther } from "viem";
import { startDevnet } from "../../../devnet/network.ts";
import { devnetEvm, startDaemon } from "../_e2e.ts";
import { okJson } from "../../_http.ts";

const MODEL = "net/verified/devnet/echo";

Deno.test("routing preferences decide who serves, on every surface, through the sealed path", async (t) => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 2,
    teeProviders: 1,
  });
  await using daemon = await startDaemon({
    gateway: devnet.gateways[0],
    evm: devnetEvm(devnet),
  });
  const [first, second] = devnet.providers.filter((p) => p.tier === "verified").map((p) =>
    p.address.toLowerCase()
  );
  const openai = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const chat = async (provider: Record<string, unknown>) => {
    const { response } = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "who serves?" }],
      // @ts-expect-error: OpenRouter's field, which the openai SDK passes through
      provider,
    }).withResponse();
    return response.headers.get("x-net-provider");
  };

  await t.step("only, ignore, order: every request goes where they say", async () => {
    for (let i = 0; i < 3; i++) {
      assert.equal(await chat({ only: [second] }), second);
      assert.equal(await chat({ ignore: [second] }), first);
      assert.equal(await chat({ order: [first, second] }), first);
    }
  });

  await t.step("min_stake is read on chain: only the provider staked enough serves", async () => {
    const stake = parseEther("2250").toString();
    for (let i = 0; i < 3; i++) assert.equal(await chat({ min_stake: stake }), second);
  });

  await t.step("a preference no provider satisfies is a 404 naming it", async () => {
    await assert.rejects(
      chat({ max_price: { prompt: 1 } }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.NotFoundError);
        const body = error.error as { code: string; param: string; message: string };
        assert.equal(body.code, "no_matching_provider");
        assert.equal(body.param, "provider.max_price.prompt");
        assert.match(body.message, /provider\.max_price\.prompt \(1\) excluded the 2 left/);
        return true;
      },
    );
    await assert.rejects(
      chat({ min_stake: parseEther("1000000").toString() }),
      (error: unknown) =>
        error instanceof OpenAI.NotFoundError &&
        /the most staked holds 2500000000000000000000/.test(error.message),
    );
  });

  await t.step("the Anthropic and Ollama surfaces take the same object", async () => {
    const anthropic = new Anthropic({ baseURL: daemon.url, apiKey: "unused", maxRetries: 0 });
    const { response } = await anthropic.messages.create({
      model: MODEL,
      max_tokens: 32,
      messages: [{ role: "user", content: "who serves?" }],
      // @ts-expect-error: the daemon's routing preferences
      provider: { only: [first] },
    }).withResponse();
    assert.equal(response.headers.get("x-net-provider"), first);
    const raw = await fetch(`${daemon.url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        stream: false,
        messages: [{ role: "user", content: "who serves?" }],
        provider: { only: [second] },
      }),
    });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get("x-net-provider"), second);
    await raw.body?.cancel();
    // ollama-js sends only its own fields; without preferences it is served as before.
    const ollama = new Ollama({ host: daemon.url });
    const reply = await ollama.chat({ model: MODEL, messages: [{ role: "user", content: "hi" }] });
    assert.match(reply.message.content, /hi/);
  });

  await t.step("require_tier tee takes a verified model id to the TEE tier", async () => {
    await assert.rejects(
      chat({ require_tier: "tee" }),
      (error: unknown) =>
        error instanceof OpenAI.PermissionDeniedError &&
        (error.error as { code: string }).code === "attestation_mock",
    );
    const verdicts = await okJson(fetch(`${daemon.url}/v1/verdicts?limit=1`));
    assert.equal(verdicts.verdicts[0].tier, "tee");
    assert.equal(verdicts.verdicts[0].model, "devnet/echo");
  });
});
