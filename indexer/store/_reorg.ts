/**
 * Reorg handling: the stored hashes (the last confirmed block and every window block) against
 * the chain's.
 *
 * 1. The last scanned block is asked first: when it is still canonical, so is every block below
 *    it (each block commits to its parent), and nothing changes. One hash, the common case.
 * 2. Otherwise every other stored hash is asked in one call, and the highest block whose hash
 *    still matches is the fork point: window blocks above it are deleted with their deltas and
 *    the cursor goes back to it. Confirmed figures never hold window blocks, so they are
 *    untouched.
 * 3. When even the last confirmed block changed, the reorg is deeper than the confirmation
 *    depth: it is reported (`deep_reorg`) and nothing is changed — confirmed figures cannot be
 *    undone, and mixing two forks would be silently wrong.
 *
 * The chain is read outside any transaction; the undo is a transaction that first checks the
 * cursor has not moved meanwhile (`conflict` otherwise).
 *
 * @module
 */

import { StoreError } from "./errors.ts";
import { big, CURSOR_COLUMNS, cursorOf, hash, int } from "./_codec.ts";
import { lockCursor } from "./_commit.ts";
import type { SqlQuery, SqlSession } from "./_sql.ts";
import type { BlockHash, CanonicalHashes, Hex, ReconcileResult, StoreCursor } from "./types.ts";

const OP = "reconcile the history with the chain";

interface Ctx {
  schema: string;
  /** The first block of the scan: where the cursor goes back to when nothing is confirmed. */
  scanFromBlock: bigint;
  where: string;
  lockClass: number;
  version: number;
}

async function askChain(canonical: CanonicalHashes, blocks: bigint[]): Promise<(Hex | null)[]> {
  const answer = await canonical(blocks);
  if (!Array.isArray(answer) || answer.length !== blocks.length) {
    throw new StoreError(
      "invalid_input",
      `Cannot ${OP}: asked for ${blocks.length} block hashes, the callback returned ${
        Array.isArray(answer) ? answer.length : typeof answer
      }`,
    );
  }
  return answer.map((h) => (typeof h === "string" ? h.toLowerCase() as Hex : null));
}

/** The stored hashes, lowest first: the last confirmed block, then the window. */
async function anchors(
  query: SqlQuery,
  ctx: Ctx,
): Promise<{ cursor: StoreCursor; stored: BlockHash[] }> {
  const rows = await query(`SELECT ${CURSOR_COLUMNS} FROM ${ctx.schema}.cursor`);
  const cursor = cursorOf(rows[0], ctx.where);
  const window = await query(
    `SELECT block::text AS block, hash FROM ${ctx.schema}.window_blocks w ORDER BY w.block`,
  );
  const stored: BlockHash[] = cursor.confirmed ? [cursor.confirmed] : [];
  for (const row of window) {
    stored.push({ number: big(row, "block", ctx.where), hash: hash(row, "hash", ctx.where) });
  }
  return { cursor, stored };
}

/** Deletes the window above `fork` and moves the cursor there, if the cursor did not move. */
async function undo(
  sql: SqlSession,
  ctx: Ctx,
  seen: StoreCursor,
  fork: BlockHash | null,
): Promise<ReconcileResult> {
  return await sql.transaction(async (query) => {
    const cursor = await lockCursor(query, ctx, OP);
    if (
      cursor.lastBlock?.number !== seen.lastBlock?.number ||
      cursor.lastBlock?.hash !== seen.lastBlock?.hash
    ) {
      throw new StoreError(
        "conflict",
        `Cannot ${OP}: the cursor moved while the chain was read (last block ${
          seen.lastBlock?.number ?? "none"
        } → ${cursor.lastBlock?.number ?? "none"})`,
      );
    }
    const s = ctx.schema;
    const above = String(fork ? fork.number : -1n);
    const removed = await query(
      `DELETE FROM ${s}.window_deltas WHERE block > $1 RETURNING settlements::text AS settlements`,
      [above],
    );
    await query(`DELETE FROM ${s}.window_consumer_deltas WHERE block > $1`, [above]);
    const blocks = await query(`DELETE FROM ${s}.window_blocks WHERE block > $1 RETURNING block`, [
      above,
    ]);
    const rows = await query(
      `UPDATE ${s}.cursor SET next_block = $1, last_block = $2, last_hash = $3, updated_at = now()
       RETURNING ${CURSOR_COLUMNS}`,
      fork
        ? [String(fork.number + 1n), String(fork.number), fork.hash]
        : [String(ctx.scanFromBlock), null, null],
    );
    return {
      kind: "rewound" as const,
      forkBlock: fork ? fork.number : ctx.scanFromBlock - 1n,
      blocks: blocks.length,
      settlements: removed.reduce((n, r) => n + int(r, "settlements", ctx.where), 0),
      cursor: cursorOf(rows[0], ctx.where),
    };
  });
}

/** See the module documentation. */
export async function reconcile(
  sql: SqlSession,
  ctx: Ctx,
  canonical: CanonicalHashes,
): Promise<ReconcileResult> {
  const { cursor, stored } = await anchors(sql.query, ctx);
  const last = cursor.lastBlock;
  if (!last) return { kind: "unchanged", cursor };
  const [top] = await askChain(canonical, [last.number]);
  if (top === last.hash) return { kind: "unchanged", cursor };
  const below = stored.filter((b) => b.number < last.number);
  const found = below.length > 0 ? await askChain(canonical, below.map((b) => b.number)) : [];
  for (let i = below.length - 1; i >= 0; i--) {
    if (found[i] === below[i].hash) return await undo(sql, ctx, cursor, below[i]);
  }
  // Nothing is confirmed yet: the whole window goes, the scan starts again at its first block.
  if (!cursor.confirmed) return await undo(sql, ctx, cursor, null);
  // Nothing in the window matches: the last confirmed block itself changed (or, with an empty
  // window, it is the last block).
  const confirmed = cursor.confirmed;
  const index = below.findIndex((b) => b.number === confirmed.number);
  return {
    kind: "deep_reorg",
    block: confirmed.number,
    stored: confirmed.hash,
    found: index >= 0 ? found[index] : top,
  };
}

/**
 * Discards the whole history — confirmed figures and window — and moves the cursor back to
 * the first block, in one transaction under the writer lock: the indexer's answer to a reorg
 * deeper than the confirmation depth (the history is derived data; it is scanned again).
 */
export async function resetHistory(sql: SqlSession, ctx: Ctx): Promise<StoreCursor> {
  return await sql.transaction(async (query) => {
    await lockCursor(query, ctx, "reset the history");
    const s = ctx.schema;
    await query(`DELETE FROM ${s}.window_deltas`);
    await query(`DELETE FROM ${s}.window_consumer_deltas`);
    await query(`DELETE FROM ${s}.window_blocks`);
    await query(`DELETE FROM ${s}.buckets`);
    await query(`DELETE FROM ${s}.consumer_buckets`);
    await query(`DELETE FROM ${s}.epoch_totals`);
    await query(`DELETE FROM ${s}.provider_totals`);
    const rows = await query(
      `UPDATE ${s}.cursor SET next_block = $1, last_block = NULL, last_hash = NULL,
         confirmed_block = NULL, confirmed_hash = NULL, head_block = NULL, updated_at = now()
       RETURNING ${CURSOR_COLUMNS}`,
      [String(ctx.scanFromBlock)],
    );
    return cursorOf(rows[0], ctx.where);
  });
}
