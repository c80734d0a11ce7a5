/**
 * Serves the daemon's handler: the project's server (`http/serve.ts`, {@linkcode serveHttp}),
 * which notices at once when a client goes away — queued, waiting for a provider, or streaming
 * — and closes slow connections (a request head within 10 s, 5 s idle between requests, a body
 * within 60 s). The names here are the daemon's public ones for it.
 *
 * @example
 * ```ts ignore
 * const server = await serveDaemon(handler, { hostname: "127.0.0.1", port: 11435 });
 * // …
 * await server.shutdown();
 * ```
 *
 * @module
 */

import {
  type HttpHandler,
  type HttpServer,
  serveHttp,
  type ServeHttpOptions,
} from "../../http/mod.ts";

/** What {@linkcode serveDaemon} calls per request (the client's address in `info.remoteAddr`). */
export type DaemonRequestHandler = HttpHandler;

/** Options of {@linkcode serveDaemon}: the address, and the front door's timeouts. */
export type ServeDaemonOptions = ServeHttpOptions;

/** A listening daemon server. */
export type DaemonServer = HttpServer;

/**
 * Listens on `options.hostname:options.port` and answers every request with `handler`.
 *
 * @throws {Error} when the address cannot be listened on (e.g. `EADDRINUSE`).
 */
export function serveDaemon(
  handler: DaemonRequestHandler,
  options: ServeDaemonOptions,
): Promise<DaemonServer> {
  return serveHttp(handler, {
    ...options,
    onError: options.onError ?? ((error) => console.error("daemon: cannot answer", error)),
  });
}
