/**
 * Seeds a realistic network from a deterministic plan, and states the expected truth.
 *
 * - `planNetwork` (`plan.ts`): a pure function of its options (a seed string, a provider count,
 *   ...) that fixes every provider, key, ad, stake, validator, router, measurement,
 *   settlement and timestamp. It scales to 10,000 providers.
 * - `expectedNetwork` (`expected.ts`): what the chain must hold after seeding, computed from
 *   the plan alone — never from a chain read — so tests can compare reads against it.
 * - {@linkcode seedNetwork}: sends the plan's transactions to a deployed network: batch
 *   registrations and stakes (a handful of transactions, not one per provider), a provider
 *   updating its own ad commitment, an unstake, settlements over several epochs (time
 *   travel), and the emission of the finished epochs.
 *
 * This module is the face of all three: it re-exports the plan and the expectation.
 *
 * @example
 * ```ts ignore
 * import { startAnvil } from "./anvil.ts";
 * import { deployContracts } from "./deploy.ts";
 * import { expectedNetwork, planNetwork, seedNetwork } from "./seed.ts";
 * import { createSigner, devAccounts } from "./signer.ts";
 *
 * await using anvil = await startAnvil();
 * const plan = planNetwork({ providers: 60 });
 * const owner = createSigner(anvil.rpcUrl, devAccounts().owner, { chainId: anvil.chainId });
 * const deployment = await deployContracts(owner, plan.deployment);
 * await seedNetwork({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, deployment }, plan);
 * console.log(expectedNetwork(plan).state.providers.length);
 * ```
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  adCommitment,
  emissionAbi,
  escrowAbi,
  registryAbi,
  type RouterRecord,
  stakingAbi,
} from "../chain/mod.ts";
import type { Deployment } from "./deploy.ts";
import { ETHER, type NetworkPlan } from "./plan.ts";
import {
  confirm,
  createSigner,
  devAccounts,
  type DevnetAccounts,
  type DevnetSigner,
  sendAndConfirm,
} from "./signer.ts";

export { type ExpectedNetwork, expectedNetwork } from "./expected.ts";
export {
  type NetworkPlan,
  type PlannedProvider,
  type PlannedSettlement,
  planNetwork,
  type PlanOptions,
} from "./plan.ts";

/** Where {@linkcode seedNetwork} sends the plan. */
export interface SeedTarget {
  /** JSON-RPC URL of an anvil chain (the seed uses `anvil_*` and `evm_*` methods). */
  rpcUrl: string;
  /** Its chain id. */
  chainId: number;
  /** The contracts, deployed with `plan.deployment` by the owner account. */
  deployment: Deployment;
  /**
   * The accounts that play owner, settler, consumer and rewards recipient.
   *
   * @default {devAccounts()}
   */
  accounts?: DevnetAccounts;
}

/** Options of {@linkcode seedNetwork}. */
export interface SeedOptions {
  /**
   * Providers per `registerProviders` transaction (about 96 k gas each, so 150 stay under the
   * 16.7 M per-transaction cap of EIP-7825); `stakeForMany` takes four times as many.
   *
   * @default {150}
   */
  batchSize?: number;
}

async function rpc(signer: DevnetSigner, method: string, params: unknown[]): Promise<unknown> {
  // deno-lint-ignore no-explicit-any
  return await (signer.client.request as any)({ method, params });
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The network's roles to register: validators, routers, approved measurements, a settler. */
export interface NetworkRoles {
  /** Validator addresses. */
  validators: readonly Address[];
  /** Routers: an id and the URL serving `GET /v1/ads`. */
  routers: readonly RouterRecord[];
  /** Approved TEE measurement ids. */
  measurements: readonly Hex[];
  /** The Escrow's settler. */
  settler: Address;
}

/**
 * Registers validators, routers and approved measurements in the Registry and the settler in
 * the Escrow, as the contracts' owner (one transaction each).
 */
export async function registerRoles(
  owner: DevnetSigner,
  contracts: { registry: Address; escrow: Address },
  roles: NetworkRoles,
): Promise<void> {
  const { registry, escrow } = contracts;
  for (const validator of roles.validators) {
    await sendAndConfirm(owner, {
      address: registry,
      abi: registryAbi,
      functionName: "addValidator",
      args: [validator],
    });
  }
  for (const router of roles.routers) {
    await sendAndConfirm(owner, {
      address: registry,
      abi: registryAbi,
      functionName: "addRouter",
      args: [router.id, router.url],
    });
  }
  for (const measurement of roles.measurements) {
    await sendAndConfirm(owner, {
      address: registry,
      abi: registryAbi,
      functionName: "approveMeasurement",
      args: [measurement],
    });
  }
  await sendAndConfirm(owner, {
    address: escrow,
    abi: escrowAbi,
    functionName: "addSettler",
    args: [roles.settler],
  });
}

/** The signers of a seed, and where it sends. */
interface Seeding {
  target: SeedTarget;
  accounts: DevnetAccounts;
  owner: DevnetSigner;
  chain: { chainId: number };
  batchSize: number;
}

/**
 * Sends the plan to a freshly deployed network. The chain's block timestamps are set by the
 * seed (one second per block, jumps between epochs), so the last block's timestamp is exactly
 * `plan.finalTime`; the per-block interval is removed again at the end.
 *
 * @throws {Error} when a transaction reverts (with the reason) or the chain is not anvil.
 */
export async function seedNetwork(
  target: SeedTarget,
  plan: NetworkPlan,
  options: SeedOptions = {},
): Promise<void> {
  const accounts = target.accounts ?? devAccounts();
  const chain = { chainId: target.chainId };
  const owner = createSigner(target.rpcUrl, accounts.owner, chain);
  const seeding: Seeding = { target, accounts, owner, chain, batchSize: options.batchSize ?? 150 };
  await rpc(owner, "anvil_setBlockTimestampInterval", [1]);
  await registerProviders(seeding, plan);
  await stake(seeding, plan);
  await providersActing(seeding, plan);
  await registerRoles(owner, target.deployment.contracts, {
    validators: plan.validators.map((v) => v.address),
    routers: plan.routers,
    measurements: plan.measurements,
    settler: accounts.settler.address,
  });
  await settle(seeding, plan);
  await emitFinal(seeding, plan);
  await rpc(owner, "anvil_removeBlockTimestampInterval", []);
}

/** Providers: batch registration (with the initial ad when there is one), then revocations. */
async function registerProviders(seeding: Seeding, plan: NetworkPlan): Promise<void> {
  const { registry } = seeding.target.deployment.contracts;
  for (const batch of chunks(plan.providers, seeding.batchSize)) {
    await sendAndConfirm(seeding.owner, {
      address: registry,
      abi: registryAbi,
      functionName: "registerProviders",
      args: [batch.map((p) => ({
        provider: p.address,
        adCommitment: adCommitment(p.initialAd ?? p.ad),
        trustRoot: p.servingAddress,
        tier: p.tier === "tee" ? 1 : 0,
        active: p.active,
      }))],
    });
  }
  for (const p of plan.providers.filter((p) => p.revoked)) {
    await sendAndConfirm(seeding.owner, {
      address: registry,
      abi: registryAbi,
      functionName: "revokeProvider",
      args: [p.address],
    });
  }
}

/** Stakes of providers and validators, in batches. */
async function stake(seeding: Seeding, plan: NetworkPlan): Promise<void> {
  const stakes = [
    ...plan.providers.filter((p) => p.staked > 0n).map((p) => ({
      account: p.address,
      amount: p.staked,
    })),
    ...plan.validators.map((v) => ({ account: v.address, amount: v.stake })),
  ];
  for (const batch of chunks(stakes, seeding.batchSize * 4)) {
    await sendAndConfirm(seeding.owner, {
      address: seeding.target.deployment.contracts.staking,
      abi: stakingAbi,
      functionName: "stakeForMany",
      args: [batch.map((s) => s.account), batch.map((s) => s.amount)],
      value: batch.reduce((sum, s) => sum + s.amount, 0n),
    });
  }
}

/** Providers acting themselves (funded for gas first): an ad update and an unstake. */
async function providersActing(seeding: Seeding, plan: NetworkPlan): Promise<void> {
  const { owner, target } = seeding;
  const { registry, staking } = target.deployment.contracts;
  for (const p of plan.providers.filter((p) => p.initialAd || p.unstaked > 0n)) {
    const self = createSigner(target.rpcUrl, privateKeyToAccount(p.accountKey), seeding.chain);
    await confirm(
      owner,
      await owner.wallet.sendTransaction({
        account: owner.account,
        chain: owner.wallet.chain,
        to: p.address,
        value: ETHER,
      }),
      `fund provider ${p.address}`,
    );
    if (p.initialAd) {
      await sendAndConfirm(self, {
        address: registry,
        abi: registryAbi,
        functionName: "updateAdCommitment",
        args: [p.address, adCommitment(p.ad)],
      });
    }
    if (p.unstaked > 0n) {
      await sendAndConfirm(self, {
        address: staking,
        abi: stakingAbi,
        functionName: "unstake",
        args: [p.unstaked],
      });
    }
  }
}

/** Escrow: a consumer deposit, then the settlements of each planned epoch at its time. */
async function settle(seeding: Seeding, plan: NetworkPlan): Promise<void> {
  const { target, accounts } = seeding;
  const { escrow } = target.deployment.contracts;
  const consumer = createSigner(target.rpcUrl, accounts.consumer, seeding.chain);
  const settler = createSigner(target.rpcUrl, accounts.settler, seeding.chain);
  await sendAndConfirm(consumer, {
    address: escrow,
    abi: escrowAbi,
    functionName: "deposit",
    args: [],
    value: plan.consumerDeposit,
  });
  for (const { time, items } of plan.settlements) {
    await rpc(seeding.owner, "evm_setNextBlockTimestamp", [Number(time)]);
    for (const batch of chunks(items, seeding.batchSize)) {
      await sendAndConfirm(settler, {
        address: escrow,
        abi: escrowAbi,
        functionName: "settleBatch",
        args: [batch.map((s) => ({
          consumer: accounts.consumer.address,
          provider: s.provider,
          amount: s.amount,
          tokens: s.tokens,
        }))],
      });
    }
  }
}

/**
 * Emission: the last block emits every finished epoch. An empty block one second earlier
 * moves "latest" into the final epoch, so the pre-flight simulation sees the same epochs.
 */
async function emitFinal(seeding: Seeding, plan: NetworkPlan): Promise<void> {
  await rpc(seeding.owner, "evm_mine", [Number(plan.finalTime - 1n)]);
  await rpc(seeding.owner, "evm_setNextBlockTimestamp", [Number(plan.finalTime)]);
  await sendAndConfirm(seeding.owner, {
    address: seeding.target.deployment.contracts.emission,
    abi: emissionAbi,
    functionName: "emitFinishedEpochs",
    args: [seeding.accounts.rewards.address, 1_000n],
  });
}
