/**
 * Text ↔ value conversions of the store, both ways strict: what comes out of the database is
 * checked (a malformed value is `corrupt`, never a wrong number), what goes in is checked
 * (`invalid_input`).
 *
 * @module
 */

import { abbreviate } from "../../errors.ts";
import { StoreError } from "./errors.ts";
import type { SqlRow } from "./_sql.ts";
import type { BlockHash, Hex, StoreCursor } from "./types.ts";

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const ADDRESS = /^0x[0-9a-f]{40}$/;
const HASH = /^0x[0-9a-f]{64}$/;
/** 2^256: amounts, tokens and epochs are uint256. */
export const U256_LIMIT: bigint = 1n << 256n;
/** 2^63: block numbers are stored as `bigint` (int8). */
export const BLOCK_LIMIT: bigint = 1n << 63n;

/** Throws `corrupt`: a stored value is not what the schema promises. */
export function corrupt(where: string, what: string): never {
  throw new StoreError(
    "corrupt",
    `Cannot read the history store at ${where}: ${what}`,
    { hints: ["Rebuild it (the indexer's rebuild flag) to rescan the history from the chain."] },
  );
}

/** Reads a column as a non-negative decimal bigint. */
export function big(row: SqlRow, column: string, where: string): bigint {
  const value = row[column];
  if (typeof value !== "string" || !DECIMAL.test(value)) {
    corrupt(
      where,
      `${column} is ${
        abbreviate(JSON.stringify(value) ?? "missing", 40)
      }, expected a non-negative integer`,
    );
  }
  return BigInt(value as string);
}

/** Reads a column as a non-negative decimal bigint, or `null`. */
export function bigOrNull(row: SqlRow, column: string, where: string): bigint | null {
  return row[column] === null ? null : big(row, column, where);
}

/** Reads a column as a safe non-negative integer. */
export function int(row: SqlRow, column: string, where: string): number {
  const value = big(row, column, where);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) corrupt(where, `${column} ${value} is too large`);
  return Number(value);
}

/** Reads a column as a lower-case address. */
export function address(row: SqlRow, column: string, where: string): Hex {
  const value = row[column];
  if (typeof value !== "string" || !ADDRESS.test(value)) {
    corrupt(
      where,
      `${column} is ${
        abbreviate(JSON.stringify(value) ?? "missing", 50)
      }, expected a lower-case address`,
    );
  }
  return value as Hex;
}

/** Reads a column as a lower-case 32-byte hash. */
export function hash(row: SqlRow, column: string, where: string): Hex {
  const value = row[column];
  if (typeof value !== "string" || !HASH.test(value)) {
    corrupt(
      where,
      `${column} is ${abbreviate(JSON.stringify(value) ?? "missing", 70)}, expected a 32-byte hash`,
    );
  }
  return value as Hex;
}

/** Reads the cursor row (`next_block`, `last_*`, `confirmed_*`, `head_block`, `chunk_size`). */
export function cursorOf(row: SqlRow, where: string): StoreCursor {
  const pair = (number: string, hashColumn: string): BlockHash | null =>
    row[number] === null
      ? null
      : { number: big(row, number, where), hash: hash(row, hashColumn, where) };
  return {
    nextBlock: big(row, "next_block", where),
    lastBlock: pair("last_block", "last_hash"),
    confirmed: pair("confirmed_block", "confirmed_hash"),
    head: bigOrNull(row, "head_block", where),
    chunkSize: int(row, "chunk_size", where),
  };
}

/** The columns {@linkcode cursorOf} reads, as text. */
export const CURSOR_COLUMNS =
  "next_block::text, last_block::text, last_hash, confirmed_block::text, confirmed_hash, " +
  "head_block::text, chunk_size::text, " +
  "floor(extract(epoch FROM updated_at) * 1000)::bigint::text AS updated_ms";

/** Throws `invalid_input` for the operation `op`. */
export function invalid(op: string, what: string): never {
  throw new StoreError("invalid_input", `Cannot ${op}: ${what}`);
}

/** Checks a value is a bigint in `[0, limit)`. */
export function checkBig(op: string, name: string, value: unknown, limit: bigint): bigint {
  if (typeof value !== "bigint" || value < 0n || value >= limit) {
    invalid(
      op,
      `${name} is ${abbreviate(String(value), 40)}, expected a bigint from 0 to ${
        limit === U256_LIMIT ? "2^256 − 1" : "2^63 − 1"
      }`,
    );
  }
  return value as bigint;
}

/** Checks and lower-cases an address. */
export function checkAddress(op: string, name: string, value: unknown): Hex {
  const lower = typeof value === "string" ? value.toLowerCase() : "";
  if (!ADDRESS.test(lower)) {
    invalid(
      op,
      `${name} is ${abbreviate(String(value), 50)}, expected a 0x address (40 hex digits)`,
    );
  }
  return lower as Hex;
}

/** Checks and lower-cases a block hash. */
export function checkHash(op: string, name: string, value: unknown): Hex {
  const lower = typeof value === "string" ? value.toLowerCase() : "";
  if (!HASH.test(lower)) {
    invalid(op, `${name} is ${abbreviate(String(value), 70)}, expected a 32-byte 0x hash`);
  }
  return lower as Hex;
}
