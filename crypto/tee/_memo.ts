/**
 * Bounded memo tables for pure functions of byte strings (private): certificate and CRL
 * parsing, and signature checks that succeeded. A provider's chain, its CRLs and its collateral
 * are the same on every request, so a daemon verifying many attestations from the same
 * platforms re-checks only what is new (the quote itself).
 *
 * Entries are keyed by SHA-256 over the length-prefixed inputs, so a hit means "exactly these
 * bytes were already parsed / verified": the answer is the one recomputing would give. Only
 * successes are stored; a failure is always recomputed. Each table keeps its most recently
 * used entries up to a fixed size.
 *
 * @module
 */

import { sha256 } from "@noble/hashes/sha2.js";
import { toHex } from "../_bytes.ts";

const encoder = new TextEncoder();

/** A key for `parts`: SHA-256 of each part's length and bytes, domain-tagged. */
export function memoKey(domain: string, ...parts: readonly Uint8Array[]): string {
  const hash = sha256.create();
  const tag = encoder.encode(domain);
  const length = new Uint8Array(4);
  const view = new DataView(length.buffer);
  view.setUint32(0, tag.length);
  hash.update(length).update(tag);
  for (const part of parts) {
    view.setUint32(0, part.length);
    hash.update(length).update(part);
  }
  return toHex(hash.digest());
}

/** A least-recently-used table. */
export class Memo<V> {
  readonly #entries = new Map<string, V>();
  readonly #capacity: number;

  /** Keeps at most `capacity` entries. */
  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** The value for `key`, refreshed as most recently used, or `undefined`. */
  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  /** Stores a value, evicting the least recently used entry when full. */
  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    while (this.#entries.size > this.#capacity) {
      this.#entries.delete(this.#entries.keys().next().value as string);
    }
  }

  /** Empties the table. */
  clear(): void {
    this.#entries.clear();
  }
}

const tables: Memo<unknown>[] = [];

/** Creates a table that {@linkcode clearMemos} empties. */
export function memoTable<V>(capacity: number): Memo<V> {
  const table = new Memo<V>(capacity);
  tables.push(table as Memo<unknown>);
  return table;
}

/** Empties every memo table (benchmarks use it to measure cold verification). */
export function clearMemos(): void {
  for (const table of tables) table.clear();
}
