/**
 * The errors of the indexer: one subclass of {@linkcode NetError} per operation, each with a
 * literal `name` and a `reason` (or `setting`) for callers that branch. `http_error.ts` turns
 * them into HTTP answers in one place.
 *
 * @module
 */

import { NetError, type NetErrorOptions } from "../errors.ts";

/** Thrown by {@linkcode parseIndexerConfig} for a bad flag or environment value. */
export class IndexerConfigError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "IndexerConfigError" as const;
  /** The flag or variable at fault, e.g. `--refresh-secs` or `NET_EVM_REGISTRY`. */
  readonly setting: string;

  /** Creates the error for `setting`. */
  constructor(setting: string, shortMessage: string, options: NetErrorOptions = {}) {
    super(shortMessage, { hints: ["Run with --help to see every option."], ...options });
    this.setting = setting;
  }
}

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

/** Thrown by {@linkcode fetchRouterAds}. */
export class RouterAdsError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "RouterAdsError" as const;
  /** Machine-readable reason. */
  readonly reason: RouterAdsFailure;

  /** Creates the error with its reason. */
  constructor(reason: RouterAdsFailure, shortMessage: string, options: NetErrorOptions = {}) {
    super(shortMessage, options);
    this.reason = reason;
  }
}

/** Why a snapshot could not be taken. */
export type SnapshotFailure =
  /** The RPC endpoint did not answer (refused, timed out, transport error). */
  | "chain_unreachable"
  /** The endpoint answered, but the reads failed (wrong chain, reverted call, bad data). */
  | "chain_error"
  /** Routers are registered on chain, and none of them gave a usable answer. */
  | "routers_unreachable"
  /** The refresh was stopped before it finished. */
  | "aborted"
  /** An unexpected failure (a bug); logged in full. */
  | "internal";

/**
 * Why a refresh failed. {@linkcode buildSnapshot} throws it; the refresher records it in the
 * state (`lastError`), from which the handler answers 503.
 */
export class SnapshotError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SnapshotError" as const;
  /** Machine-readable reason. */
  readonly reason: SnapshotFailure;

  /** Creates the error with its reason. */
  constructor(reason: SnapshotFailure, shortMessage: string, options: NetErrorOptions = {}) {
    super(shortMessage, options);
    this.reason = reason;
  }
}

/** Why the indexer refused a request. */
export type IndexerRequestFailure =
  /** No such path. */
  | "not_found"
  /** The path exists, the method does not (only GET, HEAD and OPTIONS do). */
  | "method_not_allowed"
  /** No snapshot has been taken yet (start-up). */
  | "no_snapshot"
  /** The last refresh failed: the chain or all routers are unreachable, or the chain's data is bad. */
  | "unavailable"
  /** The last snapshot is older than its freshness bound (the refresh loop is stuck). */
  | "stale";

/** Thrown by the indexer's request handler; `http_error.ts` renders it. */
export class IndexerRequestError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "IndexerRequestError" as const;
  /** Machine-readable reason. */
  readonly reason: IndexerRequestFailure;
  /**
   * The error code shown to the client: the reason, or for `unavailable` the snapshot
   * failure (`chain_unreachable`, `routers_unreachable`, ...).
   */
  readonly code: string;
  /** Seconds after which a retry may succeed (`Retry-After`), for the 503 reasons. */
  readonly retryAfterSecs: number | undefined;

  /** Creates the error. */
  constructor(
    reason: IndexerRequestFailure,
    shortMessage: string,
    options: NetErrorOptions & { code?: string; retryAfterSecs?: number } = {},
  ) {
    super(shortMessage, options);
    this.reason = reason;
    this.code = options.code ?? reason;
    this.retryAfterSecs = options.retryAfterSecs;
  }
}
