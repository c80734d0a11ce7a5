/**
 * What a failure of the settlement history's pass is called on `/health` (private to
 * `indexer/`): its code (`store_unavailable`, `rpc_range_limited`, `chain_unreachable`, …) and
 * its message, the RPC URLs in it redacted.
 *
 * @module
 */

import { rpcFailureKind } from "../chain/client.ts";
import { ChainConfigError, ChainReadError, SettlementScanError } from "../chain/errors.ts";
import { BaseError } from "viem";
import { NetError } from "../errors.ts";
import type { LogSink } from "../io/log.ts";
import { SnapshotError } from "./errors.ts";
import type { HistoryFailure } from "./history_state.ts";
import { rpcCode } from "./_rpc_codes.ts";
import { StoreError } from "./store/mod.ts";

/** What {@linkcode classifyFailure} needs: when, how to redact, where unexpected errors go. */
export interface ClassifyOptions {
  /** When the failure happened. */
  at: Date;
  /** Removes secrets (API keys in RPC URLs) from a message. */
  redact: (message: string) => string;
  /** Receives an unexpected error (code `internal`), with its stack. */
  log: LogSink;
}

/** The failure as `/health` shows it. */
export function classifyFailure(error: unknown, options: ClassifyOptions): HistoryFailure {
  const { at, redact } = options;
  const text = error instanceof NetError
    ? error.shortMessage
    : error instanceof Error
    ? error.message.split("\n")[0]
    : String(error);
  let code: string;
  if (error instanceof StoreError) {
    code = error.reason === "unreachable" || error.reason === "failed"
      ? "store_unavailable"
      : "store_error";
  } else if (error instanceof SettlementScanError && error.reason === "range_limit") {
    code = "rpc_range_limited";
  } else if (error instanceof SettlementScanError && error.reason === "rate_limited") {
    code = "rpc_rate_limited";
  } else if (
    (error instanceof ChainConfigError && error.reason === "unreachable") ||
    ((error instanceof ChainReadError || error instanceof SettlementScanError) &&
      error.reason === "rpc") ||
    (error instanceof BaseError)
  ) {
    code = rpcCode(rpcFailureKind(error));
  } else if (
    error instanceof ChainConfigError || error instanceof ChainReadError ||
    error instanceof SettlementScanError || error instanceof SnapshotError
  ) {
    code = "chain_error";
  } else {
    options.log("indexer: unexpected settlement history failure", { level: "error", error });
    code = "internal";
  }
  return { code, message: redact(text), at };
}
