/**
 * The devnet settles the usage its providers serve to the Escrow, so the settlement view
 * moves: a chat through the real daemon and gateway ends up as `Settled` logs, and the
 * indexer's `/providers` shows exactly the tokens the client was told it used.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { createChainClient } from "../../chain/mod.ts";
import { scanSettlements } from "../../chain/settlements.ts";
import { startDevnet } from "../../devnet/network.ts";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { Refresher } from "../../indexer/refresher.ts";
import { startDaemon } from "../daemon/_e2e.ts";

Deno.test("served usage is settled to the Escrow and shows in the indexer", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
    settleIntervalMs: 3_600_000, // settled by hand below, not by the timer
  });
  const provider = devnet.providers[0].address;
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const client = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  let told = 0;
  for (const content of ["first question", "a second, longer question for the provider"]) {
    const completion = await client.chat.completions.create({
      model: "net/verified/devnet/echo",
      messages: [{ role: "user", content }],
    });
    told += completion.usage!.total_tokens;
  }

  await devnet.settleNow();

  // On chain: the Escrow's Settled logs carry exactly those tokens for this provider.
  const chain = await createChainClient(devnet.rpcUrl);
  const { buckets } = await scanSettlements(chain, devnet.contracts.escrow, {
    fromBlock: devnet.fromBlock,
    confirmations: 0,
  });
  const settled = buckets.filter((b) => b.provider === provider);
  assert.equal(settled.reduce((n, b) => n + b.tokens, 0n), BigInt(told));
  assert.ok(settled.every((b) => b.amount > 0n), "the tokens were paid for");

  // In the indexer: the provider's settled volume moved by the same amount.
  await using refresher = new Refresher({
    rpcUrl: devnet.rpcUrl,
    contracts: devnet.contracts,
    scanFromBlock: devnet.fromBlock,
    confirmations: 0,
    // The history is synced by hand after the snapshot: on a busy machine that can take longer
    // than a short freshness bound, and staleness is not what this test is about.
    refreshSecs: 1_800,
    staleAfterSecs: 3_600,
    log: () => {},
  });
  await refresher.refresh();
  await refresher.syncHistory(); // the settlement history runs beside the snapshots
  const handler = createIndexerHandler({ state: () => refresher.state });
  const answer = await handler(new Request("http://indexer/providers"));
  const body = await answer.json();
  assert.equal(answer.status, 200, JSON.stringify(body));
  const { providers } = body;
  const listed = providers.find((p: { provider: string }) => p.provider === provider);
  assert.ok(listed, `${provider} is listed as live-verified`);
  assert.equal(listed.settled.total.tokens, String(told));

  // Nothing is settled twice.
  await devnet.settleNow();
  const again = await scanSettlements(chain, devnet.contracts.escrow, {
    fromBlock: devnet.fromBlock,
    confirmations: 0,
  });
  assert.equal(
    again.buckets.filter((b) => b.provider === provider).reduce((n, b) => n + b.tokens, 0n),
    BigInt(told),
  );
});
