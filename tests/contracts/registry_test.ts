import assert from "node:assert/strict";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { registryAbi } from "../../chain/abi.ts";
import { createSigner, sendAndConfirm } from "../../devnet/signer.ts";
import { startChainFixture } from "../_chain_fixture.ts";
import { reverts } from "../_reverts.ts";

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address;
const id = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as Hex;

Deno.test("Registry: governance, batch registration, paging, provider self-service", async (t) => {
  await using chain = await startChainFixture({ empty: true });
  const { registry } = chain.contracts;
  const owner = chain.owner;
  const stranger = createSigner(chain.anvil.rpcUrl, chain.accounts.consumer, {
    chainId: chain.anvil.chainId,
  });
  const read = <T>(functionName: string, args: unknown[] = []) =>
    chain.client.readContract({
      address: registry,
      abi: registryAbi,
      // deno-lint-ignore no-explicit-any
      functionName: functionName as any,
      // deno-lint-ignore no-explicit-any
      args: args as any,
    }) as Promise<T>;
  const write = (signer: typeof owner, functionName: string, args: unknown[]) =>
    // deno-lint-ignore no-explicit-any
    sendAndConfirm(signer, { address: registry, abi: registryAbi, functionName, args } as any);
  const record = (n: number, tier = 0, active = true) => ({
    provider: addr(0x1000 + n),
    adCommitment: id(n),
    trustRoot: addr(0x2000 + n),
    tier,
    active,
  });

  await t.step("only the owner registers, in batches", async () => {
    await reverts(write(stranger, "registerProviders", [[record(1)]]), "NotOwner");
    await write(owner, "registerProviders", [Array.from({ length: 10 }, (_, i) => record(i))]);
    await write(owner, "registerProvider", [record(10, 1, false)]);
    assert.equal(await read("providerCount"), 11n);
    await reverts(write(owner, "registerProvider", [record(3)]), "ProviderAlreadyRegistered");
    await reverts(write(owner, "registerProvider", [record(20, 2)]), "InvalidTier");
    await reverts(
      write(owner, "registerProvider", [{ ...record(21), trustRoot: addr(0) }]),
      "ZeroAddress",
    );
  });

  await t.step("pages clip at the end and are empty past it", async () => {
    const page = await read<{ provider: Address }[]>("providersPage", [8n, 5n]);
    assert.deepEqual(
      page.map((p) => p.provider.toLowerCase()),
      [8, 9, 10].map((n) => addr(0x1000 + n)),
    );
    assert.deepEqual(await read("providersPage", [11n, 5n]), []);
    assert.deepEqual(await read("providersPage", [99n, 5n]), []);
    const [registered, got] = await read<[boolean, { tier: number; active: boolean }]>(
      "getProvider",
      [addr(0x1000 + 10)],
    );
    assert.equal(registered, true);
    assert.equal(got.tier, 1);
    assert.equal(got.active, false);
  });

  await t.step("revocation swaps the last provider into the freed slot", async () => {
    await reverts(write(stranger, "revokeProvider", [addr(0x1000 + 2)]), "NotOwner");
    await write(owner, "revokeProvider", [addr(0x1000 + 2)]);
    const all = await read<{ provider: Address }[]>("providersPage", [0n, 100n]);
    assert.equal(all.length, 10);
    assert.equal(all[2].provider.toLowerCase(), addr(0x1000 + 10));
    assert.deepEqual(await read("getProvider", [addr(0x1000 + 2)]), [false, {
      provider: addr(0),
      adCommitment: id(0),
      trustRoot: addr(0),
      tier: 0,
      active: false,
    }]);
    await reverts(write(owner, "revokeProvider", [addr(0x1000 + 2)]), "ProviderNotRegistered");
  });

  await t.step("a provider updates its own commitment; strangers cannot", async () => {
    const self = privateKeyToAccount(`0x${"11".repeat(32)}`);
    await write(owner, "registerProvider", [{ ...record(30), provider: self.address }]);
    await owner.wallet.sendTransaction({
      account: owner.account,
      chain: owner.wallet.chain,
      to: self.address,
      value: 10n ** 18n,
    });
    const provider = createSigner(chain.anvil.rpcUrl, self, { chainId: chain.anvil.chainId });
    await write(provider, "updateAdCommitment", [self.address, id(0xabc)]);
    await reverts(
      write(stranger, "updateAdCommitment", [self.address, id(1)]),
      "NotProviderOrOwner",
    );
    await reverts(
      write(provider, "updateAdCommitment", [addr(0x1000 + 1), id(1)]),
      "NotProviderOrOwner",
    );
    await write(owner, "updateAdCommitment", [self.address, id(0xdef)]);
    const [, got] = await read<[boolean, { adCommitment: Hex }]>("getProvider", [self.address]);
    assert.equal(got.adCommitment, id(0xdef));
    await reverts(write(provider, "setActive", [self.address, false]), "NotOwner");
    await reverts(write(provider, "setTier", [self.address, 1]), "NotOwner");
    await reverts(write(provider, "setTrustRoot", [self.address, addr(5)]), "NotOwner");
  });

  await t.step("validators, routers and measurements: owner-managed sets", async () => {
    await reverts(write(stranger, "addValidator", [addr(1)]), "NotOwner");
    for (const n of [1, 2, 3]) await write(owner, "addValidator", [addr(n)]);
    await reverts(write(owner, "addValidator", [addr(2)]), "ValidatorAlreadyAdded");
    await write(owner, "removeValidator", [addr(1)]);
    assert.deepEqual(
      (await read<Address[]>("validatorsPage", [0n, 10n])).map((a) => a.toLowerCase()),
      [addr(3), addr(2)],
    );
    await reverts(write(owner, "removeValidator", [addr(1)]), "ValidatorNotFound");

    await reverts(write(stranger, "addRouter", [addr(7), "http://r.test"]), "NotOwner");
    await write(owner, "addRouter", [addr(7), "http://r.test"]);
    await reverts(write(owner, "addRouter", [addr(8), ""]), "InvalidRouterUrl");
    await reverts(write(owner, "addRouter", [addr(8), "h".repeat(2049)]), "InvalidRouterUrl");
    await write(owner, "addRouter", [addr(8), "h".repeat(2048)]);
    await write(owner, "setRouterUrl", [addr(7), "https://r2.test"]);
    assert.equal(await read("routerUrl", [addr(7)]), "https://r2.test");
    const routers = await read<{ id: Address; url: string }[]>("routersPage", [0n, 1n]);
    assert.deepEqual(routers.map((r) => [r.id.toLowerCase(), r.url]), [[
      addr(7),
      "https://r2.test",
    ]]);
    await write(owner, "removeRouter", [addr(7)]);
    await reverts(write(owner, "setRouterUrl", [addr(7), "http://x.test"]), "RouterNotFound");
    assert.equal(await read("routerCount"), 1n);

    await reverts(write(stranger, "approveMeasurement", [id(1)]), "NotOwner");
    await reverts(write(owner, "approveMeasurement", [id(0)]), "ZeroMeasurement");
    await write(owner, "approveMeasurement", [id(1)]);
    await reverts(write(owner, "approveMeasurement", [id(1)]), "MeasurementAlreadyApproved");
    assert.equal(await read("isApprovedMeasurement", [id(1)]), true);
    await write(owner, "revokeMeasurement", [id(1)]);
    assert.equal(await read("isApprovedMeasurement", [id(1)]), false);
    await reverts(write(owner, "revokeMeasurement", [id(1)]), "MeasurementNotApproved");
  });

  await t.step("the network's other contracts: named by the owner, never zero", async () => {
    // deployContracts linked the fixture's own deployment.
    assert.equal((await read<string>("staking")).toLowerCase(), chain.contracts.staking);
    assert.equal((await read<string>("emission")).toLowerCase(), chain.contracts.emission);
    assert.equal((await read<string>("escrow")).toLowerCase(), chain.contracts.escrow);
    await reverts(write(stranger, "setNetworkContracts", [addr(1), addr(2), addr(3)]), "NotOwner");
    await reverts(write(owner, "setNetworkContracts", [addr(1), addr(0), addr(3)]), "ZeroAddress");
    await write(owner, "setNetworkContracts", [addr(1), addr(2), addr(3)]);
    assert.deepEqual(
      await Promise.all(["staking", "emission", "escrow"].map((f) => read<string>(f))),
      [addr(1), addr(2), addr(3)], // digits only: the checksum form is the same
    );
    await write(owner, "setNetworkContracts", [
      chain.contracts.staking,
      chain.contracts.emission,
      chain.contracts.escrow,
    ]);
  });

  await t.step("ownership moves in two steps", async () => {
    const next = chain.accounts.consumer.address;
    await reverts(write(stranger, "transferOwnership", [next]), "NotOwner");
    await write(owner, "transferOwnership", [next]);
    assert.equal(
      (await read<Address>("owner")).toLowerCase(),
      chain.accounts.owner.address.toLowerCase(),
    );
    const settler = createSigner(chain.anvil.rpcUrl, chain.accounts.settler, {
      chainId: chain.anvil.chainId,
    });
    await reverts(write(settler, "acceptOwnership", []), "NotPendingOwner");
    await write(stranger, "acceptOwnership", []);
    assert.equal((await read<Address>("owner")).toLowerCase(), next.toLowerCase());
    assert.equal(await read("pendingOwner"), addr(0));
    await reverts(write(owner, "addValidator", [addr(9)]), "NotOwner");
    await write(stranger, "addValidator", [addr(9)]);
  });
});
