/**
 * Serves the daemon's handler (`(request) => Promise<Response>`) over HTTP/1.1 on a listening
 * socket, so that a client that goes away is noticed at once, in every phase of its request.
 *
 * Why not `Deno.serve`: it tells a handler that its client disconnected (`request.signal`) only
 * when the whole request arrived in one read, or once the response is being written. A chat
 * whose body came in two reads (any prompt over about a kilobyte, from most clients) and that
 * waits — in the queue for a slot, or for a provider's first token — would go on waiting, and
 * then be relayed and generated for nobody (denoland/deno#21653). The server here (Node's
 * `node:http`, as Deno provides it) watches every connection: when a client closes it before its
 * response is complete, the request's `signal` aborts at once, and a response body being
 * written is cancelled (which aborts the request in the daemon, `surface/reply.ts`).
 *
 * What the handler sees is a standard `Request` (URL on the bound address, the client's headers
 * as sent, the body as a stream); what it returns is written as it is: its status and headers,
 * then its body — streamed with backpressure for event streams and NDJSON, otherwise read whole
 * and sent with a `Content-Length`.
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

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * What {@linkcode serveDaemon} calls per request: the request, and the client's address in the
 * shape `Deno.serve` gives it (`info.remoteAddr`), e.g. for the API key's failure throttle.
 */
export type DaemonRequestHandler = (
  request: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Promise<Response>;

/** Options of {@linkcode serveDaemon}. */
export interface ServeDaemonOptions {
  /** The address to listen on, e.g. `127.0.0.1`. */
  hostname: string;
  /** The port; 0 picks a free one. */
  port: number;
  /** Receives failures to answer (the client is then sent a bare 500 or cut off). */
  onError?: (error: unknown) => void;
}

/** A listening daemon server. */
export interface DaemonServer {
  /** The bound address. */
  readonly hostname: string;
  /** The bound port. */
  readonly port: number;
  /** Stops accepting, closes idle connections, and waits for the replies in flight. */
  shutdown(): Promise<void>;
  /** Closes every connection at once, replies in flight included. */
  close(): Promise<void>;
}

/** Bodies of these media types are streamed as they are produced; others are sent whole. */
const STREAMED = /^(text\/event-stream|application\/x-ndjson)\b/i;

/** Largest request head accepted (the HTTP layer refuses more than 32 KiB itself, with a 431). */
const MAX_HEADER_BYTES = 64 * 1024;

/**
 * Listens on `options.hostname:options.port` and answers every request with `handler`.
 *
 * @throws {Error} when the address cannot be listened on (e.g. `EADDRINUSE`).
 */
export async function serveDaemon(
  handler: DaemonRequestHandler,
  options: ServeDaemonOptions,
): Promise<DaemonServer> {
  const onError = options.onError ?? ((error) => console.error("daemon: cannot answer", error));
  let base = "";
  const server: Server = createServer(
    { maxHeaderSize: MAX_HEADER_BYTES },
    (req, res) => void answer(handler, { req, res, base, onError }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.hostname.includes(":") ? `[${options.hostname}]` : options.hostname;
  base = `http://${host === "0.0.0.0" ? "127.0.0.1" : host === "[::]" ? "[::1]" : host}:${port}`;
  const closed = new Promise<void>((resolve) => server.once("close", () => resolve()));
  return {
    hostname: options.hostname,
    port,
    shutdown: async () => {
      server.close();
      server.closeIdleConnections();
      await closed;
    },
    close: async () => {
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}

/** One request: the `Request` in, the `Response` out, and the client's leaving watched. */
async function answer(
  handler: DaemonRequestHandler,
  call: {
    req: IncomingMessage;
    res: ServerResponse;
    base: string;
    onError: (error: unknown) => void;
  },
): Promise<void> {
  const { req, res } = call;
  // The client closed the connection before its response was complete: it is gone.
  const gone = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) gone.abort(new Error("the client closed the connection"));
  });
  let request: Request;
  try {
    request = toRequest(req, call.base, gone.signal);
  } catch {
    res.writeHead(400, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    res.end("Bad request: the URL or a header cannot be read\n");
    return;
  }
  let response: Response;
  try {
    response = await handler(request, clientInfo(req, res));
  } catch (error) {
    call.onError(error);
    if (!res.headersSent) res.writeHead(500).end();
    return;
  }
  try {
    await write(response, { res, method: req.method ?? "GET", gone: gone.signal });
  } catch (error) {
    if (!gone.signal.aborted) call.onError(error);
    res.destroy();
  }
}

/** The client's address and the end of its exchange, as `Deno.serve` describes them. */
function clientInfo(
  req: IncomingMessage,
  res: ServerResponse,
): Deno.ServeHandlerInfo<Deno.NetAddr> {
  const completed = new Promise<void>((resolve) => res.once("close", () => resolve()));
  return {
    remoteAddr: {
      transport: "tcp",
      hostname: req.socket.remoteAddress ?? "",
      port: req.socket.remotePort ?? 0,
    },
    completed,
  };
}

function toRequest(req: IncomingMessage, base: string, signal: AbortSignal): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  const method = req.method ?? "GET";
  const body = method === "GET" || method === "HEAD"
    ? null
    : ReadableStream.from(req as AsyncIterable<Uint8Array>);
  return new Request(new URL(req.url ?? "/", base), {
    method,
    headers,
    body,
    signal,
    // Required to stream a request body.
    ...({ duplex: "half" } as Record<string, string>),
  });
}

/** Writes `response` to `res`: head, then the body streamed or whole. */
async function write(
  response: Response,
  target: { res: ServerResponse; method: string; gone: AbortSignal },
): Promise<void> {
  const { res, gone } = target;
  const head: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") head[name] = value;
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) head["set-cookie"] = cookies;
  const body = response.body;
  if (body === null || target.method === "HEAD") {
    await body?.cancel().catch(() => {});
    res.writeHead(response.status, head).end();
    return;
  }
  if (!STREAMED.test(response.headers.get("content-type") ?? "")) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    head["content-length"] = String(bytes.length);
    res.writeHead(response.status, head).end(bytes);
    return;
  }
  // The head goes out with the first piece of the body (the daemon answers once it has one).
  res.writeHead(response.status, head);
  const reader = body.getReader();
  const stop = () => reader.cancel(gone.reason).catch(() => {});
  gone.addEventListener("abort", stop, { once: true });
  try {
    while (!gone.aborted) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await drained(res, gone);
    }
  } finally {
    gone.removeEventListener("abort", stop);
  }
  if (!gone.aborted) res.end();
}

/** Waits until `res` can take more, or its client is gone. */
function drained(res: ServerResponse, gone: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      gone.removeEventListener("abort", done);
      resolve();
    };
    res.once("drain", done);
    gone.addEventListener("abort", done, { once: true });
  });
}
