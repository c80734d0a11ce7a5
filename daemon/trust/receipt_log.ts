/**
 * The receipts of TEE replies (`docs/protocol.md` §8): every reply the daemon accepted in the
 * TEE tier has an id, sent in its `x-net-receipt` header; once the reply's receipt verified, the
 * receipt and the attestation it names are kept under that id and served at
 * `GET /v1/verdicts/{id}` as a receipt record, which `deno task verify-receipt <file>`
 * re-verifies offline. Memory is bounded: the most recent `capacity` receipts are kept.
 *
 * @example
 * ```ts
 * import { ReceiptLog } from "./receipt_log.ts";
 *
 * const log = new ReceiptLog({ capacity: 10 });
 * const id = log.newId();
 * console.assert(/^r[0-9a-f]{32}$/.test(id) && log.get(id) === undefined);
 * ```
 *
 * @module
 */

import { type ReceiptRecord, receiptRecordToJson } from "../../crypto/tee/mod.ts";
import type { ReceiptRecordJson } from "../../crypto/tee/mod.ts";

/** Options of {@linkcode ReceiptLog}. */
export interface ReceiptLogOptions {
  /** Most receipts kept; older ones are forgotten. @default {1000} */
  capacity?: number;
  /** Random bytes for the ids. @default {crypto.getRandomValues} */
  random?: (length: number) => Uint8Array;
}

/** Id of a reply's receipt: `r` and 32 hex digits. */
export const RECEIPT_ID = /^r[0-9a-f]{32}$/;

/** A bounded store of verified receipt records by reply id. */
export class ReceiptLog {
  readonly #records = new Map<string, ReceiptRecordJson>();
  readonly #capacity: number;
  readonly #random: (length: number) => Uint8Array;

  /**
   * Creates an empty log.
   *
   * @throws {RangeError} when `capacity` is not an integer in 1–100000.
   */
  constructor(options: ReceiptLogOptions = {}) {
    const capacity = options.capacity ?? 1000;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 100_000) {
      throw new RangeError(
        `Cannot create receipt log: capacity must be an integer in 1–100000, found ${capacity}`,
      );
    }
    this.#capacity = capacity;
    this.#random = options.random ?? ((length) => crypto.getRandomValues(new Uint8Array(length)));
  }

  /** A fresh reply id (`r` and 32 hex digits). */
  newId(): string {
    return `r${Array.from(this.#random(16), (b) => b.toString(16).padStart(2, "0")).join("")}`;
  }

  /** Keeps a verified record under its reply's id, forgetting the oldest when full. */
  add(id: string, record: ReceiptRecord): void {
    this.#records.delete(id);
    this.#records.set(id, receiptRecordToJson(record));
    while (this.#records.size > this.#capacity) {
      this.#records.delete(this.#records.keys().next().value!);
    }
  }

  /** The record of a reply, or `undefined` (unknown id, not verified yet, or forgotten). */
  get(id: string): ReceiptRecordJson | undefined {
    return this.#records.get(id);
  }

  /** How many records are kept. */
  get size(): number {
    return this.#records.size;
  }
}
