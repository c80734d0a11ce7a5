/**
 * The network side: the real `ChatBackend` (`network_backend.ts`). Per request it takes
 * the candidates (`candidate_cache.ts`), picks a provider with a free slot or waits
 * (`scheduler.ts`, `queue.ts`, with this daemon's own record of providers in
 * `provider_reputation.ts`), trusts its key (`trust/`), seals and relays the request and opens the
 * reply (`exchanges.ts` with `sealing/` and `gateway/`), and moves on when an attempt fails
 * (`_failover.ts`). What it records goes through {@linkcode BackendMetrics}. Uses `core/`,
 * `gateway/`, `trust/` and `sealing/`.
 *
 * @module
 */

export type {
  AttemptResult,
  BackendMetrics,
  LoadReading,
  VerificationResult,
} from "./backend_metrics.ts";
export { NetworkBackend } from "./network_backend.ts";
export type { BackendLoad, NetworkBackendOptions } from "./network_backend.ts";
export { ProviderReputation } from "./provider_reputation.ts";
export type { ProviderReputationOptions } from "./provider_reputation.ts";
export { DEFAULT_MAX_QUEUE, DEFAULT_QUEUE_TIMEOUT_MS } from "./queue.ts";
