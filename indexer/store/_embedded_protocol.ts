/**
 * The messages between the embedded stores' sessions (`_embedded.ts` and `_embedded_host.ts`,
 * on the caller's side) and the process that runs PGlite (`_embedded_process.ts`,
 * `_embedded_engine.ts`), one JSON line each way. Every request carries an `id`; the process
 * answers each with exactly one {@linkcode WorkerReply} of the same `id`.
 *
 * @module
 */

import type { SqlParam, SqlRow } from "./_sql.ts";

/**
 * What the store process is asked to do. It holds every embedded store of the process: `open`
 * answers with the new database's `db` number, which the other requests name.
 */
export type WorkerRequest =
  /**
   * Start PGlite on `pgdata` (created first when missing, as `pgdata.new` renamed into place;
   * deleted first when `wipe`). A new data directory is unpacked from the template cached in
   * `templateDir` (`_template.ts`; none: `initdb` every time). With `createOnly`, only create
   * it: when no template is cached yet, making one (PostgreSQL's `initdb`) touches hundreds of
   * MiB of WebAssembly memory that no later work needs, so it runs in a process of its own that
   * ends afterwards.
   */
  | {
    id: number;
    op: "open";
    pgdata: string;
    wipe: boolean;
    createOnly?: boolean;
    templateDir?: string;
    /** The number the database gets (the host's; the same when a new process opens it again). */
    db?: number;
  }
  /**
   * One statement on database `db`, inside its transaction `tx` when given. `keep`: it sets up
   * the session (a session-level advisory lock), and the host runs it again when it opens the
   * database in a new process (`_embedded_host.ts`).
   */
  | {
    id: number;
    op: "query";
    db: number;
    text: string;
    params: SqlParam[];
    tx?: number;
    keep?: boolean;
  }
  /** Begin a transaction on database `db`; the reply's `tx` names it. */
  | { id: number; op: "begin"; db: number }
  /** End the transaction `tx`: commit (then checkpoint when due) or roll back. */
  | { id: number; op: "end"; tx: number; commit: boolean }
  /** Close database `db`. */
  | { id: number; op: "close"; db: number };

/** An error as it crosses the process boundary: the fields the store reads. */
export interface WireError {
  /** The error's name. */
  name: string;
  /** Its message. */
  message: string;
  /** PostgreSQL's SQLSTATE, when the database raised it. */
  code?: string;
  /** PostgreSQL's DETAIL. */
  detail?: string;
  /** PostgreSQL's HINT. */
  hint?: string;
}

/** Where an `open` failed: creating the data directory, or starting PGlite on it. */
export type OpenStage = "create" | "start";

/** The store process's answer to the request of the same `id`. */
export type WorkerReply =
  | { id: number; ok: true; rows?: SqlRow[]; tx?: number; db?: number }
  | {
    id: number;
    ok: false;
    error: WireError;
    /** For a failed `open`: the stage, and PostgreSQL's own last lines on why. */
    stage?: OpenStage;
    reasons?: string;
  };

/** Rebuilds an error the store process sent (the SQLSTATE kept where the store reads it). */
export function fromWire(wire: WireError): Error {
  const error = new Error(wire.message) as Error & Partial<WireError>;
  error.name = wire.name;
  if (wire.code !== undefined) error.code = wire.code;
  if (wire.detail !== undefined) error.detail = wire.detail;
  if (wire.hint !== undefined) error.hint = wire.hint;
  return error;
}

/** Flattens an error for {@linkcode fromWire}. */
export function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const fields = error as Error & Record<string, unknown>;
  const text = (key: string) => typeof fields[key] === "string" ? fields[key] as string : undefined;
  return {
    name: error.name,
    message: error.message,
    code: text("code"),
    detail: text("detail"),
    hint: text("hint"),
  };
}
