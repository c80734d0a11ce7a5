/**
 * The error of Binary HTTP encoding and decoding, with its reasons.
 *
 * @module
 */

import { ReasonError } from "../../errors.ts";

/** Why a binary HTTP message was refused. */
export type BinaryHttpFailure =
  /** Broken framing: unknown indicator, lengths that disagree, non-zero padding. */
  | "malformed"
  /** The input ends where the message cannot end. */
  | "truncated"
  /** A field, section or count is above its limit. */
  | "too_large"
  /** A field name or value breaks the HTTP/2 rules, or is connection-specific. */
  | "invalid_field"
  /** A status outside 100–599, or a 1xx where a final status belongs. */
  | "invalid_status"
  /** A method, scheme, authority or path with characters it may not contain. */
  | "invalid_control_data"
  /** The message is of the other kind (a request where a response was expected, or back). */
  | "wrong_kind"
  /** The reader cancelled the body before the end. */
  | "cancelled";

/** Thrown when a binary HTTP message cannot be encoded or decoded. */
export class BinaryHttpError extends ReasonError<BinaryHttpFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "BinaryHttpError" as const;
}
