/**
 * Sealing a request to a trusted key and opening the sealed reply: `sealer.ts` seals the request
 * (chunked Oblivious HTTP over HPKE, `crypto/ohttp`), `sealed_reply.ts` opens the reply into
 * chat chunks or one JSON answer, refusing a truncated or tampered one. Uses `core/` and
 * `gateway/`.
 *
 * @module
 */

export { openSealedJson, openSealedReply } from "./sealed_reply.ts";
export { answeredByProvider } from "./_refusal.ts";
export type { ReplyEndCheck, ReplyEnding } from "./sealed_reply.ts";
export { RequestSealer } from "./sealer.ts";
export type { SealedChat } from "./sealer.ts";
