/**
 * The settlement history's state as `/health` and the views read it (`history.ts` keeps it and
 * exports these types): replaced as a whole whenever something changes.
 *
 * @module
 */

import type { HistoryFigures } from "./_history_data.ts";
import type { BlockHash } from "./store/mod.ts";

/** A failure of the history loop, as `/health` shows it. */
export interface HistoryFailure {
  /**
   * `store_unavailable`, `store_error`, `chain_unreachable`, `rpc_rate_limited`,
   * `rpc_range_limited`, `rpc_error`, `chain_error`, `internal`.
   */
  code: string;
  /** What failed, what was found, what was expected. */
  message: string;
  /** When. */
  at: Date;
}

/** A rescan of the whole history (after a reorg deeper than the confirmation depth). */
export interface HistoryRescan {
  /** When. */
  at: Date;
  /** Why. */
  reason: string;
}

/** The history's state: replaced as a whole whenever something changes. */
export interface HistoryState {
  /** The confirmation depth (configuration). */
  confirmations: number;
  /** The first block of the scan (configuration). */
  scanFromBlock: bigint;
  /** The store, once open: its backend and where it is (a URL without its password). */
  store: { backend: "embedded" | "postgres"; location: string } | null;
  /** `writer` (scans and commits), `reader` (another process writes), or `null` (not open). */
  role: "writer" | "reader" | null;
  /** The last block whose settlements are counted (the store's confirmed block), or `null`. */
  confirmed: BlockHash | null;
  /** The last block scanned, unconfirmed window included, or `null`. */
  lastBlock: BlockHash | null;
  /** The chain head the history last measured, or `null`. */
  headBlock: bigint | null;
  /** The block the scan waits at because no endpoint answer for it could be read, or `null`. */
  unreadable: { block: bigint; message: string; since: Date } | null;
  /** Whether the last pass failed (then {@linkcode lastError} says why). */
  failing: boolean;
  /** The most recent failure, kept after later successes, or `null`. */
  lastError: HistoryFailure | null;
  /** Stopped for good: the store cannot be used by this process (its message), or `null`. */
  stopped: string | null;
  /** Rescans from the first block since start. */
  rescans: { count: number; last: HistoryRescan | null };
  /** The figures last read, or `null` before the first read. */
  figures: HistoryFigures | null;
}

/** The initial state. */
export function initialHistoryState(confirmations = 12, scanFromBlock = 0n): HistoryState {
  return {
    confirmations,
    scanFromBlock,
    store: null,
    role: null,
    confirmed: null,
    lastBlock: null,
    headBlock: null,
    unreadable: null,
    failing: false,
    lastError: null,
    stopped: null,
    rescans: { count: 0, last: null },
    figures: null,
  };
}
