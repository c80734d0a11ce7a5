/**
 * Replay protection for a provider's sealed requests (RFC 9458 §6.5). A relay sees every
 * sealed request go by and could send one again: the provider would run the inference again
 * and bill the consumer again. Two checks stop that:
 *
 * - the sealed request carries the time it was made (the inner `date` header), and only
 *   requests within `windowMs` of the provider's clock are served;
 * - within that window, each request's encapsulated key (`enc`, fresh per request) is served
 *   once. Keys are remembered only after the request authenticated, so garbage that copies
 *   someone's `enc` cannot block the real request.
 *
 * @module
 */

/** Options of {@linkcode ReplayGuard}. */
export interface ReplayGuardOptions {
  /** How far a request's date may be from the provider's clock, either way, in ms. @default {60000} */
  windowMs?: number;
  /** Most keys remembered; beyond it, the oldest are dropped. @default {100000} */
  capacity?: number;
}

/** What {@linkcode ReplayGuard.admit} decided. */
export type ReplayVerdict =
  | { ok: true }
  | { ok: false; reason: "no_date" | "stale" | "replayed"; message: string };

/** Remembers the sealed requests served within the window. */
export class ReplayGuard {
  readonly #windowMs: number;
  readonly #capacity: number;
  readonly #seen = new Map<string, number>();

  /** Creates an empty guard. */
  constructor(options: ReplayGuardOptions = {}) {
    this.#windowMs = options.windowMs ?? 60_000;
    this.#capacity = options.capacity ?? 100_000;
  }

  /**
   * Decides whether an authenticated request may be served, and remembers it if so. Call it
   * after opening the request and before serving, with nothing awaited in between.
   *
   * @param enc the request's encapsulated key (or its whole sealed prefix).
   * @param date the inner request's `date` header, or `null`.
   */
  admit(enc: Uint8Array, date: string | null, now: Date): ReplayVerdict {
    const time = now.getTime();
    if (date === null) {
      return { ok: false, reason: "no_date", message: "The request carries no date header" };
    }
    const sent = Date.parse(date);
    if (!Number.isFinite(sent) || Math.abs(time - sent) > this.#windowMs) {
      return {
        ok: false,
        reason: "stale",
        message: `The request is dated ${JSON.stringify(date.slice(0, 40))}, more than ${
          this.#windowMs / 1000
        } s from the provider's clock (${now.toUTCString()})`,
      };
    }
    const key = [...enc].map((b) => b.toString(16).padStart(2, "0")).join("");
    this.#prune(time);
    if (this.#seen.has(key)) {
      return {
        ok: false,
        reason: "replayed",
        message: "This sealed request was already served",
      };
    }
    this.#seen.set(key, time);
    return { ok: true };
  }

  #prune(time: number): void {
    // Entries are in insertion order, so the oldest come first. A request older than twice
    // the window is refused as stale anyway, so its key can go.
    for (const [key, at] of this.#seen) {
      if (time - at <= 2 * this.#windowMs && this.#seen.size < this.#capacity) break;
      this.#seen.delete(key);
    }
  }
}
