/**
 * The embedded backend: PGlite (PostgreSQL compiled to WebAssembly) in a data directory. No
 * server, no native build.
 *
 * Layout of the data directory (created with mode 0700 when missing):
 * - `LOCK`: held with an exclusive `flock` while a process has the store open, so a second
 *   process fails at once with a clear error; the kernel releases it when the holder dies,
 *   even by `kill -9`. It holds the holder's pid, for the message.
 * - `pgdata/`: PGlite's data directory. It is created as `pgdata.new/` and renamed when
 *   complete, so a process killed while creating it leaves nothing half-made behind.
 *
 * @module
 */

import { PGlite } from "@electric-sql/pglite";
import { join } from "node:path";
import { StoreError } from "./errors.ts";
import type { SqlParam, SqlQuery, SqlRow, SqlSession } from "./_sql.ts";

/** Lines PGlite printed last, for error messages. */
class Tail {
  readonly lines: string[] = [];
  push = (text: string): boolean => {
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      this.lines.push(line);
      if (this.lines.length > 20) this.lines.shift();
    }
    return true;
  };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0];
}

/** PostgreSQL's own words on why it stopped: its FATAL, PANIC and DETAIL lines. */
function reasonLines(lines: readonly string[]): string {
  const reasons = lines.filter((line) => /\b(FATAL|PANIC|DETAIL|ERROR):/.test(line));
  return (reasons.length > 0 ? reasons : lines.slice(-3))
    .map((line) => line.replace(/^\S+ \S+ \S+ \[\d+\] /, ""))
    .join(" | ");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Creates the data directory (0700) when missing. */
async function ensureDir(dataDir: string): Promise<void> {
  try {
    const info = await Deno.stat(dataDir);
    if (!info.isDirectory) {
      throw new StoreError(
        "unreachable",
        `Cannot open the history store at ${dataDir}: it is a file, expected a directory`,
      );
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      if (error instanceof StoreError) throw error;
      throw new StoreError(
        "unreachable",
        `Cannot open the history store at ${dataDir}: ${firstLine(error)}`,
        { cause: error },
      );
    }
    try {
      await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
      await Deno.chmod(dataDir, 0o700);
    } catch (cause) {
      throw new StoreError(
        "unreachable",
        `Cannot create the history store's data directory ${dataDir}: ${firstLine(cause)}`,
        { cause },
      );
    }
  }
}

/** Takes the directory lock, or fails naming the holder. */
async function lockDir(dataDir: string): Promise<Deno.FsFile> {
  const path = join(dataDir, "LOCK");
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true, write: true, create: true, mode: 0o600 });
  } catch (cause) {
    throw new StoreError(
      "unreachable",
      `Cannot open the history store's lock file ${path}: ${firstLine(cause)}`,
      { cause },
    );
  }
  if (!(await file.tryLock(true))) {
    file.close();
    const holder = (await Deno.readTextFile(path).catch(() => "")).trim();
    throw new StoreError(
      "locked",
      `Cannot open the history store at ${dataDir}: another process${
        holder ? ` (${holder})` : ""
      } has it open; expected one process per data directory`,
      {
        hints: [
          "Stop the other indexer, or give this one its own --data-dir; " +
          "several replicas share history through PostgreSQL (--database-url).",
        ],
      },
    );
  }
  await file.truncate(0);
  await file.write(new TextEncoder().encode(`pid ${Deno.pid}\n`));
  return file;
}

async function startPglite(pgdata: string, tail: Tail): Promise<PGlite> {
  return await PGlite.create(pgdata, { onStderr: tail.push, onStdout: tail.push });
}

/**
 * WAL written since the last checkpoint after which the store runs one. PGlite is a single
 * backend without PostgreSQL's checkpointer process: without this, its WAL grows for as long
 * as the process runs (about 32 MiB per 100,000 settlements), and a restart after a crash
 * replays all of it.
 */
const CHECKPOINT_AFTER_BYTES = 32 * 2 ** 20;

/** Creates a new PGlite data directory atomically: built aside, then renamed into place. */
async function createPgdata(pgdata: string, tail: Tail): Promise<void> {
  const building = `${pgdata}.new`;
  await Deno.remove(building, { recursive: true }).catch(() => {});
  const db = await startPglite(building, tail);
  // Keep 32–64 MiB of WAL after a checkpoint instead of 80 MiB–1 GiB (from the next start on).
  await db.query("ALTER SYSTEM SET min_wal_size = '32MB'");
  await db.query("ALTER SYSTEM SET max_wal_size = '64MB'");
  await db.close();
  await Deno.rename(building, pgdata);
}

function session(db: PGlite): SqlSession {
  const run = (target: Pick<PGlite, "query">): SqlQuery => async (text, params = []) => {
    const result = await target.query<SqlRow>(text, params as SqlParam[]);
    return result.rows;
  };
  const query = run(db);
  const checkpointIfDue = async () => {
    const [row] = await query(
      "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::bigint::text AS bytes " +
        "FROM pg_control_checkpoint()",
    );
    if (Number(row?.bytes) > CHECKPOINT_AFTER_BYTES) await db.exec("CHECKPOINT");
  };
  return {
    query,
    async transaction(work) {
      const result = await db.transaction((tx) => work(run(tx)));
      await checkpointIfDue();
      return result;
    },
    close: () => db.close(),
  };
}

/** An open embedded backend: the session and what `close` must release. */
export interface EmbeddedBackend {
  /** The SQL session. */
  session: SqlSession;
  /** Releases PGlite and the directory lock. */
  close(): Promise<void>;
}

/**
 * Opens (creating when missing) the PGlite store in `dataDir`, holding its lock.
 * `wipe` deletes an existing `pgdata/` first (a rebuild the caller asked for).
 *
 * @throws {StoreError} `unreachable` (the directory cannot be made or used), `locked`,
 * `corrupt` (PGlite cannot start on what is there).
 */
export async function openEmbedded(
  dataDir: string,
  options: { wipe?: boolean } = {},
): Promise<EmbeddedBackend> {
  await ensureDir(dataDir);
  const lock = await lockDir(dataDir);
  const release = async () => {
    await lock.unlock().catch(() => {});
    lock.close();
  };
  const pgdata = join(dataDir, "pgdata");
  const tail = new Tail();
  let db: PGlite;
  try {
    if (options.wipe) await Deno.remove(pgdata, { recursive: true }).catch(() => {});
    if (!(await exists(pgdata))) await createPgdata(pgdata, tail);
    try {
      db = await startPglite(pgdata, tail);
    } catch (cause) {
      throw new StoreError(
        "corrupt",
        `Cannot open the history store at ${dataDir}: PGlite cannot start on ${pgdata}: ${
          firstLine(cause)
        }`,
        {
          details: reasonLines(tail.lines) || undefined,
          hints: ["Rebuild it (the indexer's rebuild flag) to rescan the history from the chain."],
          cause,
        },
      );
    }
  } catch (error) {
    await release();
    if (error instanceof StoreError) throw error;
    throw new StoreError(
      "unreachable",
      `Cannot open the history store at ${dataDir}: ${firstLine(error)}`,
      { cause: error },
    );
  }
  const sql = session(db);
  return {
    session: sql,
    async close() {
      try {
        await sql.close();
      } finally {
        await release();
      }
    },
  };
}
