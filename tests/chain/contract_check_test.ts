/**
 * `checkNetworkContracts` against real deployments on anvil: the network's own four addresses
 * pass (deployless multicall and a deployed Multicall); an address without code, a swapped
 * pair, a contract of another deployment and an unlinked Registry are each refused with a
 * message naming the address and what it answered.
 */

import assert from "node:assert/strict";
import { checkNetworkContracts } from "../../chain/contract_check.ts";
import { ContractCheckError } from "../../chain/errors.ts";
import type { ChainContracts } from "../../chain/types.ts";
import { DEFAULT_DEPLOYMENT, deployContracts } from "../../devnet/deploy.ts";
import { startChainFixture } from "../_chain_fixture.ts";

const LABELS = {
  registry: "NET_EVM_REGISTRY",
  staking: "NET_EVM_STAKING",
  emission: "NET_EVM_EMISSION",
  escrow: "NET_EVM_ESCROW",
};

function refusedWith(kind: string, ...patterns: RegExp[]) {
  return (error: unknown) => {
    assert.ok(error instanceof ContractCheckError, `expected ContractCheckError, got ${error}`);
    assert.equal(error.reason, kind, error.message);
    for (const pattern of patterns) assert.match(error.message, pattern);
    return true;
  };
}

Deno.test("contract check: the network's own addresses pass; wrong ones are named", async (t) => {
  await using chain = await startChainFixture({ empty: true });
  const good: ChainContracts = chain.contracts;
  const check = (contracts: Partial<ChainContracts>) =>
    checkNetworkContracts(chain.client, { ...good, ...contracts }, { labels: LABELS });

  await t.step(
    "the four addresses of one deployment pass, and any subset with the Registry",
    async () => {
      await check({});
      await checkNetworkContracts(chain.client, {
        registry: good.registry,
        staking: good.staking,
      });
    },
  );

  await t.step("an account without code", async () => {
    const account = chain.accounts.consumer.address.toLowerCase() as `0x${string}`;
    await assert.rejects(
      check({ staking: account }),
      refusedWith("no_code", new RegExp(`NET_EVM_STAKING ${account} has no code`)),
    );
  });

  await t.step("two addresses swapped", async () => {
    await assert.rejects(
      check({ staking: good.emission, emission: good.staking }),
      (error: unknown) => {
        refusedWith(
          "wrong_interface",
          new RegExp(`NET_EVM_STAKING ${good.emission} is not a Staking contract`),
          /reverted; it answers as the Emission contract/,
        )(error);
        const problems = (error as ContractCheckError).problems;
        assert.deepEqual(problems.map((p) => p.role), ["staking", "emission"]);
        assert.match(problems[1].message, /it answers as the Staking contract/);
        return true;
      },
    );
    await assert.rejects(
      check({ registry: good.escrow, escrow: good.registry }),
      refusedWith("wrong_interface", /NET_EVM_REGISTRY .* is not a Registry contract/),
    );
  });

  await t.step(
    "a contract of another deployment, and a Registry that names no network",
    async () => {
      const other = await deployContracts(chain.owner, DEFAULT_DEPLOYMENT);
      await assert.rejects(
        check({ staking: other.contracts.staking }),
        refusedWith(
          "mismatch",
          new RegExp(
            `NET_EVM_STAKING ${other.contracts.staking} is not the Staking contract of ` +
              `NET_EVM_REGISTRY ${good.registry}, whose staking\\(\\) is ${good.staking}`,
          ),
        ),
      );
      await assert.rejects(
        check({ emission: other.contracts.emission, escrow: good.escrow, registry: good.registry }),
        (error: unknown) => {
          refusedWith("mismatch", /NET_EVM_EMISSION/)(error);
          // Both the Registry and the Escrow name the other Emission.
          assert.equal((error as ContractCheckError).problems.length, 2);
          return true;
        },
      );
      // A Registry deployed by another owner account is not linked by deployContracts.
      const unlinked = await deployContracts(chain.owner, DEFAULT_DEPLOYMENT, {
        owner: chain.accounts.consumer.address,
      });
      await assert.rejects(
        checkNetworkContracts(chain.client, unlinked.contracts, { labels: LABELS }),
        refusedWith("mismatch", /names no Staking contract: staking\(\) is the zero address/),
      );
    },
  );
});

Deno.test("contract check works with a deployed Multicall too", async () => {
  await using chain = await startChainFixture({ empty: true, multicall: true });
  await checkNetworkContracts(chain.client, chain.contracts);
  await assert.rejects(
    checkNetworkContracts(chain.client, {
      ...chain.contracts,
      escrow: chain.contracts.emission,
    }),
    refusedWith(
      "wrong_interface",
      /the Escrow contract 0x[0-9a-f]{40} is not an Escrow contract: emission\(\) reverted; it answers as the Emission contract/,
    ),
  );
});
