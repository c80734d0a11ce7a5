/**
 * A route, declared once: method, path, the schemas of what it takes and of what it answers per
 * status, and its handler. The service (`service.ts`) mounts it on hono, validates requests
 * against its schemas and generates the OpenAPI 3.1 document from the same declaration; the
 * handler's `input` is typed from the schemas.
 *
 * Paths are written the OpenAPI way: `/v1/providers/{provider}/key`. A parameter that may span
 * several segments names its pattern: `/v1/models/{id:.+}` (documented as `{id}`).
 *
 * @example
 * ```ts
 * import { z } from "@hono/zod-openapi";
 * import { defineRoute, json } from "./route.ts";
 *
 * const hello = defineRoute({
 *   method: "get",
 *   path: "/hello/{name}",
 *   summary: "Greets someone",
 *   params: z.object({ name: z.string().max(40) }),
 *   responses: { 200: { description: "The greeting", content: json(z.object({ text: z.string() })) } },
 *   handler: (c, { params }) => c.json({ text: `Hello, ${params.name}` }),
 * });
 * console.assert(hello.path === "/hello/{name}");
 * ```
 *
 * @module
 */

import type { Context } from "hono";
import type { z } from "@hono/zod-openapi";

/** The HTTP methods a route can declare (`HEAD` is answered for every `GET`). */
export type RouteMethod = "get" | "post" | "put" | "patch" | "delete";

/** One media type of a request or response: its schema, and for streams each item's. */
export interface MediaSpec {
  /** The schema of the whole body (for a stream: `z.string()`). */
  schema: z.ZodType;
  /**
   * For a stream (`text/event-stream`, `application/x-ndjson`): the schema of each event's data
   * or each line, documented as `x-item-schema` (OpenAPI 3.2's `itemSchema`).
   */
  itemSchema?: z.ZodType;
}

/** One documented answer of a route. */
export interface ResponseSpec {
  /** What the answer means. */
  description: string;
  /** The body per media type; absent for an empty body. */
  content?: Readonly<Record<string, MediaSpec>>;
  /** The response headers the client can rely on. */
  headers?: z.ZodObject;
}

/** The request body a route takes. */
export interface BodySpec<B extends z.ZodType> {
  /** Its schema. */
  schema: B;
  /**
   * Its media type. A JSON body (the default) is read by the layer (size limit, strict JSON)
   * and validated; any other body is left to the handler, unread.
   *
   * @default {"application/json"}
   */
  mediaType?: string;
  /** What the body is. */
  description?: string;
}

/** What a route's handler receives, typed from its schemas. */
export interface RouteInput<P, Q, B> {
  /** The path parameters, validated. */
  params: P;
  /** The query parameters, validated. */
  query: Q;
  /** The JSON body, validated (`undefined` for routes without a JSON body). */
  body: B;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** A route declaration. */
export interface RouteSpec<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
> {
  /** The method. */
  method: RouteMethod;
  /** The path, OpenAPI style (`/v1/models/{id:.+}` for a multi-segment parameter). */
  path: string;
  /** A stable name for code generators, e.g. `listModels`. @default {undefined} */
  operationId?: string;
  /** One line: what the route does. */
  summary: string;
  /** More on what it does and how it fails. */
  description?: string;
  /** Groups in the document. */
  tags?: readonly string[];
  /** The path parameters' schema. */
  params?: P;
  /** The query's schema (each value a string: use `z.coerce` for numbers). */
  query?: Q;
  /** The request body. */
  body?: B extends z.ZodType ? BodySpec<B> : undefined;
  /** Every answer the route gives, by status (the layer's own 4xx included). */
  responses: Readonly<Record<number, ResponseSpec>>;
  /** Answers a request that passed validation. */
  handler: (
    c: Context,
    input: RouteInput<Out<P>, Out<Q>, Out<B>>,
  ) => Response | Promise<Response>;
}

/** A declared route, as a service takes it. */
// deno-lint-ignore no-explicit-any
export type Route = RouteSpec<any, any, any>;

/**
 * Declares a route. An identity function that infers the handler's `input` types from the
 * schemas.
 */
export function defineRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(spec: RouteSpec<P, Q, B>): Route {
  return spec as Route;
}

/** `{"application/json": {schema}}`: the content of a JSON answer. */
export function json(schema: z.ZodType): Record<string, MediaSpec> {
  return { "application/json": { schema } };
}

const PARAM = /\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]+))?\}/g;

/** The path as the OpenAPI document writes it: `/v1/models/{id:.+}` → `/v1/models/{id}`. */
export function openApiPath(path: string): string {
  return path.replaceAll(PARAM, (_, name) => `{${name}}`);
}

/** The path as hono routes it: `/v1/models/{id:.+}` → `/v1/models/:id{.+}`. */
export function honoPath(path: string): string {
  return path.replaceAll(
    PARAM,
    (_, name, pattern) => (pattern ? `:${name}{${pattern}}` : `:${name}`),
  );
}

/** The OpenAPI form of a hono path: `/v1/models/:id{.+}` → `/v1/models/{id}`. */
export function openApiPathOfHono(path: string): string {
  return path.replaceAll(/:([A-Za-z_][A-Za-z0-9_]*)(\{[^}]*\})?/g, (_, name) => `{${name}}`);
}
