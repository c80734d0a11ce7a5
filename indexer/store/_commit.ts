/**
 * One chunk commit: the input checked and aggregated in TypeScript (exact `bigint` sums), then
 * written in one transaction — confirmed settlements into the buckets and the derived totals,
 * the others into the window with their block hashes, window blocks that became confirmed
 * folded into the buckets, and the cursor moved. The cursor is a compare-and-set on
 * `next_block`, so a chunk can never be counted twice.
 *
 * @module
 */

import { StoreError } from "./errors.ts";
import {
  big,
  BLOCK_LIMIT,
  checkAddress,
  checkBig,
  checkHash,
  CURSOR_COLUMNS,
  cursorOf,
  hash,
  int,
  invalid,
  U256_LIMIT,
} from "./_codec.ts";
import type { SqlQuery } from "./_sql.ts";
import { addSigned, addSignedWindow, foldSigned } from "./_commit_signed.ts";
import type { BlockHash, ChunkCommit, CommitResult, Hex, StoreCursor } from "./types.ts";

const OP = "commit the chunk";

/** Summed settlements of one key. */
export interface Sum {
  amount: bigint;
  tokens: bigint;
  settlements: number;
}

/** A checked, aggregated chunk. */
interface Plan {
  from: bigint;
  to: bigint;
  head: bigint;
  /** `head − confirmations`: blocks at or below it are confirmed. */
  safe: bigint;
  chunkSize: number | undefined;
  /** Confirmed settlements of the chunk by `provider|epoch`. */
  confirmed: Map<string, Sum>;
  confirmedCount: number;
  /** Window settlements by block, then `provider|epoch`. */
  window: Map<bigint, Map<string, Sum>>;
  windowCount: number;
  /** Confirmed voucher settlements of the chunk by `consumer|epoch`. */
  signed: Map<string, Sum>;
  /** Window voucher settlements by block, then `consumer|epoch`. */
  signedWindow: Map<bigint, Map<string, Sum>>;
  /** The hashes, by block. */
  hashes: Map<bigint, Hex>;
  /** The window's blocks of this chunk (every one gets a row with its hash). */
  windowBlocks: bigint[];
  /** The last confirmed block of the chunk, when the chunk reaches one. */
  confirmedTop: BlockHash | null;
}

/** Adds one settlement (or summed delta) to a map keyed by `provider|epoch`. */
export function add(map: Map<string, Sum>, key: string, sum: Sum): void {
  const found = map.get(key);
  if (found) {
    found.amount += sum.amount;
    found.tokens += sum.tokens;
    found.settlements += sum.settlements;
  } else {
    map.set(key, { ...sum });
  }
}

function checkRange(chunk: ChunkCommit): { from: bigint; to: bigint; head: bigint } {
  const from = checkBig(OP, "from", chunk.from, BLOCK_LIMIT);
  const to = checkBig(OP, "to", chunk.to, BLOCK_LIMIT);
  const head = checkBig(OP, "head", chunk.head, BLOCK_LIMIT);
  if (to < from) invalid(OP, `the range ends at ${to} before it starts at ${from}`);
  if (to > head) invalid(OP, `the range ends at ${to}, above the head ${head}`);
  if (chunk.chunkSize !== undefined) {
    if (
      !Number.isSafeInteger(chunk.chunkSize) || chunk.chunkSize < 1 || chunk.chunkSize > 2 ** 31 - 1
    ) {
      invalid(OP, `chunkSize is ${chunk.chunkSize}, expected an integer from 1 to 2^31 − 1`);
    }
  }
  if (!Array.isArray(chunk.settlements) || !Array.isArray(chunk.hashes)) {
    invalid(OP, "settlements and hashes must be arrays");
  }
  return { from, to, head };
}

function checkHashes(
  chunk: ChunkCommit,
  range: { from: bigint; to: bigint },
  safe: bigint,
): { hashes: Map<bigint, Hex>; windowBlocks: bigint[]; confirmedTop: BlockHash | null } {
  const hashes = new Map<bigint, Hex>();
  chunk.hashes.forEach((entry, i) => {
    const number = checkBig(OP, `hashes[${i}].number`, entry?.number, BLOCK_LIMIT);
    if (number < range.from || number > range.to) {
      invalid(
        OP,
        `hashes[${i}] is for block ${number}, outside the range ${range.from}–${range.to}`,
      );
    }
    if (hashes.has(number)) invalid(OP, `hashes lists block ${number} twice`);
    hashes.set(number, checkHash(OP, `hashes[${i}].hash`, entry.hash));
  });
  const windowStart = safe + 1n > range.from ? safe + 1n : range.from;
  const windowBlocks: bigint[] = [];
  for (let block = windowStart; block <= range.to; block++) windowBlocks.push(block);
  const top = range.to < safe ? range.to : safe;
  const required = top >= range.from ? [top, ...windowBlocks] : windowBlocks;
  const missing = required.filter((block) => !hashes.has(block));
  if (missing.length > 0) {
    invalid(
      OP,
      `the hashes of block${missing.length > 1 ? "s" : ""} ${missing.slice(0, 5).join(", ")}${
        missing.length > 5 ? ", …" : ""
      } are missing; expected the hash of every block above ${safe < 0n ? "−1" : safe} ` +
        `(head − confirmations) and of the last confirmed block of the range`,
    );
  }
  if (hashes.size !== required.length) {
    const extra = [...hashes.keys()].filter((block) => !required.includes(block));
    invalid(
      OP,
      `hashes lists block ${extra[0]}, which is neither in the window nor the last confirmed block`,
    );
  }
  return {
    hashes,
    windowBlocks,
    confirmedTop: top >= range.from ? { number: top, hash: hashes.get(top)! } : null,
  };
}

/**
 * Checks a chunk and sums its settlements per key, confirmed ones apart from window ones.
 *
 * @throws {StoreError} `invalid_input` naming the first thing wrong.
 */
export function planChunk(chunk: ChunkCommit, confirmations: number): Plan {
  const range = checkRange(chunk);
  const safe = range.head - BigInt(confirmations);
  const { hashes, windowBlocks, confirmedTop } = checkHashes(chunk, range, safe);
  const confirmed = new Map<string, Sum>();
  const window = new Map<bigint, Map<string, Sum>>();
  const signed = new Map<string, Sum>();
  const signedWindow = new Map<bigint, Map<string, Sum>>();
  let confirmedCount = 0;
  let windowCount = 0;
  chunk.settlements.forEach((s, i) => {
    const block = checkBig(OP, `settlements[${i}].block`, s?.block, BLOCK_LIMIT);
    if (block < range.from || block > range.to) {
      invalid(
        OP,
        `settlements[${i}] is in block ${block}, outside the range ${range.from}–${range.to}`,
      );
    }
    const provider = checkAddress(OP, `settlements[${i}].provider`, s.provider);
    const epoch = checkBig(OP, `settlements[${i}].epoch`, s.epoch, U256_LIMIT);
    const count = s.count ?? 1;
    if (!Number.isSafeInteger(count) || count < 1) {
      invalid(OP, `settlements[${i}].count is ${count}, expected a whole number of at least 1`);
    }
    const sum = {
      amount: checkBig(OP, `settlements[${i}].amount`, s.amount, U256_LIMIT),
      tokens: checkBig(OP, `settlements[${i}].tokens`, s.tokens, U256_LIMIT),
      settlements: count,
    };
    const key = `${provider}|${epoch}`;
    // Paid by a consumer's voucher: also counted per (consumer, epoch).
    const consumer = s.consumer === undefined || s.consumer === null
      ? null
      : checkAddress(OP, `settlements[${i}].consumer`, s.consumer);
    const paid = { amount: sum.amount, tokens: 0n, settlements: count };
    if (block <= safe) {
      add(confirmed, key, sum);
      if (consumer) add(signed, `${consumer}|${epoch}`, paid);
      confirmedCount += count;
    } else {
      windowCount += count;
      let deltas = window.get(block);
      if (!deltas) window.set(block, deltas = new Map());
      add(deltas, key, sum);
      if (consumer) {
        let paidDeltas = signedWindow.get(block);
        if (!paidDeltas) signedWindow.set(block, paidDeltas = new Map());
        add(paidDeltas, `${consumer}|${epoch}`, paid);
      }
    }
  });
  return {
    ...range,
    safe,
    chunkSize: chunk.chunkSize,
    confirmed,
    confirmedCount,
    window,
    windowCount,
    signed,
    signedWindow,
    hashes,
    windowBlocks,
    confirmedTop,
  };
}

/** Splits a `provider|epoch` key. */
export function splitKey(key: string): { provider: Hex; epoch: string } {
  const bar = key.indexOf("|");
  return { provider: key.slice(0, bar) as Hex, epoch: key.slice(bar + 1) };
}

/** The fence every write runs first: the writer lock, the schema version and the cursor. */
export async function lockCursor(
  query: SqlQuery,
  ctx: { schema: string; where: string; lockClass: number; version: number },
  op: string,
): Promise<StoreCursor> {
  const rows = await query(
    `SELECT ${CURSOR_COLUMNS}, m.schema_version::text AS version,
       EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
         AND pid = pg_backend_pid() AND classid = $1::int4::oid
         AND objid = hashtext($2)::oid AND objsubid = 2)::text AS held
     FROM ${ctx.schema}.cursor, ${ctx.schema}.meta m FOR UPDATE`,
    [String(ctx.lockClass), ctx.schema],
  );
  if (rows.length !== 1) {
    throw new StoreError(
      "corrupt",
      `Cannot ${op}: the history store at ${ctx.where} has no cursor`,
    );
  }
  if (rows[0].held !== "true") {
    throw new StoreError(
      "lost_lock",
      `Cannot ${op}: this process no longer holds the history store's writer lock at ${ctx.where}`,
      {
        hints: [
          "Another replica may be writing now; reopen the store and try to become the writer again.",
        ],
      },
    );
  }
  if (rows[0].version !== String(ctx.version)) {
    throw new StoreError(
      "newer_schema",
      `Cannot ${op}: the history store at ${ctx.where} is now at schema version ${
        rows[0].version
      }, ` +
        `this code writes version ${ctx.version}`,
      { hints: ["A newer indexer migrated the store; stop this one."] },
    );
  }
  return cursorOf(rows[0], ctx.where);
}

/** Rows of a `jsonb_to_recordset` parameter: every value a string. */
function json(rows: Record<string, string>[]): string {
  return JSON.stringify(rows);
}

/** Writes the confirmed sums into buckets, epoch totals and provider totals. */
async function addConfirmed(query: SqlQuery, s: string, sums: Map<string, Sum>): Promise<void> {
  if (sums.size === 0) return;
  const rows = [...sums].map(([key, sum]) => ({
    ...splitKey(key),
    amount: String(sum.amount),
    tokens: String(sum.tokens),
    settlements: String(sum.settlements),
  }));
  const existing = await query(
    `SELECT b.provider, b.epoch::text AS epoch FROM ${s}.buckets b
     JOIN jsonb_to_recordset($1::jsonb) AS r(provider text, epoch text)
       ON b.provider = r.provider AND b.epoch = r.epoch::numeric`,
    [json(rows.map(({ provider, epoch }) => ({ provider, epoch })))],
  );
  const old = new Set(existing.map((r) => `${r.provider}|${r.epoch}`));
  const epochs = new Map<string, Sum & { providers: number }>();
  const providers = new Map<string, Sum & { epochs: number; first: bigint; last: bigint }>();
  for (const [key, sum] of sums) {
    const { provider, epoch } = splitKey(key);
    const isNew = old.has(key) ? 0 : 1;
    const e = epochs.get(epoch) ?? { amount: 0n, tokens: 0n, settlements: 0, providers: 0 };
    epochs.set(epoch, { ...e, ...plus(e, sum), providers: e.providers + isNew });
    const n = BigInt(epoch);
    const p = providers.get(provider) ??
      { amount: 0n, tokens: 0n, settlements: 0, epochs: 0, first: n, last: n };
    providers.set(provider, {
      ...plus(p, sum),
      epochs: p.epochs + isNew,
      first: n < p.first ? n : p.first,
      last: n > p.last ? n : p.last,
    });
  }
  await query(
    `INSERT INTO ${s}.buckets AS t (provider, epoch, amount, tokens, settlements)
     SELECT provider, epoch::numeric, amount::numeric, tokens::numeric, settlements::bigint
     FROM jsonb_to_recordset($1::jsonb) AS r(provider text, epoch text, amount text, tokens text, settlements text)
     ON CONFLICT (provider, epoch) DO UPDATE SET amount = t.amount + excluded.amount,
       tokens = t.tokens + excluded.tokens, settlements = t.settlements + excluded.settlements`,
    [json(rows)],
  );
  await query(
    `INSERT INTO ${s}.epoch_totals AS t (epoch, amount, tokens, settlements, providers)
     SELECT epoch::numeric, amount::numeric, tokens::numeric, settlements::bigint, providers::int
     FROM jsonb_to_recordset($1::jsonb) AS r(epoch text, amount text, tokens text, settlements text, providers text)
     ON CONFLICT (epoch) DO UPDATE SET amount = t.amount + excluded.amount,
       tokens = t.tokens + excluded.tokens, settlements = t.settlements + excluded.settlements,
       providers = t.providers + excluded.providers`,
    [json(
      [...epochs].map(([epoch, e]) => ({ epoch, ...text(e), providers: String(e.providers) })),
    )],
  );
  await query(
    `INSERT INTO ${s}.provider_totals AS t (provider, amount, tokens, settlements, epochs, first_epoch, last_epoch)
     SELECT provider, amount::numeric, tokens::numeric, settlements::bigint, epochs::int,
       first_epoch::numeric, last_epoch::numeric
     FROM jsonb_to_recordset($1::jsonb) AS r(provider text, amount text, tokens text,
       settlements text, epochs text, first_epoch text, last_epoch text)
     ON CONFLICT (provider) DO UPDATE SET amount = t.amount + excluded.amount,
       tokens = t.tokens + excluded.tokens, settlements = t.settlements + excluded.settlements,
       epochs = t.epochs + excluded.epochs,
       first_epoch = LEAST(t.first_epoch, excluded.first_epoch),
       last_epoch = GREATEST(t.last_epoch, excluded.last_epoch)`,
    [json([...providers].map(([provider, p]) => ({
      provider,
      ...text(p),
      epochs: String(p.epochs),
      first_epoch: String(p.first),
      last_epoch: String(p.last),
    })))],
  );
}

function plus(a: Sum, b: Sum): Sum {
  return {
    amount: a.amount + b.amount,
    tokens: a.tokens + b.tokens,
    settlements: a.settlements + b.settlements,
  };
}

function text(sum: Sum): { amount: string; tokens: string; settlements: string } {
  return {
    amount: String(sum.amount),
    tokens: String(sum.tokens),
    settlements: String(sum.settlements),
  };
}

/** Removes the window blocks at or below `safe`, returning their summed deltas. */
async function fold(
  query: SqlQuery,
  s: string,
  safe: bigint,
  where: string,
): Promise<
  { sums: Map<string, Sum>; signed: Map<string, Sum>; blocks: number; top: BlockHash | null }
> {
  const sums = new Map<string, Sum>();
  if (safe < 0n) return { sums, signed: new Map(), blocks: 0, top: null };
  const deltas = await query(
    `DELETE FROM ${s}.window_deltas WHERE block <= $1 RETURNING provider, epoch::text AS epoch,
       amount::text AS amount, tokens::text AS tokens, settlements::text AS settlements`,
    [String(safe)],
  );
  for (const d of deltas) {
    add(sums, `${d.provider}|${big(d, "epoch", where)}`, {
      amount: big(d, "amount", where),
      tokens: big(d, "tokens", where),
      settlements: int(d, "settlements", where),
    });
  }
  const signed = await foldSigned(query, s, safe, where);
  const blocks = await query(
    `DELETE FROM ${s}.window_blocks WHERE block <= $1 RETURNING block::text AS block, hash`,
    [String(safe)],
  );
  let top: BlockHash | null = null;
  for (const b of blocks) {
    const number = big(b, "block", where);
    if (!top || number > top.number) top = { number, hash: hash(b, "hash", where) };
  }
  return { sums, signed, blocks: blocks.length, top };
}

/** Inserts the chunk's window blocks and their deltas. */
async function addWindow(query: SqlQuery, s: string, plan: Plan): Promise<void> {
  if (plan.windowBlocks.length === 0) return;
  await query(
    `INSERT INTO ${s}.window_blocks (block, hash)
     SELECT block::bigint, hash FROM jsonb_to_recordset($1::jsonb) AS r(block text, hash text)`,
    [json(
      plan.windowBlocks.map((block) => ({ block: String(block), hash: plan.hashes.get(block)! })),
    )],
  );
  await addSignedWindow(query, s, plan.signedWindow);
  const deltas: Record<string, string>[] = [];
  for (const [block, sums] of plan.window) {
    for (const [key, sum] of sums) {
      deltas.push({ block: String(block), ...splitKey(key), ...text(sum) });
    }
  }
  if (deltas.length === 0) return;
  await query(
    `INSERT INTO ${s}.window_deltas (block, provider, epoch, amount, tokens, settlements)
     SELECT block::bigint, provider, epoch::numeric, amount::numeric, tokens::numeric, settlements::bigint
     FROM jsonb_to_recordset($1::jsonb) AS r(block text, provider text, epoch text, amount text,
       tokens text, settlements text)`,
    [json(deltas)],
  );
}

/**
 * Writes a planned chunk inside the caller's transaction, after {@linkcode lockCursor}
 * returned `cursor`.
 *
 * @throws {StoreError} `conflict` when `from` is not the cursor's next block.
 */
export async function writeChunk(
  query: SqlQuery,
  ctx: { schema: string; where: string },
  cursor: StoreCursor,
  plan: Plan,
): Promise<CommitResult> {
  if (plan.from !== cursor.nextBlock) {
    throw new StoreError(
      "conflict",
      `Cannot ${OP}: it starts at block ${plan.from}, the store's next block is ${cursor.nextBlock}`,
      { hints: ["Read the store's state again and scan from its next block."] },
    );
  }
  const s = ctx.schema;
  const folded = await fold(query, s, plan.safe, ctx.where);
  for (const [key, sum] of plan.confirmed) add(folded.sums, key, sum);
  for (const [key, sum] of plan.signed) add(folded.signed, key, sum);
  await addConfirmed(query, s, folded.sums);
  await addSigned(query, s, folded.signed);
  await addWindow(query, s, plan);
  const confirmed = plan.confirmedTop ?? folded.top ?? cursor.confirmed;
  const next: StoreCursor = {
    nextBlock: plan.to + 1n,
    lastBlock: { number: plan.to, hash: plan.hashes.get(plan.to)! },
    confirmed,
    head: plan.head,
    chunkSize: plan.chunkSize ?? cursor.chunkSize,
  };
  await query(
    `UPDATE ${s}.cursor SET next_block = $1, last_block = $2, last_hash = $3, confirmed_block = $4,
       confirmed_hash = $5, head_block = $6, chunk_size = $7, updated_at = now()`,
    [
      String(next.nextBlock),
      String(plan.to),
      next.lastBlock!.hash,
      confirmed ? String(confirmed.number) : null,
      confirmed?.hash ?? null,
      String(plan.head),
      String(next.chunkSize),
    ],
  );
  return {
    cursor: next,
    confirmed: plan.confirmedCount,
    windowed: plan.windowCount,
    folded: folded.blocks,
  };
}
