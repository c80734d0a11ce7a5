import assert from "node:assert/strict";
import { multicallAbi, registryAbi, stakingAbi } from "../../chain/abi.ts";
import { ChainConfigError, ChainReadError } from "../../chain/errors.ts";
import { readNetworkState } from "../../chain/network_state.ts";
import type { NetworkState } from "../../chain/types.ts";
import { sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { countingFetch } from "../_counting_fetch.ts";
import multicallArtifact from "../../contracts/artifacts/Multicall.json" with { type: "json" };
import type { Hex } from "viem";

function withoutBlock(state: NetworkState): Omit<NetworkState, "block"> {
  const { block: _, ...rest } = state;
  return rest;
}

Deno.test("readNetworkState returns exactly what was seeded", async (t) => {
  const counter = countingFetch();
  await using chain = await startChainFixture({ providers: 60, client: { fetch: counter.fetch } });
  const head = await chain.client.getBlock();

  await t.step("every value equals the plan's truth, at the seeded head", async () => {
    const state = await readNetworkState(chain.client, chain.contracts);
    assert.equal(state.block.number, head.number);
    assert.equal(state.block.hash, head.hash);
    assert.equal(state.block.timestamp, chain.expected.blockTimestamp);
    assert.deepEqual(withoutBlock(state), chain.expected.state);
    // The seed is realistic: both tiers, inactive, unbonded and bonded providers.
    const providers = state.providers;
    assert.equal(providers.length, 60);
    assert.ok(
      providers.some((p) => p.tier === "tee") && providers.some((p) => p.tier === "verified"),
    );
    assert.ok(providers.some((p) => !p.active));
    assert.ok(providers.some((p) => p.active && !p.bonded), "an active provider below the bond");
    assert.ok(providers.some((p) => p.stake === 0n));
    assert.ok(providers.filter((p) => p.bonded).length >= 20);
    assert.equal(state.validators.length, 5);
    assert.equal(state.routers.length, 3);
    assert.equal(state.approvedMeasurements.length, 3);
    assert.ok(state.emission.currentEpoch > 0n && state.emission.totalEmitted > 0n);
  });

  await t.step("tiny pages and a tiny gas budget give the same state", async () => {
    counter.reset();
    const state = await readNetworkState(chain.client, chain.contracts, {
      pageSize: 2,
      maxGasPerCall: 200_000,
      block: head.number!,
    });
    assert.deepEqual(withoutBlock(state), chain.expected.state);
    const calls = counter.methods.filter((m) => m === "eth_call").length;
    assert.ok(calls >= 8, `small batches need more eth_calls (3 by default), got ${calls}`);
    assert.equal(counter.requests, 4, "the calls of one step share one HTTP request");
  });

  await t.step("a deployed Multicall gives the same state", async () => {
    const hash = await chain.owner.wallet.deployContract({
      abi: multicallAbi,
      bytecode: multicallArtifact.bytecode as Hex,
      account: chain.owner.account,
      chain: chain.owner.wallet.chain,
    });
    const receipt = await chain.owner.client.waitForTransactionReceipt({ hash });
    counter.reset();
    // Read at the new head: the Multicall does not exist at the seeded head.
    const state = await readNetworkState(chain.client, chain.contracts, {
      multicallAddress: receipt.contractAddress!,
    });
    assert.equal(state.block.number, receipt.blockNumber);
    assert.deepEqual(withoutBlock(state), chain.expected.state);
    assert.ok(counter.methods.every((m) => m === "eth_getBlockByNumber" || m === "eth_call"));
  });

  await t.step("a read is pinned to its block: later changes do not leak in", async () => {
    const [first] = chain.expected.state.providers;
    await sendAndConfirm(chain.owner, {
      address: chain.contracts.staking,
      abi: stakingAbi,
      functionName: "stakeFor",
      args: [first.address],
      value: 5n,
    });
    await sendAndConfirm(chain.owner, {
      address: chain.contracts.registry,
      abi: registryAbi,
      functionName: "setActive",
      args: [first.address, false],
    });
    const before = await readNetworkState(chain.client, chain.contracts, { block: head.number! });
    assert.deepEqual(withoutBlock(before), chain.expected.state);
    const after = await readNetworkState(chain.client, chain.contracts);
    assert.ok(after.block.number > head.number!);
    assert.equal(after.providers[0].stake, first.stake + 5n);
    assert.equal(after.providers[0].active, false);
    assert.equal(after.providers[0].bonded, false);
    assert.equal(after.staking.totalStaked, chain.expected.state.staking.totalStaked + 5n);
  });

  await t.step("bad input gives typed errors", async () => {
    await assert.rejects(
      readNetworkState(chain.client, { ...chain.contracts, registry: "0x1234" as Hex }),
      (e: unknown) =>
        e instanceof ChainConfigError && e.reason === "invalid_option" &&
        e.message.includes("registry"),
    );
    await assert.rejects(
      readNetworkState(chain.client, chain.contracts, { pageSize: 0 }),
      (e: unknown) => e instanceof ChainConfigError && e.message.includes("pageSize"),
    );
    // An address without code: the call returns nothing.
    await assert.rejects(
      readNetworkState(chain.client, {
        ...chain.contracts,
        registry: "0x000000000000000000000000000000000000dead",
      }),
      (e: unknown) =>
        e instanceof ChainReadError && e.reason === "call_failed" &&
        e.shortMessage.includes("0x000000000000000000000000000000000000dead"),
    );
    await assert.rejects(
      readNetworkState(chain.client, chain.contracts, { block: 10_000_000n }),
      (e: unknown) => e instanceof ChainReadError && e.reason === "block_not_found",
    );
  });
});

Deno.test("readNetworkState costs the same round trips for 10 and 100 providers", async () => {
  const counts: number[] = [];
  for (const providers of [10, 100]) {
    const counter = countingFetch();
    await using chain = await startChainFixture({
      providers,
      settledEpochs: 1,
      settlementsPerEpoch: 2,
      client: { fetch: counter.fetch },
    });
    counter.reset();
    const state = await readNetworkState(chain.client, chain.contracts);
    assert.equal(state.providers.length, providers);
    assert.deepEqual(withoutBlock(state), chain.expected.state);
    counts.push(counter.requests);
  }
  assert.equal(counts[0], counts[1], `requests: ${counts.join(" vs ")}`);
  assert.equal(counts[0], 4, "block, counts, pages, stakes");
});
