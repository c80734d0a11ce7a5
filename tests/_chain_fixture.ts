/**
 * The real-chain test fixture: a fresh anvil (the pinned binary; the project's image runs the
 * same chain in a container, `tests/packaging/image_test.ts`), the contracts deployed, a
 * network seeded from a deterministic plan, and the expected truth computed from that plan. It is `AsyncDisposable`: `await using` stops anvil
 * when the test ends, passed or failed.
 *
 * @example
 * ```ts ignore
 * import { startChainFixture } from "./_chain_fixture.ts";
 *
 * Deno.test("reads what was seeded", async () => {
 *   await using chain = await startChainFixture({ providers: 60 });
 *   // chain.client, chain.contracts, chain.expected ...
 * });
 * ```
 *
 * @module
 */

import { type ChainClient, type ChainClientOptions, createChainClient } from "../chain/client.ts";
import type { ChainContracts } from "../chain/types.ts";
import { type AnvilInstance, type AnvilOptions, startAnvil } from "../devnet/anvil.ts";
import { deployContracts, type Deployment } from "../devnet/deploy.ts";
import {
  type ExpectedNetwork,
  expectedNetwork,
  type NetworkPlan,
  planNetwork,
  type PlanOptions,
  seedNetwork,
  type SeedOptions,
} from "../devnet/seed.ts";
import {
  createSigner,
  devAccounts,
  type DevnetAccounts,
  type DevnetSigner,
  sendAndConfirm,
} from "../devnet/signer.ts";
import type { Address } from "viem";
import { escrowAbi } from "../chain/abi.ts";
import { HANG_AFTER_MS } from "./_wait.ts";

/** Options of {@linkcode startChainFixture}. */
export interface ChainFixtureOptions extends PlanOptions {
  /**
   * Deploy the `aggregate3` Multicall and configure the client with it (otherwise reads use
   * viem's deployless multicall).
   *
   * @default {false}
   */
  multicall?: boolean;
  /**
   * Skip seeding: contracts deployed, nothing else.
   *
   * @default {false}
   */
  empty?: boolean;
  /**
   * Options of the anvil instance.
   *
   * @default {{}}
   */
  anvil?: AnvilOptions;
  /**
   * Options of the chain client.
   *
   * @default {{ retryCount: 0 }}
   */
  client?: ChainClientOptions;
  /**
   * Options of the seeding transactions.
   *
   * @default {{}}
   */
  seeding?: SeedOptions;
}

/** A running, seeded chain. */
export interface ChainFixture extends AsyncDisposable {
  /** The anvil instance. */
  anvil: AnvilInstance;
  /** A chain client on it (chain id checked). */
  client: ChainClient;
  /** The deployment (addresses, first block, multicall). */
  deployment: Deployment;
  /** The four contract addresses. */
  contracts: ChainContracts;
  /** The plan the network was seeded from. */
  plan: NetworkPlan;
  /** What the chain holds, computed from the plan alone. */
  expected: ExpectedNetwork;
  /** The dev accounts in their roles. */
  accounts: DevnetAccounts;
  /** A signer for the owner account. */
  owner: DevnetSigner;
  /** Sends a raw JSON-RPC request (`evm_snapshot`, `evm_mine`, ...). */
  rpc(method: string, params?: unknown[]): Promise<unknown>;
}

/** Starts anvil, deploys, seeds; stops anvil again if any step fails. */
export async function startChainFixture(options: ChainFixtureOptions = {}): Promise<ChainFixture> {
  // A busy machine may take long to start anvil: only a hang fails the start.
  const anvil = await startAnvil({ readyTimeoutMs: HANG_AFTER_MS, ...options.anvil });
  try {
    const plan = planNetwork(options);
    const accounts = devAccounts();
    const owner = createSigner(anvil.rpcUrl, accounts.owner, { chainId: anvil.chainId });
    const deployment = await deployContracts(owner, plan.deployment, {
      multicall: options.multicall ?? false,
    });
    if (!options.empty) {
      await seedNetwork(
        { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, deployment, accounts },
        plan,
        options.seeding,
      );
    }
    const client = await createChainClient(anvil.rpcUrl, {
      chainId: anvil.chainId,
      retryCount: 0,
      ...(deployment.multicall ? { multicallAddress: deployment.multicall } : {}),
      ...options.client,
    });
    const rpc = async (method: string, params: unknown[] = []) =>
      // deno-lint-ignore no-explicit-any
      await (client.request as any)({ method, params });
    return {
      anvil,
      client,
      deployment,
      contracts: deployment.contracts,
      plan,
      expected: expectedNetwork(plan),
      accounts,
      owner,
      rpc,
      [Symbol.asyncDispose]: () => anvil.stop(),
    };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/**
 * Settles `amount` for `tokens` from the fixture's consumer to `provider` with the trusted
 * settler (`Escrow.settle`), and returns the block it landed in.
 */
export async function settleOnChain(
  chain: ChainFixture,
  provider: Address,
  amount: bigint,
  tokens = 1n,
): Promise<bigint> {
  const settler = createSigner(chain.anvil.rpcUrl, chain.accounts.settler, {
    chainId: chain.anvil.chainId,
  });
  const receipt = await sendAndConfirm(settler, {
    address: chain.contracts.escrow,
    abi: escrowAbi,
    functionName: "settle",
    args: [chain.accounts.consumer.address, provider, amount, tokens],
  });
  return receipt.blockNumber;
}
