/**
 * The resumable cursor of {@linkcode scanSettlements} (private): strict parsing of a saved
 * cursor, and the cursor of a finished scan. A cursor is plain JSON — integers as decimal
 * strings except `settlements` — and carries the totals so far.
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { abbreviate } from "../errors.ts";
import { SettlementScanError } from "./errors.ts";
import type { SettlementCursor } from "./settlements.ts";
import type { SettlementBucket } from "./settlement_buckets.ts";

const OPERATION = "scan settlements";
const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** A cursor, parsed: where to continue, the last block counted, the chunk size, the totals. */
export interface CursorState {
  /** The first block not yet scanned. */
  next: bigint;
  /** The last block counted and its hash, or `null`. */
  last: { number: bigint; hash: Hex } | null;
  /** The chunk size that worked last (0: none yet). */
  chunk: number;
  /** Totals by `provider:epoch`. */
  totals: Map<string, SettlementBucket>;
}

/**
 * Parses a saved cursor strictly: unknown fields, another escrow, malformed numbers and
 * duplicate buckets are refused.
 *
 * @throws {SettlementScanError} `bad_cursor`.
 */
export function parseCursor(value: unknown, escrow: string): CursorState {
  const bad = (what: string): never => {
    throw new SettlementScanError("bad_cursor", `Cannot ${OPERATION}: cursor ${what}`, {
      hints: ["Start a new scan without a cursor (from the Escrow's deployment block)."],
    });
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return bad("must be an object");
  }
  const cursor = value as Record<string, unknown>;
  const keys = ["version", "escrow", "nextBlock", "lastBlock", "chunkSize", "buckets"];
  for (const key of Object.keys(cursor)) {
    if (!keys.includes(key)) bad(`has an unknown field ${JSON.stringify(key)}`);
  }
  if (cursor.version !== 1) bad(`version is ${JSON.stringify(cursor.version)}, expected 1`);
  if (typeof cursor.escrow !== "string" || cursor.escrow.toLowerCase() !== escrow) {
    bad(`belongs to escrow ${abbreviate(String(cursor.escrow), 44)}, expected ${escrow}`);
  }
  const decimal = (field: string, v: unknown): bigint => {
    if (typeof v !== "string" || !DECIMAL.test(v)) {
      bad(
        `${field} is ${abbreviate(JSON.stringify(v) ?? "nothing", 40)}, expected a decimal string`,
      );
    }
    return BigInt(v as string);
  };
  const next = decimal("nextBlock", cursor.nextBlock);
  const chunk = decimal("chunkSize", cursor.chunkSize);
  if (chunk < 1n || chunk > BigInt(Number.MAX_SAFE_INTEGER)) {
    bad(`chunkSize ${chunk} is out of range`);
  }
  let last: { number: bigint; hash: Hex } | null = null;
  if (cursor.lastBlock !== null) {
    const lb = cursor.lastBlock as Record<string, unknown> | undefined;
    if (typeof lb !== "object" || lb === null) return bad("lastBlock must be an object or null");
    const hash = lb.hash;
    if (typeof hash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(hash)) {
      bad("lastBlock.hash must be a 32-byte hex string");
    }
    last = {
      number: decimal("lastBlock.number", lb.number),
      hash: (hash as string).toLowerCase() as Hex,
    };
    if (last.number + 1n !== next) {
      bad(`lastBlock ${last.number} does not precede nextBlock ${next}`);
    }
  }
  if (!Array.isArray(cursor.buckets)) return bad("buckets must be an array");
  const totals = new Map<string, SettlementBucket>();
  cursor.buckets.forEach((b: unknown, i: number) => {
    const bucket = b as Record<string, unknown>;
    if (typeof bucket !== "object" || bucket === null) bad(`buckets[${i}] must be an object`);
    const provider = bucket.provider;
    if (typeof provider !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(provider)) {
      bad(`buckets[${i}].provider must be an address`);
    }
    const settlements = bucket.settlements;
    if (typeof settlements !== "number" || !Number.isSafeInteger(settlements) || settlements < 1) {
      bad(`buckets[${i}].settlements must be a positive integer`);
    }
    const entry: SettlementBucket = {
      provider: (provider as string).toLowerCase() as Address,
      epoch: decimal(`buckets[${i}].epoch`, bucket.epoch),
      amount: decimal(`buckets[${i}].amount`, bucket.amount),
      tokens: decimal(`buckets[${i}].tokens`, bucket.tokens),
      settlements: settlements as number,
    };
    const key = `${entry.provider}:${entry.epoch}`;
    if (totals.has(key)) bad(`lists provider ${entry.provider} epoch ${entry.epoch} twice`);
    totals.set(key, entry);
  });
  return { next, last, chunk: Number(chunk), totals };
}

/** The cursor to continue after a scan. */
export function cursorOf(
  escrow: Address,
  scan: {
    next: bigint;
    last: { number: bigint; hash: Hex } | null;
    chunk: number;
    buckets: SettlementBucket[];
  },
): SettlementCursor {
  return {
    version: 1,
    escrow,
    nextBlock: String(scan.next),
    lastBlock: scan.last ? { number: String(scan.last.number), hash: scan.last.hash } : null,
    chunkSize: String(scan.chunk),
    buckets: scan.buckets.map((b) => ({
      provider: b.provider,
      epoch: String(b.epoch),
      amount: String(b.amount),
      tokens: String(b.tokens),
      settlements: b.settlements,
    })),
  };
}
