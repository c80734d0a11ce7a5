/**
 * The embedded backend: PGlite (PostgreSQL compiled to WebAssembly) in a data directory. No
 * server, no native build.
 *
 * PGlite runs in a worker of its own (`_embedded_worker.ts`): WebAssembly runs on the thread
 * that calls it, and creating a store costs seconds of CPU, during which the indexer's thread
 * must go on answering `/health`. This side holds the directory lock and speaks to the worker
 * through `_embedded_protocol.ts`; a worker that dies makes every later statement fail, and the
 * store reports the connection lost (the history then reopens it).
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

import { join } from "node:path";
import { StoreError } from "./errors.ts";
import { fromWire, type WorkerReply, type WorkerRequest } from "./_embedded_protocol.ts";
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

/** A request without its `id` (the worker client numbers them). */
type Request = WorkerRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never : never;

/** The worker that runs PGlite, and the requests waiting for its replies. */
class PgliteWorker {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, (reply: WorkerReply) => void>();
  #next = 0;
  #stopped: Error | undefined;

  constructor() {
    this.#worker = new Worker(new URL("./_embedded_worker.ts", import.meta.url).href, {
      type: "module",
    });
    this.#worker.onmessage = (event: MessageEvent<WorkerReply>) => {
      const deliver = this.#waiting.get(event.data.id);
      this.#waiting.delete(event.data.id);
      deliver?.(event.data);
    };
    this.#worker.onerror = (event: ErrorEvent) => {
      // Handled here: a worker's uncaught error must not end the whole process.
      event.preventDefault();
      this.#stop(new Error(`the embedded store's worker stopped: ${event.message}`));
    };
  }

  /** Why the worker stopped (a crash, or `terminate`), once it did. */
  get stopped(): Error | undefined {
    return this.#stopped;
  }

  /** Sends `request`; resolves with the worker's reply, success or failure. */
  request(request: Request): Promise<WorkerReply> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    const id = ++this.#next;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#worker.postMessage({ ...request, id } as WorkerRequest);
    });
  }

  /** Sends `request`; resolves on success, throws the worker's error otherwise. */
  async call(request: Request): Promise<Extract<WorkerReply, { ok: true }>> {
    const reply = await this.request(request);
    if (!reply.ok) throw fromWire(reply.error);
    return reply;
  }

  /** Stops the worker; requests still waiting fail. */
  terminate(): void {
    if (this.#stopped) return;
    this.#worker.terminate();
    this.#stop(new Error("the embedded store's worker was stopped"));
  }

  #stop(reason: Error): void {
    this.#stopped ??= reason;
    const waiting = [...this.#waiting.entries()];
    this.#waiting.clear();
    for (const [id, deliver] of waiting) {
      deliver({ id, ok: false, error: { name: "Error", message: this.#stopped.message } });
    }
  }
}

function session(worker: PgliteWorker): SqlSession {
  const run = (tx?: number): SqlQuery => async (text, params = []) =>
    (await worker.call({ op: "query", text, params: [...params] as SqlParam[], tx })).rows ?? [];
  return {
    query: run(),
    async transaction(work) {
      const { tx } = await worker.call({ op: "begin" });
      let result;
      try {
        result = await work(run(tx));
      } catch (error) {
        await worker.call({ op: "end", tx: tx!, commit: false }).catch(() => {});
        throw error;
      }
      // Commits, then runs a checkpoint when enough WAL was written since the last one.
      await worker.call({ op: "end", tx: tx!, commit: true });
      return result;
    },
    async close() {
      try {
        await worker.call({ op: "close" });
      } finally {
        worker.terminate();
      }
    },
  };
}

/** An open embedded backend: the session and what `close` must release. */
export interface EmbeddedBackend {
  /** The SQL session. */
  session: SqlSession;
  /** Releases PGlite and the directory lock. */
  close(): Promise<void>;
  /** Why the worker that runs PGlite stopped, once it did (a crash, or `close`). */
  broken(): Error | undefined;
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
  const worker = new PgliteWorker();
  const fail = async (error: StoreError): Promise<never> => {
    worker.terminate();
    await release();
    throw error;
  };
  const opened = await worker.request({ op: "open", pgdata, wipe: options.wipe ?? false })
    .catch((error: Error) => ({ ok: false as const, error, stage: undefined, reasons: "" }));
  if (!opened.ok) {
    const cause = opened.error instanceof Error ? opened.error : fromWire(opened.error);
    if (opened.stage === "start") {
      await fail(
        new StoreError(
          "corrupt",
          `Cannot open the history store at ${dataDir}: PGlite cannot start on ${pgdata}: ${
            firstLine(cause)
          }`,
          {
            details: opened.reasons || undefined,
            hints: [
              "Rebuild it (the indexer's rebuild flag) to rescan the history from the chain.",
            ],
            cause,
          },
        ),
      );
    }
    await fail(
      new StoreError(
        "unreachable",
        `Cannot open the history store at ${dataDir}: ${firstLine(cause)}`,
        { cause },
      ),
    );
  }
  const sql = session(worker);
  return {
    session: sql,
    broken: () => worker.stopped,
    async close() {
      try {
        await sql.close();
      } finally {
        await release();
      }
    },
  };
}
