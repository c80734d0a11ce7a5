/**
 * Deploys the network's four contracts (and optionally the `aggregate3` Multicall) from the
 * committed artifacts in `contracts/artifacts/`, and links them: the Registry names the
 * Staking, Emission and Escrow of its network (`setNetworkContracts`), as the Escrow names its
 * Emission, so readers can check that the addresses they were given belong together.
 *
 * @example
 * ```ts ignore
 * import { startAnvil } from "./anvil.ts";
 * import { deployContracts, DEFAULT_DEPLOYMENT } from "./deploy.ts";
 * import { createSigner, devAccounts } from "./signer.ts";
 *
 * await using anvil = await startAnvil();
 * const owner = createSigner(anvil.rpcUrl, devAccounts().owner, { chainId: anvil.chainId });
 * const { contracts } = await deployContracts(owner, DEFAULT_DEPLOYMENT);
 * console.log(contracts.registry);
 * ```
 *
 * @module
 */

import type { Abi, Address, Hex } from "viem";
import registryArtifact from "../contracts/artifacts/Registry.json" with { type: "json" };
import stakingArtifact from "../contracts/artifacts/Staking.json" with { type: "json" };
import emissionArtifact from "../contracts/artifacts/Emission.json" with { type: "json" };
import escrowArtifact from "../contracts/artifacts/Escrow.json" with { type: "json" };
import multicallArtifact from "../contracts/artifacts/Multicall.json" with { type: "json" };
import {
  type ChainContracts,
  emissionAbi,
  escrowAbi,
  multicallAbi,
  registryAbi,
  stakingAbi,
} from "../chain/mod.ts";
import { confirm, type DevnetSigner, sendAndConfirm } from "./signer.ts";

/** Parameters of the Emission contract. */
export interface EmissionParams {
  /** Start of epoch 0, Unix seconds. */
  genesisTime: bigint;
  /** Epoch length in seconds. */
  epochLength: bigint;
  /** Reward of epoch 0 (wei). */
  initialReward: bigint;
  /** The reward halves every this many epochs. */
  halvingInterval: bigint;
  /** Upper bound of the total emitted (wei). */
  cap: bigint;
}

/** What {@linkcode deployContracts} deploys. */
export interface DeploymentParams {
  /** Minimum stake of a bonded provider (wei). */
  minProviderBond: bigint;
  /** Seconds between `unstake` and `withdraw`. */
  unbondingPeriod: bigint;
  /** The emission schedule. */
  emission: EmissionParams;
}

/** Options of {@linkcode deployContracts}. */
export interface DeployOptions {
  /**
   * Owner of the contracts.
   *
   * @default {the signer's address}
   */
  owner?: Address;
  /**
   * Also deploy the `aggregate3` Multicall contract.
   *
   * @default {false}
   */
  multicall?: boolean;
}

/** The result of {@linkcode deployContracts}. */
export interface Deployment {
  /** The four contract addresses. */
  contracts: ChainContracts;
  /** The Multicall address, or `null` when not deployed. */
  multicall: Address | null;
  /** The block of the first deployment: scan logs from here. */
  fromBlock: bigint;
}

const ETHER = 10n ** 18n;

/** The deployment the default devnet plan uses. */
export const DEFAULT_DEPLOYMENT: DeploymentParams = {
  minProviderBond: 1_000n * ETHER,
  unbondingPeriod: 7n * 86_400n,
  emission: {
    genesisTime: 1_900_000_000n,
    epochLength: 3_600n,
    initialReward: 1_000n * ETHER,
    halvingInterval: 4n,
    cap: 6_000n * ETHER,
  },
};

async function deploy(
  signer: DevnetSigner,
  name: string,
  abi: Abi,
  bytecode: string,
  args: readonly unknown[],
): Promise<{ address: Address; block: bigint }> {
  const hash = await signer.wallet.deployContract({
    abi,
    bytecode: bytecode as Hex,
    args,
    account: signer.account,
    chain: signer.wallet.chain,
  });
  const receipt = await confirm(signer, hash, `deploy ${name}`);
  if (!receipt.contractAddress) throw new Error(`Cannot deploy ${name}: receipt has no address`);
  return { address: receipt.contractAddress.toLowerCase() as Address, block: receipt.blockNumber };
}

/**
 * Deploys Registry, Staking, Emission and Escrow (in that order, so a fresh chain always gives
 * them the same addresses), links them in the Registry (`setNetworkContracts`, by the owner
 * when the signer is the owner), and optionally deploys Multicall.
 */
export async function deployContracts(
  signer: DevnetSigner,
  params: DeploymentParams,
  options: DeployOptions = {},
): Promise<Deployment> {
  const owner = options.owner ?? signer.account.address;
  const registry = await deploy(signer, "Registry", registryAbi, registryArtifact.bytecode, [
    owner,
  ]);
  const staking = await deploy(signer, "Staking", stakingAbi, stakingArtifact.bytecode, [
    owner,
    params.minProviderBond,
    params.unbondingPeriod,
  ]);
  const { emission: e } = params;
  const emission = await deploy(signer, "Emission", emissionAbi, emissionArtifact.bytecode, [
    owner,
    e.genesisTime,
    e.epochLength,
    e.initialReward,
    e.halvingInterval,
    e.cap,
  ]);
  const escrow = await deploy(signer, "Escrow", escrowAbi, escrowArtifact.bytecode, [
    owner,
    emission.address,
  ]);
  if (owner.toLowerCase() === signer.account.address.toLowerCase()) {
    await sendAndConfirm(signer, {
      address: registry.address,
      abi: registryAbi,
      functionName: "setNetworkContracts",
      args: [staking.address, emission.address, escrow.address],
    });
  }
  const multicall = options.multicall
    ? (await deploy(signer, "Multicall", multicallAbi, multicallArtifact.bytecode, [])).address
    : null;
  return {
    contracts: {
      registry: registry.address,
      staking: staking.address,
      emission: emission.address,
      escrow: escrow.address,
    },
    multicall,
    fromBlock: registry.block,
  };
}
