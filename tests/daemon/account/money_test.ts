/**
 * The consumer's money end to end, on the real devnet (anvil, Escrow, providers that take
 * vouchers, gateways) and the real daemon over HTTP, with the real `openai` and `ollama` clients:
 *
 * - an empty deposit: `402 insufficient_deposit` in every dialect, surfaced by the `openai`,
 *   `ollama` and Anthropic clients at once (no retry);
 * - funded: every reply says its cost (`usage.cost`, `cost_wei`, `x-net-cost`, Ollama's and
 *   Anthropic's `cost`),
 *   `GET /v1/account` reads the Escrow, `GET /v1/usage` totals what the ledger recorded, and
 *   the providers redeem exactly that at the Escrow;
 * - a key's cap holds under 100 concurrent requests: every request is answered (200, or 402
 *   `budget_exceeded` with the cap, what was spent and when it resets), and what the key spent
 *   never exceeds its cap.
 */

import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { Ollama } from "ollama";
import OpenAI from "openai";
import type { Address } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { formatCost, parseCost, readEscrowAccount, usageCost } from "../../../chain/mod.ts";
import { createChainClient } from "../../../chain/client.ts";
import { startDevnet } from "../../../devnet/network.ts";
import { okJson } from "../../_http.ts";
import { waitFor } from "../../_wait.ts";
import { startDaemon } from "../_e2e.ts";

const MODEL = "net/verified/devnet/echo";

async function keyFile(dir: string) {
  const key = generatePrivateKey();
  const path = `${dir}/consumer-key`;
  await Deno.writeTextFile(path, `${key}\n`, { mode: 0o600 });
  return { path, address: privateKeyToAccount(key).address.toLowerCase() as Address };
}

Deno.test("money: empty deposit 402s, costs on every reply, account and usage, caps", async (t) => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
    payments: "vouchers",
    settleIntervalMs: 3_600_000, // settled by hand below
  });
  const dir = await Deno.makeTempDir({ prefix: "net-money-" });
  const consumer = await keyFile(dir);
  const agentKey = "net_agent-key-0123456789";
  await Deno.writeTextFile(
    `${dir}/keys.json`,
    JSON.stringify({
      keys: [{ name: "agent", key: agentKey, max_spend: "0.0000000000000002/day" }],
    }),
  );
  const { registry, staking, escrow } = devnet.contracts;
  await using daemon = await startDaemon({
    bootstrap: devnet.gateways,
    evm: { rpcUrl: devnet.rpcUrl, registry, staking, escrow },
    consumerKeyFile: consumer.path,
    apiKeysFile: `${dir}/keys.json`,
  });
  const openai = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused" }); // default retries
  const ollama = new Ollama({ host: daemon.url });
  const anthropic = new Anthropic({ baseURL: daemon.url, apiKey: "unused" }); // default retries
  const chain = await createChainClient(devnet.rpcUrl);
  const provider = devnet.providers[0].address;

  await t.step("an empty deposit: 402 insufficient_deposit in every dialect, at once", async () => {
    const requests = () => countRequests(daemon.url);
    const before = await requests();
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
      (error: InstanceType<typeof OpenAI.APIError>) => {
        assert.equal(error.status, 402);
        assert.equal((error.error as { code?: string }).code, "insufficient_deposit");
        assert.equal(error.type, "insufficient_quota");
        return true;
      },
    );
    await assert.rejects(
      ollama.chat({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
      (error: { status_code?: number; error?: string }) => {
        assert.equal(error.status_code, 402);
        assert.match(String(error.error), /Escrow deposit cannot cover/);
        return true;
      },
    );
    await assert.rejects(
      anthropic.messages.create({
        model: MODEL,
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      }),
      (error: InstanceType<typeof Anthropic.APIError>) => {
        assert.equal(error.status, 402);
        assert.equal((error.error as { error?: { type?: string } }).error?.type, "billing_error");
        return true;
      },
    );
    // At once: one HTTP request each, no retry by any client.
    assert.equal(await requests() - before, 3);
    const account = await getJson(`${daemon.url}/v1/account`);
    assert.equal(account.address, consumer.address);
    assert.deepEqual([account.deposit, account.available, account.pending], ["0", "0", "0"]);
  });

  await devnet.fundConsumer(consumer.address, 10n ** 16n);
  const prices = devnet.providers[0].provider.ad.models.find((m) => m.id === "devnet/echo")!.prices;
  const priced = (prompt: number, completion: number) =>
    usageCost({ input: BigInt(prices.input), output: BigInt(prices.output) }, {
      promptTokens: prompt,
      completionTokens: completion,
    });

  await t.step(
    "every reply says its cost, in every dialect; the account reads the Escrow",
    async () => {
      const whole = await openai.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "what does this cost" }],
      }).withResponse();
      const usage = whole.data.usage as OpenAI.CompletionUsage & { cost: number; cost_wei: string };
      const cost = priced(usage.prompt_tokens, usage.completion_tokens);
      assert.ok(cost > 0n);
      assert.equal(usage.cost_wei, String(cost));
      assert.equal(usage.cost, Number(formatCost(cost)));
      assert.equal(whole.response.headers.get("x-net-cost"), formatCost(cost));
      const stream = await openai.chat.completions.create({
        model: MODEL,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "and streamed" }],
      });
      let last: (OpenAI.CompletionUsage & { cost_wei?: string }) | null | undefined;
      for await (const chunk of stream) if (chunk.usage) last = chunk.usage;
      assert.equal(last?.cost_wei, String(priced(last!.prompt_tokens, last!.completion_tokens)));
      const lines = await ollama.chat({
        model: MODEL,
        stream: true,
        messages: [{ role: "user", content: "ollama streamed" }],
      });
      let done: Record<string, unknown> | undefined;
      for await (const line of lines) {
        if (line.done) {
          done = line as unknown as Record<string, unknown>;
        }
      }
      assert.equal(
        parseCost(String(done?.cost)),
        priced(done?.prompt_eval_count as number, done?.eval_count as number),
      );
      const plain = await fetch(`${daemon.url}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: MODEL,
          stream: false,
          messages: [{ role: "user", content: "x" }],
        }),
      });
      assert.equal(plain.status, 200);
      const body = await plain.json();
      assert.equal(
        plain.headers.get("x-net-cost"),
        formatCost(priced(body.prompt_eval_count, body.eval_count)),
      );
      const embedded = await openai.embeddings.create({
        model: "net/verified/devnet/embed",
        input: ["the cat sat", "on the mat"],
      }).withResponse();
      const embedUsage = embedded.data.usage as { prompt_tokens: number; cost_wei?: string };
      assert.equal(embedUsage.cost_wei, String(priced(embedUsage.prompt_tokens, 0)));
      assert.equal(
        embedded.response.headers.get("x-net-cost"),
        formatCost(priced(embedUsage.prompt_tokens, 0)),
      );
      const message = await anthropic.messages.create({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: "user", content: "anthropic whole" }],
      }).withResponse();
      const paid = priced(message.data.usage.input_tokens, message.data.usage.output_tokens);
      assert.equal((message.data.usage as { cost?: string }).cost, formatCost(paid));
      assert.equal(message.response.headers.get("x-net-cost"), formatCost(paid));
      const events = anthropic.messages.stream({
        model: MODEL,
        max_tokens: 64,
        messages: [{ role: "user", content: "anthropic streamed" }],
      });
      let delta: { output_tokens: number; cost?: string } | undefined;
      for await (const event of events) {
        if (event.type === "message_delta") delta = event.usage as typeof delta;
      }
      const streamed = (await events.finalMessage()).usage;
      assert.equal(delta?.cost, formatCost(priced(streamed.input_tokens, streamed.output_tokens)));
      const account = await getJson(`${daemon.url}/v1/account`);
      const onChain = await readEscrowAccount(chain, escrow, consumer.address);
      assert.deepEqual([account.deposit, account.available], [
        String(onChain.deposit),
        String(onChain.available),
      ]);
    },
  );

  await t.step("a key's cap holds under 100 concurrent requests; all are answered", async () => {
    const capped = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: agentKey, maxRetries: 0 });
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        capped.chat.completions.create({
          model: MODEL,
          max_tokens: 8,
          messages: [{ role: "user", content: `request ${i} of many` }],
        }).then(
          () => "ok" as const,
          (error: InstanceType<typeof OpenAI.APIError>) => {
            assert.equal(error.status, 402, String(error));
            const budget = (error.error as { budget?: Record<string, string> }).budget!;
            assert.equal((error.error as { code?: string }).code, "budget_exceeded");
            assert.deepEqual([budget.scope, budget.key, budget.cap, budget.period], [
              "key",
              "agent",
              "200",
              "day",
            ]);
            assert.ok(BigInt(budget.spent) + BigInt(budget.needed) > 200n);
            assert.ok(Date.parse(budget.resets_at) > Date.now());
            return "refused" as const;
          },
        )),
    );
    const served = outcomes.filter((o) => o === "ok").length;
    assert.ok(served > 0 && served < 100, `${served} of 100 served under the cap`);
    const usage = await waitForUsage(daemon.url, (u) => u.total.pending === "0");
    const agent = usage.by_key.find((k: { key: string }) => k.key === "agent");
    assert.equal(agent.requests, served);
    assert.ok(BigInt(agent.cost) <= 200n, `the key spent ${agent.cost}, over its cap`);
  });

  await t.step("what the ledger recorded is what the provider redeems at the Escrow", async () => {
    const usage = await waitForUsage(daemon.url, (u) => u.total.pending === "0");
    await devnet.settleNow();
    const account = await readEscrowAccount(chain, escrow, consumer.address, {
      providers: [provider],
    });
    assert.equal(String(account.settled.get(provider)), usage.total.cost);
    assert.equal(
      usage.by_provider.find((p: { provider: string }) => p.provider === provider).cost,
      usage.total.cost,
    );
  });
  await Deno.remove(dir, { recursive: true });
});

async function getJson(url: string) {
  return await okJson(fetch(url));
}

/** `GET /v1/usage`, asked until `ready` holds (bills of cut replies are looked up meanwhile). */
// deno-lint-ignore no-explicit-any
async function waitForUsage(url: string, ready: (usage: any) => boolean) {
  return await waitFor("the usage to settle", async () => {
    const usage = await getJson(`${url}/v1/usage`);
    return ready(usage) ? usage : undefined;
  });
}

/** The chat requests the daemon's `/metrics` counted, over every dialect's chat routes. */
async function countRequests(url: string): Promise<number> {
  const response = await fetch(`${url}/metrics`);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  let total = 0;
  for (const line of text.split("\n")) {
    if (
      line.startsWith("net_daemon_http_requests_total{") &&
      ['"/v1/chat/completions"', '"/api/chat"', '"/v1/messages"'].some((route) =>
        line.includes(`route=${route}`)
      )
    ) total += Number(line.split(" ").at(-1));
  }
  return total;
}
