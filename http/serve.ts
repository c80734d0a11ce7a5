/**
 * The project's HTTP/1.1 server: serves a handler (`(request, info) => Promise<Response>`, a
 * service's `fetch`) on a listening socket, with a front door that closes slow connections and
 * answers every request, and notices at once when a client goes away.
 *
 * **The front door.** A connection must send a complete request head within `headersTimeoutMs`
 * of opening (slow-loris clients that trickle header lines, or open connections and send
 * nothing, are closed); a kept-alive connection with no request in flight is closed after
 * `idleTimeoutMs` (announced in `Keep-Alive: timeout=N`); a request's body must arrive within
 * `bodyTimeoutMs` of its head (else `408`, and the connection is closed). A request being
 * answered is not timed here: a stream may run as long as the service lets it. Requests Node's
 * server would drop or answer itself still reach the service, so it answers them in its own
 * shape: `CONNECT`, `TRACE`, `TRACK` and methods Node's parser does not know (`FOO`, `get`) are
 * given to the handler (as stand-ins the HTTP layer recognises), which answers `405` with
 * `Allow`; a head that cannot be parsed at all gets a bare `400`, one over 64 KiB a bare `431`.
 *
 * **Why not `Deno.serve`.** It has no header or idle timeout (denoland/deno#3515: connections
 * that trickle headers, or send nothing, are held for as long as they like), and it tells a
 * handler that its client disconnected (`request.signal`) only when the whole request arrived in
 * one read, or once the response is being written (denoland/deno#21653). Node's `node:http`, as
 * Deno provides it, exposes every connection: here, when a client closes its connection before
 * its response is complete, the request's `signal` aborts at once, and a response body being
 * written is cancelled.
 *
 * What the handler sees is a standard `Request` (URL on the bound address, the client's headers
 * as sent, the body as a stream); what it returns is written as it is: its status and headers,
 * then its body — streamed with backpressure for event streams and NDJSON, otherwise read whole
 * and sent with a `Content-Length`.
 *
 * @example
 * ```ts
 * import { serveHttp } from "./serve.ts";
 *
 * const server = await serveHttp(() => Promise.resolve(new Response("hello")), {
 *   hostname: "127.0.0.1",
 *   port: 0,
 * });
 * const answer = await fetch(`${server.url}/`);
 * console.assert((await answer.text()) === "hello");
 * await server.shutdown();
 * ```
 *
 * @module
 */

import {
  createServer,
  type IncomingMessage,
  METHODS,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { ConnectionTimers } from "./_connection_timers.ts";
import { requestFor } from "./_method.ts";
import { bareAnswer, readRawHead, writeRawAnswer } from "./_raw_answer.ts";
import { writeResponse } from "./_write_response.ts";

/**
 * What {@linkcode serveHttp} calls per request: the request, and the client's address in the
 * shape `Deno.serve` gives it (`info.remoteAddr`), e.g. for a throttle per client.
 */
export type HttpHandler = (
  request: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Promise<Response>;

/** The default time a connection has to send a complete request head: 10 s. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** The default time a kept-alive connection may wait for its next request: 5 s (Node's). */
export const DEFAULT_IDLE_TIMEOUT_MS = 5_000;
/** The default time a request's body has to arrive once its head has: 60 s. */
export const DEFAULT_BODY_TIMEOUT_MS = 60_000;

/** Options of {@linkcode serveHttp}. */
export interface ServeHttpOptions {
  /** The address to listen on, e.g. `127.0.0.1`. */
  hostname: string;
  /** The port; 0 picks a free one. */
  port: number;
  /** Receives failures to answer (the client is then sent a bare 500 or cut off). */
  onError?: (error: unknown) => void;
  /** Time a connection has to send a complete request head, in ms. @default {10000} */
  headersTimeoutMs?: number;
  /** Time a kept-alive connection may stay without a request, in ms. @default {5000} */
  idleTimeoutMs?: number;
  /** Time a request's body has to arrive once its head has, in ms. @default {60000} */
  bodyTimeoutMs?: number;
}

/** A listening server. */
export interface HttpServer {
  /** The bound address. */
  readonly hostname: string;
  /** The bound port. */
  readonly port: number;
  /** A base URL that reaches the server from this machine (`0.0.0.0` → `127.0.0.1`). */
  readonly url: string;
  /** Connections open now. */
  readonly connections: number;
  /** Stops accepting, closes idle connections, and waits for the replies in flight. */
  shutdown(): Promise<void>;
  /** Closes every connection at once, replies in flight included. */
  close(): Promise<void>;
}

/** Largest request head accepted (the HTTP layer refuses more than 32 KiB itself, with a 431). */
const MAX_HEADER_BYTES = 64 * 1024;

function positive(value: number | undefined, fallback: number, name: string): number {
  const ms = value ?? fallback;
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new RangeError(`Cannot serve: ${name} must be a positive number of ms, found ${ms}`);
  }
  return ms;
}

/**
 * Listens on `options.hostname:options.port` and answers every request with `handler`.
 *
 * @throws {RangeError} for a timeout that is not a positive number.
 * @throws {Error} when the address cannot be listened on (e.g. `EADDRINUSE`).
 */
export async function serveHttp(
  handler: HttpHandler,
  options: ServeHttpOptions,
): Promise<HttpServer> {
  const onError = options.onError ?? ((error) => console.error("http: cannot answer", error));
  const headersMs = positive(options.headersTimeoutMs, DEFAULT_HEADERS_TIMEOUT_MS, "headers");
  const idleMs = positive(options.idleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS, "idle");
  const bodyMs = positive(options.bodyTimeoutMs, DEFAULT_BODY_TIMEOUT_MS, "body");
  let base = "";
  const timers = new ConnectionTimers({ headersMs, idleMs }, (socket) => socket.destroy());
  const server: Server = createServer(
    // Node's own clocks are left to ours (its header clock does not see trickled lines).
    { maxHeaderSize: MAX_HEADER_BYTES, requestTimeout: 0, headersTimeout: 0 },
    (req, res) => void answer(handler, { req, res, base, onError, timers, bodyMs }),
  );
  server.keepAliveTimeout = idleMs;
  server.on("connection", (socket: Socket) => timers.opened(socket));
  server.on("connect", (req: IncomingMessage, socket: Duplex) => {
    let headers: Headers;
    try {
      headers = headersOf(req);
    } catch {
      return void writeRawAnswer(socket, bareAnswer(400, "Bad Request: a header cannot be read"));
    }
    const head = { method: req.method ?? "CONNECT", target: "/", headers };
    void answerRaw(handler, { head, socket, base, onError });
  });
  server.on("clientError", (error: Error & { code?: string; rawPacket?: Uint8Array }, socket) => {
    const head = readRawHead(error.rawPacket);
    if (error.code === "HPE_HEADER_OVERFLOW") {
      void writeRawAnswer(socket, bareAnswer(431, "Request Header Fields Too Large"));
    } else if (head && !METHODS.includes(head.method)) {
      void answerRaw(handler, { head, socket, base, onError });
    } else if (socket.writable) {
      void writeRawAnswer(socket, bareAnswer(400, "Bad Request: the request cannot be parsed"));
    } else socket.destroy();
  });
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
    url: base,
    get connections() {
      return timers.size;
    },
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

/** One request: the `Request` in, the `Response` out, the client's leaving watched. */
async function answer(
  handler: HttpHandler,
  call: {
    req: IncomingMessage;
    res: ServerResponse;
    base: string;
    onError: (error: unknown) => void;
    timers: ConnectionTimers;
    bodyMs: number;
  },
): Promise<void> {
  const { req, res, timers } = call;
  const socket = req.socket;
  timers.requestStarted(socket);
  // The client closed the connection before its response was complete: it is gone.
  const gone = new AbortController();
  res.once("close", () => {
    timers.requestEnded(socket);
    if (!res.writableFinished) gone.abort(new Error("the client closed the connection"));
  });
  const late = bodyDeadline(req, res, { ms: call.bodyMs, gone });
  let request: Request;
  try {
    const method = req.method ?? "GET";
    const url = req.url?.startsWith("/") ? call.base + req.url : new URL(req.url ?? "/", call.base);
    request = requestFor(method, url, {
      headers: headerPairs(req),
      body: method === "GET" || method === "HEAD"
        ? null
        : ReadableStream.from(req as AsyncIterable<Uint8Array>),
      signal: gone.signal,
      // Required to stream a request body.
      ...({ duplex: "half" } as Record<string, string>),
    });
  } catch {
    res.writeHead(400, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    res.end("Bad request: the URL or a header cannot be read\n");
    return;
  }
  let response: Response;
  try {
    response = await handler(request, clientInfo(socket, res));
  } catch (error) {
    if (late.expired) return;
    call.onError(error);
    if (!res.headersSent) res.writeHead(500).end();
    return;
  }
  if (late.expired) {
    await response.body?.cancel().catch(() => {});
    return;
  }
  try {
    await writeResponse(response, { res, method: req.method ?? "GET", gone: gone.signal });
  } catch (error) {
    if (!gone.signal.aborted) call.onError(error);
    res.destroy();
  }
}

/**
 * The body's deadline: past it, a request whose body has not all arrived is answered `408`
 * and its connection closed (the request counts as abandoned by its client).
 */
function bodyDeadline(
  req: IncomingMessage,
  res: ServerResponse,
  options: { ms: number; gone: AbortController },
): { readonly expired: boolean } {
  const state = { expired: false };
  // No body to wait for: already read, or none framed (neither a length nor chunked coding).
  if (req.complete || !hasBody(req)) return state;
  const timer = setTimeout(() => {
    state.expired = true;
    options.gone.abort(new Error("the request's body did not arrive in time"));
    if (res.headersSent) return void res.destroy();
    res.writeHead(408, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    res.end(
      `Request Timeout: the body did not arrive within ${options.ms / 1000} s\n`,
      () => lingeringClose(req.socket),
    );
  }, options.ms);
  const stop = () => clearTimeout(timer);
  req.once("end", stop);
  res.once("close", stop);
  return state;
}

/** How long a closed-for-good connection is still read (and discarded), ms. */
const LINGER_MS = 2_000;

/**
 * Closes a connection whose client may still be sending (a body that came too slowly): our
 * side ends first and what the client still sends is read and dropped for a moment. Destroying
 * it at once with unread bytes makes the kernel answer with a reset, and a reset can discard the
 * answer the client has not read yet (the 408 would be lost).
 */
function lingeringClose(socket: Duplex): void {
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  Deno.unrefTimer(timer);
  socket.once("close", () => clearTimeout(timer));
  socket.on("data", () => {});
  socket.end();
}

/** Whether the request's head frames a body (RFC 9112 §6.3): a length above 0, or a coding. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined ||
    (length !== undefined && length !== "0");
}

/** A request Node's server does not hand to a listener, answered by the handler all the same. */
async function answerRaw(
  handler: HttpHandler,
  call: {
    head: { method: string; target: string; headers: Headers };
    socket: Duplex;
    base: string;
    onError: (error: unknown) => void;
  },
): Promise<void> {
  const { head, socket } = call;
  const path = head.target.startsWith("/") ? head.target : "/";
  let response: Response;
  try {
    const request = requestFor(head.method, new URL(path, call.base), { headers: head.headers });
    response = await handler(request, clientInfo(socket as Socket));
  } catch (error) {
    call.onError(error);
    response = bareAnswer(500, "Internal Server Error");
  }
  await writeRawAnswer(socket, response).catch(() => socket.destroy());
}

function headerPairs(req: IncomingMessage): [string, string][] {
  const pairs: [string, string][] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i], raw[i + 1]]);
  return pairs;
}

function headersOf(req: IncomingMessage): Headers {
  return new Headers(headerPairs(req));
}

/**
 * The client's address and the end of its exchange, as `Deno.serve` describes them; `completed`
 * is made only when a handler asks for it.
 */
function clientInfo(socket: Socket, res?: ServerResponse): Deno.ServeHandlerInfo<Deno.NetAddr> {
  let completed: Promise<void> | undefined;
  const target = res ?? socket;
  return {
    remoteAddr: {
      transport: "tcp",
      hostname: socket.remoteAddress ?? "",
      port: socket.remotePort ?? 0,
    },
    get completed() {
      return completed ??= target.closed
        ? Promise.resolve()
        : new Promise<void>((resolve) => target.once("close", () => resolve()));
    },
  };
}
