/**
 * One HTTP layer for every server of the project: a service is its routes (declared once, with
 * their schemas, in `route.ts`), its cross-cutting rules as middleware, and its one error
 * mapping. The layer mounts the routes on hono, validates each request against its route's
 * schemas, answers 404, 405 (with `Allow`) and `OPTIONS` from the same route table, gives every
 * answer an `X-Request-Id` and a `Server-Timing`, and serves the OpenAPI 3.1 document generated
 * from the declarations at `GET /openapi.json`.
 *
 * Every request passes, in order: request id and timing; the service's own middleware (Host and
 * Origin rules, CORS, ...); the route table (unknown path → 404, `OPTIONS` → 204 with `Allow`,
 * other methods → 405); validation of path parameters, query and JSON body (whose
 * `Content-Type` must be JSON: else 415); the handler. Any
 * error thrown on the way, including the layer's own {@linkcode HttpRequestError}, goes to the
 * service's `renderError`.
 *
 * @example
 * ```ts
 * import { z } from "@hono/zod-openapi";
 * import { createService } from "./service.ts";
 * import { defineRoute, json } from "./route.ts";
 *
 * const service = createService({
 *   info: { title: "hello", version: "1.0.0" },
 *   routes: [defineRoute({
 *     method: "post",
 *     path: "/echo",
 *     summary: "Echoes a word",
 *     body: { schema: z.object({ word: z.string() }).strict() },
 *     responses: { 200: { description: "The word", content: json(z.object({ word: z.string() })) } },
 *     handler: (c, { body }) => c.json({ word: body.word }),
 *   })],
 *   renderError: (error) => Response.json({ error: String(error) }, { status: 400 }),
 * });
 * const ok = await service.fetch(
 *   new Request("http://127.0.0.1/echo", {
 *     method: "POST",
 *     headers: { "content-type": "application/json" },
 *     body: '{"word":"hi"}',
 *   }),
 * );
 * console.assert((await ok.json()).word === "hi");
 * const doc = service.document();
 * console.assert(doc.paths?.["/echo"]?.post !== undefined);
 * ```
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { timing } from "hono/timing";
import { TrieRouter } from "hono/router/trie-router";
import { OpenAPIHono, z } from "@hono/zod-openapi";
import { methodOf } from "./_method.ts";
import { readJsonBody } from "./body.ts";
import { HttpRequestError, MAX_HEADER_BYTES, MAX_URL_LENGTH } from "./errors.ts";
import { describeIssue } from "./issues.ts";
import { honoPath, json, openApiPath, type ResponseSpec, type Route } from "./route.ts";

/** The default largest JSON request body: 4 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** An OpenAPI 3.1 document, as generated. */
export type OpenApiDocument = ReturnType<OpenAPIHono["getOpenAPI31Document"]>;

/** Options of {@linkcode createService}. */
export interface ServiceOptions {
  /** The document's `info`: the service's name and version. */
  info: { title: string; version: string; description?: string };
  /** Every route of the service. `GET /openapi.json` is added by the layer. */
  routes: readonly Route[];
  /**
   * The service's one error mapping: any thrown value (the layer's {@linkcode HttpRequestError}
   * included) to the answer in the service's error shape.
   */
  renderError: (error: unknown, c: Context) => Response | Promise<Response>;
  /** The service's cross-cutting rules, run in order before routing. @default {[]} */
  middleware?: readonly MiddlewareHandler[];
  /** Largest JSON request body, in bytes. @default {4 MiB} */
  maxBodyBytes?: number;
  /** What to tell a client whose body is over the limit. @default {undefined} */
  tooLargeHint?: string;
  /** Answers the layer adds to every operation's documentation (e.g. the 404/405 shapes). */
  commonResponses?: Readonly<Record<number, ResponseSpec>>;
}

/** A mounted service. */
export interface Service {
  /** The hono app: its `routes` are the live route table. */
  readonly app: OpenAPIHono;
  /** Answers a request. `info` (from `Deno.serve`) is available to middleware as `c.env`. */
  readonly fetch: (request: Request, info?: Deno.ServeHandlerInfo) => Promise<Response>;
  /** The OpenAPI 3.1 document generated from the routes (built once). */
  readonly document: () => OpenApiDocument;
}

/** Routes matched by path alone, to tell 404 from 405 and to answer `OPTIONS`. */
function methodTable(routes: readonly Route[]): (path: string) => string[] {
  const byPath = new Map<string, Set<string>>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? new Set<string>();
    methods.add(route.method.toUpperCase());
    if (route.method === "get") methods.add("HEAD");
    byPath.set(route.path, methods);
  }
  const router = new TrieRouter<string[]>();
  for (const [path, methods] of byPath) router.add("ALL", honoPath(path), [...methods]);
  return (path) => {
    const out = new Set<string>();
    for (const [methods] of router.match("ALL", path)[0]) for (const m of methods) out.add(m);
    return [...out];
  };
}

function invalid(error: z.ZodError, input: unknown, where: string): HttpRequestError {
  const { field, message } = describeIssue(error.issues[0], input);
  return new HttpRequestError("invalid_request", `Cannot read the ${where}: ${message}`, {
    field: field || null,
    details: error.issues.length > 1
      ? `${error.issues.length - 1} more problem(s): ${
        error.issues.slice(1, 4).map((issue) => describeIssue(issue, input).message).join("; ")
      }`
      : undefined,
  });
}

function parse<S extends z.ZodType>(schema: S, input: unknown, where: string): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw invalid(result.error, input, where);
  return result.data;
}

function queryObject(url: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of new URL(url).searchParams) {
    if (Object.hasOwn(out, key)) {
      throw new HttpRequestError(
        "invalid_request",
        `Cannot read the query: the parameter ${JSON.stringify(key)} appears twice; expected once`,
        { field: key },
      );
    }
    out[key] = value;
  }
  return out;
}

function isJson(mediaType: string | undefined): boolean {
  return mediaType === undefined || /^application\/(.+\+)?json$/.test(mediaType);
}

/**
 * A JSON body must say so: `application/json` or `application/<x>+json`, any parameters. Text,
 * a form (what `curl -d` sends) or no type at all is refused before the body is read.
 *
 * @throws {HttpRequestError} `unsupported_media_type` (415) naming the type found.
 */
function checkJsonType(header: string | undefined): void {
  const type = header?.split(";")[0].trim().toLowerCase();
  if (type !== undefined && isJson(type)) return;
  throw new HttpRequestError(
    "unsupported_media_type",
    `Cannot read the request: its Content-Type is ${
      type ? JSON.stringify(type.slice(0, 100)) : "missing"
    }; expected application/json`,
    { hints: ["With curl, add -H 'Content-Type: application/json' (-d sends a form type)."] },
  );
}

function documented(route: Route, common: Readonly<Record<number, ResponseSpec>>) {
  const responses = Object.fromEntries(
    Object.entries({ ...common, ...route.responses }).map(([status, spec]) => [status, {
      description: spec.description,
      headers: spec.headers,
      content: spec.content &&
        Object.fromEntries(
          Object.entries(spec.content).map(([type, media]) => [type, {
            schema: media.schema,
            ...(media.itemSchema ? { itemSchema: media.itemSchema } : {}),
          }]),
        ),
    }]),
  );
  const body = route.body;
  return {
    method: route.method,
    path: openApiPath(route.path),
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    tags: route.tags ? [...route.tags] : undefined,
    request: {
      params: route.params,
      query: route.query,
      body: body && {
        description: body.description,
        required: true,
        content: { [body.mediaType ?? "application/json"]: { schema: body.schema } },
      },
    },
    responses,
  };
}

/** OpenAPI 3.1 has no `itemSchema` (3.2 has): the document carries it as `x-item-schema`. */
function renameItemSchemas(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renameItemSchemas);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map((
      [key, item],
    ) => [key === "itemSchema" ? "x-item-schema" : key, renameItemSchemas(item)]),
  );
}

const OPENAPI_DOCUMENT = z.record(z.string(), z.unknown()).openapi("OpenApiDocument", {
  description: "An OpenAPI 3.1 document",
});

/**
 * Builds a service from its routes, middleware and error mapping.
 *
 * @throws {RangeError} for two routes with the same method and path, or a bad limit.
 */
export function createService(options: ServiceOptions): Service {
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw new RangeError(
      `Cannot create service: maxBodyBytes must be a positive integer, found ${maxBytes}`,
    );
  }
  const app = new OpenAPIHono();
  let document: OpenApiDocument | undefined;
  const openapi = defineOpenApiRoute(() => document ??= generate());
  const routes = [...options.routes, openapi];
  const seen = new Set<string>();
  for (const route of routes) {
    const key = `${route.method} ${openApiPath(route.path)}`;
    if (seen.has(key)) throw new RangeError(`Cannot create service: ${key} is declared twice`);
    seen.add(key);
  }
  const methodsOf = methodTable(routes);

  // hono's requestId sets its header before the handler runs; an error answer is a new
  // Response, so it gets the id here.
  const render = async (error: unknown, c: Context) => {
    const response = await options.renderError(fromHono(error), c);
    const id = c.get("requestId");
    if (id) response.headers.set("x-request-id", id);
    return response;
  };
  app.onError(render);
  app.notFound((c) => render(notFound(c), c));
  app.use(requestId(), stampRequestId, timing({ crossOrigin: false }), limitSizes);
  for (const middleware of options.middleware ?? []) app.use(middleware);
  app.use((c, next) => {
    const allow = methodsOf(c.req.path);
    if (allow.length === 0) throw notFound(c);
    const method = methodOf(c.req.raw);
    if (method === "OPTIONS") {
      return Promise.resolve(
        c.body(null, 204, { allow: [...allow, "OPTIONS"].join(", ") }),
      );
    }
    if (!allow.includes(method)) {
      throw new HttpRequestError(
        "method_not_allowed",
        `Cannot ${shortMethod(method)} ${shortPath(c.req.path)}: allowed ${allow.join(", ")}`,
        { allow },
      );
    }
    return next();
  });

  for (const route of routes) {
    app.openAPIRegistry.registerPath(documented(route, options.commonResponses ?? {}));
    const readsJson = route.body !== undefined && isJson(route.body.mediaType);
    app.on(route.method.toUpperCase(), honoPath(route.path), async (c) => {
      const params = route.params ? parse(route.params, c.req.param(), "path") : undefined;
      const query = route.query ? parse(route.query, queryObject(c.req.url), "query") : undefined;
      let body: unknown = undefined;
      if (readsJson) {
        checkJsonType(c.req.header("content-type"));
        const raw = await readJsonBody(c.req.raw, { maxBytes, tooLargeHint: options.tooLargeHint });
        body = parse(route.body!.schema, raw, "request");
      }
      return await route.handler(c, { params, query, body });
    });
  }

  function generate(): OpenApiDocument {
    const generated = app.getOpenAPI31Document({ openapi: "3.1.0", info: options.info });
    return renameItemSchemas({
      ...generated,
      jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    }) as OpenApiDocument;
  }

  return {
    app,
    fetch: (request, info) => Promise.resolve(app.fetch(request, info)),
    document: () => document ??= generate(),
  };
}

/** Refuses a URL or headers over the layer's limits, in the service's shape. */
const limitSizes: MiddlewareHandler = (c, next) => {
  if (c.req.url.length > MAX_URL_LENGTH) {
    throw new HttpRequestError(
      "url_too_long",
      `Cannot read the request: the URL is ${c.req.url.length} characters, more than the ` +
        `limit of ${MAX_URL_LENGTH}`,
    );
  }
  let bytes = 0;
  for (const [name, value] of c.req.raw.headers) bytes += name.length + value.length;
  if (bytes > MAX_HEADER_BYTES) {
    throw new HttpRequestError(
      "headers_too_large",
      `Cannot read the request: its headers are ${bytes} bytes, more than the limit of ` +
        `${MAX_HEADER_BYTES}`,
    );
  }
  return next();
};

/**
 * The request id on every answer, not only on errors: hono's `requestId` sets its header before
 * the handler runs, and an answer the handler builds itself (`new Response`) does not carry it.
 */
const stampRequestId: MiddlewareHandler = async (c, next) => {
  await next();
  const id = c.get("requestId");
  if (!id || c.res.headers.get("x-request-id") === id) return;
  try {
    c.res.headers.set("x-request-id", id);
  } catch {
    // Immutable headers (a fetched answer passed on): a copy carries the id.
    const copy = new Response(c.res.body, c.res);
    copy.headers.set("x-request-id", id);
    c.res = undefined;
    c.res = copy;
  }
};

function shortPath(path: string): string {
  return path.length > 100 ? `${path.slice(0, 100)}…` : path;
}

function shortMethod(method: string): string {
  return method.length > 20 ? `${method.slice(0, 20)}…` : method;
}

function notFound(c: Context): HttpRequestError {
  return new HttpRequestError(
    "not_found",
    `Cannot ${shortMethod(methodOf(c.req.raw))} ${shortPath(c.req.path)}: no such endpoint`,
  );
}

/** hono's own exceptions (from its middleware) as the layer's errors; anything else as is. */
function fromHono(error: unknown): unknown {
  if (!(error instanceof HTTPException)) return error;
  if (error.status === 413) {
    return new HttpRequestError(
      "request_too_large",
      "Cannot read the request: the body is too large",
      {
        cause: error,
      },
    );
  }
  if (error.status === 400) {
    return new HttpRequestError("invalid_request", `Cannot read the request: ${error.message}`, {
      cause: error,
    });
  }
  return error;
}

/** `GET /openapi.json`, declared like any other route. */
function defineOpenApiRoute(document: () => OpenApiDocument): Route {
  return {
    method: "get",
    path: "/openapi.json",
    summary: "This service's OpenAPI 3.1 document",
    description: "Generated from the same route declarations that route and validate requests.",
    tags: ["meta"],
    responses: { 200: { description: "The document", content: json(OPENAPI_DOCUMENT) } },
    handler: (c) => c.json(document()),
  };
}
