/**
 * The daemon's record of the attestation nonces it issued: each nonce is 32 random bytes,
 * accepted once, and only within a short window after it was issued (default 60 s). A nonce
 * that was never issued, was already used or is too old is refused.
 *
 * @example
 * ```ts
 * import { NonceBook } from "@net/consumer/tee";
 *
 * const book = new NonceBook();
 * const now = new Date();
 * const nonce = book.issue(now);
 * console.assert(book.consume(nonce, now) === "ok");
 * console.assert(book.consume(nonce, now) === "reused");
 * ```
 *
 * @module
 */

import { checkNow, checkPositiveSeconds } from "../_time.ts";
import { toHex } from "../_bytes.ts";
import { ATTESTATION_NONCE_LENGTH } from "./report_data.ts";

/** Default window after issue in which a nonce is accepted, in seconds. */
export const DEFAULT_NONCE_MAX_AGE_SECONDS = 60;
/** Default number of outstanding nonces kept. */
export const DEFAULT_NONCE_CAPACITY = 4096;

/** Options of {@linkcode NonceBook}. */
export interface NonceBookOptions {
  /**
   * How long after issue a nonce is accepted, in seconds: a positive integer (`NaN`,
   * `Infinity`, fractions, zero and negatives are a `RangeError`).
   *
   * @default {60}
   */
  maxAgeSeconds?: number;
  /**
   * How many issued nonces are remembered; beyond it the oldest are forgotten (and would then
   * be refused as unknown).
   *
   * @default {4096}
   */
  capacity?: number;
  /**
   * Source of random bytes.
   *
   * @default {crypto.getRandomValues}
   */
  random?: (length: number) => Uint8Array;
}

/**
 * The outcome of {@linkcode NonceBook.consume}: `ok`, or why the nonce is refused (`unknown`:
 * never issued or forgotten; `reused`: already consumed; `expired`: older than the window).
 */
export type NonceOutcome = "ok" | "unknown" | "reused" | "expired";

interface Entry {
  issuedAt: number;
  used: boolean;
}

/** Issues attestation nonces and enforces single use and maximum age. */
export class NonceBook {
  readonly #maxAgeMs: number;
  readonly #capacity: number;
  readonly #random: (length: number) => Uint8Array;
  readonly #entries = new Map<string, Entry>();

  /**
   * Creates an empty book.
   *
   * @throws {RangeError} when an option is out of range.
   */
  constructor(options: NonceBookOptions = {}) {
    const maxAge = checkPositiveSeconds(
      options.maxAgeSeconds ?? DEFAULT_NONCE_MAX_AGE_SECONDS,
      "maxAgeSeconds",
      "NonceBook",
    );
    const capacity = options.capacity ?? DEFAULT_NONCE_CAPACITY;
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError(`NonceBook: capacity must be a positive integer, found ${capacity}`);
    }
    this.#maxAgeMs = maxAge * 1000;
    this.#capacity = capacity;
    this.#random = options.random ??
      ((length) => crypto.getRandomValues(new Uint8Array(length)));
  }

  /** The window in which a nonce is accepted, in seconds. */
  get maxAgeSeconds(): number {
    return this.#maxAgeMs / 1000;
  }

  /** Number of remembered nonces (issued, used or not, and not yet pruned). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Issues a fresh nonce at `now`.
   *
   * @throws {RangeError} when the random source does not return 32 fresh bytes.
   * @throws {TypeError} when `now` is not a valid `Date` (a nonce issued at an Invalid Date
   * would never expire).
   */
  issue(now: Date): Uint8Array {
    checkNow(now, "NonceBook.issue");
    this.#prune(now.getTime());
    const nonce = this.#random(ATTESTATION_NONCE_LENGTH);
    if (!(nonce instanceof Uint8Array) || nonce.length !== ATTESTATION_NONCE_LENGTH) {
      throw new RangeError(
        `NonceBook: the random source must return ${ATTESTATION_NONCE_LENGTH} bytes`,
      );
    }
    const key = toHex(nonce);
    if (this.#entries.has(key)) {
      throw new RangeError("NonceBook: the random source repeated a nonce");
    }
    while (this.#entries.size >= this.#capacity) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
    this.#entries.set(key, { issuedAt: now.getTime(), used: false });
    return nonce.slice();
  }

  /**
   * Consumes a nonce at `now`. Whatever the outcome, the nonce cannot be used again.
   *
   * @throws {TypeError} when `now` is not a valid `Date` (its age check would always pass).
   */
  consume(nonce: Uint8Array, now: Date): NonceOutcome {
    const time = checkNow(now, "NonceBook.consume").getTime();
    this.#prune(time);
    if (!(nonce instanceof Uint8Array) || nonce.length !== ATTESTATION_NONCE_LENGTH) {
      return "unknown";
    }
    const entry = this.#entries.get(toHex(nonce));
    if (!entry) return "unknown";
    if (entry.used) return "reused";
    entry.used = true;
    return time - entry.issuedAt > this.#maxAgeMs ? "expired" : "ok";
  }

  /** Forgets entries well past the window (kept twice as long so reuse is reported as such). */
  #prune(time: number): void {
    for (const [key, entry] of this.#entries) {
      if (time - entry.issuedAt <= 2 * this.#maxAgeMs) break;
      this.#entries.delete(key);
    }
  }
}
