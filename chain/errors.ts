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
  /** The endpoint refuses (or cannot answer) even a one-block range. */
  | "range_limit"
  /** The endpoint keeps rate-limiting even a one-block range. */
  | "rate_limited"
  /** A log does not decode as the Escrow's `Settled` event. */
  | "invalid_log";

/** Thrown by {@linkcode scanSettlements}. */
export class SettlementScanError extends ReasonError<SettlementScanFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SettlementScanError" as const;
}

/** Why the network's contracts were refused (see `checkNetworkContracts`). */
export type ContractCheckFailure =
  /** An address has no code: an account, not a contract. */
  | "no_code"
  /** An address does not answer the interface of the contract it was given for. */
  | "wrong_interface"
  /** The contracts name other contracts than the addresses given (not one network). */
  | "mismatch";

/** One refused address of a {@linkcode ContractCheckError}. */
export interface ContractCheckProblem {
  /** The role it was given for: `registry`, `staking`, `emission` or `escrow`. */
  readonly role: "registry" | "staking" | "emission" | "escrow";
  /** The address, lower case. */
  readonly address: `0x${string}`;
  /** What is wrong: the reasons above. */
  readonly kind: ContractCheckFailure;
  /** One sentence naming the address and what it answered. */
  readonly message: string;
}

/** Thrown by `checkNetworkContracts`: the addresses are not one network's contracts. */
export class ContractCheckError extends ReasonError<ContractCheckFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "ContractCheckError" as const;
  /** Every problem found, the first one in the message. */
  readonly problems: readonly ContractCheckProblem[];

  /** Creates the error with every problem found. */
  constructor(
    reason: ContractCheckFailure,
    shortMessage: string,
    options: {
      problems: readonly ContractCheckProblem[];
      details?: string;
      hints?: readonly string[];
      cause?: unknown;
    },
  ) {
    super(reason, shortMessage, options);
    this.problems = options.problems;
  }
}

/** Why a voucher was refused (see `chain/voucher.ts`). */
export type VoucherFailure =
  /** A field is missing, of the wrong shape or out of range (the message names it). */
  | "malformed"
  /** The signature is not a valid one, or not by the voucher's consumer. */
  | "bad_signature";

/** Thrown by the voucher functions of `chain/voucher.ts`. */
export class VoucherError extends ReasonError<VoucherFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "VoucherError" as const;
}
