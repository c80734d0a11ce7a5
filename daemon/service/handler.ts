/**
 * The daemon's HTTP service: its routes (`_routes.ts`, both dialects, each declared once with
 * its schemas), its hygiene as middleware (`hygiene.ts`) and its one error mapping
 * (`core/http_error.ts`), on the project's HTTP layer (`http/`). The handler is a pure
 * `(request) => Promise<Response>`: no `Deno.serve` inside; `main.ts` serves it, tests call it
 * with a `Request`.
 *
 * Every request goes through, in order: the layer's size limits, the `Host` allowlist, the
 * `Origin` check (CORS for allowed origins), the API key when one is required (`auth.ts`:
 * every path but `GET /`, `/api/version` and `/v1/gateways`), routing (404 for unknown paths, 405 with `Allow`
 * for wrong methods, `OPTIONS`, `HEAD` for every `GET`), the body size limit and strict JSON
 * parsing, the route's schema, then the endpoint. Every error is rendered in the dialect of the
 * path: `/v1/…` speaks OpenAI, everything else Ollama. `GET /openapi.json` serves the OpenAPI
 * 3.1 document generated from the same declarations, `GET /metrics` the Prometheus metrics
 * (`metrics.ts`; the request metrics are the first middleware, so refusals are counted too).
 *
 * @example Serve the daemon (what `main.ts` does)
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

import {
  createService,
  DEFAULT_MAX_BODY_BYTES,
  type ResponseSpec,
  type Route,
  type Service,
} from "../../http/mod.ts";
import { metricsRoute } from "../../http/metrics.ts";
import {
  apiKeyAuth,
  authRefusalHeaders,
  type FailureThrottle,
  isOpenRequest,
  payerByKey,
} from "./auth.ts";
import type { DaemonAccount } from "../account/mod.ts";
import {
  type ChatBackend,
  type Dialect,
  dialectOf,
  type ErrorLogger,
  errorResponse,
} from "../core/mod.ts";
import { hygiene, parseOriginPatterns } from "./hygiene.ts";
import { DaemonMetrics } from "./metrics.ts";
import type { GatewayLister } from "./transparency.ts";
import { ReceiptLog, type VerdictLog } from "../trust/mod.ts";
import { errorResponses, errorSchema, type SurfaceContext } from "../surface/mod.ts";
import { daemonRoutes, SHARED_ERROR_RESPONSES } from "./_routes.ts";

/** Default wait for the first chunk of a reply (and for a model list): 5 minutes. */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 300_000;
/** Default wait between two chunks of a reply: 2 minutes. */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
/** Default limit of a reply the daemon buffers (`stream: false`, tool calls): 16 MiB. */
export const DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024;

/** Options of {@linkcode createDaemonHandler} and {@linkcode createDaemonService}. */
export interface DaemonHandlerOptions {
  /** The network side: model list and chat. */
  backend: ChatBackend;
  /** Returns the known gateways for `GET /v1/gateways` (e.g. `() => set.toJSON().gateways`). */
  gateways: GatewayLister;
  /** The verdict log the backend appends to; served at `GET /v1/verdicts`. */
  verdicts: VerdictLog;
  /**
   * The receipts of TEE replies the backend keeps; served at `GET /v1/verdicts/{id}`.
   *
   * @default {an empty ReceiptLog}
   */
  receipts?: ReceiptLog;
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
   * With `apiKey`: a request that presents a key is served whatever its `Host` (the key is
   * checked instead). For a daemon bound beyond loopback, where other hosts reach it by names
   * no allowlist foresees; a request without a key is held to the Host rule as always.
   *
   * @default {false}
   */
  anyHostWithKey?: boolean;
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
  /**
   * The API key every request but `GET /`, `GET /api/version` and `GET /v1/gateways` must
   * present as `Authorization: Bearer <key>` (a promise is awaited before the first check; if
   * it rejects, those requests are refused). Without it nothing is checked (loopback).
   *
   * @default {undefined}
   */
  apiKey?: string | Promise<string>;
  /**
   * Named API keys (`--api-keys-file`): each is accepted where a key is required, and a request
   * that presents one — on loopback too — is paid under its name (`core/payment.ts`).
   *
   * @default {none}
   */
  namedKeys?: Promise<readonly { name: string; key: string }[]>;
  /** The consumer's account: serves `GET /v1/account` and `GET /v1/usage`. @default {none} */
  account?: DaemonAccount;
  /** Counts failed keys per client address. @default {a new FailureThrottle} */
  authThrottle?: FailureThrottle;
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
  /**
   * Receives unexpected errors (then answered with a generic 500), refusals, and one-line notes
   * such as a client's cancel (with `error` undefined).
   *
   * @default {console.error}
   */
  log?: ErrorLogger;
  /**
   * The metrics `GET /metrics` serves; the service adds its request metrics to them (the
   * backend records into the same ones when given them too).
   *
   * @default {a new DaemonMetrics} (request and process metrics only)
   */
  metrics?: DaemonMetrics;
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

/** The default logger: a message, and the error (with its stack) when there is one. */
const defaultLog: ErrorLogger = (message, error) =>
  error === undefined ? console.error(message) : console.error(message, error);

function surfaceContext(options: DaemonHandlerOptions): SurfaceContext {
  const clock = options.clock ?? (() => new Date());
  const log = options.log ?? defaultLog;
  return {
    backend: options.backend,
    clock,
    randomBytes: options.randomBytes ??
      ((length) => crypto.getRandomValues(new Uint8Array(length))),
    log,
    note: (line) => log(line, undefined),
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
}

const DESCRIPTION =
  "A local OpenAI-, Anthropic- and Ollama-compatible server; every request is sealed end to " +
  "end to a provider of the network. Model ids are `net/<tier>/<maker>/<model>` with tier " +
  "`verified` or `tee` (`:latest` accepted). `/v1/messages` speaks Anthropic's dialect " +
  '(`{"type": "error", "error": {"type", "message"}}`), the rest of `/v1` the OpenAI dialect, ' +
  'errors included (`{"error": {"message", "type", "param", "code"}}`); every other path ' +
  'speaks Ollama\'s (`{"error": "message"}`). A JSON body must say so (`Content-Type: ' +
  "application/json`): else `unsupported_media_type` (415). An unknown path is answered with " +
  "`not_found` (404) and a wrong " +
  "method with `method_not_allowed` (405, with `Allow`) in the dialect of the path " +
  "(`components.responses`). `HEAD` is answered for every `GET`; `OPTIONS` lists the methods, " +
  "or answers a CORS preflight for an allowed origin. Every request must carry an allowed " +
  "`Host` (DNS-rebinding protection) and, from a browser, an allowed `Origin`. When the " +
  "daemon listens beyond loopback (or was started with `--require-api-key`), every request " +
  "but `GET /`, `GET /api/version` and `GET /v1/gateways` must also carry " +
  "`Authorization: Bearer <key>` (or `x-api-key: <key>`): without it, `invalid_api_key` " +
  "(401); after repeated wrong keys from one address, `too_many_auth_failures` (429, " +
  "`Retry-After`). Beyond loopback, a request with the key is served whatever its `Host`.";

/** The API key's answers (401, 429) in `dialect`; `busy` is an operation's own 429, kept. */
function authAnswers(dialect: Dialect, busy?: string): Record<number, ResponseSpec> {
  const content = { "application/json": { schema: errorSchema(dialect) } };
  return {
    401: {
      description: "`invalid_api_key`: a key is required (the daemon listens beyond loopback, " +
        "or `--require-api-key`) and none or a wrong one was sent.",
      content,
    },
    429: {
      description: `${busy ? `${busy} Or ` : ""}\`too_many_auth_failures\`: too many wrong ` +
        "keys from this address; retry after `Retry-After` seconds.",
      content,
    },
  };
}

/** Adds the API key's answers to every route that needs the key, in its dialect. */
function withAuthAnswers(routes: readonly Route[]): Route[] {
  return routes.map((route) =>
    isOpenRequest(route.method.toUpperCase(), route.path) ? route : {
      ...route,
      responses: {
        ...route.responses,
        ...authAnswers(dialectOf(route.path), route.responses[429]?.description),
      },
    }
  );
}

/**
 * Builds the daemon's service: its live route table (`app.routes`), its generated OpenAPI
 * document (`document()`) and its `fetch`.
 *
 * @throws {RangeError} for an option out of range (port, limits, version), and
 * `OriginPatternError` for a malformed allowed origin.
 */
export function createDaemonService(options: DaemonHandlerOptions): Service {
  const port = options.port;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(
      `Cannot create daemon handler: port must be the bound port, 1–65535, found ${port}`,
    );
  }
  const version = plainVersion(options.version);
  const maxBodyBytes = positiveInteger(
    "maxBodyBytes",
    options.maxBodyBytes,
    DEFAULT_MAX_BODY_BYTES,
  );
  const origins = parseOriginPatterns(options.allowedOrigins ?? []);
  const context = surfaceContext(options);
  const metrics = options.metrics ?? new DaemonMetrics();
  // Metrics first: the refusals of the rules after it are counted too.
  const middleware = [
    metrics.middleware(),
    hygiene({
      port,
      hostnames: options.hostnames,
      origins,
      anyHostWithKey: options.anyHostWithKey === true && options.apiKey !== undefined,
    }),
  ];
  if (options.apiKey !== undefined) {
    middleware.push(apiKeyAuth({
      key: options.apiKey,
      named: options.namedKeys,
      throttle: options.authThrottle,
      clock: options.clock,
    }));
  } else if (options.namedKeys !== undefined) {
    middleware.push(payerByKey(options.namedKeys));
  }
  const service = createService({
    info: { title: "net-consumer daemon", version: options.version, description: DESCRIPTION },
    routes: withAuthAnswers([
      ...daemonRoutes({
        context,
        version,
        gateways: options.gateways,
        verdicts: options.verdicts,
        receipts: options.receipts ?? new ReceiptLog(),
        account: options.account,
      }),
      { ...metricsRoute(metrics.registry), tags: ["operations"] },
    ]),
    middleware,
    // The layer's own route (`/openapi.json`) answers errors like any other outside `/v1`;
    // every declared route lists its own, in its dialect.
    commonResponses: errorResponses("ollama", "local"),
    maxBodyBytes,
    tooLargeHint: "Start the daemon with a larger --max-body-bytes to accept it.",
    renderError: (error, c) => {
      const response = errorResponse(error, dialectOf(c.req.path), { log: context.log });
      for (const [name, value] of Object.entries(authRefusalHeaders(error))) {
        response.headers.set(name, value);
      }
      return response;
    },
  });
  // The layer's own `GET /openapi.json` needs the key too: its documentation says so.
  for (const definition of service.app.openAPIRegistry.definitions) {
    if (definition.type === "route" && definition.route.path === "/openapi.json") {
      Object.assign(definition.route.responses, authAnswers("ollama"));
    }
  }
  for (const [name, response] of Object.entries(SHARED_ERROR_RESPONSES)) {
    service.app.openAPIRegistry.registerComponent("responses", name, response);
  }
  return service;
}

/**
 * Builds the daemon's request handler: {@linkcode createDaemonService}'s `fetch`, which never
 * rejects (whatever escapes is rendered like any error). Pass `Deno.serve`'s `info` as the
 * second argument: failed API keys are counted per client address.
 *
 * @throws {RangeError} for an option out of range (port, limits, version), and
 * `OriginPatternError` for a malformed allowed origin.
 */
export function createDaemonHandler(
  options: DaemonHandlerOptions,
): (request: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> {
  const service = createDaemonService(options);
  const log = options.log ?? defaultLog;
  return (request, info) =>
    service.fetch(request, info).catch((error) =>
      errorResponse(error, dialectOf(new URL(request.url).pathname), { log })
    );
}
