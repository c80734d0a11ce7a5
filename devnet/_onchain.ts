/**
 * The devnet's chain: its own anvil or an existing dev chain, the deployment, the registered
 * state (live, offline and under-bonded providers, stakes, validators, routers, measurements,
 * the Escrow's settler and a consumer deposit), and the on-chain work of a live network (an
 * empty block, a settlement of served usage, the emission of finished epochs).
 *
 * @module
 */

import { type Address, type Hex, keccak256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { emissionAbi, escrowAbi, registryAbi, stakingAbi } from "../chain/mod.ts";
import { startAnvil } from "./anvil.ts";
import { deployContracts, type Deployment } from "./deploy.ts";
import type { Teardown } from "./_lifecycle.ts";
import { registerRoles } from "./seed.ts";
import {
  createSigner,
  devAccounts,
  type DevnetAccounts,
  type DevnetSigner,
  sendAndConfirm,
} from "./signer.ts";
import type { ServedUsage } from "./provider.ts";

/** 10^18: one ether in wei. */
export const ETHER = 10n ** 18n;

/** What the devnet's seeding spends from dev accounts 0 (stakes) and 2 (the deposit), at most. */
const SEED_FUNDS = 200_000n * ETHER;

/** Deterministic key for a devnet role (never use outside the devnet). */
export function devKey(label: string): Hex {
  return keccak256(stringToBytes(`net-devnet/${label}`));
}

/** The chain the devnet runs on. */
export interface DevnetChain {
  /** Where the devnet itself reaches it. */
  chainUrl: string;
  /** Its URL as advertised (the public host). */
  publicRpcUrl: string;
  /** Its chain id. */
  chainId: number;
  /** The dev accounts in their roles. */
  accounts: DevnetAccounts;
  /** Deploys, owns and registers. */
  owner: DevnetSigner;
  /** Settles served usage. */
  settler: DevnetSigner;
  /** Deposits into the Escrow. */
  consumer: DevnetSigner;
}

/** Where and how to get the chain. */
export interface ChainOptions {
  /** An existing dev chain; otherwise anvil is started. */
  rpcUrl?: string;
  /** Anvil's port (0 for a free one). */
  port: number;
  /** Anvil's listen address. */
  hostname: string;
  /** The host in the advertised URL. */
  publicHost: string;
  /** The anvil binary. */
  anvilBinary?: string;
  /** Start anvil in its own process group (`AnvilOptions.detached`). */
  detached?: boolean;
}

/**
 * Starts anvil (stopped by `teardown`) or checks an existing chain: it must answer
 * `eth_chainId`, and its dev accounts must hold enough to pay for the seeding.
 */
export async function startChain(
  options: ChainOptions,
  teardown: Teardown,
  log: (line: string) => void,
): Promise<DevnetChain> {
  let where: Pick<DevnetChain, "chainUrl" | "publicRpcUrl" | "chainId">;
  if (options.rpcUrl) {
    const chainId = await existingChainId(options.rpcUrl);
    where = { chainUrl: options.rpcUrl, publicRpcUrl: options.rpcUrl, chainId };
    log(`using the chain at ${options.rpcUrl} (chain ${chainId})`);
  } else {
    const anvil = await startAnvil({
      port: options.port,
      binary: options.anvilBinary,
      host: options.hostname,
      detached: options.detached,
    });
    teardown.add(() => anvil.stop());
    const publicRpcUrl = `http://${options.publicHost}:${anvil.port}`;
    where = { chainUrl: anvil.rpcUrl, publicRpcUrl, chainId: anvil.chainId };
    log(`anvil ready at ${publicRpcUrl} (chain ${anvil.chainId})`);
  }
  const accounts = devAccounts();
  const chain = { chainId: where.chainId };
  const signer = (account: DevnetAccounts["owner"]) => createSigner(where.chainUrl, account, chain);
  const owner = signer(accounts.owner);
  const consumer = signer(accounts.consumer);
  if (options.rpcUrl) await requireFunds([owner, consumer], options.rpcUrl);
  return { ...where, accounts, owner, settler: signer(accounts.settler), consumer };
}

/** The chain id of an existing chain, or an error that names the URL. */
async function existingChainId(rpcUrl: string): Promise<number> {
  let answer: { result?: unknown; error?: { message?: string } };
  try {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(10_000),
    });
    answer = await response.json();
  } catch (cause) {
    throw new Error(
      `Cannot use the chain at ${rpcUrl}: it did not answer eth_chainId (${
        (cause as Error).message
      })`,
      { cause },
    );
  }
  if (typeof answer.result !== "string" || !/^0x[0-9a-f]+$/i.test(answer.result)) {
    throw new Error(
      `Cannot use the chain at ${rpcUrl}: eth_chainId answered ${
        JSON.stringify(answer).slice(0, 200)
      }; expected a hex chain id`,
    );
  }
  return Number(BigInt(answer.result));
}

/** Refuses a chain on which the dev accounts cannot pay for the seeding. */
async function requireFunds(signers: DevnetSigner[], rpcUrl: string): Promise<void> {
  for (const signer of signers) {
    const balance = await signer.client.getBalance({ address: signer.account.address });
    if (balance < SEED_FUNDS) {
      throw new Error(
        `Cannot use the chain at ${rpcUrl}: dev account ${signer.account.address} holds ` +
          `${balance / ETHER} ether; expected at least ${SEED_FUNDS / ETHER} (a dev chain whose ` +
          "accounts come from anvil's test mnemonic, e.g. `anvil --balance 1000000`)",
      );
    }
  }
}

/**
 * Deploys the four contracts. Emission's genesis is two epochs in the past, so the network is
 * past epoch 0 from the start.
 */
export async function deployDevnet(
  owner: DevnetSigner,
  epochSeconds: bigint,
): Promise<Deployment> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  return await deployContracts(owner, {
    minProviderBond: 1_000n * ETHER,
    unbondingPeriod: 7n * 86_400n,
    emission: {
      genesisTime: now - 2n * epochSeconds,
      epochLength: epochSeconds,
      initialReward: 1_000n * ETHER,
      halvingInterval: 100n,
      cap: 1_000_000n * ETHER,
    },
  });
}

/** A live provider, as the Registry records it. */
export interface LiveProviderRecord {
  /** Its address. */
  address: Address;
  /** Its tier. */
  tier: "verified" | "tee";
  /** Its ad's commitment, and its serving key's address (the Registry's `trustRoot`). */
  provider: { commitment: Hex; ad: { serving_key: Address } };
}

/** What {@linkcode registerDevnet} registers besides the live providers. */
export interface RegistrationOptions {
  /** Registered, bonded providers that no router carries. */
  offline: number;
  /** Registered providers staked below the bond. */
  underbonded: number;
  /** The routers' public URLs. */
  routerUrls: readonly string[];
}

/** A provider registered without a server: a key-derived address, commitment and stake. */
function silentProviders(label: string, count: number, stake: bigint) {
  return Array.from({ length: count }, (_, i) => ({
    address: privateKeyToAccount(devKey(`${label}/${i}`)).address.toLowerCase() as Address,
    trustRoot: privateKeyToAccount(devKey(`${label}/${i}/serving`)).address,
    commitment: devKey(`${label}/${i}/ad`),
    stake,
  }));
}

/**
 * Registers the network on chain: the live providers with their real commitments, offline
 * and under-bonded ones, their stakes and five validators', the roles (validators, routers,
 * three measurements, the settler), a consumer deposit; then emits the finished epochs.
 *
 * @returns how many validators were registered.
 */
export async function registerDevnet(
  chain: DevnetChain,
  deployment: Deployment,
  live: readonly LiveProviderRecord[],
  options: RegistrationOptions,
): Promise<{ validators: number }> {
  const { registry, staking, escrow } = deployment.contracts;
  const offline = silentProviders("offline", options.offline, 1_500n * ETHER);
  const underbonded = silentProviders("underbonded", options.underbonded, 400n * ETHER);
  const silent = [...offline, ...underbonded];
  await sendAndConfirm(chain.owner, {
    address: registry,
    abi: registryAbi,
    functionName: "registerProviders",
    args: [[
      ...live.map((p) => ({
        provider: p.address,
        adCommitment: p.provider.commitment,
        trustRoot: p.provider.ad.serving_key,
        tier: p.tier === "tee" ? 1 : 0,
        active: true,
      })),
      ...silent.map((p) => ({
        provider: p.address,
        adCommitment: p.commitment,
        trustRoot: p.trustRoot,
        tier: 0,
        active: true,
      })),
    ]],
  });
  const validators = Array.from(
    { length: 5 },
    (_, i) => privateKeyToAccount(devKey(`validator/${i}`)).address,
  );
  const stakes = [
    ...live.map((p, i) => ({ account: p.address, amount: (2_000n + 500n * BigInt(i)) * ETHER })),
    ...silent.map((p) => ({ account: p.address, amount: p.stake })),
    ...validators.map((v) => ({ account: v, amount: 10_000n * ETHER })),
  ];
  await sendAndConfirm(chain.owner, {
    address: staking,
    abi: stakingAbi,
    functionName: "stakeForMany",
    args: [stakes.map((s) => s.account), stakes.map((s) => s.amount)],
    value: stakes.reduce((sum, s) => sum + s.amount, 0n),
  });
  await registerRoles(chain.owner, { registry, escrow }, {
    validators,
    routers: options.routerUrls.map((url, r) => ({
      id: privateKeyToAccount(devKey(`router/${r}`)).address,
      url,
    })),
    measurements: Array.from({ length: 3 }, (_, m) => devKey(`measurement/${m}`)),
    settler: chain.accounts.settler.address,
  });
  await sendAndConfirm(chain.consumer, {
    address: escrow,
    abi: escrowAbi,
    functionName: "deposit",
    args: [],
    value: 100_000n * ETHER,
  });
  await emitFinishedEpochs(chain, deployment);
  return { validators: validators.length };
}

/** Emits every finished epoch's reward to the owner; nothing to emit yet is not an error. */
export async function emitFinishedEpochs(
  chain: DevnetChain,
  deployment: Deployment,
): Promise<void> {
  try {
    await sendAndConfirm(chain.owner, {
      address: deployment.contracts.emission,
      abi: emissionAbi,
      functionName: "emitFinishedEpochs",
      args: [chain.accounts.owner.address, 1000n],
    });
  } catch (error) {
    // NoFinishedEpoch: nothing to emit yet.
    if (!/NoFinishedEpoch/.test(String(error))) throw error;
  }
}

/** Mines an empty block (so settlements gain confirmations). */
export async function mineBlock(chain: DevnetChain): Promise<void> {
  await chain.owner.client.request({ method: "evm_mine" as never });
}

/** A provider whose served usage is settled. */
export interface SettledProvider {
  /** Its address. */
  address: Address;
  /** Its usage counter. */
  provider: {
    /** Takes the usage served since the last call. */
    takeUsage(): ServedUsage;
    /** Gives usage back (its settlement failed). */
    restoreUsage(usage: ServedUsage): void;
  };
}

/**
 * Settles each provider's served usage to the Escrow, charged to the consumer, in one batch.
 * Usage that could not be settled is kept for the next round.
 *
 * @returns how many providers were settled (0: nothing was served).
 */
export async function settleUsage(
  chain: DevnetChain,
  deployment: Deployment,
  providers: readonly SettledProvider[],
): Promise<number> {
  const items = providers
    .map((p) => ({ p, usage: p.provider.takeUsage() }))
    .filter(({ usage }) => usage.tokens > 0n);
  if (items.length === 0) return 0;
  try {
    await sendAndConfirm(chain.settler, {
      address: deployment.contracts.escrow,
      abi: escrowAbi,
      functionName: "settleBatch",
      args: [items.map(({ p, usage }) => ({
        consumer: chain.accounts.consumer.address,
        provider: p.address,
        amount: usage.amount,
        tokens: usage.tokens,
      }))],
    });
  } catch (error) {
    // Not settled: keep the usage for the next round instead of losing it.
    for (const { p, usage } of items) p.provider.restoreUsage(usage);
    throw error;
  }
  return items.length;
}
