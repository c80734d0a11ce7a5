/**
 * The expected truth of a seeded network: {@linkcode expectedNetwork} computes what the chain
 * holds after `seedNetwork` sent a plan — from the plan alone, never from a chain read — so
 * tests can compare reads against it.
 *
 * @module
 */

import {
  adCommitment,
  bucketSettlements,
  type EmissionState,
  isBonded,
  type NetworkState,
  type ProviderState,
  type SettlementBucket,
} from "../chain/mod.ts";
import type { NetworkPlan, PlannedProvider } from "./plan.ts";

/** What the chain holds after `seedNetwork`, computed from the plan alone. */
export interface ExpectedNetwork {
  /** `readNetworkState` at the last seeded block must equal this (plus its `block`). */
  state: Omit<NetworkState, "block">;
  /** `scanSettlements` over the whole history must return these buckets. */
  settlements: SettlementBucket[];
  /** Timestamp of the last seeded block. */
  blockTimestamp: bigint;
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

/** What `seedNetwork` leaves on chain, computed from the plan alone. */
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

  return {
    state: {
      providers,
      validators: plan.validators.map((v) => v.address),
      routers: plan.routers,
      approvedMeasurements: plan.measurements,
      emission: expectedEmission(plan),
      staking: { totalStaked, minProviderBond: bond },
    },
    settlements: expectedSettlements(plan),
    blockTimestamp: plan.finalTime,
  };
}

/** Emission after the seed: every finished epoch emitted, by the halving schedule, capped. */
function expectedEmission(plan: NetworkPlan): EmissionState {
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
  return {
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
}

/**
 * The settlements of the plan summed per provider and epoch (the one bucketing, over what the
 * plan sent rather than what the chain logged).
 */
function expectedSettlements(plan: NetworkPlan): SettlementBucket[] {
  return bucketSettlements(
    plan.settlements.flatMap(({ epoch, items }) => items.map((item) => ({ ...item, epoch }))),
  );
}
