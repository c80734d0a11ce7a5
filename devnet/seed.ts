/**
 * Seeds a realistic network from a deterministic plan, and states the expected truth.
 *
 * - {@linkcode planNetwork}: a pure function of its options (a seed string, a provider count,
 *   ...) that fixes every provider, key, ad, stake, validator, router, measurement,
 *   settlement and timestamp. It scales to 10,000 providers.
 * - {@linkcode expectedNetwork}: what the chain must hold after seeding, computed from the plan
 *   alone — never from a chain read — so tests can compare reads against it.
 * - {@linkcode seedNetwork}: sends the plan's transactions to a deployed network: batch
 *   registrations and stakes (a handful of transactions, not one per provider), a provider
 *   updating its own ad commitment, an unstake, settlements over several epochs (time
 *   travel), and the emission of the finished epochs.
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

import { type Address, type Hex, keccak256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  adCommitment,
  emissionAbi,
  type EmissionState,
  escrowAbi,
  isBonded,
  type NetworkState,
  type ProviderAd,
  type ProviderState,
  type ProviderTier,
  registryAbi,
  type RouterRecord,
  type SettlementBucket,
  stakingAbi,
} from "../chain/mod.ts";
import { DEFAULT_DEPLOYMENT, type Deployment, type DeploymentParams } from "./deploy.ts";
import {
  confirm,
  createSigner,
  devAccounts,
  type DevnetAccounts,
  type DevnetSigner,
  sendAndConfirm,
} from "./signer.ts";

/** Options of {@linkcode planNetwork}. */
export interface PlanOptions {
  /**
   * Number of providers that stay registered (two more are registered and revoked when
   * there are at least 10).
   *
   * @default {60}
   */
  providers?: number;
  /**
   * Number of validators.
   *
   * @default {5}
   */
  validators?: number;
  /**
   * Router URLs (one router each). Pass the URLs of real router servers to serve the ads.
   *
   * @default {["http://router-0.devnet.invalid", … 3 routers]}
   */
  routerUrls?: readonly string[];
  /**
   * Number of approved TEE measurements.
   *
   * @default {3}
   */
  measurements?: number;
  /**
   * Epochs with settlements (epochs `0 .. n − 1`); the seed ends in epoch `n + 1` after
   * emitting epochs `0 .. n`.
   *
   * @default {4}
   */
  settledEpochs?: number;
  /**
   * Settlements per epoch (providers drawn with repetition among the active ones).
   *
   * @default {25}
   */
  settlementsPerEpoch?: number;
  /**
   * The seed of every pseudo-random choice and key.
   *
   * @default {"net-devnet"}
   */
  seed?: string;
  /**
   * Contract parameters (bond, unbonding period, emission schedule).
   *
   * @default {DEFAULT_DEPLOYMENT}
   */
  deployment?: DeploymentParams;
  /**
   * The endpoint URL of provider `index` in its ad.
   *
   * @default {(i) => `https://provider-${i}.devnet.invalid`}
   */
  endpoint?: (index: number) => string;
}

/** One provider of the plan. */
export interface PlannedProvider {
  /** Position in the registration order. */
  index: number;
  /** The provider account's private key (test use only). */
  accountKey: Hex;
  /** The serving key's private key (test use only): signs key endorsements. */
  servingKey: Hex;
  /** The provider's address (lower case). */
  address: Address;
  /** The serving key's address (lower case): the Registry `trustRoot`. */
  servingAddress: Address;
  /** The tier. */
  tier: ProviderTier;
  /** The Registry active flag. */
  active: boolean;
  /** Total staked for the provider. */
  staked: bigint;
  /** Later unstaked by the provider itself. */
  unstaked: bigint;
  /** The ad the provider publishes; the Registry ends up holding its commitment. */
  ad: ProviderAd;
  /** An older ad registered first, then replaced by the provider itself; or `null`. */
  initialAd: ProviderAd | null;
  /** Registered, then revoked by the owner. */
  revoked: boolean;
}

/** One settlement of the plan. */
export interface PlannedSettlement {
  /** The provider paid. */
  provider: Address;
  /** Amount (wei). */
  amount: bigint;
  /** Tokens served. */
  tokens: bigint;
}

/** A deterministic network: everything {@linkcode seedNetwork} sends. */
export interface NetworkPlan {
  /** The seed. */
  seed: string;
  /** Contract parameters. */
  deployment: DeploymentParams;
  /** Providers in registration order, revoked ones included. */
  providers: PlannedProvider[];
  /** Validators and the stake each gets. */
  validators: { address: Address; stake: bigint }[];
  /** Routers. */
  routers: RouterRecord[];
  /** Approved measurement ids. */
  measurements: Hex[];
  /** Settlements per epoch, with the timestamp of their first block. */
  settlements: { epoch: bigint; time: bigint; items: PlannedSettlement[] }[];
  /** What the consumer deposits into the Escrow. */
  consumerDeposit: bigint;
  /** Timestamp of the last block of the seed (it emits the finished epochs). */
  finalTime: bigint;
}

/** What the chain holds after {@linkcode seedNetwork}, computed from the plan alone. */
export interface ExpectedNetwork {
  /** `readNetworkState` at the last seeded block must equal this (plus its `block`). */
  state: Omit<NetworkState, "block">;
  /** `scanSettlements` over the whole history must return these buckets. */
  settlements: SettlementBucket[];
  /** Timestamp of the last seeded block. */
  blockTimestamp: bigint;
}

const ETHER = 10n ** 18n;
const REVOKED = [3, 7];

/** The model catalogue the plan draws from: id, max context, base prices (wei per 1M). */
const CATALOGUE = [
  { id: "devnet/tiny-chat", context: 8_192, input: 150_000n, output: 600_000n },
  {
    id: "meta/llama-3.1-8b-instruct",
    context: 131_072,
    input: 20n * 10n ** 12n,
    output: 50n * 10n ** 12n,
  },
  {
    id: "meta/llama-3.3-70b-instruct",
    context: 131_072,
    input: 230n * 10n ** 12n,
    output: 400n * 10n ** 12n,
  },
  {
    id: "mistral/mistral-small-24b-instruct",
    context: 32_768,
    input: 70n * 10n ** 12n,
    output: 110n * 10n ** 12n,
  },
  {
    id: "qwen/qwen2.5-72b-instruct",
    context: 32_768,
    input: 350n * 10n ** 12n,
    output: 400n * 10n ** 12n,
  },
  {
    id: "qwen/qwen2.5-coder-32b-instruct",
    context: 32_768,
    input: 60n * 10n ** 12n,
    output: 150n * 10n ** 12n,
  },
  {
    id: "google/gemma-2-27b-it",
    context: 8_192,
    input: 80n * 10n ** 12n,
    output: 80n * 10n ** 12n,
  },
  {
    id: "deepseek/deepseek-r1-distill-llama-70b",
    context: 131_072,
    input: 230n * 10n ** 12n,
    output: 690n * 10n ** 12n,
  },
] as const;

function random(seed: string) {
  const bits = (label: string) => BigInt(keccak256(stringToBytes(`${seed}/${label}`)));
  return {
    bits,
    key: (label: string) => keccak256(stringToBytes(`${seed}/key/${label}`)),
    /** A float in [0, 1). */
    unit: (label: string) => Number(bits(label) >> 204n) / 2 ** 52,
    /** A bigint in [low, high). */
    between: (label: string, low: bigint, high: bigint) => low + bits(label) % (high - low),
  };
}

function lowerAddress(value: string): Address {
  return value.toLowerCase() as Address;
}

function checkCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(
      `Cannot plan network: ${name} must be an integer ≥ ${min}, found ${value}`,
    );
  }
}

/** Builds a deterministic network plan. Pure: the same options give the same plan. */
export function planNetwork(options: PlanOptions = {}): NetworkPlan {
  const count = options.providers ?? 60;
  const seed = options.seed ?? "net-devnet";
  const deployment = options.deployment ?? DEFAULT_DEPLOYMENT;
  const validatorCount = options.validators ?? 5;
  const measurementCount = options.measurements ?? 3;
  const settledEpochs = options.settledEpochs ?? 4;
  const perEpoch = options.settlementsPerEpoch ?? 25;
  const routerUrls = options.routerUrls ??
    [
      "http://router-0.devnet.invalid",
      "http://router-1.devnet.invalid",
      "http://router-2.devnet.invalid",
    ];
  const endpoint = options.endpoint ?? ((i: number) => `https://provider-${i}.devnet.invalid`);
  checkCount("providers", count, 3);
  checkCount("validators", validatorCount, 0);
  checkCount("measurements", measurementCount, 0);
  checkCount("settledEpochs", settledEpochs, 1);
  checkCount("settlementsPerEpoch", perEpoch, 1);
  const r = random(seed);
  const bond = deployment.minProviderBond;

  const total = count + (count >= 10 ? REVOKED.length : 0);
  const providers: PlannedProvider[] = [];
  for (let i = 0; i < total; i++) {
    const accountKey = r.key(`provider/${i}`);
    const servingKey = r.key(`serving/${i}`);
    const address = lowerAddress(privateKeyToAccount(accountKey).address);
    const servingAddress = lowerAddress(privateKeyToAccount(servingKey).address);
    const revoked = count >= 10 && REVOKED.includes(i);
    // Fixed roles for the first three providers; the rest are drawn.
    let tier: ProviderTier = r.unit(`tier/${i}`) < 0.35 ? "tee" : "verified";
    let active = r.unit(`active/${i}`) >= 0.15;
    const roll = r.unit(`stake/${i}`);
    let staked = roll < 0.15
      ? 0n // never staked
      : roll < 0.35
      ? r.between(`stake-amount/${i}`, bond / 10n, bond) // below the bond
      : r.between(`stake-amount/${i}`, bond, bond * 5n); // bonded when active
    let unstaked = 0n;
    if (i === 0) {
      [tier, active, staked] = ["verified", true, 3n * bond + 17n];
    } else if (i === 1) {
      [tier, active, staked, unstaked] = ["tee", true, 2n * bond, bond / 2n + 1n];
    } else if (i === 2) {
      [tier, active, staked] = ["verified", true, bond]; // exactly the bond
    }
    const ad = makeAd(r, i, {
      provider: address,
      serving: servingAddress,
      tier,
      endpoint: endpoint(i),
    });
    const initialAd = i === 0
      ? {
        ...ad,
        models: ad.models.map((m) => ({
          ...m,
          prices: { ...m.prices, input: String(BigInt(m.prices.input) * 2n) },
        })),
      }
      : null;
    providers.push({
      index: i,
      accountKey,
      servingKey,
      address,
      servingAddress,
      tier,
      active,
      staked,
      unstaked,
      ad,
      initialAd,
      revoked,
    });
  }

  const validators = Array.from({ length: validatorCount }, (_, i) => ({
    address: lowerAddress(
      `0x${(r.bits(`validator/${i}`) & ((1n << 160n) - 1n)).toString(16).padStart(40, "0")}`,
    ),
    stake: r.between(`validator-stake/${i}`, 10n * ETHER, 100n * ETHER),
  }));
  const routers: RouterRecord[] = routerUrls.map((url, i) => ({
    id: lowerAddress(
      `0x${(r.bits(`router/${i}`) & ((1n << 160n) - 1n)).toString(16).padStart(40, "0")}`,
    ),
    url,
  }));
  const measurements = Array.from(
    { length: measurementCount },
    (_, i) => keccak256(stringToBytes(`${seed}/measurement/${i}`)),
  );

  const payable = providers.filter((p) => !p.revoked && p.active);
  const { genesisTime, epochLength } = deployment.emission;
  const settlements = Array.from({ length: settledEpochs }, (_, e) => ({
    epoch: BigInt(e),
    time: genesisTime + BigInt(e) * epochLength + 60n,
    items: Array.from({ length: perEpoch }, (_, k) => {
      const pick = payable[Number(r.bits(`settle/${e}/${k}`) % BigInt(payable.length))];
      return {
        provider: pick.address,
        amount: r.between(`settle-amount/${e}/${k}`, 10n ** 15n, 10n ** 17n),
        tokens: r.between(`settle-tokens/${e}/${k}`, 100n, 200_000n),
      };
    }),
  }));
  const charged = settlements.flatMap((s) => s.items).reduce((sum, s) => sum + s.amount, 0n);

  return {
    seed,
    deployment,
    providers,
    validators,
    routers,
    measurements,
    settlements,
    consumerDeposit: charged + ETHER,
    finalTime: genesisTime + BigInt(settledEpochs + 1) * epochLength + 120n,
  };
}

function makeAd(
  r: ReturnType<typeof random>,
  i: number,
  who: { provider: Address; serving: Address; tier: ProviderTier; endpoint: string },
): ProviderAd {
  const count = 1 + Math.floor(r.unit(`models/${i}`) * 3);
  const order = CATALOGUE.map((m, k) => ({ m, key: r.bits(`model-order/${i}/${k}`) }))
    .sort((a, b) => (a.key < b.key ? -1 : 1))
    .slice(0, count);
  return {
    version: 1,
    provider: who.provider,
    tier: who.tier,
    serving_key: who.serving,
    endpoint: who.endpoint,
    models: order.map(({ m }, k) => {
      const factor = r.between(`price/${i}/${k}`, 80n, 150n) * (who.tier === "tee" ? 13n : 10n);
      return {
        id: m.id,
        prices: {
          input: String((m.input * factor) / 1000n),
          output: String((m.output * factor) / 1000n),
        },
        context_length: r.unit(`context/${i}/${k}`) < 0.3 ? Math.min(m.context, 8_192) : m.context,
      };
    }),
  };
}

/** The Registry's enumeration order after the plan's registrations and revocations. */
function registryOrder(plan: NetworkPlan): PlannedProvider[] {
  const items = [...plan.providers];
  for (const revoked of plan.providers.filter((p) => p.revoked)) {
    // AddressSet.remove: the last item moves into the freed slot.
    const at = items.indexOf(revoked);
    const last = items.pop()!;
    if (last !== revoked) items[at] = last;
  }
  return items;
}

/** What {@linkcode seedNetwork} leaves on chain, computed from the plan alone. */
export function expectedNetwork(plan: NetworkPlan): ExpectedNetwork {
  const bond = plan.deployment.minProviderBond;
  const providers: ProviderState[] = registryOrder(plan).map((p) => {
    const stake = p.staked - p.unstaked;
    return {
      address: p.address,
      adCommitment: adCommitment(p.ad),
      trustRoot: p.servingAddress,
      tier: p.tier,
      active: p.active,
      stake,
      bonded: isBonded(p.active, stake, bond),
    };
  });
  const totalStaked = plan.providers.reduce((sum, p) => sum + p.staked - p.unstaked, 0n) +
    plan.validators.reduce((sum, v) => sum + v.stake, 0n);

  const e = plan.deployment.emission;
  const reward = (epoch: bigint) => {
    const halvings = epoch / e.halvingInterval;
    return halvings >= 256n ? 0n : e.initialReward >> halvings;
  };
  const currentEpoch = plan.finalTime < e.genesisTime
    ? 0n
    : (plan.finalTime - e.genesisTime) / e.epochLength;
  let totalEmitted = 0n;
  for (let epoch = 0n; epoch < currentEpoch; epoch++) {
    const room = e.cap - totalEmitted;
    totalEmitted += reward(epoch) < room ? reward(epoch) : room;
  }
  const emission: EmissionState = {
    cap: e.cap,
    totalEmitted,
    emittedEpochs: currentEpoch,
    currentEpoch,
    currentEpochReward: reward(currentEpoch),
    schedule: {
      rule: "halving",
      genesisTime: e.genesisTime,
      epochLength: e.epochLength,
      initialReward: e.initialReward,
      halvingInterval: e.halvingInterval,
    },
  };

  const buckets = new Map<string, SettlementBucket>();
  for (const { epoch, items } of plan.settlements) {
    for (const item of items) {
      const key = `${item.provider}:${epoch}`;
      const bucket = buckets.get(key) ??
        { provider: item.provider, epoch, amount: 0n, tokens: 0n, settlements: 0 };
      bucket.amount += item.amount;
      bucket.tokens += item.tokens;
      bucket.settlements += 1;
      buckets.set(key, bucket);
    }
  }
  const settlements = [...buckets.values()].sort((a, b) =>
    a.provider < b.provider
      ? -1
      : a.provider > b.provider
      ? 1
      : a.epoch < b.epoch
      ? -1
      : a.epoch > b.epoch
      ? 1
      : 0
  );
  return {
    state: {
      providers,
      validators: plan.validators.map((v) => v.address),
      routers: plan.routers,
      approvedMeasurements: plan.measurements,
      emission,
      staking: { totalStaked, minProviderBond: bond },
    },
    settlements,
    blockTimestamp: plan.finalTime,
  };
}

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
  const settler = createSigner(target.rpcUrl, accounts.settler, chain);
  const consumer = createSigner(target.rpcUrl, accounts.consumer, chain);
  const { registry, staking, emission, escrow } = target.deployment.contracts;
  const batchSize = options.batchSize ?? 150;

  await rpc(owner, "anvil_setBlockTimestampInterval", [1]);

  // Providers: batch registration, then the planned revocations.
  for (const batch of chunks(plan.providers, batchSize)) {
    await sendAndConfirm(owner, {
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
    await sendAndConfirm(owner, {
      address: registry,
      abi: registryAbi,
      functionName: "revokeProvider",
      args: [p.address],
    });
  }

  // Stakes: providers and validators, in batches.
  const stakes = [
    ...plan.providers.filter((p) => p.staked > 0n).map((p) => ({
      account: p.address,
      amount: p.staked,
    })),
    ...plan.validators.map((v) => ({ account: v.address, amount: v.stake })),
  ];
  for (const batch of chunks(stakes, batchSize * 4)) {
    await sendAndConfirm(owner, {
      address: staking,
      abi: stakingAbi,
      functionName: "stakeForMany",
      args: [batch.map((s) => s.account), batch.map((s) => s.amount)],
      value: batch.reduce((sum, s) => sum + s.amount, 0n),
    });
  }

  // Providers acting themselves: an ad update and an unstake.
  for (const p of plan.providers.filter((p) => p.initialAd || p.unstaked > 0n)) {
    const self = createSigner(target.rpcUrl, privateKeyToAccount(p.accountKey), chain);
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

  await registerRoles(owner, target.deployment.contracts, {
    validators: plan.validators.map((v) => v.address),
    routers: plan.routers,
    measurements: plan.measurements,
    settler: accounts.settler.address,
  });

  // Escrow: a consumer deposit, settlements in each planned epoch.
  await sendAndConfirm(consumer, {
    address: escrow,
    abi: escrowAbi,
    functionName: "deposit",
    args: [],
    value: plan.consumerDeposit,
  });
  for (const { time, items } of plan.settlements) {
    await rpc(owner, "evm_setNextBlockTimestamp", [Number(time)]);
    for (const batch of chunks(items, batchSize)) {
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

  // Emission: the last block emits every finished epoch. An empty block one second earlier
  // moves "latest" into the final epoch, so the pre-flight simulation sees the same epochs.
  await rpc(owner, "evm_mine", [Number(plan.finalTime - 1n)]);
  await rpc(owner, "evm_setNextBlockTimestamp", [Number(plan.finalTime)]);
  await sendAndConfirm(owner, {
    address: emission,
    abi: emissionAbi,
    functionName: "emitFinishedEpochs",
    args: [accounts.rewards.address, 1_000n],
  });
  await rpc(owner, "anvil_removeBlockTimestampInterval", []);
}
