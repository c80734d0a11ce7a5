/**
 * Request metrics for a service on the HTTP layer, and its `GET /metrics` route. The middleware
 * counts every answer by method, **route template** (`/v1/models/{id}`, never the raw path, so
 * the label set is bounded by the route table; requests no route served are `unmatched`) and
 * status, and observes the latency: until the answer (for a streamed answer,
 * `text/event-stream` or `application/x-ndjson`, until its end), and for a streamed answer the
 * time to its first body chunk. It never looks at a body's content.
 *
 * | metric (after the registry's prefix)   | type      | labels                         |
 * | -------------------------------------- | --------- | ------------------------------ |
 * | `http_requests_total`                  | counter   | `method`, `route`, `status`, … |
 * | `http_request_duration_seconds`        | histogram | `method`, `route`, …           |
 * | `http_response_first_byte_seconds`     | histogram | `method`, `route`, …           |
 * | `http_requests_in_flight`              | gauge     |                                |
 *
 * Put the middleware first in the service's list, so that answers refused by later rules (Host,
 * Origin) are counted too.
 *
 * @example
 * ```ts
 * import { z } from "@hono/zod-openapi";
 * import { MetricsRegistry } from "../io/metrics.ts";
 * import { httpMetrics, metricsRoute } from "./metrics.ts";
 * import { defineRoute } from "./route.ts";
 * import { createService } from "./service.ts";
 *
 * const registry = new MetricsRegistry({ prefix: "example_" });
 * const service = createService({
 *   info: { title: "example", version: "1" },
 *   middleware: [httpMetrics(registry)],
 *   routes: [
 *     metricsRoute(registry),
 *     defineRoute({
 *       method: "get",
 *       path: "/items/{id}",
 *       summary: "An item",
 *       params: z.object({ id: z.string() }),
 *       responses: { 200: { description: "The item" } },
 *       handler: (c) => c.text("item"),
 *     }),
 *   ],
 *   renderError: () => new Response("error", { status: 500 }),
 * });
 * await (await service.fetch(new Request("http://127.0.0.1/items/42"))).text();
 * const text = await (await service.fetch(new Request("http://127.0.0.1/metrics"))).text();
 * console.assert(
 *   text.includes('example_http_requests_total{method="GET",route="/items/{id}",status="200"} 1'),
 * );
 * ```
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { z } from "@hono/zod-openapi";
import { LATENCY_BUCKETS, METRICS_CONTENT_TYPE, type MetricsRegistry } from "../io/metrics.ts";
import { defineRoute, openApiPathOfHono, type Route } from "./route.ts";

/** The `route` label of an answer no declared route gave (404, 405, preflights, refusals). */
export const UNMATCHED_ROUTE = "unmatched";

/** The methods counted by name; any other is `other`. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** More labels of every request metric, read from the request's context. */
export interface ExtraLabels<L extends string> {
  /** Their names. */
  names: readonly L[];
  /** For some, every value they take (another is `other`). @default {{}} */
  values?: Partial<Readonly<Record<L, readonly string[]>>>;
  /** Their values for a request, once its answer is known (the route template is given). */
  of: (c: Context, route: string) => Readonly<Record<L, string>>;
}

/** Options of {@linkcode httpMetrics}. */
export interface HttpMetricsOptions<L extends string> {
  /**
   * More labels (e.g. the daemon's `dialect`).
   *
   * @default {undefined}
   */
  labels?: ExtraLabels<L>;
  /**
   * Whether an answer is a stream whose end (not its headers) ends the request.
   *
   * @default {`text/event-stream` and `application/x-ndjson` answers}
   */
  isStream?: (response: Response) => boolean;
  /**
   * Latency buckets, seconds.
   *
   * @default {LATENCY_BUCKETS}
   */
  buckets?: readonly number[];
}

function defaultIsStream(response: Response): boolean {
  const type = response.headers.get("content-type") ?? "";
  return /^(text\/event-stream|application\/x-ndjson)\b/.test(type);
}

const templates = new Map<string, string>();

/** The template of the route that answered, or {@linkcode UNMATCHED_ROUTE}. */
export function routeTemplate(c: Context): string {
  const route = matchedRoutes(c)[c.req.routeIndex];
  if (!route || route.method === "ALL") return UNMATCHED_ROUTE;
  let template = templates.get(route.path);
  if (template === undefined) templates.set(route.path, template = openApiPathOfHono(route.path));
  return template;
}

/** `body` passed through, calling `first` at its first chunk and `end` once it ends. */
function watchBody(
  body: ReadableStream<Uint8Array>,
  first: () => void,
  end: () => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let started = false;
  let ended = false;
  const finish = () => {
    if (!ended) {
      ended = true;
      end();
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          finish();
          controller.close();
          return;
        }
        if (!started) {
          started = true;
          first();
        }
        controller.enqueue(value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
}

/**
 * The request-metrics middleware of a service, recording into `registry`.
 *
 * @throws {RangeError} when the registry already has these metrics (one middleware per
 * registry).
 */
export function httpMetrics<L extends string = never>(
  registry: MetricsRegistry,
  options: HttpMetricsOptions<L> = {},
): MiddlewareHandler {
  const extra = options.labels;
  const names = extra?.names ?? [];
  const values: Record<string, readonly string[]> = {
    method: METHODS,
    ...(extra?.values as Record<string, readonly string[]> | undefined),
  };
  const isStream = options.isStream ?? defaultIsStream;
  const buckets = options.buckets ?? LATENCY_BUCKETS;
  const requests = registry.counter<string>({
    name: "http_requests_total",
    help: "Answered requests by method, route template and status.",
    labels: ["method", "route", "status", ...names],
    values,
  });
  const duration = registry.histogram<string>({
    name: "http_request_duration_seconds",
    help: "Time from the request to the end of its answer (a stream's last byte).",
    labels: ["method", "route", ...names],
    values,
    buckets,
  });
  const firstByte = registry.histogram<string>({
    name: "http_response_first_byte_seconds",
    help: "Time from the request to a streamed answer's first body chunk.",
    labels: ["method", "route", ...names],
    values,
    buckets,
  });
  const inFlight = registry.gauge({
    name: "http_requests_in_flight",
    help: "Requests being answered now (streams until their end).",
  });
  return async (c, next) => {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    inFlight.inc();
    let done = false;
    const settle = (labels: Record<string, string>) => {
      if (done) return;
      done = true;
      inFlight.dec();
      duration.observe(labels, seconds());
    };
    try {
      await next();
    } catch (error) {
      settle({ method: c.req.method, route: routeTemplate(c) });
      throw error;
    }
    const route = routeTemplate(c);
    const labels: Record<string, string> = {
      method: c.req.method,
      route,
      ...(extra ? extra.of(c, route) : {}),
    };
    requests.inc({ ...labels, status: String(c.res.status) });
    // Only a stream's body is touched (reading `.body` of any other answer would turn its
    // bytes into a stream, and a Content-Length into chunked encoding).
    const body = isStream(c.res) ? c.res.body : null;
    if (body) {
      c.res = new Response(
        watchBody(body, () => firstByte.observe(labels, seconds()), () => settle(labels)),
        c.res,
      );
      return;
    }
    settle(labels);
  };
}

/**
 * `GET /metrics`: the registry in the Prometheus text format (`no-store`). A service that
 * serves it puts it in its route list; its own rules (the daemon's Host and Origin checks)
 * apply to it like to any route.
 */
export function metricsRoute(registry: MetricsRegistry): Route {
  return defineRoute({
    method: "get",
    path: "/metrics",
    summary: "Prometheus metrics",
    description: "The service's metrics in the Prometheus text exposition format 0.0.4. " +
      "Counts and latencies only: no request content, no per-user data.",
    responses: {
      200: {
        description: "The metrics.",
        content: { "text/plain": { schema: z.string() } },
      },
    },
    handler: async () =>
      new Response(await registry.text(), {
        headers: {
          "content-type": METRICS_CONTENT_TYPE,
          "cache-control": "no-store",
          "x-content-type-options": "nosniff",
        },
      }),
  });
}
