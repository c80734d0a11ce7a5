/**
 * The front door's clocks, per connection: a connection must send a complete request head
 * within `headersMs` of opening (a slow-loris client that trickles header lines, or one that
 * sends nothing at all, is closed), and a kept-alive connection with no request in flight is
 * closed after `idleMs`. A request being answered is never timed here: the service's own
 * deadlines (and the body deadline of `serve.ts`) govern it.
 *
 * One sweep per server checks the deadlines (every quarter of the shorter limit, at most every
 * second), so a request costs a map lookup and a clock read, not a timer of its own.
 *
 * Private to `http/` (`serve.ts`).
 *
 * @module
 */

import type { Socket } from "node:net";

interface Watched {
  /** When the connection is closed unless a request head arrives (ms, `performance.now()`). */
  deadline: number;
  inFlight: number;
}

/** The clocks of every open connection of one server. */
export class ConnectionTimers {
  readonly #headersMs: number;
  readonly #idleMs: number;
  readonly #expire: (socket: Socket) => void;
  readonly #watched = new Map<Socket, Watched>();
  readonly #sweepMs: number;
  #sweep: ReturnType<typeof setInterval> | undefined;

  /** Creates the clocks; `expire` closes a connection whose clock ran out. */
  constructor(limits: { headersMs: number; idleMs: number }, expire: (socket: Socket) => void) {
    this.#headersMs = limits.headersMs;
    this.#idleMs = limits.idleMs;
    this.#expire = expire;
    this.#sweepMs = Math.max(10, Math.min(1000, Math.min(limits.headersMs, limits.idleMs) / 4));
  }

  /** Connections open now. */
  get size(): number {
    return this.#watched.size;
  }

  /** A new connection: it has `headersMs` to send its first request head. */
  opened(socket: Socket): void {
    const watched: Watched = { deadline: performance.now() + this.#headersMs, inFlight: 0 };
    this.#watched.set(socket, watched);
    socket.once("close", () => {
      this.#watched.delete(socket);
      if (this.#watched.size === 0) this.#stop();
    });
    this.#sweep ??= this.#start();
  }

  /** A request head arrived on `socket`: its clock stops while the request is answered. */
  requestStarted(socket: Socket): void {
    const watched = this.#watched.get(socket);
    if (!watched) return;
    watched.deadline = Infinity;
    watched.inFlight++;
  }

  /** A request on `socket` was answered (or abandoned): idle again once none is in flight. */
  requestEnded(socket: Socket): void {
    const watched = this.#watched.get(socket);
    if (!watched) return;
    watched.inFlight = Math.max(0, watched.inFlight - 1);
    if (watched.inFlight === 0) watched.deadline = performance.now() + this.#idleMs;
  }

  #start(): ReturnType<typeof setInterval> {
    const timer = setInterval(() => {
      const now = performance.now();
      for (const [socket, watched] of this.#watched) {
        if (watched.inFlight === 0 && watched.deadline <= now) {
          this.#watched.delete(socket);
          this.#expire(socket);
        }
      }
    }, this.#sweepMs);
    // The sweep alone never keeps the process alive.
    Deno.unrefTimer(timer as unknown as number);
    return timer;
  }

  #stop(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }
}
