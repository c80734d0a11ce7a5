/**
 * Review of the daemon's relayed-token metric against a provider that sends `usage` in more
 * than one chunk (servers with continuous usage stats send the running count in every chunk):
 * a reply's tokens are counted once, from its last usage, through the real network backend.
 */

import assert from "node:assert/strict";
import { privateKeyToAccount } from "viem/accounts";
import { createGatewayKey, generateKeyPair, NonceBook } from "../../../crypto/mod.ts";
import { GatewayResolver } from "../../../daemon/gateway/gateway_resolver.ts";
import { GatewaySet } from "../../../daemon/gateway/gateway_set.ts";
import type { BackendMetrics } from "../../../daemon/network/backend_metrics.ts";
import { NetworkBackend } from "../../../daemon/network/network_backend.ts";
import { ProviderReputation } from "../../../daemon/network/provider_reputation.ts";
import { ProviderScheduler } from "../../../daemon/network/scheduler.ts";
import { VerdictLog } from "../../../daemon/trust/verdict_log.ts";
import { type ChatBody, type ChatChunk, ECHO_MODEL, EchoEngine } from "../../../devnet/engine.ts";
import { createGatewayHandler, oneProviderDirectory } from "../../../devnet/gateway.ts";
import { DevnetProvider } from "../../../devnet/provider.ts";
import { serve } from "../../_http.ts";

/** The dev engine, its running usage sent in every chunk after the first. */
class ContinuousUsageEngine extends EchoEngine {
  override async *complete(body: ChatBody, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    let completion = 0;
    for await (const chunk of super.complete(body, signal)) {
      if (chunk.usage) {
        yield chunk;
        continue;
      }
      if (chunk.choices[0]?.delta.content) completion++;
      yield {
        ...chunk,
        usage: { prompt_tokens: 3, completion_tokens: completion, total_tokens: 3 + completion },
      };
    }
  }
}

const key = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as const;

Deno.test("metrics: a reply whose usage comes in every chunk is counted once, from its last usage", async () => {
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  await using server = serve((req) => handler(req));
  const p = await DevnetProvider.create({
    provider: privateKeyToAccount(key(1)).address,
    servingKey: privateKeyToAccount(key(101)),
    tier: "verified",
    endpoint: server.url,
    engine: new ContinuousUsageEngine({ tokenDelayMs: 0 }),
    key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
    maxConcurrency: 4,
    log: () => {},
  });
  handler = p.handler;
  let gatewayHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  await using gateway = serve((req) => gatewayHandler(req));
  gatewayHandler = createGatewayHandler({
    directory: oneProviderDirectory(p.ad, 4),
    peers: new GatewaySet(),
    self: gateway.url,
  });
  const relayed: { prompt: number; completion: number } = { prompt: 0, completion: 0 };
  const metrics: BackendMetrics = {
    attempted: () => {},
    verified: () => {},
    firstChunk: () => {},
    relayed: (_tier, usage) => {
      relayed.prompt += usage.prompt_tokens ?? 0;
      relayed.completion += usage.completion_tokens ?? 0;
    },
  };
  const backend = new NetworkBackend({
    resolver: new GatewayResolver({ pinned: gateway.url, bootstrap: [], log: () => {} }),
    trust: { nonces: new NonceBook() },
    verdicts: new VerdictLog(),
    reputation: new ProviderReputation(),
    scheduler: new ProviderScheduler({ random: () => 0 }),
    metrics,
  });
  const reply = await backend.chat({
    tier: "verified",
    model: ECHO_MODEL,
    body: {
      model: ECHO_MODEL,
      messages: [{ role: "user", content: "one two three four five" }],
      stream: true,
      stream_options: { include_usage: true },
    },
  }, new AbortController().signal);
  let last: ChatChunk["usage"];
  let usages = 0;
  for await (const chunk of reply.chunks) {
    if (chunk.usage) {
      usages++;
      last = chunk.usage;
    }
  }
  assert.ok(usages > 2, `the provider sent usage in ${usages} chunks`);
  assert.deepEqual(relayed, {
    prompt: last!.prompt_tokens,
    completion: last!.completion_tokens,
  });
});
