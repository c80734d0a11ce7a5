/**
 * What runs the embedded stores' PGlite, in the store's process (`_embedded_process.ts`, which
 * `_embedded_host.ts` starts). PGlite is PostgreSQL compiled to WebAssembly and runs on the
 * thread that calls it: creating a store costs seconds of CPU (its `initdb`), opening one a
 * fraction of a second once the WebAssembly is compiled and warm, and a large commit or read
 * tens of milliseconds. In a process of their own they never block the thread that serves
 * HTTP, and all their memory leaves with that process.
 *
 * {@linkcode handle} answers the requests of `_embedded_protocol.ts`, each with one reply.
 * Statements and transactions go through each database's own `query` and `transaction`, whose
 * locks keep them from interleaving: a statement outside the open transaction waits for it to
 * end.
 *
 * @module
 */

import { PGlite, type Transaction } from "@electric-sql/pglite";
import { dirname } from "node:path";
import {
  type OpenStage,
  toWire,
  type WorkerReply,
  type WorkerRequest,
} from "./_embedded_protocol.ts";
import type { SqlParam, SqlRow } from "./_sql.ts";
import { pathExists } from "./_path_exists.ts";
import { createFromTemplate, type Made, MEMORY_SETTINGS } from "./_template.ts";

/**
 * WAL written since the last checkpoint after which the store runs one. PGlite is a single
 * backend without PostgreSQL's checkpointer process: without this, its WAL grows for as long
 * as the process runs (about 32 MiB per 100,000 settlements), and a restart after a crash
 * replays all of it.
 */
const CHECKPOINT_AFTER_BYTES = 32 * 2 ** 20;

/** Lines PGlite printed last, for error messages. */
class Tail {
  readonly lines: string[] = [];
  keep = (text: string): boolean => {
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      this.lines.push(line);
      if (this.lines.length > 20) this.lines.shift();
    }
    return true;
  };
}

/** PostgreSQL's own words on why it stopped: its FATAL, PANIC, DETAIL and ERROR lines. */
function reasonLines(lines: readonly string[]): string {
  const reasons = lines.filter((line) => /\b(FATAL|PANIC|DETAIL|ERROR):/.test(line));
  return (reasons.length > 0 ? reasons : lines.slice(-3))
    .map((line) => line.replace(/^\S+ \S+ \S+ \[\d+\] /, ""))
    .join(" | ");
}

function startPglite(pgdata: string, tail: Tail): Promise<PGlite> {
  return PGlite.create(pgdata, { onStderr: tail.keep, onStdout: tail.keep });
}

/**
 * Creates a new PGlite data directory atomically: built aside (from the cached template,
 * `_template.ts`, or that template made again when `remake`), then renamed into place.
 */
async function createPgdata(
  pgdata: string,
  templateDir: string | undefined,
  tail: Tail,
  remake = false,
): Promise<Made> {
  const building = `${pgdata}.new`;
  await Deno.remove(building, { recursive: true }).catch(() => {});
  const made = await createFromTemplate(building, templateDir, tail.keep, remake);
  await Deno.rename(building, pgdata);
  return made;
}

/**
 * Starts PGlite on `pgdata`. A store just unpacked from the cached template that PostgreSQL
 * cannot start on (a template made by another PostgreSQL, or damaged inside its files) is made
 * again, from a template made again, and started once more.
 */
async function startOrRemake(
  pgdata: string,
  made: Made | undefined,
  templateDir: string | undefined,
  tail: Tail,
): Promise<PGlite> {
  try {
    return await startPglite(pgdata, tail);
  } catch (error) {
    if (made !== "from the cached template") throw error;
  }
  await Deno.remove(pgdata, { recursive: true });
  await createPgdata(pgdata, templateDir, tail, true);
  return await startPglite(pgdata, tail);
}

/** Applies the memory settings (from the next start on) to a store made before them. */
async function setMemory(db: PGlite): Promise<void> {
  for (const statement of MEMORY_SETTINGS) await db.query(statement);
}

/** An open transaction: its handle, and how to end it. */
interface OpenTransaction {
  db: number;
  tx: Transaction;
  end(commit: boolean): void;
  /** Settles when PGlite committed or rolled back. */
  ended: Promise<void>;
}

/** An open database, and the lock that keeps every other store process off its directory. */
interface OpenDatabase {
  pglite: PGlite;
  lock: Deno.FsFile;
}

const databases = new Map<number, OpenDatabase>();
const transactions = new Map<number, OpenTransaction>();
let nextDb = 0;
let nextTx = 0;

function database(db: number): PGlite {
  const found = databases.get(db);
  if (!found) throw new Error(`the embedded store ${db} is not open`);
  return found.pglite;
}

/**
 * Takes an exclusive `flock` of the data directory itself (the one holding `pgdata/`), waiting
 * while another store process holds it. The caller's `LOCK` file keeps other indexers off the
 * directory; this one covers the moment after a caller died (`kill -9`): its store process
 * finishes the statement in hand and exits when it reads the end of its input, and the next
 * caller's store process must not start PostgreSQL on the same files before then.
 */
async function lockPgdata(pgdata: string): Promise<Deno.FsFile> {
  const file = await Deno.open(dirname(pgdata), { read: true });
  try {
    await file.lock(true);
    return file;
  } catch (error) {
    file.close();
    throw error;
  }
}

async function open(
  id: number,
  pgdata: string,
  wipe: boolean,
  createOnly: boolean,
  templateDir: string | undefined,
  as: number | undefined,
): Promise<WorkerReply> {
  let stage: OpenStage = "create";
  const tail = new Tail();
  let lock: Deno.FsFile | undefined;
  try {
    lock = await lockPgdata(pgdata);
    if (wipe) await Deno.remove(pgdata, { recursive: true }).catch(() => {});
    const made = await pathExists(pgdata)
      ? undefined
      : await createPgdata(pgdata, templateDir, tail);
    if (createOnly) {
      lock.close();
      return { id, ok: true };
    }
    // A store just made that does not start is this process's failure, not the files'.
    if (made === undefined) stage = "start";
    const started = await startOrRemake(pgdata, made, templateDir, tail);
    // Stores made before the memory settings get them (for their next start).
    const [row] = await rows(started, "SHOW shared_buffers", []);
    if (row?.shared_buffers !== "4MB") await setMemory(started);
    const db = as ?? ++nextDb;
    databases.set(db, { pglite: started, lock });
    return { id, ok: true, db };
  } catch (error) {
    lock?.close();
    return { id, ok: false, error: toWire(error), stage, reasons: reasonLines(tail.lines) };
  }
}

async function rows(
  target: Pick<PGlite, "query">,
  text: string,
  params: SqlParam[],
): Promise<SqlRow[]> {
  return (await target.query<SqlRow>(text, params)).rows;
}

/** Begins a transaction: resolves once PGlite has entered it (`BEGIN` ran). */
async function begin(db: number): Promise<number> {
  let entered!: (tx: Transaction) => void;
  const inside = new Promise<Transaction>((resolve) => (entered = resolve));
  let end!: (commit: boolean) => void;
  const decided = new Promise<boolean>((resolve) => (end = resolve));
  const ended = database(db).transaction(async (tx) => {
    entered(tx);
    if (!(await decided)) await tx.rollback();
  });
  // A transaction that fails before it starts rejects `ended` without entering.
  const tx = await Promise.race([inside, ended.then(() => inside)]);
  const id = ++nextTx;
  transactions.set(id, { db, tx, end, ended });
  return id;
}

async function checkpointIfDue(db: PGlite): Promise<void> {
  const [row] = await rows(
    db,
    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::bigint::text AS bytes " +
      "FROM pg_control_checkpoint()",
    [],
  );
  if (Number(row?.bytes) > CHECKPOINT_AFTER_BYTES) await db.exec("CHECKPOINT");
}

async function finish(id: number, commit: boolean): Promise<void> {
  const open = transactions.get(id);
  if (!open) throw new Error(`no open transaction ${id}`);
  transactions.delete(id);
  open.end(commit);
  await open.ended;
  if (commit) await checkpointIfDue(database(open.db));
}

/** Answers one request (several may run at once; each database's locks order them). */
export async function handle(request: WorkerRequest): Promise<WorkerReply> {
  const { id } = request;
  try {
    switch (request.op) {
      case "open":
        return await open(
          id,
          request.pgdata,
          request.wipe,
          request.createOnly ?? false,
          request.templateDir,
          request.db,
        );
      case "query": {
        const target = request.tx === undefined
          ? database(request.db)
          : transactions.get(request.tx)?.tx;
        if (!target) throw new Error(`no open transaction ${request.tx}`);
        return { id, ok: true, rows: await rows(target, request.text, request.params) };
      }
      case "begin":
        return { id, ok: true, tx: await begin(request.db) };
      case "end":
        await finish(request.tx, request.commit);
        return { id, ok: true };
      case "close": {
        const db = databases.get(request.db);
        databases.delete(request.db);
        try {
          await db?.pglite.close();
        } finally {
          db?.lock.close();
        }
        return { id, ok: true };
      }
    }
  } catch (error) {
    return { id, ok: false, error: toWire(error) };
  }
}
