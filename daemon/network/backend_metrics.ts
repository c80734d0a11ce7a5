/**
 * What the network backend records as it works, and the load it reports: an interface, so the
 * network side knows nothing of how it is rendered (`service/metrics.ts`'s `DaemonMetrics`
 * implements it for `GET /metrics`; tests pass their own).
 *
 * @module
 */

import type { DaemonErrorCode } from "../core/mod.ts";

/** What one provider attempt came to. */
export type AttemptResult = "ok" | "busy" | "failed" | "gateway_error" | "aborted";

/** What one trust check of a provider came to: `ok`, a refusal of trust, or `incomplete`. */
export type VerificationResult = "ok" | "incomplete" | DaemonErrorCode;

/** The daemon's load, as the backend sees it. */
export interface LoadReading {
  /** Requests holding a provider slot. */
  readonly inFlight: number;
  /** Requests waiting for one. */
  readonly queued: number;
}

/** What the network backend records (`network_backend.ts`); every method is cheap. */
export interface BackendMetrics {
  /** One provider attempt: its result, and for `failed` the failure's code. */
  attempted(tier: string, result: AttemptResult, reason?: DaemonErrorCode): void;
  /** One trust check of a provider before anything is sealed to it. */
  verified(tier: string, result: VerificationResult): void;
  /** A chat's first reply chunk, `seconds` after the backend was asked. */
  firstChunk(tier: string, seconds: number): void;
  /** A reply's token counts (its usage chunk). */
  relayed(tier: string, usage: { prompt_tokens?: number; completion_tokens?: number }): void;
}
