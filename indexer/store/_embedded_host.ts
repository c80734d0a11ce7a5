/**
 * The process's one store process (`_embedded_process.ts`, started by `_embedded_child.ts`),
 * seen from the caller: it is started by the first request, holds every embedded store of the
 * process, and stays for the next one. It never keeps the caller alive on its own: it is
 * `unref`-ed whenever no request waits for its reply.
 *
 * PGlite runs there rather than in a worker thread for its memory: PGlite's WebAssembly memory
 * grows and never shrinks, V8 keeps its compiled module for the whole process, and the
 * allocator keeps each thread's arena, so a worker that ended still left 100–150 MiB in the
 * indexer; a process that exits takes all of it along.
 *
 * Idle, it ends: once no request has come for `idleMs` (and no transaction is open), it closes
 * its stores and the process exits. The next request starts a new one and opens the same
 * stores again first (about a second: a new process compiles PGlite's WebAssembly again), then
 * is answered; requests that come meanwhile wait, in order. The stores' directory locks are
 * held on this side, so no other indexer can take a store while its process is away.
 *
 * The process may read and write the stores' directories and the template cache, nothing else:
 * opening a store in a directory it was not started with ends it (once no request is in hand
 * and no transaction open) and starts one allowed that directory too.
 *
 * @module
 */

import { compactHeap } from "../../io/heap.ts";
import { dirname, resolve } from "node:path";
import { StoreChild } from "./_embedded_child.ts";
import { fromWire, type WorkerReply, type WorkerRequest } from "./_embedded_protocol.ts";

/** A request without its `id` (the host numbers them). */
export type HostRequest = WorkerRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never
  : never;

/** The directories a store process needs for `open`: the store's, and the template cache. */
function dirsOf(open: Extract<HostRequest, { op: "open" }>): string[] {
  return [dirname(open.pgdata), ...(open.templateDir === undefined ? [] : [open.templateDir])];
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** How long the shared process waits without a request before it ends, ms. */
export const DEFAULT_IDLE_MS = 10_000;

/** The process that runs PGlite, and the requests waiting for its replies. */
export class PgliteHost {
  static #shared: PgliteHost | undefined;

  /**
   * The indexer's store host (its process started by the first request; a new host when the
   * last one stopped). `idleMs`, when given, sets how long the process waits without a request
   * before it ends (until started again by the next request).
   */
  static shared(idleMs?: number): PgliteHost {
    if (!PgliteHost.#shared || PgliteHost.#shared.stopped) {
      PgliteHost.#shared = new PgliteHost(DEFAULT_IDLE_MS);
    }
    if (idleMs !== undefined) PgliteHost.#shared.#idleMs = idleMs;
    return PgliteHost.#shared;
  }

  /** A process of its own, for one job (creating a store), to `terminate` after it. */
  static once(): PgliteHost {
    return new PgliteHost(undefined);
  }

  #process: StoreChild | undefined;
  /** The directories every process is allowed (the stores' and the template caches). */
  readonly #grant = new Set<string>();
  /** Those the running process was started with. */
  #granted = new Set<string>();
  readonly #waiting = new Map<number, (reply: WorkerReply) => void>();
  /**
   * The open stores, by `db`: what opens each again in a new process, and the statements that
   * set up its session (`keep`), run again after.
   */
  readonly #stores = new Map<
    number,
    { open: Extract<HostRequest, { op: "open" }>; session: Extract<HostRequest, { op: "query" }>[] }
  >();
  readonly #transactions = new Set<number>();
  #next = 0;
  #nextDb = 0;
  #stopped: Error | undefined;
  #idleMs: number | undefined;
  #idle: number | undefined;
  /** Requests accepted and not yet answered (including those waiting for a new process). */
  #pending = 0;
  /** Settles when a new process has opened the stores again. */
  #waking: Promise<void> | undefined;
  /** Settles when the idle process has closed its stores and exited. */
  #ending: Promise<void> | undefined;
  #starts = 0;
  /** Requests waiting in `#allow` for the process to end. */
  #allowing = 0;

  private constructor(idleMs: number | undefined) {
    this.#idleMs = idleMs;
  }

  /** Why the process stopped (it crashed or exited, or `terminate`), once it did. */
  get stopped(): Error | undefined {
    return this.#stopped;
  }

  /** Processes started so far (the first, and one per wake after an idle end). */
  get starts(): number {
    return this.#starts;
  }

  /** Whether a process runs now (false before the first request and while ended for idleness). */
  get running(): boolean {
    return this.#process !== undefined && this.#ending === undefined;
  }

  /** The running process's id, if one runs. */
  get pid(): number | undefined {
    return this.#process?.pid;
  }

  #start(): void {
    this.#granted = new Set(this.#grant);
    const child: StoreChild = new StoreChild([...this.#granted], (reply: WorkerReply) => {
      const deliver = this.#waiting.get(reply.id);
      this.#waiting.delete(reply.id);
      if (this.#waiting.size === 0) child.unref();
      deliver?.(reply);
    });
    this.#starts++;
    // Only the current process's end stops the host (not the one that ended for idleness).
    void child.exited.then((code) => {
      if (child === this.#process) {
        this.#stop(new Error(`the embedded store's process exited (code ${code})`));
      }
    });
    this.#process = child;
  }

  /** Posts `request` to the running process; resolves with its reply. */
  #post(request: HostRequest): Promise<WorkerReply> {
    const child = this.#process!;
    const id = ++this.#next;
    return new Promise((done) => {
      this.#waiting.set(id, done);
      child.ref();
      child.send({ ...request, id } as WorkerRequest);
    });
  }

  /** Sends `request`; resolves with the process's reply, success or failure. */
  async request(given: HostRequest): Promise<WorkerReply> {
    if (this.#stopped) throw this.#stopped;
    // The process's working directory is not the caller's: its paths are absolute.
    const request: HostRequest = given.op === "open"
      ? {
        ...given,
        pgdata: resolve(given.pgdata),
        templateDir: given.templateDir === undefined ? undefined : resolve(given.templateDir),
      }
      : given;
    if (request.op === "close" && !this.#waking && (this.#ending || !this.#process)) {
      // Closing a store of an ended process: it was closed when the process ended.
      await this.#ending;
      if (!this.#waking && !this.#process && this.#stores.delete(request.db)) {
        return { id: 0, ok: true };
      }
    }
    clearTimeout(this.#idle);
    this.#pending++;
    let reply: WorkerReply;
    try {
      if (request.op === "open") await this.#allow(dirsOf(request));
      if (this.#waking || this.#ending || !this.#process) await this.#wake();
      if (this.#stopped) throw this.#stopped;
      const sent = request.op === "open" ? { ...request, db: ++this.#nextDb } : request;
      reply = await this.#post(sent);
      this.#track(sent, reply);
    } finally {
      this.#pending--;
      this.#scheduleIdle();
    }
    return reply;
  }

  /** Sends `request`; resolves on success, throws the process's error otherwise. */
  async call(request: HostRequest): Promise<Extract<WorkerReply, { ok: true }>> {
    const reply = await this.request(request);
    if (!reply.ok) throw fromWire(reply.error);
    return reply;
  }

  /** Keeps what a new process must restore: the open stores, and whether a transaction is open. */
  #track(request: HostRequest, reply: WorkerReply): void {
    if (!reply.ok) {
      if (request.op === "end") this.#transactions.delete(request.tx);
      return;
    }
    if (request.op === "open" && !request.createOnly && reply.db !== undefined) {
      this.#stores.set(reply.db, { open: { ...request, db: reply.db, wipe: false }, session: [] });
    } else if (request.op === "query" && request.keep) {
      this.#stores.get(request.db)?.session.push(request);
    } else if (request.op === "close") this.#stores.delete(request.db);
    else if (request.op === "begin" && reply.tx !== undefined) this.#transactions.add(reply.tx);
    else if (request.op === "end") this.#transactions.delete(request.tx);
  }

  /**
   * Adds `dirs` to what the store process may use; a running process not started with them
   * is ended (once this request is the only one in hand and no transaction is open) and the
   * next starts with them.
   */
  async #allow(dirs: string[]): Promise<void> {
    for (const dir of dirs) this.#grant.add(dir);
    if (dirs.every((dir) => this.#granted.has(dir))) return;
    this.#allowing++;
    try {
      while (this.#process && !this.#ending) {
        if (this.#pending <= this.#allowing && this.#transactions.size === 0 && !this.#waking) {
          await this.#end(this.#allowing);
          return;
        }
        // Waits for the requests in hand to be answered and transactions to end.
        await sleep(5);
      }
      await this.#ending;
    } finally {
      this.#allowing--;
    }
  }

  #scheduleIdle(): void {
    if (
      this.#idleMs === undefined || this.#stopped || !this.#process || this.#ending ||
      this.#pending > 0 || this.#transactions.size > 0 || this.#stores.size === 0
    ) return;
    clearTimeout(this.#idle);
    const timer = setTimeout(() => void this.#end(), this.#idleMs) as unknown as number;
    Deno.unrefTimer(timer);
    this.#idle = timer;
  }

  /**
   * Ends the idle process: its stores closed, then its input closed, which ends it. `inHand`:
   * the requests in hand that may be waiting for this (the one that asked for it).
   */
  #end(inHand = 0): Promise<void> {
    if (this.#pending > inHand || this.#transactions.size > 0 || !this.#process) {
      return Promise.resolve();
    }
    this.#ending ??= (async () => {
      for (const db of this.#stores.keys()) await this.#post({ op: "close", db });
      const child = this.#process!;
      this.#process = undefined;
      await child.end();
      // The process goes idle: what the store's traffic left on this thread is given back.
      compactHeap();
    })().finally(() => (this.#ending = undefined));
    return this.#ending;
  }

  /** Starts a new process after an idle end, and opens the stores again in it. */
  #wake(): Promise<void> {
    this.#waking ??= (async () => {
      await this.#ending;
      if (this.#stopped || this.#process) return;
      this.#start();
      for (const { open, session } of this.#stores.values()) {
        for (const request of [open, ...session]) {
          const reply = await this.#post(request);
          if (reply.ok) continue;
          const error = fromWire(reply.error);
          const child = this.#process as StoreChild | undefined;
          this.#stop(
            new Error(
              `the embedded store's process could not reopen ${open.pgdata}: ${error.message}`,
            ),
          );
          this.#process = undefined;
          await child?.kill();
          return;
        }
      }
    })().finally(() => (this.#waking = undefined));
    return this.#waking;
  }

  /** Ends the process now, for idleness (as `idleMs` would): for tests. */
  async endIdle(): Promise<void> {
    clearTimeout(this.#idle);
    await this.#end();
  }

  /** Stops the process; requests still waiting fail. */
  async terminate(): Promise<void> {
    if (this.#stopped) return;
    clearTimeout(this.#idle);
    this.#stop(new Error("the embedded store's process was stopped"));
    const child = this.#process;
    this.#process = undefined;
    await child?.kill();
  }

  #stop(reason: Error): void {
    this.#stopped ??= reason;
    clearTimeout(this.#idle);
    this.#process?.unref();
    const waiting = [...this.#waiting.entries()];
    this.#waiting.clear();
    for (const [id, deliver] of waiting) {
      deliver({ id, ok: false, error: { name: "Error", message: this.#stopped.message } });
    }
  }
}
