/**
 * HPKE setups prepared ahead of time, for the key configurations a client seals to again.
 *
 * Most of what sealing a request costs is the HPKE setup — a fresh ephemeral key pair and the
 * key schedule, about a millisecond — which depends only on the key configuration, not on the
 * request. {@linkcode sealHttpRequest} and {@linkcode sealHttpRequestBytes} given a pool take a
 * setup prepared earlier for the same key configuration when there is one, and have the pool
 * prepare the next one in the background, once the request is on its way. Each setup serves one
 * request only (its exchange refuses a second), a setup not used within `maxAgeMs` is dropped
 * (an ephemeral private key does not linger), and at most `capacity` are kept, the least
 * recently used key's first to go.
 *
 * @example Seal twice to the same key: the second request's setup was prepared meanwhile
 * ```ts
 * import { generateKeyPair } from "@net/consumer/hpke";
 * import {
 *   createGatewayKey,
 *   encodeKeyConfig,
 *   sealHttpRequestBytes,
 *   SetupPool,
 * } from "@net/consumer/ohttp";
 *
 * const keyConfig = encodeKeyConfig(createGatewayKey(await generateKeyPair(), { keyId: 1 }).config);
 * const pool = new SetupPool();
 * await sealHttpRequestBytes(keyConfig, { body: { model: "m", messages: [] } }, { pool });
 * await new Promise((resolve) => setTimeout(resolve, 0)); // the pool prepares on a timer
 * console.assert(pool.prepared === 2);
 * ```
 *
 * @module
 */

import type { ChunkedClientExchange, ChunkedRequestOptions } from "./chunked.ts";
import { createChunkedRequest } from "./chunked.ts";

/** Options of {@linkcode SetupPool}. */
export interface SetupPoolOptions {
  /**
   * Setups prepared per key configuration.
   *
   * @default {2}
   */
  perKey?: number;
  /**
   * How long a prepared setup may wait for its request, in ms.
   *
   * @default {60000}
   */
  maxAgeMs?: number;
  /**
   * Most prepared setups kept, over every key configuration.
   *
   * @default {256}
   */
  capacity?: number;
  /**
   * A monotonic clock in ms.
   *
   * @default {() => performance.now()}
   */
  now?: () => number;
}

interface Prepared {
  readonly at: number;
  readonly exchange: Promise<ChunkedClientExchange>;
}

/** Prepared HPKE setups, per key configuration (and the options they were made with). */
export class SetupPool {
  readonly #pools = new Map<string, Prepared[]>();
  readonly #perKey: number;
  readonly #maxAgeMs: number;
  readonly #capacity: number;
  readonly #now: () => number;
  #size = 0;

  /**
   * Creates a pool with nothing prepared.
   *
   * @throws {RangeError} for a count or age that is not a positive integer.
   */
  constructor(options: SetupPoolOptions = {}) {
    this.#perKey = positive("perKey", options.perKey ?? 2);
    this.#maxAgeMs = positive("maxAgeMs", options.maxAgeMs ?? 60_000);
    this.#capacity = positive("capacity", options.capacity ?? 256);
    this.#now = options.now ?? (() => performance.now());
  }

  /** Setups prepared now, over every key configuration. */
  get prepared(): number {
    return this.#size;
  }

  /**
   * The setup to seal one request to `keyConfig` with: one prepared earlier and still young
   * enough, or a new one. Then, once the caller's request is on its way (the next turn of the
   * event loop), the pool tops up `keyConfig`'s setups.
   *
   * @throws {SealError} (rejects) as {@linkcode createChunkedRequest}.
   */
  take(
    keyConfig: Uint8Array,
    options: ChunkedRequestOptions = {},
  ): Promise<ChunkedClientExchange> {
    const key = poolKey(keyConfig, options);
    const prepared = this.#take(key);
    setTimeout(() => this.#prepare(key, keyConfig, options), 0);
    return prepared ?? createChunkedRequest(keyConfig, options);
  }

  /** A prepared setup for `key` that is still young enough, if any. */
  #take(key: string): Promise<ChunkedClientExchange> | undefined {
    const pool = this.#pools.get(key);
    while (pool && pool.length > 0) {
      const prepared = pool.shift()!;
      this.#size--;
      if (this.#now() - prepared.at < this.#maxAgeMs) return prepared.exchange;
    }
    return undefined;
  }

  /** Tops up the setups prepared for `key`. */
  #prepare(key: string, keyConfig: Uint8Array, options: ChunkedRequestOptions): void {
    const pool = this.#pools.get(key) ?? [];
    this.#pools.delete(key); // most recently used last: the oldest key goes first
    this.#pools.set(key, pool);
    while (pool.length < this.#perKey) {
      if (this.#size >= this.#capacity) this.#evictOldest();
      const exchange = createChunkedRequest(keyConfig, options);
      const prepared: Prepared = { at: this.#now(), exchange };
      exchange.catch(() => {
        const at = pool.indexOf(prepared);
        if (at >= 0) {
          pool.splice(at, 1);
          this.#size--;
        }
      });
      pool.push(prepared);
      this.#size++;
    }
  }

  #evictOldest(): void {
    for (const [key, pool] of this.#pools) {
      if (pool.length > 0) {
        pool.shift();
        this.#size--;
        if (pool.length === 0) this.#pools.delete(key);
        return;
      }
      this.#pools.delete(key);
    }
  }
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `Cannot create setup pool: ${name} must be a positive integer, found ${value}`,
    );
  }
  return value;
}

/** The pool a setup belongs to: the key configuration and what the setup was made with. */
function poolKey(keyConfig: Uint8Array, options: ChunkedRequestOptions): string {
  let out = `${options.aead ?? ""}/${options.maxChunkLength ?? ""}/`;
  for (const b of keyConfig) out += b.toString(16).padStart(2, "0");
  return out;
}
