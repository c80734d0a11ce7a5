/**
 * The daemon's bounded request queue (`docs/daemon.md`, "Queueing"): when every acceptable
 * provider is at capacity, a request waits for a slot instead of failing, as Ollama does.
 *
 * - One line per key (the backend uses model and tier), first in, first out: a request only
 *   takes a slot when every request of its line that came before it has one. A newcomer never
 *   overtakes a waiting request of its line.
 * - At most `maxQueue` requests wait, over every line; one more is refused at once.
 * - Each request waits at most until its deadline; a client that goes away (its signal aborts)
 *   leaves at once.
 * - Only a full queue and an expired wait are refusals: `503 overloaded` with `Retry-After`
 *   (an estimate from the waits observed lately, 1–60 s).
 *
 * The queue knows nothing of providers: a waiting request is a `take` function that returns
 * what it needs (a slot), `undefined` when there is none yet, or throws when it never will.
 * {@linkcode RequestQueue.wake} runs the heads of the lines again; the backend calls it when a
 * slot frees, and the queue arms one timer for the earliest moment something may free by itself
 * (`nextWake`).
 *
 * @example
 * ```ts
 * import { RequestQueue } from "./queue.ts";
 *
 * const queue = new RequestQueue({ maxQueue: 512 });
 * let slots = 0;
 * const waiting = queue.wait("devnet/echo", () => (slots > 0 ? slots-- : undefined), {
 *   deadline: performance.now() + 1000,
 * });
 * slots = 1;
 * queue.wake();
 * console.assert((await waiting) === 1);
 * ```
 *
 * @module
 */

import { DaemonError } from "../core/mod.ts";

/** Default of {@linkcode RequestQueueOptions.maxQueue}: what Ollama queues. */
export const DEFAULT_MAX_QUEUE = 512;
/** Default longest wait for a first byte: 120 s. */
export const DEFAULT_QUEUE_TIMEOUT_MS = 120_000;

/** Options of {@linkcode RequestQueue}. */
export interface RequestQueueOptions {
  /** Most requests waiting at once, over every line. @default {DEFAULT_MAX_QUEUE} */
  maxQueue?: number;
  /** A monotonic clock in ms. @default {() => performance.now()} */
  now?: () => number;
  /**
   * When something may free by itself (clock ms), e.g. a provider's `Retry-After` expiring; the
   * queue wakes then while requests wait.
   */
  nextWake?: () => number | undefined;
}

/** How one request waits. */
export interface WaitOptions {
  /** The client went away: leave the queue at once, rejecting with the signal's reason. */
  signal?: AbortSignal;
  /** Give up at this time (clock ms) with `503 overloaded`. */
  deadline: number;
  /** What is waited for, in the refusal's message (e.g. `devnet/echo in the verified tier`). */
  label?: string;
  /** Join the line at its head (a request that already waited its turn and must wait again). */
  front?: boolean;
}

interface Entry {
  readonly take: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  readonly since: number;
  done: boolean;
  cleanup(): void;
}

/** Requests waiting for a slot, FIFO per line, bounded. */
export class RequestQueue {
  readonly #lines = new Map<string, Entry[]>();
  readonly #maxQueue: number;
  readonly #now: () => number;
  readonly #nextWake: (() => number | undefined) | undefined;
  #size = 0;
  #waitEstimateMs = 1000;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Infinity;
  #draining = false;

  /**
   * Creates an empty queue.
   *
   * @throws {RangeError} when `maxQueue` is not a non-negative integer.
   */
  constructor(options: RequestQueueOptions = {}) {
    this.#maxQueue = options.maxQueue ?? DEFAULT_MAX_QUEUE;
    if (!Number.isSafeInteger(this.#maxQueue) || this.#maxQueue < 0) {
      throw new RangeError(
        `Cannot create the request queue: maxQueue must be a non-negative integer, found ${this.#maxQueue}`,
      );
    }
    this.#now = options.now ?? (() => performance.now());
    this.#nextWake = options.nextWake;
  }

  /** Requests waiting now. */
  get size(): number {
    return this.#size;
  }

  /** The most requests that may wait. */
  get maxQueue(): number {
    return this.#maxQueue;
  }

  /**
   * Waits for `take()` to return a value, in turn. Returns at once when the line is empty and
   * `take()` has one; rejects with what `take()` throws, with the signal's reason when the client
   * goes away, and with `503 overloaded` when the queue is full or the deadline passes.
   */
  wait<T>(key: string, take: () => T | undefined, options: WaitOptions): Promise<T> {
    const line = this.#lines.get(key);
    if (options.signal?.aborted) return Promise.reject(options.signal.reason);
    if (!line || line.length === 0) {
      let value: T | undefined;
      try {
        value = take();
      } catch (error) {
        return Promise.reject(error);
      }
      if (value !== undefined) return Promise.resolve(value);
    }
    if (this.#size >= this.#maxQueue) return Promise.reject(this.#full(options.label));
    if (this.#now() >= options.deadline) return Promise.reject(this.#expired(options));
    return new Promise<T>((resolve, reject) => {
      const { signal } = options;
      const entry: Entry = {
        take,
        resolve: resolve as (value: unknown) => void,
        reject,
        since: this.#now(),
        done: false,
        cleanup: () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
        },
      };
      const leave = (error: unknown) => {
        if (entry.done) return;
        this.#remove(key, entry);
        reject(error);
      };
      const onAbort = () => leave(signal!.reason);
      const timer = setTimeout(
        () => leave(this.#expired(options)),
        Math.max(0, options.deadline - this.#now()),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      const queued = this.#lines.get(key) ?? [];
      if (options.front) queued.unshift(entry);
      else queued.push(entry);
      this.#lines.set(key, queued);
      this.#size++;
      this.wake();
    });
  }

  /** Runs the head of every line until it has nothing to take; call it when a slot frees. */
  wake(): void {
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (const [key, line] of this.#lines) {
        while (line.length > 0) {
          const head = line[0];
          let value: unknown;
          try {
            value = head.take();
          } catch (error) {
            this.#remove(key, head);
            head.reject(error);
            continue;
          }
          if (value === undefined) break;
          this.#remove(key, head);
          this.#observe(this.#now() - head.since);
          head.resolve(value);
        }
      }
    } finally {
      this.#draining = false;
    }
    this.#arm();
  }

  #remove(key: string, entry: Entry): void {
    if (entry.done) return;
    entry.done = true;
    entry.cleanup();
    const line = this.#lines.get(key);
    const at = line?.indexOf(entry) ?? -1;
    if (line && at >= 0) {
      line.splice(at, 1);
      this.#size--;
      if (line.length === 0) this.#lines.delete(key);
    }
    if (this.#size === 0) this.#disarm();
  }

  /** Arms one timer for the earliest time something may free by itself, while requests wait. */
  #arm(): void {
    if (this.#size === 0) return this.#disarm();
    const at = this.#nextWake?.();
    if (at === undefined || at >= this.#timerAt) return;
    this.#disarm();
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      this.wake();
    }, Math.max(0, at - this.#now()));
  }

  #disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #observe(waitedMs: number): void {
    this.#waitEstimateMs = 0.8 * this.#waitEstimateMs + 0.2 * waitedMs;
  }

  /** `Retry-After` in seconds: about how long a request waits lately, 1–60 s. */
  #retryAfter(): number {
    return Math.min(60, Math.max(1, Math.ceil(this.#waitEstimateMs / 1000)));
  }

  #full(label: string | undefined): DaemonError {
    return new DaemonError(
      "overloaded",
      `Cannot queue the request${label ? ` for ${label}` : ""}: ${this.#size} requests are ` +
        `waiting already, the most the daemon queues (--max-queue ${this.#maxQueue}); try again ` +
        "later",
      { retryAfterSeconds: this.#retryAfter() },
    );
  }

  #expired(options: WaitOptions): DaemonError {
    return new DaemonError(
      "overloaded",
      `Cannot serve the request${
        options.label ? ` for ${options.label}` : ""
      } in time: every provider stayed at capacity until the queue's deadline ` +
        "(--queue-timeout-secs); try again later",
      { retryAfterSeconds: this.#retryAfter() },
    );
  }
}
