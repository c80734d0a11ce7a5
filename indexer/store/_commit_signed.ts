/**
 * The part of a chunk commit that counts settlements paid by consumers' vouchers (a
 * `VoucherRedeemed` beside the `Settled`): per (consumer, epoch) in `consumer_buckets`, their
 * window deltas in `window_consumer_deltas`, and per epoch the signed volume and the number of
 * distinct paying consumers in `epoch_totals` — folded, undone and reset with the rest.
 *
 * @module
 */

import { StoreError } from "./errors.ts";
import { big, int } from "./_codec.ts";
import type { SqlQuery } from "./_sql.ts";
import { add, type Sum } from "./_commit.ts";

const OP = "commit the chunk";

/** Rows of a `jsonb_to_recordset` parameter: every value a string. */
function json(rows: Record<string, string>[]): string {
  return JSON.stringify(rows);
}

/** Splits a `consumer|epoch` key. */
function split(key: string): { consumer: string; epoch: string } {
  const bar = key.indexOf("|");
  return { consumer: key.slice(0, bar), epoch: key.slice(bar + 1) };
}

/** Removes the window's voucher deltas at or below `safe`, returning them summed by key. */
export async function foldSigned(
  query: SqlQuery,
  s: string,
  safe: bigint,
  where: string,
): Promise<Map<string, Sum>> {
  const signed = new Map<string, Sum>();
  const rows = await query(
    `DELETE FROM ${s}.window_consumer_deltas WHERE block <= $1 RETURNING consumer,
       epoch::text AS epoch, amount::text AS amount, settlements::text AS settlements`,
    [String(safe)],
  );
  for (const d of rows) {
    add(signed, `${d.consumer}|${big(d, "epoch", where)}`, {
      amount: big(d, "amount", where),
      tokens: 0n,
      settlements: int(d, "settlements", where),
    });
  }
  return signed;
}

/** Inserts the chunk's window voucher deltas (after their window blocks). */
export async function addSignedWindow(
  query: SqlQuery,
  s: string,
  window: Map<bigint, Map<string, Sum>>,
): Promise<void> {
  const rows: Record<string, string>[] = [];
  for (const [block, sums] of window) {
    for (const [key, sum] of sums) {
      rows.push({
        block: String(block),
        ...split(key),
        amount: String(sum.amount),
        settlements: String(sum.settlements),
      });
    }
  }
  if (rows.length === 0) return;
  await query(
    `INSERT INTO ${s}.window_consumer_deltas (block, consumer, epoch, amount, settlements)
     SELECT block::bigint, consumer, epoch::numeric, amount::numeric, settlements::bigint
     FROM jsonb_to_recordset($1::jsonb) AS r(block text, consumer text, epoch text, amount text,
       settlements text)`,
    [json(rows)],
  );
}

/**
 * Writes the confirmed voucher settlements into the consumer buckets and the epoch totals
 * (`signed_amount`, `signed_settlements`, and `consumers`: one more per new (consumer, epoch)).
 * Runs after `addConfirmed`: every epoch it touches has its row.
 */
export async function addSigned(query: SqlQuery, s: string, sums: Map<string, Sum>): Promise<void> {
  if (sums.size === 0) return;
  const rows = [...sums].map(([key, sum]) => {
    const { consumer, epoch } = split(key);
    return { consumer, epoch, amount: String(sum.amount), settlements: String(sum.settlements) };
  });
  const existing = await query(
    `SELECT b.consumer, b.epoch::text AS epoch FROM ${s}.consumer_buckets b
     JOIN jsonb_to_recordset($1::jsonb) AS r(consumer text, epoch text)
       ON b.consumer = r.consumer AND b.epoch = r.epoch::numeric`,
    [json(rows.map(({ consumer, epoch }) => ({ consumer, epoch })))],
  );
  const old = new Set(existing.map((r) => `${r.consumer}|${r.epoch}`));
  const epochs = new Map<string, { amount: bigint; settlements: number; consumers: number }>();
  for (const [key, sum] of sums) {
    const { epoch } = split(key);
    const e = epochs.get(epoch) ?? { amount: 0n, settlements: 0, consumers: 0 };
    epochs.set(epoch, {
      amount: e.amount + sum.amount,
      settlements: e.settlements + sum.settlements,
      consumers: e.consumers + (old.has(key) ? 0 : 1),
    });
  }
  await query(
    `INSERT INTO ${s}.consumer_buckets AS t (consumer, epoch, amount, settlements)
     SELECT consumer, epoch::numeric, amount::numeric, settlements::bigint
     FROM jsonb_to_recordset($1::jsonb) AS r(consumer text, epoch text, amount text, settlements text)
     ON CONFLICT (epoch, consumer) DO UPDATE SET amount = t.amount + excluded.amount,
       settlements = t.settlements + excluded.settlements`,
    [json(rows)],
  );
  const updated = await query(
    `UPDATE ${s}.epoch_totals AS t SET signed_amount = t.signed_amount + r.amount::numeric,
       signed_settlements = t.signed_settlements + r.settlements::bigint,
       consumers = t.consumers + r.consumers::int
     FROM jsonb_to_recordset($1::jsonb) AS r(epoch text, amount text, settlements text, consumers text)
     WHERE t.epoch = r.epoch::numeric RETURNING t.epoch`,
    [json([...epochs].map(([epoch, e]) => ({
      epoch,
      amount: String(e.amount),
      settlements: String(e.settlements),
      consumers: String(e.consumers),
    })))],
  );
  if (updated.length !== epochs.size) {
    throw new StoreError(
      "corrupt",
      `Cannot ${OP}: ${epochs.size - updated.length} epoch(s) paid by vouchers have no totals`,
    );
  }
}
