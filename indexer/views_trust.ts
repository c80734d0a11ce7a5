/**
 * What `/providers/{address}` says of a provider's trust, beside its Registry record and its
 * settled volume: the state of its ad commitment (verified against a live ad, rejected with a
 * reason, or not seen), and for the TEE tier what the indexer verified of its evidence
 * (`tee_evidence.ts`) and how old that is. A pure function of the snapshot, the last TEE check
 * and the clock.
 *
 * @module
 */

import type { z } from "zod";
import type { ProviderTrustSchema } from "./_schemas.ts";
import type { Snapshot } from "./snapshot.ts";
import type { TeeEvidence } from "./tee_evidence.ts";

/** The trust fields of `/providers/{address}`. */
export type ProviderTrustView = z.infer<typeof ProviderTrustSchema>;

/** The trust of `address` (lower case) at `now`. */
export function providerTrustView(
  snapshot: Snapshot,
  address: string,
  tee: TeeEvidence | undefined,
  now: Date,
): ProviderTrustView {
  const record = snapshot.chain.providers.find((p) => p.address.toLowerCase() === address);
  const live = snapshot.liveBy.get(address);
  let rejection: { reason: string; message: string } | undefined;
  for (const router of snapshot.routers) {
    const example = router.examples.find((e) => e.provider === address);
    if (example) {
      rejection = example;
      break;
    }
  }
  const verification: ProviderTrustView["verification"] = live
    ? { ad_commitment: "verified", reason: null, message: null, routers: live.routers.length }
    : rejection
    ? {
      ad_commitment: "rejected",
      reason: rejection.reason as ProviderTrustView["verification"]["reason"],
      message: rejection.message,
      routers: 0,
    }
    : { ad_commitment: "not_seen", reason: null, message: null, routers: 0 };
  const tier = record?.tier ?? live?.state.tier;
  return {
    verification,
    tee: tier !== "tee" ? null : {
      evidence: tee
        ? {
          status: tee.status,
          checked_at: tee.checkedAt.toISOString(),
          age_secs: Math.max(0, Math.floor((now.getTime() - tee.checkedAt.getTime()) / 1000)),
          format: tee.format,
          measurement: tee.measurementId,
          tcb_status: tee.tcbStatus,
          expires_at: tee.expiresAt ? tee.expiresAt.toISOString() : null,
          message: tee.message,
        }
        : null,
      approved_measurements: snapshot.chain.approvedMeasurements.length,
      gpu: tee?.status === "verified" && tee.gpus
        ? {
          count: tee.gpus.length,
          measurements: tee.gpus.map((g) => g.measurementId),
          drivers: tee.gpus.map((g) => g.driverVersion),
        }
        : null,
    },
  };
}
