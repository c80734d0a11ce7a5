/**
 * The embedded backend: PGlite (PostgreSQL compiled to WebAssembly) in a data directory. No
 * server, no native build.
 *
 * PGlite runs in a process of its own (`_embedded_process.ts`, one per indexer,
 * `_embedded_host.ts`): WebAssembly runs on the thread that calls it, and creating a store
 * costs seconds of CPU, during which the indexer's thread must go on answering `/health`; and
 * a process that ends gives back all of PGlite's memory, which a thread that ends does not.
 * This side holds the directory lock and speaks to that process through
 * `_embedded_protocol.ts`; a process that dies makes every later statement fail, and the store
 * reports the connection lost (the history then reopens it, in a new process).
 *
 * Layout of the data directory (created with mode 0700 when missing):
 * - `LOCK`: held with an exclusive `flock` while a process has the store open, so a second
 *   process fails at once with a clear error; the kernel releases it when the holder dies,
 *   even by `kill -9`. It holds the holder's pid, for the message. The directory itself is
 *   `flock`-ed by the store process while PGlite runs on `pgdata/`: a store process whose
 *   caller died (it exits when it sees its input end) is gone before the next caller's starts
 *   PostgreSQL on the same files.
 * - `pgdata/`: PGlite's data directory. It is created as `pgdata.new/` and renamed when
 *   complete, so a process killed while creating it leaves nothing half-made behind.
 *
 * @module
 */

import { join } from "node:path";
import { StoreError } from "./errors.ts";
import { PgliteHost } from "./_embedded_host.ts";
import { pathExists } from "./_path_exists.ts";
import { defaultTemplateDir, templateFile } from "./_template_dir.ts";
import { fromWire, toWire, type WorkerReply } from "./_embedded_protocol.ts";
import type { SqlParam, SqlQuery, SqlSession } from "./_sql.ts";

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0];
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

/**
 * A statement that takes a session-level advisory lock (the writer lock): a session's state,
 * taken again when the store's process starts anew after an idle end (`_embedded_host.ts`).
 */
const SESSION_LOCK = /\bpg_(try_)?advisory_lock\(/;

function session(host: PgliteHost, db: number): SqlSession {
  const run = (tx?: number): SqlQuery => async (text, params = []) =>
    (await host.call({
      op: "query",
      db,
      text,
      params: [...params] as SqlParam[],
      tx,
      keep: tx === undefined && SESSION_LOCK.test(text),
    })).rows ??
      [];
  return {
    query: run(),
    async transaction(work) {
      const { tx } = await host.call({ op: "begin", db });
      let result;
      try {
        result = await work(run(tx));
      } catch (error) {
        await host.call({ op: "end", tx: tx!, commit: false }).catch(() => {});
        throw error;
      }
      // Commits, then runs a checkpoint when enough WAL was written since the last one.
      await host.call({ op: "end", tx: tx!, commit: true });
      return result;
    },
    close: async () => {
      await host.call({ op: "close", db });
    },
  };
}

/**
 * Whether a template is cached in `templateDir`: its file is there (whether it is usable is found
 * by using it); a cache that cannot be looked into has none.
 */
async function templateCached(templateDir: string | undefined): Promise<boolean> {
  if (templateDir === undefined) return false;
  return await pathExists(await templateFile(templateDir)).catch(() => false);
}

/** Why the store process could not open the store: `corrupt` when PGlite cannot start on the files. */
function openFailure(dataDir: string, pgdata: string, reply: WorkerReply): StoreError {
  const cause = reply.ok ? new Error("the store process named no database") : fromWire(reply.error);
  if (!reply.ok && reply.stage === "start") {
    return new StoreError(
      "corrupt",
      `Cannot open the history store at ${dataDir}: PGlite cannot start on ${pgdata}: ${
        firstLine(cause)
      }`,
      {
        details: reply.reasons || undefined,
        hints: ["Rebuild it (the indexer's rebuild flag) to rescan the history from the chain."],
        cause,
      },
    );
  }
  return new StoreError(
    "unreachable",
    `Cannot open the history store at ${dataDir}: ${firstLine(cause)}`,
    { cause },
  );
}

/** An open embedded backend: the session and what `close` must release. */
export interface EmbeddedBackend {
  /** The SQL session. */
  session: SqlSession;
  /** Releases PGlite and the directory lock. */
  close(): Promise<void>;
  /** Why the process that runs PGlite stopped, once it did (it crashed or exited). */
  broken(): Error | undefined;
}

/** Options of {@linkcode openEmbedded}. */
export interface OpenEmbeddedOptions {
  /** Delete an existing `pgdata/` first (a rebuild the caller asked for). */
  wipe?: boolean;
  /**
   * Where the template of new stores is cached (`_template.ts`); `false`: nowhere (`initdb`
   * for each new store).
   *
   * @default {defaultTemplateDir(Deno.env.get)} (`$XDG_CACHE_HOME/net/pglite`, else `~/.cache/net/pglite`)
   */
  templateDir?: string | false;
  /**
   * How long the store's process waits without a request before it ends, ms (the next request
   * starts it again, `_embedded_host.ts`).
   *
   * @default {10_000} (`DEFAULT_IDLE_MS` of `_embedded_host.ts`)
   */
  idleMs?: number;
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
  options: OpenEmbeddedOptions = {},
): Promise<EmbeddedBackend> {
  await ensureDir(dataDir);
  const lock = await lockDir(dataDir);
  const release = async () => {
    await lock.unlock().catch(() => {});
    lock.close();
  };
  const pgdata = join(dataDir, "pgdata");
  const wipe = options.wipe ?? false;
  const failed = (error: Error): WorkerReply => ({ id: 0, ok: false, error: toWire(error) });
  const templateDir = options.templateDir === false
    ? undefined
    : options.templateDir ?? defaultTemplateDir((name) => Deno.env.get(name));
  // A new store is unpacked from the cached template by the store process itself, which then
  // starts PostgreSQL on it once. With no template cached yet, the template is made (`initdb`)
  // and the store created in a process of its own, which then ends: PGlite's memory grows and
  // never shrinks, and `initdb` takes more of it than any later work (measured with threads:
  // 450 MiB peak in the shared one, 407 MiB apart).
  let creating = wipe || !(await pathExists(pgdata));
  if (creating && !(await templateCached(templateDir))) {
    const creator = PgliteHost.once();
    const created = await creator.request({
      op: "open",
      pgdata,
      wipe,
      createOnly: true,
      templateDir,
    }).catch(failed);
    await creator.terminate();
    if (!created.ok) {
      await release();
      throw openFailure(dataDir, pgdata, created);
    }
    creating = false;
  }
  const host = PgliteHost.shared(options.idleMs);
  const opened = await host.request({
    op: "open",
    pgdata,
    wipe: creating && wipe,
    templateDir,
  }).catch(failed);
  if (!opened.ok || opened.db === undefined) {
    await release();
    throw openFailure(dataDir, pgdata, opened);
  }
  const sql = session(host, opened.db);
  return {
    session: sql,
    broken: () => host.stopped,
    async close() {
      try {
        await sql.close();
      } finally {
        await release();
      }
    },
  };
}
