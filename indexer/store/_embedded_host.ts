/**
 * The process's one PGlite worker (`_embedded_worker.ts`), seen from the caller's thread: it
 * is started by the first embedded store opened, holds every embedded store of the process,
 * and stays for the next one (PGlite's WebAssembly, compiled and warmed up once, is what makes
 * a later open take a fraction of the first). It never keeps the process alive on its own: it
 * is `unref`-ed whenever no request waits for its reply.
 *
 * A `node:worker_threads` worker rather than a Web Worker for that `unref` alone (a Web Worker
 * keeps its parent running until terminated).
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import { fromWire, type WorkerReply, type WorkerRequest } from "./_embedded_protocol.ts";

/** A request without its `id` (the host numbers them). */
export type HostRequest = WorkerRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never
  : never;

/** The worker that runs PGlite, and the requests waiting for its replies. */
export class PgliteHost {
  static #shared: PgliteHost | undefined;

  /** The process's worker, started when there is none (or the last one stopped). */
  static shared(): PgliteHost {
    if (!PgliteHost.#shared || PgliteHost.#shared.stopped) PgliteHost.#shared = new PgliteHost();
    return PgliteHost.#shared;
  }

  /** A worker of its own, for one job (creating a store), to `terminate` after it. */
  static once(): PgliteHost {
    return new PgliteHost();
  }

  readonly #worker: Worker;
  readonly #waiting = new Map<number, (reply: WorkerReply) => void>();
  #next = 0;
  #stopped: Error | undefined;

  private constructor() {
    this.#worker = new Worker(new URL("./_embedded_worker.ts", import.meta.url));
    this.#worker.unref();
    this.#worker.on("message", (reply: WorkerReply) => {
      const deliver = this.#waiting.get(reply.id);
      this.#waiting.delete(reply.id);
      if (this.#waiting.size === 0) this.#worker.unref();
      deliver?.(reply);
    });
    // Handled here: a worker's uncaught error must not end the whole process.
    this.#worker.on("error", (error: Error) => {
      this.#stop(new Error(`the embedded store's worker stopped: ${error.message}`));
    });
    this.#worker.on("exit", (code: number) => {
      this.#stop(new Error(`the embedded store's worker exited (code ${code})`));
    });
  }

  /** Why the worker stopped (it crashed or exited), once it did. */
  get stopped(): Error | undefined {
    return this.#stopped;
  }

  /** Sends `request`; resolves with the worker's reply, success or failure. */
  request(request: HostRequest): Promise<WorkerReply> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    const id = ++this.#next;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#worker.ref();
      this.#worker.postMessage({ ...request, id } as WorkerRequest);
    });
  }

  /** Sends `request`; resolves on success, throws the worker's error otherwise. */
  async call(request: HostRequest): Promise<Extract<WorkerReply, { ok: true }>> {
    const reply = await this.request(request);
    if (!reply.ok) throw fromWire(reply.error);
    return reply;
  }

  /** Stops the worker; requests still waiting fail. */
  terminate(): void {
    if (this.#stopped) return;
    this.#stop(new Error("the embedded store's worker was stopped"));
    void this.#worker.terminate();
  }

  #stop(reason: Error): void {
    this.#stopped ??= reason;
    this.#worker.unref();
    const waiting = [...this.#waiting.entries()];
    this.#waiting.clear();
    for (const [id, deliver] of waiting) {
      deliver({ id, ok: false, error: { name: "Error", message: this.#stopped.message } });
    }
  }
}
