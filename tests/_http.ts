/**
 * Test helpers for real HTTP servers on loopback.
 *
 * @module
 */

/** A running loopback server that closes itself with `await using`. */
export interface TestServer extends AsyncDisposable {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** The bound port. */
  readonly port: number;
  /** Stops the server and waits until it is closed. */
  close(): Promise<void>;
}

/** Serves `handler` on 127.0.0.1 on a free port. */
export function serve(handler: (req: Request) => Response | Promise<Response>): TestServer {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  const port = server.addr.port;
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= server.shutdown().then(() => server.finished));
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Returns a loopback port that nothing listens on (bound, then released). */
export function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * The JSON body of `response`, once its status is `status` (default 200): a test reads no body
 * before it has checked the status, and an unexpected one fails with the body in the message.
 */
// deno-lint-ignore no-explicit-any
export async function okJson<T = any>(
  response: Response | Promise<Response>,
  status = 200,
): Promise<T> {
  const answer = await response;
  const text = await answer.text();
  if (answer.status !== status) {
    throw new Error(
      `${answer.url || "the request"} answered ${answer.status}, expected ${status}: ${
        text.slice(0, 500)
      }`,
    );
  }
  return JSON.parse(text) as T;
}
