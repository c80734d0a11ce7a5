/**
 * Serves a handler for the devnet's servers, with a clear error when the port is taken, and
 * the URL others should use to reach it (which differs from the listen address when the
 * devnet listens on every interface inside a container).
 *
 * @module
 */

/** A running devnet server. */
export interface Listening {
  /** Base URL as advertised, e.g. `http://127.0.0.1:8701` or `http://devnet:8701`. */
  readonly url: string;
  /** The bound port. */
  readonly port: number;
  /** Stops accepting connections, lets running requests finish, then resolves. */
  close(): Promise<void>;
}

/** Listen addresses that mean "every interface": never usable in a URL. */
const UNSPECIFIED: ReadonlySet<string> = new Set(["0.0.0.0", "::", "[::]"]);

/** A host as it appears in a URL: IPv6 addresses in brackets. */
export function urlHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/**
 * The host name to advertise for servers listening on `hostname`: `publicHost` when given,
 * else `hostname` itself, or `127.0.0.1` when `hostname` is an unspecified address.
 */
export function advertisedHost(hostname: string, publicHost: string | undefined): string {
  if (publicHost) return urlHost(publicHost);
  return UNSPECIFIED.has(hostname) ? "127.0.0.1" : urlHost(hostname);
}

/**
 * Serves `handler` on `hostname:port` (`port` 0 picks a free one).
 *
 * @throws {Error} naming the server and the port when the address is in use.
 */
export function listen(
  name: string,
  handler: (req: Request) => Response | Promise<Response>,
  options: {
    /** Port, 0 for any free one. */
    port: number;
    /** Listen address. @default {"127.0.0.1"} */
    hostname?: string;
    /** Host name in {@linkcode Listening.url}. @default {see advertisedHost} */
    publicHost?: string;
  },
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
    url: `http://${advertisedHost(hostname, options.publicHost)}:${port}`,
    port,
    close: () => closed ??= server.shutdown().then(() => server.finished),
  };
}
