/**
 * The settlement log reader gives each `Settled` event the consumer whose voucher paid it (the
 * `VoucherRedeemed` right after it), and `null` to a trusted settler's settlement; a
 * `VoucherRedeemed` that does not follow its `Settled` is refused.
 */

import assert from "node:assert/strict";
import type { Address } from "viem";
import { generatePrivateKey, mnemonicToAccount } from "viem/accounts";
import { escrowAbi } from "../../chain/abi.ts";
import { SettlementScanError } from "../../chain/errors.ts";
import {
  decodeSettlementLogs,
  SettlementLogReader,
  VOUCHER_REDEEMED_TOPIC,
} from "../../chain/_settlement_logs.ts";
import { VoucherSigner } from "../../chain/voucher.ts";
import { ANVIL_MNEMONIC } from "../../devnet/anvil.ts";
import { redemptionOf } from "../../devnet/_payments.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";

Deno.test("settlement logs: voucher settlements carry their consumer, trusted ones none", async () => {
  await using chain = await startChainFixture({ empty: true });
  const { escrow } = chain.contracts;
  const chainId = { chainId: chain.anvil.chainId };
  const providerAccount = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 5 });
  const provider = providerAccount.address.toLowerCase() as Address;
  const providerSigner = createSigner(chain.anvil.rpcUrl, providerAccount, chainId);
  const domain = { chainId: chain.anvil.chainId, escrow };
  const [alice, bob] = [0, 1].map(() => new VoucherSigner(generatePrivateKey(), domain));
  for (const c of [alice, bob, { address: chain.accounts.consumer.address }]) {
    await sendAndConfirm(chain.owner, {
      address: escrow,
      abi: escrowAbi,
      functionName: "depositFor",
      args: [c.address],
      value: 10_000n,
    });
  }
  await sendAndConfirm(chain.owner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "addSettler",
    args: [chain.accounts.settler.address],
  });
  await sendAndConfirm(createSigner(chain.anvil.rpcUrl, chain.accounts.settler, chainId), {
    address: escrow,
    abi: escrowAbi,
    functionName: "settle",
    args: [chain.accounts.consumer.address, provider, 7n, 1n],
  });
  const claim = (c: VoucherSigner, total: bigint, seq: bigint) =>
    redemptionOf({ voucher: c.sign({ provider, cumulative: total, seq }), total, tokens: seq });
  await sendAndConfirm(providerSigner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "redeemVouchers",
    args: [[claim(alice, 100n, 1n), claim(bob, 200n, 1n)]],
  });
  await sendAndConfirm(providerSigner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "redeemVouchers",
    args: [[claim(alice, 150n, 2n)]],
  });
  const reader = new SettlementLogReader(chain.client, escrow);
  const events = [];
  for await (
    const range of reader.ranges(chain.deployment.fromBlock, await chain.client.getBlockNumber())
  ) {
    events.push(...range.events);
  }
  assert.deepEqual(
    events.map((e) => [e.provider, e.amount, e.tokens, e.consumer]),
    [
      [provider, 7n, 1n, null],
      [provider, 100n, 1n, alice.address],
      [provider, 200n, 1n, bob.address],
      [provider, 50n, 2n, alice.address],
    ],
  );

  // A VoucherRedeemed log moved away from its Settled is refused.
  const logs = await chain.client.request({
    method: "eth_getLogs",
    params: [{
      address: escrow,
      fromBlock: "0x0",
      toBlock: "latest",
      topics: [[VOUCHER_REDEEMED_TOPIC]],
    }],
  }) as never[];
  assert.throws(
    () => decodeSettlementLogs(logs, escrow.toLowerCase() as Address, 0n, 10_000n),
    (e) =>
      e instanceof SettlementScanError && e.reason === "invalid_log" &&
      /does not follow/.test(e.message),
  );
});
