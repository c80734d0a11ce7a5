/**
 * The errors of the chain module: one {@linkcode ReasonError} per operation, each only its
 * literal `name` over its own union of reasons, for callers that branch.
 *
 * @module
 */

import { ReasonError } from "../errors.ts";

/** Why a chain client could not be created. */
export type ChainConfigFailure =
  /** An option is malformed (the message names it). */
  | "invalid_option"
  /** The RPC endpoint did not answer `eth_chainId` (refused, timed out, not JSON-RPC). */
  | "unreachable"
  /** The endpoint serves another chain than the one configured. */
  | "wrong_chain";

/** Thrown by {@linkcode createChainClient} and by readers given malformed options. */
export class ChainConfigError extends ReasonError<ChainConfigFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ChainConfigError" as const;
}

/** Why a pinned read failed. */
export type ChainReadFailure =
  /** The RPC request failed (transport error, timeout, RPC error). */
  | "rpc"
  /** The requested block does not exist or is no longer canonical. */
  | "block_not_found"
  /** A contract call reverted or returned nothing (wrong address?). */
  | "call_failed"
  /** The contracts returned data that breaks their documented invariants. */
  | "invalid_data";

/**
 * Thrown by the pinned reads: {@linkcode readNetworkState}, {@linkcode readProvider},
 * {@linkcode readApprovedMeasurements}.
 */
export class ChainReadError extends ReasonError<ChainReadFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ChainReadError" as const;
}

/** Why a settlement scan failed. */
export type SettlementScanFailure =
  /** An option is malformed (the message names it). */
  | "invalid_option"
  /** The saved cursor is malformed or belongs to another escrow. */
  | "bad_cursor"
  /** The block the cursor ends at is no longer canonical: a reorg deeper than the depth. */
  | "reorg"
  /** The RPC request failed for a reason other than a range limit. */
  | "rpc"
  /** The endpoint refuses even a one-block range. */
  | "range_limit"
  /** A log does not decode as the Escrow's `Settled` event. */
  | "invalid_log";

/** Thrown by {@linkcode scanSettlements}. */
export class SettlementScanError extends ReasonError<SettlementScanFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SettlementScanError" as const;
}
