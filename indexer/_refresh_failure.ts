/**
 * Why a refresh failed, as a {@linkcode SnapshotError} with the code `/health` and the 503s
 * give (private to `indexer/`): the RPC failures by what their error says (`chain_unreachable`,
 * `rpc_rate_limited`, `rpc_error`), wrong contracts or data (`chain_error`), anything else
 * (`internal`, logged in full).
 *
 * @module
 */

import { rpcFailureKind } from "../chain/client.ts";
import { ChainConfigError, ChainReadError, ContractCheckError } from "../chain/errors.ts";
import { NetError } from "../errors.ts";
import type { LogSink } from "../io/log.ts";
import { rpcCode } from "./_rpc_codes.ts";
import { SnapshotError } from "./errors.ts";

/** The failure of a refresh that threw `error`; `where` names the chain (`the chain at …`). */
export function classifyRefreshFailure(
  error: unknown,
  where: string,
  log: LogSink,
): SnapshotError {
  if (error instanceof SnapshotError) return error;
  if (error instanceof ContractCheckError) {
    return new SnapshotError("chain_error", error.shortMessage, { cause: error });
  }
  if (
    (error instanceof ChainConfigError && error.reason === "unreachable") ||
    (error instanceof ChainReadError && error.reason === "rpc")
  ) {
    const kind = rpcFailureKind(error);
    const code = rpcCode(kind);
    const what = code === "rpc_rate_limited"
      ? "rate-limits us"
      : code === "rpc_error"
      ? "answered with an error"
      : "is unreachable";
    return new SnapshotError(code, `${where} ${what}: ${error.shortMessage}`, { cause: error });
  }
  if (error instanceof ChainConfigError || error instanceof ChainReadError) {
    return new SnapshotError("chain_error", `Cannot use ${where}: ${error.shortMessage}`, {
      cause: error,
    });
  }
  const text = error instanceof NetError
    ? error.shortMessage
    : error instanceof Error
    ? error.message
    : String(error);
  log("indexer: unexpected refresh failure", { level: "error", error });
  return new SnapshotError("internal", `Cannot take a snapshot: unexpected failure: ${text}`, {
    cause: error,
  });
}
