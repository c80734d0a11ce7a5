/**
 * The errors of the indexer, one per operation, each a {@linkcode ReasonError} over its own
 * union of reasons with a literal `name`. A bad flag or variable is the settings module's
 * `SettingError`; `http_error.ts` turns everything into HTTP answers in one place.
 *
 * @module
 */

import { type NetErrorOptions, ReasonError } from "../errors.ts";

/** Why a router's `GET /v1/ads` could not be used. */
export type RouterAdsFailure =
  /** The router URL stored on chain is not an absolute http(s) URL without credentials. */
  | "invalid_url"
  /** The connection failed (refused, reset, DNS). */
  | "unreachable"
  /** No complete answer within the timeout. */
  | "timeout"
  /** The fetch was cancelled (the refresh was stopped). */
  | "aborted"
  /** The router answered with a non-2xx status. */
  | "status"
  /** The body is larger than the limit (8 MiB by default). */
  | "too_large"
  /** The body is not JSON. */
  | "invalid_json"
  /** The JSON is not the envelope of `docs/protocol.md` §2 (`{"ads": [...]}`, ≤ 10,000). */
  | "invalid_envelope";

/** Thrown by `fetchRouterAds` (`router_ads.ts`). */
export class RouterAdsError extends ReasonError<RouterAdsFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "RouterAdsError" as const;
}

/** Why a snapshot could not be taken. */
export type SnapshotFailure =
  /** No RPC endpoint answered (refused, timed out, a gateway error). */
  | "chain_unreachable"
  /** Every RPC endpoint rate-limits us (HTTP 429 or a rate-limit answer). */
  | "rpc_rate_limited"
  /** The RPC endpoint answered the reads with an error (not a revert, not bad data). */
  | "rpc_error"
  /** The endpoint answered, but the reads failed (wrong chain, reverted call, bad data). */
  | "chain_error"
  /** Routers are registered on chain, and none of them gave a usable answer. */
  | "routers_unreachable"
  /** The refresh was stopped before it finished. */
  | "aborted"
  /** An unexpected failure (a bug); logged in full. */
  | "internal";

/**
 * Why a refresh failed. `buildSnapshot` throws it; the refresher records it in the state
 * (`lastError`), from which the handler answers 503.
 */
export class SnapshotError extends ReasonError<SnapshotFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SnapshotError" as const;
}

/**
 * Why the indexer cannot answer a data path now (a 503 with `Retry-After`). Unknown paths and
 * methods are the HTTP layer's `HttpRequestError`.
 */
export type IndexerRequestFailure =
  /** No snapshot has been taken yet (start-up). */
  | "no_snapshot"
  /** The last refresh failed: the chain or all routers are unreachable, or the chain's data is bad. */
  | "unavailable"
  /** The last snapshot is older than its freshness bound (the refresh loop is stuck). */
  | "stale"
  /** `/providers/{address}`: neither the Registry nor the settlement history knows it (404). */
  | "unknown_provider"
  /** `/events`: as many change streams are open as the indexer serves (503). */
  | "too_many_streams";

/** Options of {@linkcode IndexerRequestError}. */
export interface IndexerRequestErrorOptions extends NetErrorOptions {
  /** The code shown to the client. @default {the reason} */
  code?: string;
  /** Seconds after which a retry may succeed (`Retry-After`; 503 answers only). */
  retryAfterSecs: number;
}

/** Thrown by the indexer's request handler when it cannot serve; `http_error.ts` renders it. */
export class IndexerRequestError extends ReasonError<IndexerRequestFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "IndexerRequestError" as const;
  /**
   * The error code shown to the client: the reason, or for `unavailable` the snapshot
   * failure (`chain_unreachable`, `routers_unreachable`, ...).
   */
  readonly code: string;
  /** Seconds after which a retry may succeed (`Retry-After`). */
  readonly retryAfterSecs: number;

  /** Creates the error; the code and `Retry-After` are what the client sees. */
  constructor(
    reason: IndexerRequestFailure,
    shortMessage: string,
    options: IndexerRequestErrorOptions,
  ) {
    super(reason, shortMessage, options);
    this.code = options.code ?? reason;
    this.retryAfterSecs = options.retryAfterSecs;
  }
}
