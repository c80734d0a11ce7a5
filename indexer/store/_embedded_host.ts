/**
 * The process's one PGlite worker (`_embedded_worker.ts`), seen from the caller's thread: it
 * is started by the first embedded store opened, holds every embedded store of the process,
 * and stays for the next one (PGlite's WebAssembly, compiled and warmed up once, is what makes
 * a later open take a fraction of the first). It never keeps the process alive on its own: it
 * is `unref`-ed whenever no request waits for its reply.
 *
 * Idle, it ends: once no request has come for `idleMs` (and no transaction is open), it closes
 * its stores and the worker exits, giving back its WebAssembly memory (PGlite's grows and never
 * shrinks) and its JavaScript heap. The next request starts a new worker and opens the same
 * stores again first (a few hundred milliseconds: V8 keeps PGlite's compiled WebAssembly for
 * the process), then is answered; requests that come meanwhile wait, in order. The stores'
 * directory locks are held on this side, so no other process can take a store while its
 * worker is away.
 *
 * A `node:worker_threads` worker rather than a Web Worker for that `unref` alone (a Web Worker
 * keeps its parent running until terminated).
 *
 * @module
 */

import { compactHeap } from "../../io/heap.ts";
import { Worker } from "node:worker_threads";
import { fromWire, type WorkerReply, type WorkerRequest } from "./_embedded_protocol.ts";

/** A request without its `id` (the host numbers them). */
export type HostRequest = WorkerRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never
  : never;

/** How long the shared worker waits without a request before it ends, ms. */
export const DEFAULT_IDLE_MS = 10_000;

/** The worker that runs PGlite, and the requests waiting for its replies. */
export class PgliteHost {
  static #shared: PgliteHost | undefined;

  /**
   * The process's worker, started when there is none (or the last one stopped). `idleMs`, when
   * given, sets how long it waits without a request before it ends (until started again by
   * the next request).
   */
  static shared(idleMs?: number): PgliteHost {
    if (!PgliteHost.#shared || PgliteHost.#shared.stopped) {
      PgliteHost.#shared = new PgliteHost(DEFAULT_IDLE_MS);
    }
    if (idleMs !== undefined) PgliteHost.#shared.#idleMs = idleMs;
    return PgliteHost.#shared;
  }

  /** A worker of its own, for one job (creating a store), to `terminate` after it. */
  static once(): PgliteHost {
    return new PgliteHost(undefined);
  }

  #worker: Worker | undefined;
  readonly #waiting = new Map<number, (reply: WorkerReply) => void>();
  /**
   * The open stores, by `db`: what opens each again in a new worker, and the statements that
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
  /** Requests accepted and not yet answered (including those waiting for a new worker). */
  #pending = 0;
  /** Settles when a new worker has opened the stores again. */
  #waking: Promise<void> | undefined;
  /** Settles when the idle worker has closed its stores and exited. */
  #ending: Promise<void> | undefined;
  #starts = 0;

  private constructor(idleMs: number | undefined) {
    this.#idleMs = idleMs;
    this.#start();
  }

  /** Why the worker stopped (it crashed or exited, or `terminate`), once it did. */
  get stopped(): Error | undefined {
    return this.#stopped;
  }

  /** Workers started so far (the first, and one per wake after an idle end). */
  get starts(): number {
    return this.#starts;
  }

  /** Whether a worker runs now (false while ended for idleness). */
  get running(): boolean {
    return this.#worker !== undefined && this.#ending === undefined;
  }

  #start(): void {
    const worker = new Worker(new URL("./_embedded_worker.ts", import.meta.url));
    this.#starts++;
    worker.unref();
    worker.on("message", (reply: WorkerReply) => {
      const deliver = this.#waiting.get(reply.id);
      this.#waiting.delete(reply.id);
      if (this.#waiting.size === 0) worker.unref();
      deliver?.(reply);
    });
    // Handled here: a worker's uncaught error must not end the whole process. Only the
    // current worker's end stops the host (not the one that ended for idleness).
    worker.on("error", (error: Error) => {
      if (worker === this.#worker) {
        this.#stop(new Error(`the embedded store's worker stopped: ${error.message}`));
      }
    });
    worker.on("exit", (code: number) => {
      if (worker === this.#worker) {
        this.#stop(new Error(`the embedded store's worker exited (code ${code})`));
      }
    });
    this.#worker = worker;
  }

  /** Posts `request` to the running worker; resolves with its reply. */
  #post(request: HostRequest): Promise<WorkerReply> {
    const worker = this.#worker!;
    const id = ++this.#next;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      worker.ref();
      worker.postMessage({ ...request, id } as WorkerRequest);
    });
  }

  /** Sends `request`; resolves with the worker's reply, success or failure. */
  async request(request: HostRequest): Promise<WorkerReply> {
    if (this.#stopped) throw this.#stopped;
    if (request.op === "close" && !this.#waking && (this.#ending || !this.#worker)) {
      // Closing a store of an ended worker: it was closed when the worker ended.
      await this.#ending;
      if (!this.#waking && !this.#worker && this.#stores.delete(request.db)) {
        return { id: 0, ok: true };
      }
    }
    clearTimeout(this.#idle);
    this.#pending++;
    let reply: WorkerReply;
    try {
      if (this.#waking || this.#ending || !this.#worker) await this.#wake();
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

  /** Sends `request`; resolves on success, throws the worker's error otherwise. */
  async call(request: HostRequest): Promise<Extract<WorkerReply, { ok: true }>> {
    const reply = await this.request(request);
    if (!reply.ok) throw fromWire(reply.error);
    return reply;
  }

  /** Keeps what a new worker must restore: the open stores, and whether a transaction is open. */
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

  #scheduleIdle(): void {
    if (
      this.#idleMs === undefined || this.#stopped || !this.#worker || this.#ending ||
      this.#pending > 0 || this.#transactions.size > 0 || this.#stores.size === 0
    ) return;
    clearTimeout(this.#idle);
    const timer = setTimeout(() => void this.#end(), this.#idleMs) as unknown as number;
    Deno.unrefTimer(timer);
    this.#idle = timer;
  }

  /** Ends the idle worker: its stores closed, then the worker terminated. */
  #end(): Promise<void> {
    if (this.#pending > 0 || this.#transactions.size > 0 || !this.#worker) {
      return Promise.resolve();
    }
    this.#ending ??= (async () => {
      for (const db of this.#stores.keys()) await this.#post({ op: "close", db });
      const worker = this.#worker!;
      this.#worker = undefined;
      await worker.terminate();
      // The process goes idle: what the store's traffic left on this thread is given back.
      compactHeap();
    })().finally(() => (this.#ending = undefined));
    return this.#ending;
  }

  /** Starts a new worker after an idle end, and opens the stores again in it. */
  #wake(): Promise<void> {
    this.#waking ??= (async () => {
      await this.#ending;
      if (this.#stopped || this.#worker) return;
      this.#start();
      for (const { open, session } of this.#stores.values()) {
        for (const request of [open, ...session]) {
          const reply = await this.#post(request);
          if (reply.ok) continue;
          const error = fromWire(reply.error);
          const worker = this.#worker as Worker | undefined;
          this.#stop(
            new Error(
              `the embedded store's worker could not reopen ${open.pgdata}: ${error.message}`,
            ),
          );
          this.#worker = undefined;
          await worker?.terminate();
          return;
        }
      }
    })().finally(() => (this.#waking = undefined));
    return this.#waking;
  }

  /** Ends the worker now, for idleness (as `idleMs` would): for tests. */
  async endIdle(): Promise<void> {
    clearTimeout(this.#idle);
    await this.#end();
  }

  /** Stops the worker; requests still waiting fail. */
  async terminate(): Promise<void> {
    if (this.#stopped) return;
    clearTimeout(this.#idle);
    this.#stop(new Error("the embedded store's worker was stopped"));
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }

  #stop(reason: Error): void {
    this.#stopped ??= reason;
    clearTimeout(this.#idle);
    this.#worker?.unref();
    const waiting = [...this.#waiting.entries()];
    this.#waiting.clear();
    for (const [id, deliver] of waiting) {
      deliver({ id, ok: false, error: { name: "Error", message: this.#stopped.message } });
    }
  }
}
