/**
 * The errors of Oblivious HTTP encapsulation, shared by the one-shot (`one_shot.ts`) and the
 * chunked (`chunked.ts`) forms: {@linkcode SealError} when a message cannot be sealed,
 * {@linkcode OpenError} when a sealed message cannot be opened. An `OpenError` never carries
 * plaintext, and a chunk that fails authentication never yields any.
 *
 * @example Tell a truncated response from a forged one
 * ```ts
 * import { OpenError } from "@net/consumer/ohttp";
 *
 * function describe(error: unknown): string {
 *   if (error instanceof OpenError && error.reason === "truncated") return "cut short";
 *   if (error instanceof OpenError && error.reason === "authentication") return "tampered";
 *   return "other";
 * }
 * console.assert(describe(new OpenError("truncated", "Cannot open response: cut")) === "cut short");
 * ```
 *
 * @module
 */

import { ReasonError } from "../../errors.ts";

/** Why a message could not be sealed. */
export type SealFailure =
  /** The key configuration offers no suite this side supports, or not the one asked for. */
  | "unsupported_suite"
  /** The key configuration is malformed. */
  | "invalid_key_config"
  /** A single-use sealing context was used a second time. */
  | "already_used"
  /** The input is not bytes, or a limit is out of range. */
  | "invalid_input"
  /** The random source or the HPKE library failed. */
  | "crypto";

/** Thrown (or used to error a stream) when a request or response cannot be sealed. */
export class SealError extends ReasonError<SealFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SealError" as const;
}

/** Why a sealed message could not be opened. */
export type OpenFailure =
  /** The framing is broken: bad header, bad length prefix, garbage. */
  | "malformed"
  /** The request names a key id the gateway does not hold. */
  | "unknown_key"
  /** The request names a KEM, KDF or AEAD the key does not offer. */
  | "unsupported_suite"
  /** A chunk (or the whole message) failed AEAD authentication: tampered, reordered, wrong key. */
  | "authentication"
  /** The stream ended before a valid final chunk (or before the header or nonce). */
  | "truncated"
  /** A non-final chunk carried no data. */
  | "empty_chunk"
  /** A sealed chunk is longer than `maxChunkLength`. */
  | "chunk_too_large"
  /** A single-use opening context was used a second time. */
  | "already_used";

/** Thrown (or used to error a stream) when a sealed request or response cannot be opened. */
export class OpenError extends ReasonError<OpenFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "OpenError" as const;
}
