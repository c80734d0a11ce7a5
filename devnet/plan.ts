/**
 * A deterministic plan of a realistic network: {@linkcode planNetwork} is a pure function of its
 * options (a seed string, a provider count, ...) that fixes every provider, key, ad, stake,
 * validator, router, measurement, settlement and timestamp. It scales to 10,000 providers.
 * `seed.ts` sends a plan to a chain; `expected.ts` states what the chain then holds.
 *
 * @example
 * ```ts
 * import { planNetwork } from "./plan.ts";
 *
 * const plan = planNetwork({ providers: 12, seed: "example" });
 * console.assert(plan.providers.length === 14); // two more, registered then revoked
 * console.assert(planNetwork({ providers: 12, seed: "example" }).providers[5].address ===
 *   plan.providers[5].address);
 * ```
 *
 * @module
 */

import { type Address, type Hex, keccak256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { ProviderAd, ProviderTier, RouterRecord } from "../chain/mod.ts";
import { DEFAULT_DEPLOYMENT, type DeploymentParams } from "./deploy.ts";

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

/** A deterministic network: everything `seedNetwork` (`seed.ts`) sends. */
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

/** 10^18: one ether in wei. */
export const ETHER = 10n ** 18n;
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

type Random = ReturnType<typeof random>;

const DEFAULT_ROUTERS = [
  "http://router-0.devnet.invalid",
  "http://router-1.devnet.invalid",
  "http://router-2.devnet.invalid",
];

/** Builds a deterministic network plan. Pure: the same options give the same plan. */
export function planNetwork(options: PlanOptions = {}): NetworkPlan {
  const count = options.providers ?? 60;
  const seed = options.seed ?? "net-devnet";
  const deployment = options.deployment ?? DEFAULT_DEPLOYMENT;
  const validatorCount = options.validators ?? 5;
  const measurementCount = options.measurements ?? 3;
  const settledEpochs = options.settledEpochs ?? 4;
  const perEpoch = options.settlementsPerEpoch ?? 25;
  const endpoint = options.endpoint ?? ((i: number) => `https://provider-${i}.devnet.invalid`);
  checkCount("providers", count, 3);
  checkCount("validators", validatorCount, 0);
  checkCount("measurements", measurementCount, 0);
  checkCount("settledEpochs", settledEpochs, 1);
  checkCount("settlementsPerEpoch", perEpoch, 1);
  const r = random(seed);

  const total = count + (count >= 10 ? REVOKED.length : 0);
  const providers = Array.from(
    { length: total },
    (_, i) => planProvider(r, i, { count, bond: deployment.minProviderBond, endpoint }),
  );
  const settlements = planSettlements(r, providers, deployment, { settledEpochs, perEpoch });
  const charged = settlements.flatMap((s) => s.items).reduce((sum, s) => sum + s.amount, 0n);
  const { genesisTime, epochLength } = deployment.emission;
  return {
    seed,
    deployment,
    providers,
    validators: Array.from({ length: validatorCount }, (_, i) => ({
      address: randomAddress(r, `validator/${i}`),
      stake: r.between(`validator-stake/${i}`, 10n * ETHER, 100n * ETHER),
    })),
    routers: (options.routerUrls ?? DEFAULT_ROUTERS).map((url, i) => ({
      id: randomAddress(r, `router/${i}`),
      url,
    })),
    measurements: Array.from(
      { length: measurementCount },
      (_, i) => keccak256(stringToBytes(`${seed}/measurement/${i}`)),
    ),
    settlements,
    consumerDeposit: charged + ETHER,
    finalTime: genesisTime + BigInt(settledEpochs + 1) * epochLength + 120n,
  };
}

function randomAddress(r: Random, label: string): Address {
  return lowerAddress(
    `0x${(r.bits(label) & ((1n << 160n) - 1n)).toString(16).padStart(40, "0")}`,
  );
}

/**
 * Provider `i`: drawn tier, active flag and stake, except the first three, whose roles are
 * fixed (a bonded verified one that later updates its ad, a TEE one that unstakes part, one
 * staked exactly the bond).
 */
function planProvider(
  r: Random,
  i: number,
  plan: { count: number; bond: bigint; endpoint: (index: number) => string },
): PlannedProvider {
  const { bond } = plan;
  const accountKey = r.key(`provider/${i}`);
  const servingKey = r.key(`serving/${i}`);
  const address = lowerAddress(privateKeyToAccount(accountKey).address);
  const servingAddress = lowerAddress(privateKeyToAccount(servingKey).address);
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
    endpoint: plan.endpoint(i),
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
  const revoked = plan.count >= 10 && REVOKED.includes(i);
  return {
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
  };
}

/** Settlements in epochs `0 .. n − 1`, each to a provider drawn among the active ones. */
function planSettlements(
  r: Random,
  providers: readonly PlannedProvider[],
  deployment: DeploymentParams,
  counts: { settledEpochs: number; perEpoch: number },
): NetworkPlan["settlements"] {
  const payable = providers.filter((p) => !p.revoked && p.active);
  const { genesisTime, epochLength } = deployment.emission;
  return Array.from({ length: counts.settledEpochs }, (_, e) => ({
    epoch: BigInt(e),
    time: genesisTime + BigInt(e) * epochLength + 60n,
    items: Array.from({ length: counts.perEpoch }, (_, k) => {
      const pick = payable[Number(r.bits(`settle/${e}/${k}`) % BigInt(payable.length))];
      return {
        provider: pick.address,
        amount: r.between(`settle-amount/${e}/${k}`, 10n ** 15n, 10n ** 17n),
        tokens: r.between(`settle-tokens/${e}/${k}`, 100n, 200_000n),
      };
    }),
  }));
}

function makeAd(
  r: Random,
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
