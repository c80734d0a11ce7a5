/**
 * Whom to trust before anything is sealed: a provider's key, by its serving key's endorsement
 * or by full TEE attestation, checked against the chain's records (`provider_trust.ts`); where
 * those records and the approved measurements come from (`trust_sources.ts`); and the bounded log
 * of every verdict (`verdict_log.ts`, served at `GET /v1/verdicts`). Uses `core/` and
 * `gateway/`.
 *
 * @module
 */

export { TrustedKeyCache, trustProvider } from "./provider_trust.ts";
export type { ProviderTrustOptions, RegistryRecord } from "./provider_trust.ts";
export { chainMeasurements, fileMeasurements, registryRecords } from "./trust_sources.ts";
export { VerdictLog, verdictToJson } from "./verdict_log.ts";
export type { VerdictLogOptions, VerdictRecord, VerdictRecordJson } from "./verdict_log.ts";
