/**
 * The indexer's current state: what the request handler reads. The refresher replaces it as
 * a whole after every refresh (and whenever the settlement history moves), so a handler never
 * sees half of one refresh and half of another.
 *
 * @module
 */

import type { SnapshotFailure } from "./errors.ts";
import { type HistoryRescan, type HistoryState, initialHistoryState } from "./history.ts";
import type { Snapshot } from "./snapshot.ts";

/** A refresh failure, as `/health` and the 503 answers report it. */
export interface RefreshFailure {
  /** What was unreachable or wrong. */
  code: SnapshotFailure;
  /** What failed, what was found, what was expected (RPC URLs reduced to their origin). */
  message: string;
  /** When the failing refresh started. */
  at: Date;
}

/** A rescan of the settlement history from the start block (a reorg deeper than the depth). */
export type Rescan = HistoryRescan;

/** What the handler serves from. */
export interface IndexerState {
  /**
   * The snapshot of the last successful refresh, `null` before the first one. A failed refresh
   * keeps it: it is served while it is within its freshness bound (`staleAfterSecs`), never
   * after.
   */
  snapshot: Snapshot | null;
  /** When the last successful snapshot was taken, even when it is no longer served. */
  lastSnapshotAt: Date | null;
  /** When the last refresh (successful or not) started. */
  lastAttemptAt: Date | null;
  /** The most recent refresh failure, kept after later successes (see `at`). */
  lastError: RefreshFailure | null;
  /** Whether the last refresh failed (`lastError` says why; `snapshot` is the previous one). */
  failing: boolean;
  /** When the next refresh is due, when the loop runs. */
  nextRefreshAt: Date | null;
  /** Whether a refresh is running now. */
  refreshing: boolean;
  /** The refresh interval, seconds. */
  refreshSecs: number;
  /** Snapshots older than this many seconds are refused. */
  staleAfterSecs: number;
  /**
   * The settlement history beside the snapshots: its store, its role, how far it is, its
   * failures and rescans, and the figures last read.
   */
  history: HistoryState;
}

/** The state before the first refresh. */
export function initialState(refreshSecs: number, staleAfterSecs: number): IndexerState {
  return {
    snapshot: null,
    lastSnapshotAt: null,
    lastAttemptAt: null,
    lastError: null,
    failing: false,
    nextRefreshAt: null,
    refreshing: false,
    refreshSecs,
    staleAfterSecs,
    history: initialHistoryState(),
  };
}
