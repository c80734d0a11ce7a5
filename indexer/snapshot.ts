/**
 * The snapshot: one consistent view of the network that every endpoint is rendered from —
 * the chain state pinned to one block and the routers' ads verified against it. (The settled
 * volume is not part of it: the settlement history runs beside the snapshot loop,
 * `history.ts`, and the views take its figures when it has caught up with the snapshot.)
 * {@linkcode buildSnapshot} is pure: the refresher does the I/O (`refresher.ts`) and hands
 * the results in.
 *
 * Rules (`docs/indexer.md`):
 *
 * - A provider is **live-verified** when it is bonded and at least one reachable router
 *   serves an entry for it that {@linkcode verifyEntry} accepts. Its capacity and metrics come
 *   from the first such router in Registry order; every router that verified it is listed.
 * - Every other entry is a rejection, counted by reason, overall and per router. A second
 *   accepted entry for the same provider in one router is a `duplicate`.
 * - **Partly reachable routers**: the snapshot lists what the reachable routers verified, and
 *   shows `reachable < total`. When routers are registered and **none** is reachable, there
 *   is no snapshot ({@linkcode SnapshotError} `routers_unreachable`): an empty listing would
 *   be invented. With no router registered at all, the snapshot lists no provider — that is
 *   what the chain says.
 *
 * @example
 * ```ts ignore
 * import { buildSnapshot } from "./snapshot.ts";
 *
 * const snapshot = buildSnapshot({ takenAt, chain, routers });
 * console.log(snapshot.live.length, snapshot.rejections.commitment_mismatch);
 * ```
 *
 * @module
 */

import type { Address } from "viem";
import type { ProviderAd } from "../chain/ad.ts";
import type { NetworkState, ProviderState, RouterRecord } from "../chain/types.ts";
import { type RouterAdsFailure, SnapshotError } from "./errors.ts";
import {
  type AdCache,
  type Capacity,
  type Metrics,
  REJECTION_REASONS,
  type RejectionReason,
  verifyEntry,
} from "./verify_entry.ts";

/** What one router answered: its entries, or why there are none. */
export type RouterAnswer =
  | { readonly router: RouterRecord; readonly entries: readonly unknown[] }
  | {
    readonly router: RouterRecord;
    readonly error: { readonly code: RouterAdsFailure; readonly message: string };
  };

/** A rejected entry, for operators (a few per router are kept). */
export interface RejectionExample {
  /** The provider the entry claims to be (lower case), or `null` when unreadable. */
  provider: string | null;
  /** Why it was rejected. */
  reason: RejectionReason;
  /** What failed, what was found, what was expected. */
  message: string;
}

/** What the snapshot saw of one router. */
export interface RouterReport {
  /** The router's id on chain (lower case). */
  id: Address;
  /** Its URL as stored on chain. */
  url: string;
  /** Whether it answered with a valid envelope. */
  reachable: boolean;
  /** Why not, when it did not. */
  error: { code: RouterAdsFailure; message: string } | null;
  /** Entries it listed. */
  entries: number;
  /** Entries accepted (verified). */
  accepted: number;
  /** Rejected entries by reason (every reason present, zeros included). */
  rejected: Record<RejectionReason, number>;
  /** The first few rejections, with their messages. */
  examples: RejectionExample[];
}

/** A live-verified provider. */
export interface LiveProvider {
  /** Its chain state at the snapshot's block. */
  state: ProviderState;
  /** Its ad, verified against the on-chain commitment. */
  ad: ProviderAd;
  /** Live capacity (from the first router, in Registry order, that verified it). */
  capacity: Capacity;
  /** Live metrics (from the same router). */
  metrics: Metrics;
  /** Ids of the routers that served a verified entry for it, in Registry order. */
  routers: Address[];
}

/** Everything the endpoints are rendered from. */
export interface Snapshot {
  /** When the refresh that took it started (its data is at least this fresh). */
  takenAt: Date;
  /** The chain state, pinned to one block. */
  chain: NetworkState;
  /** What each router answered, in Registry order. */
  routers: RouterReport[];
  /** Live-verified providers, sorted by address. */
  live: LiveProvider[];
  /** Rejected entries by reason over all routers (every reason present). */
  rejections: Record<RejectionReason, number>;
  /** Live-verified providers by lower-case address. */
  liveBy: ReadonlyMap<string, LiveProvider>;
}

/** What {@linkcode buildSnapshot} is built from. */
export interface SnapshotInput {
  /** When the refresh started. */
  takenAt: Date;
  /** The chain state. */
  chain: NetworkState;
  /** One answer per router of `chain.routers`, in the same order. */
  routers: readonly RouterAnswer[];
}

/** Options of {@linkcode buildSnapshot}. */
export interface BuildSnapshotOptions {
  /**
   * Rejections kept with their message, per router.
   *
   * @default {10}
   */
  examplesPerRouter?: number;
  /**
   * Checks of ads already seen (kept between refreshes by the refresher): unchanged ads are
   * not validated and hashed again.
   *
   * @default {undefined} (every ad is checked)
   */
  adCache?: AdCache;
}

function zeroCounts(): Record<RejectionReason, number> {
  return Object.fromEntries(REJECTION_REASONS.map((r) => [r, 0])) as Record<
    RejectionReason,
    number
  >;
}

/**
 * Verifies every router entry against the chain state and assembles the snapshot.
 *
 * @throws {SnapshotError} `routers_unreachable` when routers are registered and none of them
 * answered with a valid envelope.
 */
export function buildSnapshot(input: SnapshotInput, options: BuildSnapshotOptions = {}): Snapshot {
  const keep = options.examplesPerRouter ?? 10;
  const { chain } = input;
  const byAddress = new Map(chain.providers.map((p) => [p.address.toLowerCase(), p]));
  const reachable = input.routers.filter((answer) => "entries" in answer);
  if (input.routers.length > 0 && reachable.length === 0) {
    const reasons = input.routers.map((answer) =>
      "error" in answer ? `${answer.router.url}: ${answer.error.message}` : ""
    );
    throw new SnapshotError(
      "routers_unreachable",
      `No router is reachable: all ${input.routers.length} registered routers failed`,
      { details: reasons.join("; ") },
    );
  }

  const live = new Map<string, LiveProvider>();
  const rejections = zeroCounts();
  const routers: RouterReport[] = input.routers.map((answer) => {
    const report: RouterReport = {
      id: answer.router.id,
      url: answer.router.url,
      reachable: "entries" in answer,
      error: "error" in answer ? { ...answer.error } : null,
      entries: 0,
      accepted: 0,
      rejected: zeroCounts(),
      examples: [],
    };
    if (!("entries" in answer)) return report;
    report.entries = answer.entries.length;
    const seen = new Set<string>();
    const reject = (example: RejectionExample) => {
      report.rejected[example.reason]++;
      rejections[example.reason]++;
      if (report.examples.length < keep) report.examples.push(example);
    };
    for (const entry of answer.entries) {
      const verdict = verifyEntry(entry, byAddress, options.adCache);
      if (!verdict.ok) {
        reject({ provider: verdict.provider, reason: verdict.reason, message: verdict.message });
        continue;
      }
      const address = verdict.provider.address.toLowerCase();
      if (seen.has(address)) {
        reject({
          provider: address,
          reason: "duplicate",
          message: `Cannot accept entry: router ${answer.router.url} lists provider ${address} ` +
            "more than once; the first entry is used",
        });
        continue;
      }
      seen.add(address);
      report.accepted++;
      const known = live.get(address);
      if (known) {
        known.routers.push(answer.router.id);
      } else {
        live.set(address, {
          state: verdict.provider,
          ad: verdict.ad,
          capacity: verdict.capacity,
          metrics: verdict.metrics,
          routers: [answer.router.id],
        });
      }
    }
    return report;
  });

  const sorted = [...live.values()].sort((a, b) =>
    a.state.address < b.state.address ? -1 : a.state.address > b.state.address ? 1 : 0
  );
  return {
    takenAt: input.takenAt,
    chain,
    routers,
    live: sorted,
    rejections,
    liveBy: new Map(sorted.map((p) => [p.state.address.toLowerCase(), p])),
  };
}
