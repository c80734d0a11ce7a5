/**
 * Sealing a request to a trusted key and opening the sealed reply: `seal.ts` seals the request
 * with `crypto/ohttp`'s sealed exchange (chunked Oblivious HTTP over HPKE, its setups pooled for
 * keys sealed to again, the reply's head within the daemon's limits), `sealed_reply.ts` opens the
 * reply into chat chunks or one JSON answer, refusing a truncated or tampered one. Uses `core/`
 * and `gateway/`.
 *
 * @module
 */

export { openSealedJson, openSealedReply } from "./sealed_reply.ts";
export { answeredByProvider } from "./_refusal.ts";
export type { ReplyEndCheck, ReplyEnding } from "./sealed_reply.ts";
export { REPLY_HEAD_LIMITS, sealRequest } from "./seal.ts";
export type { RequestToSeal, SealedChat } from "./seal.ts";
