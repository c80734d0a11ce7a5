/**
 * Helpers for the daemon surface tests: a handler over the test double, requests without a
 * port, and parsers for SSE and NDJSON bodies.
 *
 * @module
 */

import { createDaemonHandler, type DaemonHandlerOptions } from "../../daemon/service/handler.ts";
import { VerdictLog } from "../../daemon/trust/verdict_log.ts";
import { TestBackend, type TestBackendOptions } from "./_test_backend.ts";

/** The port the handler-level tests pretend to be bound to. */
export const PORT = 11435;
/** The base URL of handler-level requests. */
export const BASE = `http://127.0.0.1:${PORT}`;
/** A fixed clock for handler-level tests. */
export const NOW = new Date("2026-11-22T12:00:00.000Z");

/** A handler over a fresh test double, with its logged errors. */
export interface SurfaceFixture {
  /** The handler. */
  readonly handler: (request: Request) => Promise<Response>;
  /** The test double behind it. */
  readonly backend: TestBackend;
  /** The verdict log it serves. */
  readonly verdicts: VerdictLog;
  /** Everything the handler logged. */
  readonly logged: { message: string; error: unknown }[];
}

/** Builds a handler over a test double; `overrides` replace handler options. */
export function surface(
  backendOptions: TestBackendOptions = {},
  overrides: Partial<DaemonHandlerOptions> = {},
): SurfaceFixture {
  const backend = new TestBackend(backendOptions);
  const verdicts = new VerdictLog({ capacity: 10 });
  const logged: { message: string; error: unknown }[] = [];
  let counter = 0;
  const handler = createDaemonHandler({
    backend,
    gateways: () => [{ url: "http://127.0.0.1:9201", last_seen: NOW.toISOString() }],
    verdicts,
    version: "0.1.0",
    port: PORT,
    clock: () => new Date(NOW.getTime() + 10 * counter++),
    randomBytes: (length) => new Uint8Array(length).fill(0xab),
    log: (message, error) => logged.push({ message, error }),
    ...overrides,
  });
  return { handler, backend, verdicts, logged };
}

/** A POST request with a JSON body (a string is sent as is). */
export function post(path: string, body: unknown, headers: HeadersInit = {}): Request {
  return new Request(`${BASE}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** A GET request. */
export function get(path: string, headers: HeadersInit = {}): Request {
  return new Request(`${BASE}${path}`, { headers });
}

/** The `data:` payloads of an SSE body, in order. */
export function sseData(text: string): string[] {
  assertEventsTerminated(text);
  return text
    .split("\n\n")
    .filter((event) => event.trim() !== "")
    .map((event) => {
      const lines = event.split("\n");
      for (const line of lines) {
        if (!line.startsWith("data: ")) throw new Error(`not an SSE data line: ${line}`);
      }
      return lines.map((line) => line.slice(6)).join("\n");
    });
}

function assertEventsTerminated(text: string): void {
  if (text !== "" && !text.endsWith("\n\n")) {
    throw new Error(`SSE body does not end with a blank line: ${JSON.stringify(text.slice(-40))}`);
  }
}

/** The JSON lines of an NDJSON body, in order (every line must be terminated). */
export function ndjson(text: string): Record<string, unknown>[] {
  if (text !== "" && !text.endsWith("\n")) {
    throw new Error(`NDJSON body does not end with a newline: ${JSON.stringify(text.slice(-40))}`);
  }
  return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

/** A handler over a test double, served on 127.0.0.1 on a free port. */
export interface ServedSurface extends AsyncDisposable {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** The bound port (also the handler's Host allowlist port). */
  readonly port: number;
  /** The test double behind it. */
  readonly backend: TestBackend;
  /** Everything the handler logged. */
  readonly logged: { message: string; error: unknown }[];
  /** Stops the server and waits until it is closed. */
  close(): Promise<void>;
}

/**
 * Serves a handler over a test double with `Deno.serve` on 127.0.0.1, port 0. The handler is
 * built once the port is known (its Host allowlist needs it), with the real clock and random
 * source unless `overrides` say otherwise.
 */
export function serveSurface(
  backendOptions: TestBackendOptions = {},
  overrides: Partial<DaemonHandlerOptions> = {},
): ServedSurface {
  const backend = new TestBackend(backendOptions);
  const logged: { message: string; error: unknown }[] = [];
  const slot: { handler?: (request: Request) => Promise<Response> } = {};
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => slot.handler!(request),
  );
  const port = server.addr.port;
  slot.handler = createDaemonHandler({
    backend,
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port,
    log: (message, error) => logged.push({ message, error }),
    ...overrides,
  });
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= server.shutdown().then(() => server.finished));
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    backend,
    logged,
    close,
    [Symbol.asyncDispose]: close,
  };
}
