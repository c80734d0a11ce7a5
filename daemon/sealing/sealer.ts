/**
 * Sealing a chat request (`docs/protocol.md` §7: a known-length Binary HTTP request inside
 * chunked Oblivious HTTP) with the costly part done ahead of time.
 *
 * Most of what sealing costs is the HPKE setup — a fresh ephemeral key pair and the key
 * schedule, about a millisecond — which depends only on the provider's key configuration, not on
 * the request. For a key the daemon reuses (verified-tier keys stay trusted until their
 * endorsement expires), a couple of setups are prepared in the background, so the next request
 * to that provider only encrypts its body. Each setup is used for one request only (its
 * exchange refuses a second), a prepared setup not used within a minute is dropped (an
 * ephemeral private key does not linger), and at most a bounded number are kept.
 *
 * The result is what `crypto/ohttp`'s `sealHttpRequest` gives, byte for byte in format: the
 * same request line, `content-type: application/json`, the headers given, the JSON body.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import {
  type ChunkedClientExchange,
  createChunkedRequest,
  decodeResponseStream,
  encodeRequest,
  type OpenedHttpResponse,
} from "../../crypto/mod.ts";
import { sealChunkedRequestBytes } from "../../crypto/ohttp/chunked.ts";

/** Options of {@linkcode RequestSealer}. */
export interface RequestSealerOptions {
  /** Setups prepared per key configuration. @default {2} */
  perKey?: number;
  /** How long a prepared setup may wait for its request, in ms. @default {60000} */
  maxAgeMs?: number;
  /** Most prepared setups kept, over every key. @default {256} */
  capacity?: number;
  /** A monotonic clock in ms. @default {() => performance.now()} */
  now?: () => number;
}

/** A sealed request: its bytes, and the way to open its reply. */
export interface SealedChat {
  /** The `message/ohttp-chunked-req` body to send. */
  readonly bytes: Uint8Array<ArrayBuffer>;
  /** The inner request's content (the JSON text sealed), which a TEE receipt digests. */
  readonly content: Uint8Array;
  /** Opens the reply (`message/ohttp-chunked-res`); see `SealedHttpRequest.openResponse`. */
  openResponse(sealed: ReadableStream<Uint8Array>): Promise<OpenedHttpResponse>;
}

interface Prepared {
  readonly at: number;
  readonly exchange: Promise<ChunkedClientExchange>;
}

const encoder = new TextEncoder();

/** Seals chat requests, with HPKE setups prepared ahead for keys that are reused. */
export class RequestSealer {
  readonly #pools = new Map<string, Prepared[]>();
  readonly #perKey: number;
  readonly #maxAgeMs: number;
  readonly #capacity: number;
  readonly #now: () => number;
  #size = 0;

  /** Creates a sealer with nothing prepared. */
  constructor(options: RequestSealerOptions = {}) {
    this.#perKey = options.perKey ?? 2;
    this.#maxAgeMs = options.maxAgeMs ?? 60_000;
    this.#capacity = options.capacity ?? 256;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Setups prepared now, over every key. */
  get prepared(): number {
    return this.#size;
  }

  /**
   * Seals `body` (sent as its JSON text) with `headers` to `keyConfig`, as `POST path`
   * (default `/v1/chat/completions`). With `reuse`, the key
   * will be sealed to again: a setup prepared earlier is used when there is one, and another
   * is prepared in the background for the next request.
   *
   * @throws {SealError} for an unusable key configuration (as `sealHttpRequest`).
   * @throws {BinaryHttpError} for a header that cannot be encoded.
   */
  async seal(
    keyConfig: Uint8Array,
    request: {
      body: unknown;
      /** The body's JSON text, when the caller already has it (then `body` is not serialized). */
      text?: string;
      headers: readonly (readonly [string, string])[];
      path?: "/v1/chat/completions" | "/v1/embeddings" | `/v1/generation?id=${string}`;
      /** @default {"POST"} (`GET` has no body: `body` and `text` are ignored) */
      method?: "POST" | "GET";
    },
    options: { reuse: boolean },
  ): Promise<SealedChat> {
    const get = request.method === "GET";
    const content = get
      ? new Uint8Array()
      : encoder.encode(request.text ?? JSON.stringify(request.body));
    const inner = encodeRequest({
      method: get ? "GET" : "POST",
      scheme: "https",
      authority: "",
      path: request.path ?? "/v1/chat/completions",
      headers: get
        ? [...request.headers]
        : [...request.headers, ["content-type", "application/json"]],
      content,
    });
    const key = options.reuse ? hex(keyConfig) : undefined;
    const prepared = key === undefined ? undefined : this.#take(key);
    const exchange = await (prepared ?? createChunkedRequest(keyConfig));
    // Sealed whole, without a stream: the same bytes `sealRequest` would stream.
    const bytes = await sealChunkedRequestBytes(exchange, inner);
    // The next setup is prepared once this request is on its way, not in its way.
    if (key !== undefined) setImmediate(() => this.#prepare(key, keyConfig));
    return {
      bytes,
      content,
      async openResponse(sealed) {
        const response = await decodeResponseStream(exchange.openResponse(sealed));
        const trailers = response.trailers.then(toHeaders);
        trailers.catch(() => {}); // nobody reads trailers here
        return {
          status: response.status,
          headers: toHeaders(response.headers),
          informational: response.informational.map((interim) => ({
            status: interim.status,
            headers: toHeaders(interim.headers),
          })),
          body: response.body,
          trailers,
        };
      },
    };
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

  /** Tops up the setups prepared for `key`, in the background. */
  #prepare(key: string, keyConfig: Uint8Array): void {
    const pool = this.#pools.get(key) ?? [];
    this.#pools.delete(key); // most recently used last: the oldest key goes first
    this.#pools.set(key, pool);
    while (pool.length < this.#perKey) {
      if (this.#size >= this.#capacity) this.#evictOldest();
      const exchange = createChunkedRequest(keyConfig);
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

function hex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

function toHeaders(lines: readonly (readonly [string, string])[]): Headers {
  const headers = new Headers();
  for (const [name, value] of lines) headers.append(name, value);
  return headers;
}
