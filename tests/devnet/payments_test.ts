/**
 * The devnet with vouchers (`payments: "vouchers"`): requests through the real gateway are
 * served only when paid; each provider redeems its vouchers at the Escrow from its own account,
 * and the `Settled` logs (which the indexer reads) carry exactly what the consumer was billed.
 */

import assert from "node:assert/strict";
import { generatePrivateKey } from "viem/accounts";
import { createChainClient, readEscrowAccount, usageCost, VoucherSigner } from "../../chain/mod.ts";
import { scanSettlements } from "../../chain/settlements.ts";
import { startDevnet } from "../../devnet/network.ts";
import { createIndexerHandler } from "../../indexer/handler.ts";
import { Refresher } from "../../indexer/refresher.ts";
import { okJson } from "../_http.ts";
import { PayingClient } from "./_paying_client.ts";

Deno.test("devnet vouchers: paid requests are served and redeemed for exactly what was billed", async () => {
  await using devnet = await startDevnet({
    tokenDelayMs: 0,
    verifiedProviders: 1,
    teeProviders: 0,
    payments: "vouchers",
    settleIntervalMs: 3_600_000, // settled by hand below
  });
  const provider = devnet.providers[0].address;
  const domain = { chainId: devnet.chainId, escrow: devnet.contracts.escrow };
  const consumer = new VoucherSigner(generatePrivateKey(), domain);
  const client = new PayingClient(devnet.gateways[0], provider, consumer);
  const body = (text: string) => ({
    model: "devnet/echo",
    messages: [{ role: "user", content: text }],
    max_tokens: 16,
  });

  // Nothing in the Escrow yet: refused, with the code the daemon maps to 402.
  const refused = await client.pay(body("hello"));
  assert.equal(refused.status, 402, refused.text);
  assert.equal((refused.json.error as { code: string }).code, "insufficient_deposit");

  await devnet.fundConsumer(consumer.address, 10n ** 16n);
  const prices = devnet.providers[0].provider.ad.models.find((m) => m.id === "devnet/echo")!.prices;
  let billed = 0n;
  let tokens = 0n;
  for (const text of ["first question", "a second, longer question", "third"]) {
    const answer = await client.pay(body(text));
    assert.equal(answer.status, 200, answer.text);
    const usage = answer.json.usage as { prompt_tokens: number; completion_tokens: number };
    billed += usageCost(
      { input: BigInt(prices.input), output: BigInt(prices.output) },
      { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens },
    );
    tokens += BigInt(usage.prompt_tokens + usage.completion_tokens);
  }
  assert.ok(billed > 0n && billed < client.signed, "billed less than the worst cases signed");

  await devnet.settleNow();
  const chain = await createChainClient(devnet.rpcUrl);
  const account = await readEscrowAccount(chain, devnet.contracts.escrow, consumer.address, {
    providers: [provider],
  });
  assert.equal(account.settled.get(provider), billed);
  assert.equal(account.deposit, 10n ** 16n - billed);
  const { buckets } = await scanSettlements(chain, devnet.contracts.escrow, {
    fromBlock: devnet.fromBlock,
    confirmations: 0,
  });
  const mine = buckets.filter((b) => b.provider === provider);
  assert.equal(mine.reduce((n, b) => n + b.amount, 0n), billed);
  assert.equal(mine.reduce((n, b) => n + b.tokens, 0n), tokens);

  // Nothing is redeemed twice.
  await devnet.settleNow();
  const again = await readEscrowAccount(chain, devnet.contracts.escrow, consumer.address, {
    providers: [provider],
  });
  assert.equal(again.settled.get(provider), billed);

  // A second consumer pays too; the indexer shows the volume both signed for, and two payers.
  const second = new PayingClient(
    devnet.gateways[0],
    provider,
    new VoucherSigner(generatePrivateKey(), domain),
  );
  await devnet.fundConsumer(second.signer.address, 10n ** 16n);
  const answer = await second.pay(body("from someone else"));
  assert.equal(answer.status, 200, answer.text);
  await devnet.settleNow();
  const paid = (await readEscrowAccount(chain, devnet.contracts.escrow, second.signer.address, {
    providers: [provider],
  })).settled.get(provider)!;
  await using refresher = new Refresher({
    rpcUrl: devnet.rpcUrl,
    contracts: devnet.contracts,
    scanFromBlock: devnet.fromBlock,
    confirmations: 0,
    log: () => {},
  });
  await refresher.refresh();
  await refresher.syncHistory();
  // Read at the snapshot's own time: fresh however long the busy machine took to sync.
  const handler = createIndexerHandler({
    state: () => refresher.state,
    clock: () => refresher.state.snapshot!.takenAt,
  });
  const stats = await okJson(handler(new Request("http://indexer/stats")));
  // The devnet's seeded deposit was never charged by the settler here: all volume is signed.
  assert.equal(stats.settlements.signed_amount, String(billed + paid));
  assert.equal(stats.settlements.amount, String(billed + paid));
  const { epochs } = await okJson(handler(new Request("http://indexer/epochs?order=desc&limit=5")));
  const payers = epochs.reduce(
    (n: number, e: { paying_consumers: number }) => n + e.paying_consumers,
    0,
  );
  assert.ok(payers >= 2, `two consumers paid; /epochs counts ${payers}`);
  assert.equal(
    epochs.reduce((n: bigint, e: { signed_amount: string }) => n + BigInt(e.signed_amount), 0n),
    billed + paid,
  );
});
