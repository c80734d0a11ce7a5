/**
 * Whom to trust before anything is sealed: a provider's key, by its serving key's endorsement
 * or by full TEE attestation, checked against the chain's records (`provider_trust.ts`); where
 * those records and the approved measurements come from (`trust_sources.ts`); the bounded log
 * of every verdict (`verdict_log.ts`, served at `GET /v1/verdicts`); and in the TEE tier the
 * check of each reply's receipt (`reply_receipt.ts`) and the receipts kept
 * (`receipt_log.ts`, served at `GET /v1/verdicts/{id}`). Uses `core/` and `gateway/`.
 *
 * @module
 */

export { attestationCode, TrustedKeyCache, trustProvider } from "./provider_trust.ts";
export type {
  ProviderTrustOptions,
  RegistryRecord,
  TeeAttestation,
  TrustedKey,
} from "./provider_trust.ts";
export { RECEIPT_ID, ReceiptLog } from "./receipt_log.ts";
export type { ReceiptLogOptions } from "./receipt_log.ts";
export { receiptCheck } from "./reply_receipt.ts";
export type { ReceiptContext, ReplyEnd } from "./reply_receipt.ts";
export { chainMeasurements, fileMeasurements, registryRecords } from "./trust_sources.ts";
export { VerdictLog, verdictToJson } from "./verdict_log.ts";
export type { VerdictLogOptions, VerdictRecord, VerdictRecordJson } from "./verdict_log.ts";
