import assert from "node:assert/strict";
import type { Address } from "viem";
import { stakingAbi } from "../../chain/abi.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { reverts } from "../_reverts.ts";

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address;

Deno.test("Staking: batch stakes, totals, unbonding, governance", async (t) => {
  await using chain = await startChainFixture({ empty: true });
  const { staking } = chain.contracts;
  const owner = chain.owner;
  const stranger = createSigner(chain.anvil.rpcUrl, chain.accounts.consumer, {
    chainId: chain.anvil.chainId,
  });
  const read = <T>(functionName: string, args: unknown[] = []) => {
    // deno-lint-ignore no-explicit-any
    const params: any = { address: staking, abi: stakingAbi, functionName, args };
    return chain.client.readContract(params) as Promise<T>;
  };
  const write = (signer: typeof owner, functionName: string, args: unknown[], value?: bigint) =>
    // deno-lint-ignore no-explicit-any
    sendAndConfirm(signer, { address: staking, abi: stakingAbi, functionName, args, value } as any);

  await t.step("stakeForMany credits each account and checks the value", async () => {
    const accounts = [addr(1), addr(2), addr(3)];
    await reverts(write(owner, "stakeForMany", [accounts, [1n, 2n]], 3n), "LengthMismatch");
    await reverts(write(owner, "stakeForMany", [accounts, [1n, 2n, 3n]], 5n), "ValueMismatch");
    await reverts(write(owner, "stakeForMany", [accounts, [1n, 0n, 3n]], 4n), "ZeroAmount");
    await write(owner, "stakeForMany", [accounts, [10n, 20n, 30n]], 60n);
    // Anyone may stake for others with their own funds, one by one or in a batch.
    await write(stranger, "stakeForMany", [[addr(1)], [5n]], 5n);
    await write(stranger, "stakeFor", [addr(4)], 7n);
    assert.deepEqual(await read("stakesOf", [[addr(1), addr(2), addr(3), addr(4), addr(5)]]), [
      15n,
      20n,
      30n,
      7n,
      0n,
    ]);
    assert.equal(await read("totalStaked"), 72n);
  });

  await t.step("unstaking lowers the stake at once and locks the funds", async () => {
    const me = chain.accounts.consumer.address;
    await write(stranger, "stake", [], 1_000n);
    await reverts(write(stranger, "unstake", [1_001n]), "InsufficientStake");
    await write(stranger, "unstake", [400n]);
    assert.equal(await read("stakeOf", [me]), 600n);
    assert.equal(await read("totalStaked"), 672n);
    await reverts(write(stranger, "withdraw", []), "StillUnbonding");
    const [amount, releaseAt] = await read<[bigint, bigint]>("unbondingOf", [me]);
    assert.equal(amount, 400n);
    await chain.rpc("evm_mine", [Number(releaseAt)]);
    const before = await chain.client.getBalance({ address: staking });
    await write(stranger, "withdraw", []);
    assert.equal(await chain.client.getBalance({ address: staking }), before - 400n);
    await reverts(write(stranger, "withdraw", []), "NothingToWithdraw");
  });

  await t.step("only the owner sets the bond and the unbonding period", async () => {
    await reverts(write(stranger, "setMinProviderBond", [1n]), "NotOwner");
    await write(owner, "setMinProviderBond", [123n]);
    assert.equal(await read("minProviderBond"), 123n);
    await reverts(write(stranger, "setUnbondingPeriod", [1n]), "NotOwner");
    await reverts(write(owner, "setUnbondingPeriod", [31n * 86_400n]), "UnbondingPeriodTooLong");
    await write(owner, "setUnbondingPeriod", [60n]);
    assert.equal(await read("unbondingPeriod"), 60n);
  });
});
