/**
 * The worker that runs the embedded store's PGlite (`_embedded.ts` starts it). PGlite is
 * PostgreSQL compiled to WebAssembly and runs on the thread that calls it: creating a store
 * costs seconds of CPU (its `initdb`), reopening one about two, and a large commit or read
 * tens of milliseconds. Here they never block the thread that serves HTTP.
 *
 * It answers the requests of `_embedded_protocol.ts`, each with one reply. Statements and
 * transactions go through PGlite's own `query` and `transaction`, whose locks keep them from
 * interleaving: a statement outside the open transaction waits for it to end.
 *
 * @module
 */

import { PGlite, type Transaction } from "@electric-sql/pglite";
import {
  type OpenStage,
  toWire,
  type WorkerReply,
  type WorkerRequest,
} from "./_embedded_protocol.ts";
import type { SqlParam, SqlRow } from "./_sql.ts";

/** The part of the worker's global scope used here. */
interface WorkerScope {
  onmessage: ((event: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(message: WorkerReply): void;
}

const scope = globalThis as unknown as WorkerScope;

/**
 * WAL written since the last checkpoint after which the store runs one. PGlite is a single
 * backend without PostgreSQL's checkpointer process: without this, its WAL grows for as long
 * as the process runs (about 32 MiB per 100,000 settlements), and a restart after a crash
 * replays all of it.
 */
const CHECKPOINT_AFTER_BYTES = 32 * 2 ** 20;

/** Lines PGlite printed last, for error messages. */
const tail: string[] = [];
const keep = (text: string): boolean => {
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    tail.push(line);
    if (tail.length > 20) tail.shift();
  }
  return true;
};

/** PostgreSQL's own words on why it stopped: its FATAL, PANIC, DETAIL and ERROR lines. */
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

function startPglite(pgdata: string): Promise<PGlite> {
  return PGlite.create(pgdata, { onStderr: keep, onStdout: keep });
}

/** Creates a new PGlite data directory atomically: built aside, then renamed into place. */
async function createPgdata(pgdata: string): Promise<void> {
  const building = `${pgdata}.new`;
  await Deno.remove(building, { recursive: true }).catch(() => {});
  const db = await startPglite(building);
  // Keep 32–64 MiB of WAL after a checkpoint instead of 80 MiB–1 GiB (from the next start on).
  await db.query("ALTER SYSTEM SET min_wal_size = '32MB'");
  await db.query("ALTER SYSTEM SET max_wal_size = '64MB'");
  await db.close();
  await Deno.rename(building, pgdata);
}

/** An open transaction: its handle, and how to end it. */
interface OpenTransaction {
  tx: Transaction;
  end(commit: boolean): void;
  /** Settles when PGlite committed or rolled back. */
  ended: Promise<void>;
}

let db: PGlite | undefined;
const transactions = new Map<number, OpenTransaction>();
let nextTx = 0;

function database(): PGlite {
  if (!db) throw new Error("the embedded store is not open");
  return db;
}

async function open(pgdata: string, wipe: boolean): Promise<WorkerReply | undefined> {
  let stage: OpenStage = "create";
  try {
    if (wipe) await Deno.remove(pgdata, { recursive: true }).catch(() => {});
    if (!(await exists(pgdata))) await createPgdata(pgdata);
    stage = "start";
    db = await startPglite(pgdata);
    return undefined;
  } catch (error) {
    return { id: 0, ok: false, error: toWire(error), stage, reasons: reasonLines(tail) };
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
async function begin(): Promise<number> {
  let entered!: (tx: Transaction) => void;
  const inside = new Promise<Transaction>((resolve) => (entered = resolve));
  let end!: (commit: boolean) => void;
  const decided = new Promise<boolean>((resolve) => (end = resolve));
  const ended = database().transaction(async (tx) => {
    entered(tx);
    if (!(await decided)) await tx.rollback();
  });
  // A transaction that fails before it starts rejects `ended` without entering.
  const tx = await Promise.race([inside, ended.then(() => inside)]);
  const id = ++nextTx;
  transactions.set(id, { tx, end, ended });
  return id;
}

async function checkpointIfDue(): Promise<void> {
  const [row] = await rows(
    database(),
    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::bigint::text AS bytes " +
      "FROM pg_control_checkpoint()",
    [],
  );
  if (Number(row?.bytes) > CHECKPOINT_AFTER_BYTES) await database().exec("CHECKPOINT");
}

async function finish(id: number, commit: boolean): Promise<void> {
  const open = transactions.get(id);
  if (!open) throw new Error(`no open transaction ${id}`);
  transactions.delete(id);
  open.end(commit);
  await open.ended;
  if (commit) await checkpointIfDue();
}

async function handle(request: WorkerRequest): Promise<WorkerReply> {
  const { id } = request;
  try {
    switch (request.op) {
      case "open": {
        const failed = await open(request.pgdata, request.wipe);
        return failed ? { ...failed, id } : { id, ok: true };
      }
      case "query": {
        const target = request.tx === undefined ? database() : transactions.get(request.tx)?.tx;
        if (!target) throw new Error(`no open transaction ${request.tx}`);
        return { id, ok: true, rows: await rows(target, request.text, request.params) };
      }
      case "begin":
        return { id, ok: true, tx: await begin() };
      case "end":
        await finish(request.tx, request.commit);
        return { id, ok: true };
      case "close":
        await db?.close();
        db = undefined;
        return { id, ok: true };
    }
  } catch (error) {
    return { id, ok: false, error: toWire(error) };
  }
}

scope.onmessage = (event) => {
  void handle(event.data).then((reply) => scope.postMessage(reply));
};
