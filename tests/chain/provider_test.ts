import assert from "node:assert/strict";
import { registryAbi } from "../../chain/abi.ts";
import { ChainConfigError, ChainReadError } from "../../chain/errors.ts";
import { readProvider } from "../../chain/provider.ts";
import { sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { countingFetch } from "../_counting_fetch.ts";

Deno.test("readProvider reads one provider's record at one block", async (t) => {
  const counter = countingFetch();
  await using chain = await startChainFixture({ providers: 12, client: { fetch: counter.fetch } });
  const { registry } = chain.contracts;
  const head = await chain.client.getBlock();

  await t.step("every seeded provider reads as planned", async () => {
    for (const expected of chain.expected.state.providers) {
      const { block, provider } = await readProvider(chain.client, registry, expected.address);
      assert.equal(block.hash, head.hash);
      const { stake: _, bonded: __, ...record } = expected;
      assert.deepEqual(provider, record);
    }
    counter.reset();
    await readProvider(chain.client, registry, chain.expected.state.providers[0].address);
    assert.equal(counter.requests, 2, "one block, one call");
  });

  await t.step("with the Staking address, the bond is read at the same block", async () => {
    const { staking } = chain.contracts;
    const min = chain.expected.state.staking.minProviderBond;
    for (const expected of chain.expected.state.providers) {
      const { bond, block } = await readProvider(chain.client, registry, expected.address, {
        staking,
      });
      assert.equal(block.hash, head.hash);
      assert.deepEqual(bond, {
        stake: expected.stake,
        minProviderBond: min,
        bonded: expected.bonded,
      });
    }
    assert.ok(chain.expected.state.providers.some((p) => !p.bonded), "the seed has unbonded ones");
    counter.reset();
    await readProvider(chain.client, registry, chain.expected.state.providers[0].address, {
      staking,
    });
    assert.equal(counter.requests, 2, "still one block and one call");
    const none = await readProvider(
      chain.client,
      registry,
      chain.expected.state.providers[0].address,
    );
    assert.equal(none.bond, null);
  });

  await t.step("unknown and revoked providers read as null", async () => {
    const revoked = chain.plan.providers.find((p) => p.revoked)!;
    assert.equal((await readProvider(chain.client, registry, revoked.address)).provider, null);
    const stranger = "0x00000000000000000000000000000000000000ff";
    assert.equal((await readProvider(chain.client, registry, stranger)).provider, null);
  });

  await t.step("a key rotation shows at the new block, not the old one", async () => {
    const target = chain.expected.state.providers[1];
    const rotated = "0x00000000000000000000000000000000000000a1";
    await sendAndConfirm(chain.owner, {
      address: registry,
      abi: registryAbi,
      functionName: "setTrustRoot",
      args: [target.address, rotated],
    });
    const old = await readProvider(chain.client, registry, target.address, {
      block: head.number!,
    });
    assert.equal(old.provider?.trustRoot, target.trustRoot);
    const now = await readProvider(chain.client, registry, target.address);
    assert.equal(now.provider?.trustRoot, rotated);
    assert.ok(now.block.number > old.block.number);
  });

  await t.step("bad input is a typed error", async () => {
    await assert.rejects(
      readProvider(chain.client, registry, "0x12" as `0x${string}`),
      (e: unknown) => e instanceof ChainConfigError && e.message.includes("provider"),
    );
    await assert.rejects(
      readProvider(
        chain.client,
        chain.contracts.staking,
        chain.expected.state.providers[0].address,
      ),
      (e: unknown) => e instanceof ChainReadError && e.reason === "call_failed",
    );
  });
});
