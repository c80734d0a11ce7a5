/**
 * Opening a store's schema: create it when missing, migrate it when older, refuse it when it
 * is newer, corrupt or another chain's — or rebuild it when the caller asked for that.
 *
 * All of it runs in one transaction under a transaction-level advisory lock, so replicas that
 * start at the same moment migrate one after the other, and a process killed half-way leaves
 * the store exactly as it was (PostgreSQL's DDL is transactional).
 *
 * @module
 */

import { abbreviate } from "../../errors.ts";
import { StoreError } from "./errors.ts";
import { MIGRATIONS, SCHEMA_VERSION } from "./schema.ts";
import type { SqlQuery, SqlSession } from "./_sql.ts";
import type { StoreIdentity } from "./types.ts";

/** When to discard what is stored and start again. */
export type RebuildPolicy = "never" | "if_unusable" | "always";

/** `classid` of the advisory lock that serializes migrations ("NETM"). */
export const MIGRATION_LOCK_CLASS = 0x4e45544d;
/** `classid` of the writer's advisory lock ("NETH"). */
export const WRITER_LOCK_CLASS = 0x4e455448;

const DEFAULT_CHUNK_SIZE = 2_000;

/** What {@linkcode prepareSchema} did. */
export interface Prepared {
  /** `created` (new or rebuilt), `migrated` (from an older version), or `opened`. */
  outcome: "created" | "rebuilt" | "migrated" | "opened";
  /** The version before, when migrated. */
  from?: number;
  /** Why a rebuild happened. */
  reason?: string;
}

interface Context {
  schema: string;
  identity: StoreIdentity;
  where: string;
}

/**
 * The schema an embedded store's template holds (`_template.ts`): every table of
 * {@linkcode SCHEMA_VERSION}, empty, without its `meta` and `cursor` rows. A new store renames it
 * to its own (one catalog update instead of the migrations' DDL: measured 0.3 s on a new
 * embedded store). Named by the version, so a template of another version is never taken for
 * this one's. Not a name a store may be given (`store.ts`).
 */
export const TEMPLATE_SCHEMA = `net_template_v${SCHEMA_VERSION}`;

/** The statements that make schema `schema` at {@linkcode SCHEMA_VERSION}, its tables empty. */
export function schemaStatements(schema: string): string[] {
  return [`CREATE SCHEMA ${schema}`, ...MIGRATIONS.flatMap((m) => m.statements(schema))];
}

async function create(query: SqlQuery, ctx: Context): Promise<void> {
  const s = ctx.schema;
  const template = await query(
    `SELECT count(*)::text AS n FROM pg_namespace WHERE nspname = $1`,
    [TEMPLATE_SCHEMA],
  );
  if (template[0].n === "1") await query(`ALTER SCHEMA ${TEMPLATE_SCHEMA} RENAME TO ${s}`);
  else for (const statement of schemaStatements(s)) await query(statement);
  await query(
    `INSERT INTO ${s}.meta (schema_version, chain_id, escrow, scan_from_block) VALUES ($1, $2, $3, $4)`,
    [
      String(SCHEMA_VERSION),
      String(ctx.identity.chainId),
      ctx.identity.escrow,
      String(ctx.identity.scanFromBlock),
    ],
  );
  await query(
    `INSERT INTO ${s}.cursor (next_block, chunk_size) VALUES ($1, $2)`,
    [String(ctx.identity.scanFromBlock), String(DEFAULT_CHUNK_SIZE)],
  );
}

function unusable(reason: "corrupt" | "newer_schema" | "mismatch", ctx: Context, what: string) {
  const hints = reason === "newer_schema"
    ? ["Run the newer version of the indexer, or rebuild the store (the indexer's rebuild flag)."]
    : reason === "mismatch"
    ? [
      "Point the indexer at the store of this chain and Escrow (another --data-dir or " +
      "--database-url), or rebuild the store (the indexer's rebuild flag).",
    ]
    : ["Rebuild it (the indexer's rebuild flag) to rescan the history from the chain."];
  return new StoreError(reason, `Cannot open the history store at ${ctx.where}: ${what}`, {
    hints,
  });
}

/**
 * Inspects an existing schema: returns its version when it can be used (perhaps after
 * migrating), or the error that says why not.
 */
async function inspect(query: SqlQuery, ctx: Context): Promise<number | StoreError> {
  const s = ctx.schema;
  const tables = await query(
    `SELECT to_regclass($1)::text AS meta, to_regclass($2)::text AS cursor`,
    [`${s}.meta`, `${s}.cursor`],
  );
  if (!tables[0].meta || !tables[0].cursor) {
    return unusable(
      "corrupt",
      ctx,
      `schema ${s} exists but has no ${tables[0].meta ? "cursor" : "meta"} table`,
    );
  }
  const versions = await query(`SELECT schema_version::text AS v FROM ${s}.meta`);
  const version = Number(versions[0]?.v);
  if (versions.length !== 1 || !Number.isSafeInteger(version) || version < 1) {
    return unusable(
      "corrupt",
      ctx,
      `its meta table holds ${versions.length} rows, expected one with a schema version`,
    );
  }
  if (version > SCHEMA_VERSION) {
    return unusable(
      "newer_schema",
      ctx,
      `its schema version is ${version}, newer than this code's ${SCHEMA_VERSION}`,
    );
  }
  const meta = (await query(
    `SELECT chain_id::text AS chain_id, escrow, scan_from_block::text AS scan_from_block FROM ${s}.meta`,
  ))[0];
  const expected = ctx.identity;
  const differences: string[] = [];
  if (meta.chain_id !== String(expected.chainId)) {
    differences.push(`chain id ${meta.chain_id}, expected ${expected.chainId}`);
  }
  if (meta.escrow !== expected.escrow) {
    differences.push(`Escrow ${abbreviate(String(meta.escrow), 44)}, expected ${expected.escrow}`);
  }
  if (meta.scan_from_block !== String(expected.scanFromBlock)) {
    differences.push(`first block ${meta.scan_from_block}, expected ${expected.scanFromBlock}`);
  }
  if (differences.length > 0) {
    return unusable("mismatch", ctx, `it belongs to ${differences.join("; ")}`);
  }
  const cursors = await query(`SELECT count(*)::text AS n FROM ${s}.cursor`);
  if (cursors[0].n !== "1") {
    return unusable("corrupt", ctx, `its cursor table holds ${cursors[0].n} rows, expected 1`);
  }
  return version;
}

async function migrate(query: SqlQuery, schema: string, from: number): Promise<void> {
  for (const migration of MIGRATIONS) {
    if (migration.version <= from) continue;
    for (const statement of migration.statements(schema)) await query(statement);
    await query(`UPDATE ${schema}.meta SET schema_version = $1`, [String(migration.version)]);
  }
}

/**
 * Creates, migrates or checks the store's schema in one transaction.
 *
 * `canRebuild` says whether this session may drop the schema (it holds the writer lock); a
 * rebuild asked for without it is `locked`.
 *
 * @throws {StoreError} `corrupt`, `newer_schema`, `mismatch` (with `rebuild: "never"`), or
 * `locked` (a rebuild without the writer lock).
 */
export async function prepareSchema(
  sql: SqlSession,
  ctx: Context,
  options: { rebuild: RebuildPolicy; canRebuild: boolean },
): Promise<Prepared> {
  return await sql.transaction(async (query) => {
    await query(`SELECT pg_advisory_xact_lock($1::int4, hashtext($2))`, [
      String(MIGRATION_LOCK_CLASS),
      ctx.schema,
    ]);
    const present = await query(
      `SELECT count(*)::text AS n FROM pg_namespace WHERE nspname = $1`,
      [ctx.schema],
    );
    let why: string | undefined;
    if (present[0].n !== "0") {
      const inspected = options.rebuild === "always"
        ? "rebuild asked for"
        : await inspect(query, ctx);
      if (typeof inspected === "number") {
        if (inspected === SCHEMA_VERSION) return { outcome: "opened" };
        await migrate(query, ctx.schema, inspected);
        return { outcome: "migrated", from: inspected };
      }
      if (inspected instanceof StoreError && options.rebuild === "never") throw inspected;
      if (!options.canRebuild) {
        throw new StoreError(
          "locked",
          `Cannot rebuild the history store at ${ctx.where}: another process holds the writer lock`,
          { hints: ["Stop the writing indexer first, or rebuild from it."] },
        );
      }
      why = typeof inspected === "string" ? inspected : inspected.shortMessage;
      await query(`DROP SCHEMA ${ctx.schema} CASCADE`);
    }
    await create(query, ctx);
    return why ? { outcome: "rebuilt", reason: why } : { outcome: "created" };
  });
}
