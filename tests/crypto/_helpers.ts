/**
 * Helpers for the crypto tests: a seeded PRNG so property-style tests reproduce, hex, and
 * stream utilities (collect, split at chosen points, count what was pulled).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  AEAD_AES_128_GCM,
  AEAD_CHACHA20_POLY1305,
  KDF_HKDF_SHA256,
  KEM_X25519_HKDF_SHA256,
} from "../../crypto/hpke/suite.ts";
import type { KeyConfig, SymmetricSuite } from "../../crypto/ohttp/key_config.ts";

/** A small seeded PRNG (sfc32). Same seed, same sequence. */
export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** Seeds the generator. */
  constructor(seed: number) {
    this.#a = 0x9e3779b9;
    this.#b = 0x243f6a88;
    this.#c = 0xb7e15162;
    this.#d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }

  /** An integer in `[low, high]`. */
  int(low: number, high: number): number {
    return low + Math.floor((this.next() / 2 ** 32) * (high - low + 1));
  }

  /** `length` random bytes. */
  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = this.next() & 0xff;
    return out;
  }

  /** One element of a list. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)];
  }

  /** Random cut points splitting `length` bytes into at most `pieces` pieces. */
  cuts(length: number, pieces: number): number[] {
    const points = new Set<number>();
    for (let i = 1; i < pieces && length > 1; i++) points.add(this.int(1, length - 1));
    return [...points].sort((a, b) => a - b);
  }
}

/** Hex (no prefix) to bytes. */
export function unhex(text: string): Uint8Array {
  assert.match(text, /^([0-9a-f]{2})*$/i, "test vector hex");
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Bytes to lower-case hex (no prefix). */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Concatenates byte arrays. */
export function cat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Bytes from numbers and ASCII strings. */
export function bytesOf(...parts: (number | string | Uint8Array)[]): Uint8Array {
  return cat(
    ...parts.map((part) =>
      typeof part === "number"
        ? Uint8Array.of(part)
        : typeof part === "string"
        ? new TextEncoder().encode(part)
        : part
    ),
  );
}

/** Reads a stream to its end. */
export async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return cat(...parts);
}

/** Reads a stream to its end, keeping chunk boundaries. */
export async function chunksOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return parts;
}

/** A stream of `bytes` cut at the given points. */
export function streamCut(bytes: Uint8Array, cuts: readonly number[]): ReadableStream<Uint8Array> {
  const pieces: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    pieces.push(bytes.slice(at, cut));
    at = cut;
  }
  return ReadableStream.from(pieces);
}

/** A stream of the given pieces. */
export function streamOfChunks(pieces: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(pieces.map((piece) => piece.slice()));
}

/**
 * A stream that serves `head` and then filler bytes, counting how many bytes were pulled; for
 * proving a reader refuses before buffering. It errors after 4 MiB, so a reader that fails to
 * refuse makes the test fail instead of running forever.
 */
export function endless(
  head: Uint8Array,
): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  let pulled = 0;
  let sentHead = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled > 4 * 1024 * 1024) {
        controller.error(new Error(`endless test source: ${pulled} bytes pulled and no refusal`));
        return;
      }
      const chunk = sentHead ? new Uint8Array(1024).fill(0x41) : head;
      sentHead = true;
      pulled += chunk.length;
      controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
  return { stream, pulled: () => pulled };
}

/**
 * Asserts that `action` rejects with an instance of `type` whose `reason` is one of
 * `reasons`, and returns the error.
 */
export async function rejectsWith<E extends Error & { reason: string }>(
  action: Promise<unknown> | (() => Promise<unknown>),
  type: new (...args: never[]) => E,
  reasons: string | readonly string[],
  label = "",
): Promise<E> {
  const wanted = typeof reasons === "string" ? [reasons] : reasons;
  let caught: unknown;
  try {
    await (typeof action === "function" ? action() : action);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught !== undefined, `${label}: expected ${type.name}, it succeeded`);
  assert.ok(caught instanceof type, `${label}: expected ${type.name}, got ${caught}`);
  assert.ok(
    wanted.includes((caught as E).reason),
    `${label}: expected reason ${wanted.join(" or ")}, got ${(caught as E).reason}: ${
      (caught as E).message
    }`,
  );
  return caught as E;
}

/** Flips one bit of a copy. */
export function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = bytes.slice();
  out[bit >> 3] ^= 1 << (bit & 7);
  return out;
}

/** The symmetric suites a key configuration may offer (each can seal). */
const SEALING_SUITES: readonly SymmetricSuite[] = [
  { kdf: KDF_HKDF_SHA256, aead: AEAD_AES_128_GCM },
  { kdf: KDF_HKDF_SHA256, aead: AEAD_CHACHA20_POLY1305 },
];

/**
 * A random valid key configuration: any key id, a random X25519 public key, and a non-empty
 * subset of the supported suites in random order.
 */
export function randomKeyConfig(prng: Prng): KeyConfig {
  const suites = [...SEALING_SUITES];
  for (let i = suites.length - 1; i > 0; i--) {
    const j = prng.int(0, i);
    [suites[i], suites[j]] = [suites[j], suites[i]];
  }
  return {
    keyId: prng.int(0, 255),
    kemId: KEM_X25519_HKDF_SHA256,
    publicKey: prng.bytes(32),
    suites: suites.slice(0, prng.int(1, suites.length)).map((s) => ({ ...s })),
  };
}
