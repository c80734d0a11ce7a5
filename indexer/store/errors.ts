/**
 * `StoreError`: every failure of the settlement-history store, with a machine-readable reason.
 *
 * @module
 */

import { ReasonError } from "../../errors.ts";

/** Why the store could not do what was asked. */
export type StoreFailure =
  /** The data directory cannot be created or used, or the database server cannot be reached. */
  | "unreachable"
  /** Another process holds the data directory (embedded), or the writer lock (PostgreSQL). */
  | "locked"
  /** The store cannot be read, or its contents break the schema's rules. */
  | "corrupt"
  /** The store was written by a newer version of the code (its schema version is higher). */
  | "newer_schema"
  /** The store belongs to another chain, another Escrow or another first block. */
  | "mismatch"
  /** A write was asked of a store that does not hold the writer lock. */
  | "not_writer"
  /** The writer lock was lost (the connection was replaced or the lock released). */
  | "lost_lock"
  /** The cursor moved since the caller read it (another writer, or a stale view). */
  | "conflict"
  /** The caller's input breaks the rules (a chunk's range, hashes or amounts). */
  | "invalid_input"
  /** The store was closed. */
  | "closed"
  /** A statement failed (disk full, an amount over 78 digits, a dropped connection, ...). */
  | "failed";

/**
 * Thrown by every operation of the store. The message says what was found and what was
 * expected; `reason` is for callers that branch (the indexer maps start-up failures to its
 * exit code and shows `lost_lock` and `failed` on `/health`).
 */
export class StoreError extends ReasonError<StoreFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "StoreError" as const;
}
