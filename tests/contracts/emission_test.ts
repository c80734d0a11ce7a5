import assert from "node:assert/strict";
import { parseEventLogs } from "viem";
import { emissionAbi } from "../../chain/abi.ts";
import { deployContracts } from "../../devnet/deploy.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { reverts } from "../_reverts.ts";

Deno.test("Emission: each finished epoch once, halving schedule, never beyond the cap", async (t) => {
  await using chain = await startChainFixture({ empty: true });
  const now = (await chain.client.getBlock()).timestamp;
  const genesis = now + 1_000n;
  const schedule = {
    genesisTime: genesis,
    epochLength: 100n,
    initialReward: 1_000n,
    halvingInterval: 2n,
    cap: 2_600n,
  };
  const { contracts } = await deployContracts(chain.owner, {
    minProviderBond: 1n,
    unbondingPeriod: 0n,
    emission: schedule,
  });
  const emission = contracts.emission;
  const owner = chain.owner;
  const recipient = chain.accounts.rewards.address;
  const other = createSigner(chain.anvil.rpcUrl, chain.accounts.settler, {
    chainId: chain.anvil.chainId,
  });
  const read = <T>(functionName: string, args: unknown[] = []) => {
    // deno-lint-ignore no-explicit-any
    const params: any = { address: emission, abi: emissionAbi, functionName, args };
    return chain.client.readContract(params) as Promise<T>;
  };
  const emit = (signer: typeof owner, maxEpochs: bigint) =>
    sendAndConfirm(signer, {
      address: emission,
      abi: emissionAbi,
      functionName: "emitFinishedEpochs",
      args: [recipient, maxEpochs],
    });
  const emitted = (receipt: Awaited<ReturnType<typeof emit>>) =>
    parseEventLogs({ abi: emissionAbi, eventName: "EpochEmitted", logs: receipt.logs }).map((
      log,
    ) => [log.args.epoch, log.args.amount]);
  const goTo = (time: bigint) => chain.rpc("evm_mine", [Number(time)]);

  await t.step("the reward halves every halvingInterval epochs", async () => {
    for (const epoch of [0n, 1n, 2n, 3n, 4n, 7n, 100n, 511n, 512n, 10n ** 30n]) {
      const halvings = epoch / schedule.halvingInterval;
      const expected = halvings >= 256n ? 0n : schedule.initialReward >> halvings;
      assert.equal(await read("epochReward", [epoch]), expected, `epoch ${epoch}`);
    }
  });

  await t.step("nothing is emitted before an epoch has finished", async () => {
    assert.equal(await read("currentEpoch"), 0n);
    await reverts(emit(owner, 10n), "NoFinishedEpoch");
    await goTo(genesis + 50n); // inside epoch 0
    await reverts(emit(owner, 10n), "NoFinishedEpoch");
  });

  await t.step("only the minter emits, and each epoch only once", async () => {
    await goTo(genesis + 150n); // epoch 1: epoch 0 finished
    await reverts(emit(other, 10n), "NotMinter");
    assert.deepEqual(emitted(await emit(owner, 10n)), [[0n, 1_000n]]);
    await reverts(emit(owner, 10n), "NoFinishedEpoch");
    assert.equal(await read("emittedEpochs"), 1n);
    assert.equal(await read("totalEmitted"), 1_000n);
  });

  await t.step("the cap is never exceeded", async () => {
    await goTo(genesis + 650n); // epoch 6: epochs 1..5 finished
    assert.equal(await read("currentEpoch"), 6n);
    assert.equal(await read("currentEpochReward"), 125n);
    assert.deepEqual(emitted(await emit(owner, 2n)), [[1n, 1_000n], [2n, 500n]]);
    assert.deepEqual(emitted(await emit(owner, 10n)), [[3n, 100n], [4n, 0n], [5n, 0n]]);
    assert.equal(await read("totalEmitted"), schedule.cap);
    assert.equal(await read("emittedEpochs"), 6n);
    await goTo(genesis + 950n);
    assert.deepEqual(emitted(await emit(owner, 10n)), [[6n, 0n], [7n, 0n], [8n, 0n]]);
    assert.equal(await read("totalEmitted"), schedule.cap);
  });

  await t.step("the owner hands the minter role over", async () => {
    await reverts(
      sendAndConfirm(other, {
        address: emission,
        abi: emissionAbi,
        functionName: "setMinter",
        args: [chain.accounts.settler.address],
      }),
      "NotOwner",
    );
    await sendAndConfirm(owner, {
      address: emission,
      abi: emissionAbi,
      functionName: "setMinter",
      args: [chain.accounts.settler.address],
    });
    await goTo(genesis + 1_050n);
    await reverts(emit(owner, 1n), "NotMinter");
    assert.deepEqual(emitted(await emit(other, 1n)), [[9n, 0n]]);
  });
});
