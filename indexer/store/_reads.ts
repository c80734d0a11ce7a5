/**
 * The reads the indexer's API serves: confirmed figures only (never the window), keyset
 * pagination by epoch (stable while new data arrives: a page starts strictly after the last
 * epoch of the previous one, so nothing is skipped or repeated).
 *
 * @module
 */

import { abbreviate } from "../../errors.ts";
import { address, big, bigOrNull, CURSOR_COLUMNS, cursorOf, int } from "./_codec.ts";
import { invalid } from "./_codec.ts";
import type { SqlParam, SqlQuery, SqlRow } from "./_sql.ts";
import type {
  EpochRange,
  EpochTotals,
  Hex,
  Page,
  PageOptions,
  ProviderTotals,
  SettlementBucket,
  StoreIdentity,
  StoreState,
} from "./types.ts";
import { U256_LIMIT } from "./_codec.ts";

/** The largest page. */
export const MAX_PAGE = 10_000;
const DEFAULT_PAGE = 100;

interface Ctx {
  schema: string;
  where: string;
}

function checkPage(
  op: string,
  page: PageOptions,
): { limit: number; after: bigint | undefined; desc: boolean } {
  const limit = page.limit ?? DEFAULT_PAGE;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    invalid(op, `limit is ${limit}, expected an integer from 1 to ${MAX_PAGE}`);
  }
  if (
    page.after !== undefined &&
    (typeof page.after !== "bigint" || page.after < 0n || page.after >= U256_LIMIT)
  ) {
    invalid(op, `after is ${abbreviate(String(page.after), 40)}, expected an epoch (a bigint ≥ 0)`);
  }
  if (page.order !== undefined && page.order !== "asc" && page.order !== "desc") {
    invalid(op, `order is ${JSON.stringify(page.order)}, expected "asc" or "desc"`);
  }
  return { limit, after: page.after, desc: page.order === "desc" };
}

function checkRange(op: string, range: EpochRange): { from: string | null; to: string | null } {
  for (const name of ["fromEpoch", "toEpoch"] as const) {
    const v = range[name];
    if (v !== undefined && (typeof v !== "bigint" || v < 0n || v >= U256_LIMIT)) {
      invalid(op, `${name} is ${abbreviate(String(v), 40)}, expected an epoch (a bigint ≥ 0)`);
    }
  }
  return {
    from: range.fromEpoch === undefined ? null : String(range.fromEpoch),
    to: range.toEpoch === undefined ? null : String(range.toEpoch),
  };
}

function paged<T extends { epoch: bigint }>(items: T[], limit: number): Page<T> {
  if (items.length <= limit) return { items, next: null };
  const page = items.slice(0, limit);
  return { items: page, next: page[page.length - 1].epoch };
}

const SUMS = "amount::text AS amount, tokens::text AS tokens, settlements::text AS settlements";

function bucketOf(row: SqlRow, where: string): SettlementBucket {
  return {
    provider: address(row, "provider", where),
    epoch: big(row, "epoch", where),
    amount: big(row, "amount", where),
    tokens: big(row, "tokens", where),
    settlements: int(row, "settlements", where),
  };
}

/** Network-wide confirmed volume per epoch, a page at a time. */
export async function readEpochs(
  query: SqlQuery,
  ctx: Ctx,
  page: PageOptions,
): Promise<Page<EpochTotals>> {
  const { limit, after, desc } = checkPage("read the epochs", page);
  const rows = await query(
    `SELECT epoch::text AS epoch, ${SUMS}, providers::text AS providers,
       signed_amount::text AS signed_amount, signed_settlements::text AS signed_settlements,
       consumers::text AS consumers FROM ${ctx.schema}.epoch_totals t
     WHERE $1::numeric IS NULL OR t.epoch ${desc ? "<" : ">"} $1::numeric
     ORDER BY t.epoch ${desc ? "DESC" : "ASC"} LIMIT $2`,
    [after === undefined ? null : String(after), String(limit + 1)],
  );
  return paged(
    rows.map((row) => ({
      epoch: big(row, "epoch", ctx.where),
      amount: big(row, "amount", ctx.where),
      tokens: big(row, "tokens", ctx.where),
      settlements: int(row, "settlements", ctx.where),
      providers: int(row, "providers", ctx.where),
      signedAmount: big(row, "signed_amount", ctx.where),
      signedSettlements: int(row, "signed_settlements", ctx.where),
      consumers: int(row, "consumers", ctx.where),
    })),
    limit,
  );
}

/** One provider's confirmed volume per epoch, a page at a time. */
export async function readProviderHistory(
  query: SqlQuery,
  ctx: Ctx,
  provider: Hex,
  page: PageOptions,
): Promise<Page<SettlementBucket>> {
  const { limit, after, desc } = checkPage("read a provider's history", page);
  const rows = await query(
    `SELECT provider, epoch::text AS epoch, ${SUMS} FROM ${ctx.schema}.buckets t
     WHERE t.provider = $1 AND ($2::numeric IS NULL OR t.epoch ${desc ? "<" : ">"} $2::numeric)
     ORDER BY t.epoch ${desc ? "DESC" : "ASC"} LIMIT $3`,
    [provider, after === undefined ? null : String(after), String(limit + 1)],
  );
  return paged(rows.map((row) => bucketOf(row, ctx.where)), limit);
}

/**
 * Runs a large read as one JSON text (`json_agg` of one array per row) and returns its rows
 * keyed by `columns`: PGlite decodes one big value far faster than many rows (80,000 buckets:
 * about 0.27 s instead of 0.65 s), and a server sends one message instead of many.
 */
async function bulk(
  query: SqlQuery,
  columns: Record<string, string>,
  from: string,
  order: string,
  params: SqlParam[],
): Promise<SqlRow[]> {
  const names = Object.keys(columns);
  const rows = await query(
    `SELECT coalesce(json_agg(json_build_array(${
      Object.values(columns).join(", ")
    }) ORDER BY ${order}), '[]')::text AS j ${from}`,
    params,
  );
  const arrays = JSON.parse(rows[0]?.j ?? "[]") as (string | null)[][];
  return arrays.map((values) => Object.fromEntries(names.map((name, i) => [name, values[i]])));
}

const IN_RANGE = "($1::numeric IS NULL OR t.epoch >= $1::numeric) AND " +
  "($2::numeric IS NULL OR t.epoch <= $2::numeric)";

/** Every provider's confirmed totals over a range of epochs (all time without one). */
export async function readProviderTotals(
  query: SqlQuery,
  ctx: Ctx,
  range: EpochRange,
): Promise<ProviderTotals[]> {
  const { from, to } = checkRange("read the provider totals", range);
  const columns = {
    provider: "t.provider",
    amount: "t.amount::text",
    tokens: "t.tokens::text",
    settlements: "t.settlements::text",
    epochs: "t.epochs::text",
    first_epoch: "t.first_epoch::text",
    last_epoch: "t.last_epoch::text",
  };
  const source = from === null && to === null
    ? `FROM ${ctx.schema}.provider_totals t`
    : `FROM (SELECT t.provider, sum(t.amount) AS amount, sum(t.tokens) AS tokens,
         sum(t.settlements) AS settlements, count(*) AS epochs, min(t.epoch) AS first_epoch,
         max(t.epoch) AS last_epoch
       FROM ${ctx.schema}.buckets t WHERE ${IN_RANGE} GROUP BY t.provider) t`;
  const rows = await bulk(
    query,
    columns,
    source,
    `t.provider COLLATE "C"`,
    from === null && to === null ? [] : [from, to],
  );
  return rows.map((row) => ({
    provider: address(row, "provider", ctx.where),
    amount: big(row, "amount", ctx.where),
    tokens: big(row, "tokens", ctx.where),
    settlements: int(row, "settlements", ctx.where),
    epochs: int(row, "epochs", ctx.where),
    firstEpoch: big(row, "first_epoch", ctx.where),
    lastEpoch: big(row, "last_epoch", ctx.where),
  }));
}

/** Every confirmed bucket in a range of epochs, by provider, then epoch. */
export async function readBuckets(
  query: SqlQuery,
  ctx: Ctx,
  range: EpochRange,
): Promise<SettlementBucket[]> {
  const { from, to } = checkRange("read the buckets", range);
  const columns = {
    provider: "t.provider",
    epoch: "t.epoch::text",
    amount: "t.amount::text",
    tokens: "t.tokens::text",
    settlements: "t.settlements::text",
  };
  const rows = await bulk(
    query,
    columns,
    `FROM ${ctx.schema}.buckets t WHERE ${IN_RANGE}`,
    `t.provider COLLATE "C", t.epoch`,
    [from, to],
  );
  return rows.map((row) => bucketOf(row, ctx.where));
}

/** The cursor, the window and the meta record. */
export async function readState(
  query: SqlQuery,
  ctx: Ctx,
  identity: StoreIdentity,
  schemaVersion: number,
): Promise<StoreState> {
  const rows = await query(
    `SELECT ${CURSOR_COLUMNS},
       (SELECT count(*) FROM ${ctx.schema}.window_blocks)::text AS window_blocks,
       (SELECT min(block) FROM ${ctx.schema}.window_blocks)::text AS window_from,
       (SELECT max(block) FROM ${ctx.schema}.window_blocks)::text AS window_to,
       (SELECT coalesce(sum(settlements), 0) FROM ${ctx.schema}.window_deltas)::text AS window_settlements
     FROM ${ctx.schema}.cursor`,
  );
  const row = rows[0];
  return {
    identity,
    schemaVersion,
    cursor: cursorOf(row, ctx.where),
    window: {
      blocks: int(row, "window_blocks", ctx.where),
      settlements: int(row, "window_settlements", ctx.where),
      from: bigOrNull(row, "window_from", ctx.where),
      to: bigOrNull(row, "window_to", ctx.where),
    },
    updatedAt: row.updated_ms === null ? null : new Date(int(row, "updated_ms", ctx.where)),
  };
}
