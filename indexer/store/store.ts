/**
 * `openStore`: the persistent settlement history, embedded (PGlite in a data directory) or on a
 * PostgreSQL server, behind one {@linkcode HistoryStore} and one code path: the same schema,
 * migrations and SQL on both.
 *
 * @example Open, commit a chunk, read it back
 * ```ts ignore
 * import { openStore } from "./store.ts";
 *
 * await using store = await openStore({ dataDir: "/var/lib/net-stats" }, {
 *   chainId: 31337,
 *   escrow: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
 *   scanFromBlock: 0n,
 *   confirmations: 12,
 * });
 * const { cursor } = await store.state();
 * await store.commitChunk({
 *   from: cursor.nextBlock,
 *   to: cursor.nextBlock + 99n,
 *   head: cursor.nextBlock + 200n,
 *   settlements: [],
 *   hashes: [{ number: cursor.nextBlock + 99n, hash: "0x…" }],
 * });
 * console.log(await store.epochs({ limit: 10 }));
 * ```
 *
 * @module
 */

import { resolve } from "node:path";
import { abbreviate } from "../../errors.ts";
import { StoreError } from "./errors.ts";
import { SCHEMA_VERSION } from "./schema.ts";
import { BLOCK_LIMIT, checkAddress, checkBig, invalid } from "./_codec.ts";
import { lockCursor, planChunk, writeChunk } from "./_commit.ts";
import { openEmbedded } from "./_embedded.ts";
import { pathExists } from "./_path_exists.ts";
import {
  prepareSchema,
  type RebuildPolicy,
  TEMPLATE_SCHEMA,
  WRITER_LOCK_CLASS,
} from "./_migrate.ts";
import {
  readBuckets,
  readEpochs,
  readProviderHistory,
  readProviderTotals,
  readState,
} from "./_reads.ts";
import { reconcile, resetHistory } from "./_reorg.ts";
import { openServer, redactUrl } from "./_server.ts";
import type { SqlSession } from "./_sql.ts";
import type {
  CanonicalHashes,
  ChunkCommit,
  CommitResult,
  EpochRange,
  EpochTotals,
  Hex,
  HistoryStore,
  Page,
  PageOptions,
  ProviderTotals,
  ReconcileResult,
  SettlementBucket,
  StoreCursor,
  StoreIdentity,
  StoreState,
} from "./types.ts";

export type { RebuildPolicy } from "./_migrate.ts";

/** Where the store lives: a data directory (embedded) or a PostgreSQL URL. */
export type StoreLocation = { dataDir: string } | { databaseUrl: string };

/** Options of {@linkcode openStore}: the identity the store must have, and how to open it. */
export interface OpenStoreOptions extends StoreIdentity {
  /**
   * Confirmation depth, blocks: settlements in blocks above `head − confirmations` stay in the
   * window until they are that deep.
   *
   * @default {12}
   */
  confirmations?: number;
  /**
   * When to discard what is stored and start a new store: `never` (a corrupt, newer or other
   * chain's store is an error), `if_unusable` (rebuild instead of those errors), or `always`.
   * A rebuild on PostgreSQL needs the writer lock.
   *
   * @default {"never"}
   */
  rebuild?: RebuildPolicy;
  /**
   * The PostgreSQL schema that holds the tables (lower-case letters, digits, `_`), so one
   * database can hold several stores.
   *
   * @default {"net_history"}
   */
  schema?: string;
  /**
   * Time allowed to connect to a PostgreSQL server, milliseconds.
   *
   * @default {10_000}
   */
  connectTimeoutMs?: number;
  /**
   * Receives one line when a store is created, migrated or rebuilt.
   *
   * @default {console.error}
   */
  log?: (line: string) => void;
}

/** The default PostgreSQL schema of the store. */
export const DEFAULT_SCHEMA = "net_history";

interface Backend {
  session: SqlSession;
  close(): Promise<void>;
  broken(): Error | undefined;
}

function checkOptions(
  options: OpenStoreOptions,
): Required<Pick<OpenStoreOptions, "confirmations" | "rebuild" | "schema">> & {
  identity: StoreIdentity;
} {
  const op = "open the history store";
  if (!Number.isSafeInteger(options.chainId) || options.chainId < 1) {
    invalid(op, `chainId is ${options.chainId}, expected a positive integer`);
  }
  const escrow = checkAddress(op, "escrow", options.escrow);
  const scanFromBlock = checkBig(op, "scanFromBlock", options.scanFromBlock, BLOCK_LIMIT);
  const confirmations = options.confirmations ?? 12;
  if (!Number.isSafeInteger(confirmations) || confirmations < 0 || confirmations > 1_000_000) {
    invalid(op, `confirmations is ${confirmations}, expected an integer from 0 to 1000000`);
  }
  const rebuild = options.rebuild ?? "never";
  if (!["never", "if_unusable", "always"].includes(rebuild)) {
    invalid(
      op,
      `rebuild is ${JSON.stringify(rebuild)}, expected "never", "if_unusable" or "always"`,
    );
  }
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (
    typeof schema !== "string" || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema) ||
    schema.startsWith("pg_") || schema.startsWith("net_template_")
  ) {
    invalid(
      op,
      `schema is ${
        abbreviate(JSON.stringify(schema) ?? "", 40)
      }, expected lower-case letters, digits and _, not starting with pg_ or net_template_ (the embedded store's template, \`${TEMPLATE_SCHEMA}\`)`,
    );
  }
  return {
    identity: { chainId: options.chainId, escrow, scanFromBlock },
    confirmations,
    rebuild,
    schema,
  };
}

async function openBackend(
  location: StoreLocation,
  rebuild: RebuildPolicy,
  options: OpenStoreOptions,
): Promise<{ backend: Backend; kind: "embedded" | "postgres"; where: string; wiped?: string }> {
  if ("dataDir" in location && typeof location.dataDir === "string" && location.dataDir !== "") {
    const where = resolve(location.dataDir);
    let wiped: string | undefined;
    let embedded;
    try {
      embedded = await openEmbedded(where);
    } catch (error) {
      // Files PGlite cannot start on: the only case where the directory itself is replaced;
      // every other rebuild drops the schema, the same on both backends.
      if (!(error instanceof StoreError) || error.reason !== "corrupt" || rebuild === "never") {
        throw error;
      }
      wiped = error.shortMessage;
      embedded = await openEmbedded(where, { wipe: true });
    }
    return { backend: embedded, kind: "embedded", where, wiped };
  }
  if ("databaseUrl" in location && typeof location.databaseUrl === "string") {
    const server = await openServer(location.databaseUrl, {
      connectTimeoutMs: options.connectTimeoutMs,
    });
    return {
      backend: {
        session: server.session,
        close: () => server.session.close(),
        broken: server.broken,
      },
      kind: "postgres",
      where: redactUrl(location.databaseUrl),
    };
  }
  return invalid("open the history store", "the location must be {dataDir} or {databaseUrl}");
}

/**
 * Whether a store may already be at `location`, found without opening it: an embedded one
 * when its data directory holds PostgreSQL's files (`pgdata/`); on a server it cannot be known
 * without connecting (`true`). `false` means that opening it creates a new, empty store (the
 * indexer then starts its first scan while the store is being created).
 */
export async function storeMayExist(location: StoreLocation): Promise<boolean> {
  if ("databaseUrl" in location) return true;
  return await pathExists(resolve(location.dataDir, "pgdata")).catch(() => true);
}

/**
 * Opens the settlement history at `location`, creating it when missing, migrating it when
 * older, and checking it belongs to the chain, Escrow and first block of `options`. It tries to
 * take the writer lock once ({@linkcode HistoryStore.writer}); the embedded store always has
 * it (its data directory is locked to this process).
 *
 * @throws {StoreError} `invalid_input` (options), `unreachable`, `locked`, `corrupt`,
 * `newer_schema`, `mismatch`.
 */
export async function openStore(
  location: StoreLocation,
  options: OpenStoreOptions,
): Promise<HistoryStore> {
  const checked = checkOptions(options);
  const log = options.log ?? ((line: string) => console.error(line));
  const { backend, kind, where, wiped } = await openBackend(location, checked.rebuild, options);
  try {
    const store = new SqlHistoryStore(backend, {
      kind,
      where,
      identity: checked.identity,
      schema: checked.schema,
      confirmations: checked.confirmations,
    });
    const writer = await store.tryBecomeWriter();
    const prepared = await prepareSchema(backend.session, {
      schema: checked.schema,
      identity: checked.identity,
      where,
    }, {
      rebuild: checked.rebuild,
      canRebuild: writer,
    });
    const reason = wiped ?? prepared.reason;
    if (prepared.outcome === "migrated") {
      log(
        `history store: migrated ${where} from schema version ${prepared.from} to ${SCHEMA_VERSION}`,
      );
    } else if (prepared.outcome === "rebuilt" || wiped) {
      log(
        `history store: rebuilt ${where} (${reason}); the history is scanned again from block ${checked.identity.scanFromBlock}`,
      );
    } else if (prepared.outcome === "created") {
      log(`history store: created ${where} (schema version ${SCHEMA_VERSION})`);
    }
    return store;
  } catch (error) {
    await backend.close().catch(() => {});
    if (error instanceof StoreError) throw error;
    throw failure("open the history store", where, error);
  }
}

function failure(op: string, where: string, error: unknown, broken?: Error): StoreError {
  const text = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n")[0];
  const code = (error as { code?: unknown })?.code;
  if (broken) {
    return new StoreError(
      "failed",
      `Cannot ${op}: the connection to ${where} was lost: ${text(broken)}`,
      {
        cause: error,
        hints: ["Reopen the store; a replica that was not the writer may have taken over."],
      },
    );
  }
  return new StoreError(
    "failed",
    `Cannot ${op} in the history store at ${where}: ${text(error)}${
      typeof code === "string" ? ` (SQLSTATE ${code})` : ""
    }`,
    { cause: error },
  );
}

interface StoreContext {
  kind: "embedded" | "postgres";
  where: string;
  identity: StoreIdentity;
  schema: string;
  confirmations: number;
}

class SqlHistoryStore implements HistoryStore {
  readonly backend: "embedded" | "postgres";
  readonly location: string;
  readonly identity: StoreIdentity;
  readonly confirmations: number;
  readonly #backend: Backend;
  readonly #ctx: {
    schema: string;
    where: string;
    lockClass: number;
    version: number;
    scanFromBlock: bigint;
  };
  #writer = false;
  #closed: Promise<void> | undefined;

  constructor(backend: Backend, ctx: StoreContext) {
    this.#backend = backend;
    this.backend = ctx.kind;
    this.location = ctx.where;
    this.identity = ctx.identity;
    this.confirmations = ctx.confirmations;
    this.#ctx = {
      schema: ctx.schema,
      where: ctx.where,
      lockClass: WRITER_LOCK_CLASS,
      version: SCHEMA_VERSION,
      scanFromBlock: ctx.identity.scanFromBlock,
    };
  }

  get writer(): boolean {
    return this.#writer;
  }

  async #run<T>(op: string, work: (sql: SqlSession) => Promise<T>): Promise<T> {
    if (this.#closed) {
      throw new StoreError(
        "closed",
        `Cannot ${op}: the history store at ${this.location} is closed`,
      );
    }
    try {
      return await work(this.#backend.session);
    } catch (error) {
      if (error instanceof StoreError) {
        if (error.reason === "lost_lock") this.#writer = false;
        throw error;
      }
      const broken = this.#backend.broken();
      if (broken) this.#writer = false;
      throw failure(op, this.location, error, broken);
    }
  }

  #requireWriter(op: string): void {
    if (!this.#writer) {
      throw new StoreError(
        "not_writer",
        `Cannot ${op}: this process is not the writer of the history store at ${this.location}`,
        {
          hints: ["Only the process holding the writer lock scans; call tryBecomeWriter() first."],
        },
      );
    }
  }

  tryBecomeWriter(): Promise<boolean> {
    return this.#run("take the writer lock", async (sql) => {
      const rows = await sql.query(
        `SELECT (EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
            AND pid = pg_backend_pid() AND classid = $1::int4::oid
            AND objid = hashtext($2)::oid AND objsubid = 2)
          OR pg_try_advisory_lock($1::int4, hashtext($2)))::text AS held`,
        [String(this.#ctx.lockClass), this.#ctx.schema],
      );
      this.#writer = rows[0]?.held === "true";
      return this.#writer;
    });
  }

  state(): Promise<StoreState> {
    return this.#run(
      "read the state",
      (sql) => readState(sql.query, this.#ctx, this.identity, SCHEMA_VERSION),
    );
  }

  commitChunk(chunk: ChunkCommit): Promise<CommitResult> {
    return this.#run("commit the chunk", (sql) => {
      this.#requireWriter("commit the chunk");
      const plan = planChunk(chunk, this.confirmations);
      return sql.transaction(async (query) => {
        const cursor = await lockCursor(query, this.#ctx, "commit the chunk");
        return await writeChunk(query, this.#ctx, cursor, plan);
      });
    });
  }

  reconcile(canonical: CanonicalHashes): Promise<ReconcileResult> {
    return this.#run("reconcile the history with the chain", (sql) => {
      this.#requireWriter("reconcile the history with the chain");
      return reconcile(sql, this.#ctx, canonical);
    });
  }

  reset(): Promise<StoreCursor> {
    return this.#run("reset the history", (sql) => {
      this.#requireWriter("reset the history");
      return resetHistory(sql, this.#ctx);
    });
  }

  epochs(page: PageOptions = {}): Promise<Page<EpochTotals>> {
    return this.#run("read the epochs", (sql) => readEpochs(sql.query, this.#ctx, page));
  }

  providerHistory(provider: Hex, page: PageOptions = {}): Promise<Page<SettlementBucket>> {
    return this.#run("read a provider's history", (sql) => {
      const address = checkAddress("read a provider's history", "provider", provider);
      return readProviderHistory(sql.query, this.#ctx, address, page);
    });
  }

  providerTotals(range: EpochRange = {}): Promise<ProviderTotals[]> {
    return this.#run(
      "read the provider totals",
      (sql) => readProviderTotals(sql.query, this.#ctx, range),
    );
  }

  buckets(range: EpochRange): Promise<SettlementBucket[]> {
    return this.#run("read the buckets", (sql) => readBuckets(sql.query, this.#ctx, range ?? {}));
  }

  close(): Promise<void> {
    this.#writer = false;
    this.#closed ??= this.#backend.close().catch(() => {});
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
