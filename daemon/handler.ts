/**
 * The daemon's HTTP handler: a pure `(request) => Promise<Response>` built from its
 * dependencies. No `Deno.serve` inside; `main.ts` serves it, tests call it with a `Request`.
 *
 * Every request goes through, in order: the `Host` allowlist, the `Origin` check (CORS
 * preflight for allowed origins), routing with `URLPattern` (404 for unknown paths, 405 with
 * `Allow` for wrong methods), the body size limit and JSON parsing, then the endpoint. Every
 * error is rendered by `http_error.ts` in the dialect of the path: `/v1/…` speaks OpenAI,
 * everything else Ollama.
 *
 * | method     | path                     | dialect |
 * | ---------- | ------------------------ | ------- |
 * | POST       | `/v1/chat/completions`   | OpenAI  |
 * | GET        | `/v1/models`             | OpenAI  |
 * | GET        | `/v1/models/{id}`        | OpenAI  |
 * | GET        | `/v1/gateways`           | OpenAI  |
 * | GET        | `/v1/verdicts?limit=N`   | OpenAI  |
 * | POST       | `/api/chat`              | Ollama  |
 * | POST       | `/api/generate`          | Ollama  |
 * | GET        | `/api/tags`              | Ollama  |
 * | POST       | `/api/show`              | Ollama  |
 * | GET        | `/api/ps`                | Ollama  |
 * | GET        | `/api/version`           | Ollama  |
 * | GET, HEAD  | `/`                      | Ollama  |
 * | GET        | `/openapi.json`          | Ollama  |
 *
 * `HEAD` is answered for every `GET` route (headers only).
 *
 * @example Serve the daemon (what `main.ts` will do)
 * ```ts ignore
 * import { createDaemonHandler, VerdictLog } from "@net/consumer/daemon";
 *
 * const handler = createDaemonHandler({
 *   backend,                       // the network backend
 *   gateways: () => set.toJSON().gateways,
 *   verdicts: new VerdictLog(),
 *   version: "0.1.0",
 *   port: 11435,
 * });
 * Deno.serve({ hostname: "127.0.0.1", port: 11435 }, handler);
 * ```
 *
 * @module
 */

import type { ChatBackend } from "./backend.ts";
import { DaemonError } from "./daemon_error.ts";
import { type Dialect, type ErrorLogger, errorResponse } from "./http_error.ts";
import {
  checkHost,
  checkOrigin,
  corsHeaders,
  type OriginPattern,
  parseOriginPatterns,
  preflightResponse,
} from "./hygiene.ts";
import { parseOpenAIChat, serveOpenAIChat, serveOpenAIModel, serveOpenAIModels } from "./openai.ts";
import {
  parseOllamaRequest,
  serveOllamaChat,
  serveOllamaLoad,
  serveOllamaPs,
  serveOllamaShow,
  serveOllamaTags,
  serveOllamaVersion,
} from "./ollama.ts";
import { serveOpenApi } from "./openapi.ts";
import { type GatewayLister, serveGateways, serveVerdicts } from "./transparency.ts";
import type { VerdictLog } from "./verdict_log.ts";
import type { SurfaceContext } from "./_context.ts";
import { readJsonObject } from "./_request_body.ts";

/** Default request body limit: 4 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Default wait for the first chunk of a reply (and for a model list): 5 minutes. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 300_000;
/** Default wait between two chunks of a reply: 2 minutes. */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
/** Default limit of a reply the daemon buffers (`stream: false`, tool calls): 16 MiB. */
export const DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024;

/** Options of {@linkcode createDaemonHandler}. */
export interface DaemonHandlerOptions {
  /** The network side: model list and chat. */
  backend: ChatBackend;
  /** Returns the known gateways for `GET /v1/gateways` (e.g. `() => set.toJSON().gateways`). */
  gateways: GatewayLister;
  /** The verdict log the backend appends to; served at `GET /v1/verdicts`. */
  verdicts: VerdictLog;
  /**
   * The daemon's version (deno.json's `version`). `/api/version` serves its `X.Y.Z` part:
   * plain dotted integers, as Open WebUI parses them.
   */
  version: string;
  /** The port the daemon is bound to: the `Host` allowlist is `127.0.0.1:PORT`, … */
  port: number;
  /**
   * Further hostnames accepted in `Host` besides `127.0.0.1`, `localhost` and `[::1]`, e.g.
   * the address of a non-loopback bind.
   *
   * @default {[]}
   */
  hostnames?: readonly string[];
  /**
   * Origins allowed to call the daemon from a browser page, as patterns (`*`, `null`,
   * `scheme://host[:port]` with `*` wildcards, e.g. `http://localhost:*`). Requests with
   * any other `Origin` are refused with 403.
   *
   * @default {[]}
   */
  allowedOrigins?: readonly string[];
  /** Largest accepted request body, in bytes. @default {4 MiB} */
  maxBodyBytes?: number;
  /** How long to wait for the first chunk of a reply or for a model list. @default {300000} */
  firstByteTimeoutMs?: number;
  /** How long to wait between two chunks of a reply. @default {120000} */
  idleTimeoutMs?: number;
  /**
   * Largest reply the daemon buffers, in UTF-8 bytes of text (content, refusal, reasoning) and
   * tool-call fragments (names and arguments): the whole reply of a `stream: false` request, and
   * the tool calls of a streamed Ollama reply (which that dialect sends in one line). A provider
   * that sends more is cut off at once: the backend is aborted and the client gets a 502
   * `provider_error` (in-stream for a stream). Streamed text is not buffered and not limited.
   *
   * @default {16 MiB}
   */
  maxReplyBytes?: number;
  /** The wall clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Random source for completion and tool-call ids. @default {crypto.getRandomValues} */
  randomBytes?: (length: number) => Uint8Array;
  /** Receives unexpected errors (then answered with a generic 500). @default {console.error} */
  log?: ErrorLogger;
}

type Endpoint = (request: Request, url: URL, match: URLPatternResult) => Promise<Response>;

interface Route {
  readonly pattern: URLPattern;
  readonly methods: Readonly<Record<string, Endpoint>>;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const resolved = value ?? fallback;
  if (!Number.isSafeInteger(resolved) || resolved < 1) {
    throw new RangeError(
      `Cannot create daemon handler: ${name} must be a positive integer, found ${resolved}`,
    );
  }
  return resolved;
}

/** The `X.Y.Z` part of a version string. */
function plainVersion(version: string): string {
  const match = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:[-+].*)?$/.exec(version);
  if (!match) {
    throw new RangeError(
      `Cannot create daemon handler: version must be X.Y.Z (dotted integers), found ${
        JSON.stringify(version)
      }`,
    );
  }
  return `${match[1]}.${match[2]}.${match[3]}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function dialectOf(pathname: string): Dialect {
  return pathname === "/v1" || pathname.startsWith("/v1/") ? "openai" : "ollama";
}

/**
 * Builds the daemon's request handler.
 *
 * @throws {RangeError} for an option out of range (port, limits, version), and
 * `OriginPatternError` for a malformed allowed origin.
 */
export function createDaemonHandler(
  options: DaemonHandlerOptions,
): (request: Request) => Promise<Response> {
  const port = options.port;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(
      `Cannot create daemon handler: port must be the bound port, 1–65535, found ${port}`,
    );
  }
  const version = plainVersion(options.version);
  const origins: OriginPattern[] = parseOriginPatterns(options.allowedOrigins ?? []);
  const hostnames = [...(options.hostnames ?? [])];
  const clock = options.clock ?? (() => new Date());
  const context: SurfaceContext = {
    backend: options.backend,
    clock,
    randomBytes: options.randomBytes ??
      ((length) => crypto.getRandomValues(new Uint8Array(length))),
    log: options.log ?? ((message, error) => console.error(message, error)),
    maxBodyBytes: positiveInteger("maxBodyBytes", options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES),
    firstByteTimeoutMs: positiveInteger(
      "firstByteTimeoutMs",
      options.firstByteTimeoutMs,
      DEFAULT_FIRST_BYTE_TIMEOUT_MS,
    ),
    idleTimeoutMs: positiveInteger("idleTimeoutMs", options.idleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS),
    maxReplyBytes: positiveInteger(
      "maxReplyBytes",
      options.maxReplyBytes,
      DEFAULT_MAX_REPLY_BYTES,
    ),
    startedAt: clock(),
  };
  const body = (request: Request) => readJsonObject(request, context.maxBodyBytes);

  const routes: Route[] = [
    {
      pattern: new URLPattern({ pathname: "/" }),
      methods: {
        GET: () =>
          Promise.resolve(
            new Response("Ollama is running", {
              headers: { "content-type": "text/plain; charset=utf-8" },
            }),
          ),
      },
    },
    {
      pattern: new URLPattern({ pathname: "/api/version" }),
      methods: { GET: () => Promise.resolve(serveOllamaVersion(version)) },
    },
    {
      pattern: new URLPattern({ pathname: "/api/tags" }),
      methods: { GET: (request) => serveOllamaTags(context, request) },
    },
    {
      pattern: new URLPattern({ pathname: "/api/ps" }),
      methods: { GET: () => Promise.resolve(serveOllamaPs()) },
    },
    {
      pattern: new URLPattern({ pathname: "/api/show" }),
      methods: {
        POST: async (request) => serveOllamaShow(context, { body: await body(request), request }),
      },
    },
    ...(["chat", "generate"] as const).map((endpoint): Route => ({
      pattern: new URLPattern({ pathname: `/api/${endpoint}` }),
      methods: {
        POST: async (request) => {
          const parsed = parseOllamaRequest(endpoint, await body(request));
          return parsed.kind === "load"
            ? serveOllamaLoad(context, parsed.call)
            : serveOllamaChat(context, { call: parsed.call, request });
        },
      },
    })),
    {
      pattern: new URLPattern({ pathname: "/v1/chat/completions" }),
      methods: {
        POST: async (request) =>
          serveOpenAIChat(context, { call: parseOpenAIChat(await body(request)), request }),
      },
    },
    {
      pattern: new URLPattern({ pathname: "/v1/models" }),
      methods: { GET: (request) => serveOpenAIModels(context, request) },
    },
    {
      pattern: new URLPattern({ pathname: "/v1/models/:id+" }),
      methods: {
        GET: (request, _url, match) =>
          serveOpenAIModel(context, {
            request,
            model: safeDecode(match.pathname.groups.id ?? ""),
          }),
      },
    },
    {
      pattern: new URLPattern({ pathname: "/v1/gateways" }),
      methods: { GET: () => serveGateways(options.gateways) },
    },
    {
      pattern: new URLPattern({ pathname: "/v1/verdicts" }),
      methods: { GET: (_request, url) => Promise.resolve(serveVerdicts(options.verdicts, url)) },
    },
    {
      pattern: new URLPattern({ pathname: "/openapi.json" }),
      methods: { GET: () => Promise.resolve(serveOpenApi()) },
    },
  ];

  const render = (error: unknown, dialect: Dialect) =>
    errorResponse(error, dialect, { log: context.log });

  return async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const dialect = dialectOf(url.pathname);
    let origin: string | null = null;
    let response: Response;
    try {
      checkHost(request, { port, hostnames });
      origin = checkOrigin(request, origins);
      response = await route(request, url, origin);
    } catch (error) {
      response = render(error, dialect);
    }
    if (origin !== null) {
      for (const [name, value] of Object.entries(corsHeaders(origin))) {
        if (!response.headers.has(name)) response.headers.set(name, value);
      }
    }
    if (request.method === "HEAD" && response.body !== null) {
      await response.body.cancel();
      return new Response(null, { status: response.status, headers: response.headers });
    }
    return response;
  };

  async function route(request: Request, url: URL, origin: string | null): Promise<Response> {
    for (const { pattern, methods } of routes) {
      const match = pattern.exec({ pathname: url.pathname });
      if (!match) continue;
      const allow = Object.keys(methods);
      if (allow.includes("GET")) allow.push("HEAD");
      if (request.method === "OPTIONS") {
        if (origin !== null && request.headers.has("access-control-request-method")) {
          return preflightResponse(request, origin);
        }
        return new Response(null, {
          status: 204,
          headers: { allow: [...allow, "OPTIONS"].join(", ") },
        });
      }
      const method = request.method === "HEAD" ? "GET" : request.method;
      const endpoint = methods[method];
      if (!endpoint) {
        const response = render(
          new DaemonError(
            "method_not_allowed",
            `Cannot ${request.method} ${url.pathname}: allowed ${allow.join(", ")}`,
          ),
          dialectOf(url.pathname),
        );
        response.headers.set("allow", allow.join(", "));
        return response;
      }
      return await endpoint(request, url, match);
    }
    throw new DaemonError(
      "not_found",
      `Cannot ${request.method} ${url.pathname.slice(0, 100)}: no such endpoint`,
    );
  }
}
