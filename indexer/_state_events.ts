/**
 * The events of one state change (private to `indexer/`): what differs between the state
 * before and after, as the change stream (`events.ts`) publishes it. Pure: the refresher calls
 * it on every replacement of the state.
 *
 * @module
 */

import type { IndexerEventType } from "./events.ts";
import type { Snapshot } from "./snapshot.ts";
import type { IndexerState } from "./state.ts";

/** One event to publish. */
export interface StateEvent {
  /** What changed. */
  type: IndexerEventType;
  /** Its data. */
  data: Record<string, unknown>;
}

function rejectionsOf(snapshot: Snapshot): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const router of snapshot.routers) {
    for (const example of router.examples) {
      if (example.provider === null) continue;
      out.set(`${router.id}:${example.provider}:${example.reason}`, {
        provider: example.provider,
        router: router.id,
        reason: example.reason,
        message: example.message,
      });
    }
  }
  return out;
}

/** Why a provider is no longer live-verified, from the new snapshot. */
function leftBecause(snapshot: Snapshot, address: string): string {
  const record = snapshot.chain.providers.find((p) => p.address.toLowerCase() === address);
  if (!record) return "unknown_provider";
  if (!record.bonded) return "not_bonded";
  for (const router of snapshot.routers) {
    const example = router.examples.find((e) => e.provider === address);
    if (example) return example.reason;
  }
  return "not_served";
}

/** What changed between two snapshots. */
function snapshotEvents(before: Snapshot | null, after: Snapshot): StateEvent[] {
  const events: StateEvent[] = [{
    type: "snapshot",
    data: {
      block_number: String(after.chain.block.number),
      block_hash: after.chain.block.hash.toLowerCase(),
      taken_at: after.takenAt.toISOString(),
      live_verified: after.live.length,
      bonded: after.chain.providers.filter((p) => p.bonded).length,
      routers_reachable: after.routers.filter((r) => r.reachable).length,
    },
  }];
  if (!before) return events;
  for (const [address, live] of after.liveBy) {
    if (!before.liveBy.has(address)) {
      events.push({
        type: "provider_joined",
        data: { provider: address, tier: live.state.tier, models: live.ad.models.length },
      });
    }
  }
  for (const address of before.liveBy.keys()) {
    if (!after.liveBy.has(address)) {
      events.push({
        type: "provider_left",
        data: { provider: address, reason: leftBecause(after, address) },
      });
    }
  }
  const seen = rejectionsOf(before);
  for (const [key, rejection] of rejectionsOf(after)) {
    if (!seen.has(key)) events.push({ type: "provider_rejected", data: rejection });
  }
  const from = before.chain.emission.currentEpoch;
  const to = after.chain.emission.currentEpoch;
  if (to > from) {
    events.push({ type: "epoch_closed", data: { epoch: String(from), next_epoch: String(to) } });
  }
  return events;
}

/** Every event of the change from `before` to `after` (none when nothing a client sees moved). */
export function stateEvents(before: IndexerState, after: IndexerState): StateEvent[] {
  const events: StateEvent[] = [];
  if (after.snapshot && after.snapshot !== before.snapshot) {
    events.push(...snapshotEvents(before.snapshot, after.snapshot));
  }
  const code = after.lastError?.code ?? null;
  if (
    before.failing !== after.failing ||
    (after.failing && before.lastError?.code !== code)
  ) {
    events.push({
      type: "health",
      data: {
        failing: after.failing,
        code: after.failing ? code : null,
        message: after.failing ? after.lastError?.message ?? null : null,
      },
    });
  }
  const was = before.history;
  const now = after.history;
  const confirmed = now.confirmed?.number ?? null;
  if (
    confirmed !== (was.confirmed?.number ?? null) || now.failing !== was.failing ||
    (now.figures !== was.figures && now.figures !== null)
  ) {
    events.push({
      type: "settlements",
      data: {
        confirmed_block: confirmed === null ? null : String(confirmed),
        failing: now.failing,
        code: now.failing ? now.lastError?.code ?? null : null,
        settlements: now.figures?.total.settlements ?? null,
      },
    });
  }
  return events;
}
