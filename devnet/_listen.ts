/**
 * Serves a handler on loopback for the devnet's servers, with a clear error when the port
 * is taken.
 *
 * @module
 */

/** A running devnet server. */
export interface Listening {
  /** Base URL, e.g. `http://127.0.0.1:8701`. */
  readonly url: string;
  /** The bound port. */
  readonly port: number;
  /** Stops accepting connections, lets running requests finish, then resolves. */
  close(): Promise<void>;
}

/**
 * Serves `handler` on `hostname:port` (`port` 0 picks a free one).
 *
 * @throws {Error} naming the server and the port when the address is in use.
 */
export function listen(
  name: string,
  handler: (req: Request) => Response | Promise<Response>,
  options: { port: number; hostname?: string },
): Listening {
  const hostname = options.hostname ?? "127.0.0.1";
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({ hostname, port: options.port, onListen: () => {} }, handler);
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) {
      throw new Error(
        `Cannot start ${name}: port ${options.port} on ${hostname} is already in use ` +
          "(another devnet still running? stop it, or use ephemeral ports)",
        { cause: error },
      );
    }
    throw error;
  }
  const port = server.addr.port;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${hostname === "0.0.0.0" ? "127.0.0.1" : hostname}:${port}`,
    port,
    close: () => closed ??= server.shutdown().then(() => server.finished),
  };
}
