/**
 * Signing a voucher off the request's path (`docs/decisions.md`, "The consumer's money", its part
 * "The voucher's cost at c=1"): an ECDSA signature's costly part — the nonce `k`, the point `R = k·G` and
 * `k⁻¹ mod n` — does not depend on the message, so {@linkcode PreparedNonces} makes a few ahead,
 * while the daemon is otherwise waiting, and a signature on the path is then
 * `s = k⁻¹·(z + r·d) mod n`: two multiplications.
 *
 * Each nonce is hedged (`k = HMAC-SHA256(key, 32 fresh random bytes)`, drawn again until it lies
 * in `[1, n−1]` and its `R` gives a usable `r`), taken out of the pool before it is used, never
 * written anywhere, and dropped after its one signature. RFC 6979's deterministic nonce guards
 * against a broken random source; the hedge keeps that (a nonce is a function of the key and of
 * fresh randomness, so it is secret and unique while either is) without waiting for a message.
 * The point and field arithmetic is `@noble/curves`' (`secp256k1.Point`, its `Fn`).
 *
 * @module
 */

import { secp256k1 } from "@noble/curves/secp256k1.js";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";

const Fn = secp256k1.Point.Fn;
const N = Fn.ORDER;
const HALF_N = N >> 1n;

let baseTable = false;

/**
 * Gives noble's generator `G` a table with a window of 8 (~4,200 points, built once per process,
 * ~45 ms and ~1 MiB; noble's documented `Point.BASE.precompute(8)`), instead of its default: `k·G` for a
 * nonce and `u1·G` for a verification take ~20–40 µs less. Every user of noble in the process
 * (viem too) gets the same, faster, results.
 */
export function useBaseTable(): void {
  if (baseTable) return;
  baseTable = true;
  secp256k1.Point.BASE.precompute(8, false);
}

/** One prepared nonce: `k⁻¹ mod n`, `r = (k·G).x` and the parity of `(k·G).y`. */
interface Prepared {
  kInverse: bigint;
  r: bigint;
  odd: number;
}

/** Options of {@linkcode PreparedNonces}. */
export interface PreparedNoncesOptions {
  /** Nonces kept ready, at most. @default {4} */
  size?: number;
  /** Random bytes (a CSPRNG). @default {crypto.getRandomValues} */
  random?: (bytes: Uint8Array) => Uint8Array;
}

/**
 * A small pool of nonces prepared for one secp256k1 key, and signing with them. {@linkcode sign}
 * uses a prepared nonce when one is ready (and asks for more in the background, one per turn of
 * the event loop), or returns `undefined` so that the caller signs the usual way.
 */
export class PreparedNonces {
  readonly #key: Uint8Array;
  readonly #d: bigint;
  readonly #size: number;
  readonly #random: (bytes: Uint8Array) => Uint8Array;
  readonly #pool: Prepared[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #prepared = 0;
  #used = 0;

  /** A pool for the secret key `key` (32 bytes, already checked to be in `[1, n−1]`). */
  constructor(key: Uint8Array, options: PreparedNoncesOptions = {}) {
    this.#key = key;
    this.#d = BigInt(`0x${bytesToHex(key)}`);
    this.#size = Math.max(0, Math.floor(options.size ?? 4));
    this.#random = options.random ?? ((bytes) => crypto.getRandomValues(bytes));
  }

  /** Nonces ready now. */
  get ready(): number {
    return this.#pool.length;
  }

  /** Nonces prepared so far, and nonces used so far (each at most once: `used ≤ prepared`). */
  get counts(): { prepared: number; used: number } {
    return { prepared: this.#prepared, used: this.#used };
  }

  /** Prepares nonces now until `count` are ready (at most the pool's size). */
  prepare(count: number = this.#size): void {
    while (!this.#closed && this.#pool.length < Math.min(count, this.#size)) {
      this.#pool.push(this.#prepareOne());
      this.#prepared++;
    }
  }

  /**
   * Signs the 32-byte `digest` with a prepared nonce: `recovery ‖ r ‖ s` (noble's recovered
   * form), `s` low, or `undefined` when none is ready. Either way, the pool is refilled later.
   */
  sign(digest: Uint8Array): Uint8Array | undefined {
    const nonce = this.#pool.pop();
    this.refillLater();
    if (!nonce) return undefined;
    this.#used++;
    const z = Fn.create(BigInt(`0x${bytesToHex(digest)}`));
    let s = Fn.mul(nonce.kInverse, Fn.create(z + Fn.mul(nonce.r, this.#d)));
    let recovery = nonce.odd;
    // The nonce is dropped: nothing refers to it once this signature is made.
    nonce.kInverse = 0n;
    if (s === 0n) return undefined; // probability 2^-256: the caller signs the usual way
    if (s > HALF_N) {
      s = N - s;
      recovery ^= 1;
    }
    const out = new Uint8Array(65);
    out[0] = recovery;
    out.set(Fn.toBytes(nonce.r), 1);
    out.set(Fn.toBytes(s), 33);
    return out;
  }

  /** Stops preparing and drops the nonces ready. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const nonce of this.#pool) nonce.kInverse = 0n;
    this.#pool.length = 0;
  }

  /**
   * Fills the pool in the background: one nonce per turn of the event loop (a timer), until it
   * is full, so that no request waits for more than one.
   */
  refillLater(): void {
    if (this.#closed || this.#timer !== undefined || this.#pool.length >= this.#size) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.prepare(this.#pool.length + 1);
      this.refillLater();
    }, 0);
  }

  #prepareOne(): Prepared {
    useBaseTable(); // the first time, off the path too
    const seed = new Uint8Array(32);
    for (;;) {
      const mac = hmac(sha256, this.#key, this.#random(seed));
      const k = BigInt(`0x${bytesToHex(mac)}`);
      mac.fill(0);
      if (k === 0n || k >= N) continue; // rejection: k uniform in [1, n−1]
      const R = secp256k1.Point.BASE.multiply(k).toAffine();
      // r must be R.x itself (not R.x − n: the Escrow's v is 27 or 28 only) and not 0.
      if (R.x >= N || R.x === 0n) continue;
      // k⁻¹ through a random blind b: the inversion sees b·k, never k (as noble's own signing).
      let b = 0n;
      while (b === 0n || b >= N) b = BigInt(`0x${bytesToHex(this.#random(seed))}`);
      const kInverse = Fn.mul(b, Fn.inv(Fn.mul(b, k)));
      seed.fill(0);
      return { kInverse, r: R.x, odd: Number(R.y & 1n) };
    }
  }
}
