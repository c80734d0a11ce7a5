/**
 * The codes `/health` and the 503s give an RPC failure (private to `indexer/`), from the kind
 * `rpcFailureKind` reads in the error.
 *
 * @module
 */

import type { LogsRefusalKind } from "../chain/client.ts";

/** The failure code of an RPC failure of kind `kind`. */
export function rpcCode(
  kind: LogsRefusalKind,
): "chain_unreachable" | "rpc_rate_limited" | "rpc_error" {
  return kind === "rate"
    ? "rpc_rate_limited"
    : kind === "unreachable"
    ? "chain_unreachable"
    : "rpc_error";
}
