import assert from "node:assert/strict";
import type { Address } from "viem";
import { escrowAbi } from "../../chain/abi.ts";
import { ChainConfigError, ChainReadError } from "../../chain/errors.ts";
import { readEscrowAccount } from "../../chain/escrow_account.ts";
import { VoucherSigner } from "../../chain/voucher.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";

Deno.test("readEscrowAccount: deposit, reserved, available and voucher totals at one block", async () => {
  await using chain = await startChainFixture({ empty: true });
  const { escrow } = chain.contracts;
  const consumer = chain.accounts.consumer.address.toLowerCase() as Address;
  const provider = chain.accounts.rewards.address.toLowerCase() as Address;
  const empty = await readEscrowAccount(chain.client, escrow, consumer, { providers: [provider] });
  assert.deepEqual(
    [empty.deposit, empty.reserved, empty.available, empty.unlockAt, empty.settled.get(provider)],
    [0n, 0n, 0n, 0n, 0n],
  );
  const chainId = { chainId: chain.anvil.chainId };
  const consumerSigner = createSigner(chain.anvil.rpcUrl, chain.accounts.consumer, chainId);
  const providerSigner = createSigner(chain.anvil.rpcUrl, chain.accounts.rewards, chainId);
  await sendAndConfirm(consumerSigner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "deposit",
    args: [],
    value: 1_000n,
  });
  const before = await readEscrowAccount(chain.client, escrow, consumer);
  // The consumer's vouchers are signed by another key than its dev account here: use a key
  // whose address is funded in the Escrow instead.
  const key = `0x${"42".repeat(32)}` as const;
  const signer = new VoucherSigner(key, { chainId: chain.anvil.chainId, escrow });
  await sendAndConfirm(chain.owner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "depositFor",
    args: [signer.address],
    value: 500n,
  });
  const voucher = signer.sign({ provider, cumulative: 120n, seq: 1n });
  await sendAndConfirm(providerSigner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "redeemVouchers",
    args: [[{
      voucher: { consumer: voucher.consumer, provider, cumulative: 120n, seq: 1n },
      signature: voucher.signature,
      total: 100n,
      tokens: 3n,
    }]],
  });
  await sendAndConfirm(consumerSigner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "requestWithdrawal",
    args: [300n],
  });
  const after = await readEscrowAccount(chain.client, escrow, consumer);
  assert.deepEqual([after.deposit, after.reserved, after.available], [1_000n, 300n, 700n]);
  assert.ok(after.unlockAt >= after.block.timestamp + 86_400n - 1n);
  assert.ok(after.block.number > before.block.number);
  const paid = await readEscrowAccount(chain.client, escrow, signer.address, {
    providers: [provider, consumer],
  });
  assert.deepEqual([paid.deposit, paid.available], [400n, 400n]);
  assert.deepEqual([...paid.settled], [[provider, 100n], [consumer, 0n]]);
  // Pinned: the earlier block still reads the earlier account.
  const old = await readEscrowAccount(chain.client, escrow, consumer, {
    block: before.block.number,
  });
  assert.deepEqual([old.deposit, old.reserved], [1_000n, 0n]);
  await assert.rejects(
    readEscrowAccount(chain.client, escrow, "0x12" as Address),
    (e) => e instanceof ChainConfigError && /consumer must be a 20-byte/.test(e.message),
  );
  await assert.rejects(
    readEscrowAccount(chain.client, chain.contracts.registry, consumer),
    (e) => e instanceof ChainReadError && e.reason === "call_failed",
  );
});
