/**
 * The front door's clocks, per connection: a connection must send a complete request head
 * within `headersMs` of opening (a slow-loris client that trickles header lines, or one that
 * sends nothing at all, is closed), and a kept-alive connection with no request in flight is
 * closed after `idleMs`. A request being answered is never timed here: the service's own
 * deadlines (and the body deadline of `serve.ts`) govern it.
 *
 * Private to `http/` (`serve.ts`).
 *
 * @module
 */

import type { Socket } from "node:net";

/** What a connection was waiting for when its clock ran out. */
export type ConnectionWait = "headers" | "idle";

interface Watched {
  timer: ReturnType<typeof setTimeout> | undefined;
  inFlight: number;
}

/** The clocks of every open connection of one server. */
export class ConnectionTimers {
  readonly #headersMs: number;
  readonly #idleMs: number;
  readonly #expire: (socket: Socket, waited: ConnectionWait) => void;
  readonly #watched = new Map<Socket, Watched>();

  /** Creates the clocks; `expire` closes a connection whose clock ran out. */
  constructor(
    limits: { headersMs: number; idleMs: number },
    expire: (socket: Socket, waited: ConnectionWait) => void,
  ) {
    this.#headersMs = limits.headersMs;
    this.#idleMs = limits.idleMs;
    this.#expire = expire;
  }

  /** Connections open now. */
  get size(): number {
    return this.#watched.size;
  }

  /** A new connection: it has `headersMs` to send its first request head. */
  opened(socket: Socket): void {
    const watched: Watched = { timer: undefined, inFlight: 0 };
    this.#watched.set(socket, watched);
    socket.once("close", () => {
      clearTimeout(watched.timer);
      this.#watched.delete(socket);
    });
    this.#arm(socket, watched, "headers");
  }

  /** A request head arrived on `socket`: its clock stops while the request is answered. */
  requestStarted(socket: Socket): void {
    const watched = this.#watched.get(socket);
    if (!watched) return;
    clearTimeout(watched.timer);
    watched.timer = undefined;
    watched.inFlight++;
  }

  /** A request on `socket` was answered (or abandoned): idle again once none is in flight. */
  requestEnded(socket: Socket): void {
    const watched = this.#watched.get(socket);
    if (!watched) return;
    watched.inFlight = Math.max(0, watched.inFlight - 1);
    if (watched.inFlight === 0 && !socket.destroyed) this.#arm(socket, watched, "idle");
  }

  #arm(socket: Socket, watched: Watched, waited: ConnectionWait): void {
    clearTimeout(watched.timer);
    watched.timer = setTimeout(
      () => {
        watched.timer = undefined;
        if (watched.inFlight === 0) this.#expire(socket, waited);
      },
      waited === "headers" ? this.#headersMs : this.#idleMs,
    );
  }
}
