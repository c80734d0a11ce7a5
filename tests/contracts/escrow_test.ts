import assert from "node:assert/strict";
import { parseEventLogs } from "viem";
import { escrowAbi } from "../../chain/abi.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { reverts } from "../_reverts.ts";

Deno.test("Escrow: deposits, authorized settlement in the Emission epoch, withdrawals", async (t) => {
  await using chain = await startChainFixture({ empty: true });
  const { escrow } = chain.contracts;
  const chainId = { chainId: chain.anvil.chainId };
  const owner = chain.owner;
  const settler = createSigner(chain.anvil.rpcUrl, chain.accounts.settler, chainId);
  const consumer = createSigner(chain.anvil.rpcUrl, chain.accounts.consumer, chainId);
  const provider = createSigner(chain.anvil.rpcUrl, chain.accounts.rewards, chainId);
  const providerAddress = chain.accounts.rewards.address;
  const consumerAddress = chain.accounts.consumer.address;
  const read = <T>(functionName: string, args: unknown[] = []) => {
    // deno-lint-ignore no-explicit-any
    const params: any = { address: escrow, abi: escrowAbi, functionName, args };
    return chain.client.readContract(params) as Promise<T>;
  };
  const write = (signer: typeof owner, functionName: string, args: unknown[], value?: bigint) =>
    // deno-lint-ignore no-explicit-any
    sendAndConfirm(signer, { address: escrow, abi: escrowAbi, functionName, args, value } as any);
  const settled = (receipt: Awaited<ReturnType<typeof write>>) =>
    parseEventLogs({ abi: escrowAbi, eventName: "Settled", logs: receipt.logs }).map((log) => [
      log.args.provider.toLowerCase(),
      log.args.epoch,
      log.args.amount,
      log.args.tokens,
    ]);

  await t.step("only authorized settlers settle", async () => {
    await write(consumer, "deposit", [], 1_000n);
    assert.equal(await read("depositOf", [consumerAddress]), 1_000n);
    await reverts(
      write(settler, "settle", [consumerAddress, providerAddress, 1n, 1n]),
      "NotSettler",
    );
    await reverts(write(settler, "addSettler", [chain.accounts.settler.address]), "NotOwner");
    await write(owner, "addSettler", [chain.accounts.settler.address]);
    await reverts(
      write(owner, "addSettler", [chain.accounts.settler.address]),
      "SettlerAlreadyAdded",
    );
  });

  await t.step("Settled carries the epoch of the Emission clock", async () => {
    const before = settled(
      await write(settler, "settle", [consumerAddress, providerAddress, 100n, 7n]),
    );
    assert.deepEqual(
      before,
      [[providerAddress.toLowerCase(), 0n, 100n, 7n]],
      "before genesis: epoch 0",
    );
    const { genesisTime, epochLength } = chain.plan.deployment.emission;
    await chain.rpc("evm_mine", [Number(genesisTime + 2n * epochLength + 10n)]);
    const batch = settled(
      await write(settler, "settleBatch", [[
        { consumer: consumerAddress, provider: providerAddress, amount: 200n, tokens: 8n },
        { consumer: consumerAddress, provider: consumerAddress, amount: 300n, tokens: 9n },
      ]]),
    );
    assert.deepEqual(batch, [
      [providerAddress.toLowerCase(), 2n, 200n, 8n],
      [consumerAddress.toLowerCase(), 2n, 300n, 9n],
    ]);
    assert.equal(await read("depositOf", [consumerAddress]), 400n);
    assert.equal(await read("earningsOf", [providerAddress]), 300n);
    await reverts(
      write(settler, "settle", [consumerAddress, providerAddress, 401n, 1n]),
      "InsufficientDeposit",
    );
  });

  await t.step("providers withdraw earnings, consumers what is left", async () => {
    const balance = () => chain.client.getBalance({ address: escrow });
    const start = await balance();
    await write(provider, "withdrawEarnings", []);
    assert.equal(await balance(), start - 300n);
    assert.equal(await read("earningsOf", [providerAddress]), 0n);
    await reverts(write(provider, "withdrawEarnings", []), "ZeroAmount");
    // Withdrawing takes a request, then the delay (1 day by default).
    await reverts(write(consumer, "withdrawDeposit", [1n]), "ExceedsRequestedWithdrawal");
    await reverts(write(consumer, "requestWithdrawal", [401n]), "InsufficientDeposit");
    await write(consumer, "requestWithdrawal", [400n]);
    assert.deepEqual(await read("accountOf", [consumerAddress]), [
      400n,
      400n,
      0n,
      await read<bigint>("unlockAtOf", [consumerAddress]),
    ]);
    await reverts(write(consumer, "withdrawDeposit", [400n]), "WithdrawalLocked");
    await chain.rpc("evm_increaseTime", [86_400]);
    await chain.rpc("evm_mine", []);
    await reverts(write(consumer, "withdrawDeposit", [401n]), "ExceedsRequestedWithdrawal");
    await write(consumer, "withdrawDeposit", [400n]);
    assert.equal(await read("depositOf", [consumerAddress]), 0n);
    assert.deepEqual(await read("accountOf", [consumerAddress]), [
      0n,
      0n,
      0n,
      await read<bigint>("unlockAtOf", [consumerAddress]),
    ]);
    await write(owner, "removeSettler", [chain.accounts.settler.address]);
    await reverts(
      write(settler, "settle", [consumerAddress, providerAddress, 0n, 0n]),
      "NotSettler",
    );
  });
});
