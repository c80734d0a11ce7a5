/**
 * The routes of what changes (private to `indexer/`; `handler.ts` lists them): `/health`,
 * readiness with every problem by its code, and `/events`, the change stream.
 *
 * @module
 */

import { defineRoute, HttpRequestError, json, type Route, z } from "../http/mod.ts";
import { historySync, refusal } from "./_serving.ts";
import { jsonResponse, setBaseHeaders } from "./_response.ts";
import { ErrorSchema, RetryAfterHeaders } from "./_schemas.ts";
import { HealthSchema } from "./_schemas_health.ts";
import { IndexerEventSchema } from "./_schemas_events.ts";
import { IndexerRequestError } from "./errors.ts";
import type { IndexerEvents } from "./events.ts";
import type { IndexerHandlerOptions } from "./handler.ts";
import { retryAfter } from "./http_error.ts";
import type { ViewOptions } from "./views.ts";
import { healthView } from "./views_health.ts";

/** `/health`: readiness, and the history's state. */
export function healthRoute(
  options: IndexerHandlerOptions,
  clock: () => Date,
  viewOptions: ViewOptions,
): Route {
  return defineRoute({
    method: "get",
    path: "/health",
    summary: "Readiness",
    description: "200 when the data endpoints would answer 200, 503 (with `Retry-After`) " +
      "when not. The body is the same shape either way; `live: true` says the process is up. " +
      "The settlement history's state (its role, how far it is, a block it cannot read, its " +
      "failures) is shown in `settlements` and never turns this into a 503.",
    responses: {
      200: { description: "Serving fresh data.", content: json(HealthSchema) },
      503: {
        description: "Not serving now; the body says why.",
        headers: RetryAfterHeaders,
        content: json(HealthSchema),
      },
    },
    handler: () => {
      const state = options.state();
      const now = clock();
      const refused = refusal(state, now);
      const sync = historySync(state, refused ? null : state.snapshot, viewOptions);
      const health = JSON.stringify(
        healthView(state, now, refused, sync, options.rpc?.() ?? []),
      );
      if (!refused) return jsonResponse(health, 200);
      return jsonResponse(health, 503, { "retry-after": retryAfter(refused.retryAfterSecs) });
    },
  });
}

/** `Last-Event-ID` (header, or `last_event_id` in the query for clients that cannot set it). */
const EventsQuery = z.object({
  last_event_id: z.string().regex(/^(0|[1-9][0-9]{0,15})$/).optional().describe(
    "The id of the last event the client has (as the `Last-Event-ID` header, which wins).",
  ),
});

/** `/events`: the change stream. */
export function eventsRoute(events: IndexerEvents): Route {
  return defineRoute({
    method: "get",
    path: "/events",
    summary: "Change stream",
    description: "Server-sent events, as things change: `snapshot`, `provider_joined`, " +
      "`provider_left`, `provider_rejected`, `epoch_closed`, `settlements`, `health`, " +
      "`tee_evidence`; each with an increasing `id`. A client reconnecting with " +
      "`Last-Event-ID` (browsers do) gets every event it missed, or `reset` when they are no " +
      "longer kept. Every stream starts with `ready` and has a keep-alive comment every 15 s.",
    query: EventsQuery,
    responses: {
      200: {
        description: "The stream (`text/event-stream`).",
        content: {
          "text/event-stream": { schema: z.string(), itemSchema: IndexerEventSchema },
        },
      },
      400: {
        description: "`Last-Event-ID` is not an event id (`invalid_request`).",
        content: json(ErrorSchema),
      },
      503: {
        description: "Too many streams are open (`too_many_streams`).",
        headers: RetryAfterHeaders,
        content: json(ErrorSchema),
      },
    },
    handler: (c, { query }) => {
      const header = c.req.raw.headers.get("last-event-id")?.trim();
      const raw = header || query.last_event_id;
      if (raw !== undefined && !/^(0|[1-9][0-9]{0,15})$/.test(raw)) {
        throw new HttpRequestError(
          "invalid_request",
          `Last-Event-ID ${
            JSON.stringify(raw.slice(0, 40))
          } is not an event id (a decimal integer)`,
        );
      }
      const body = events.stream(raw === undefined ? null : Number(raw));
      if (!body) {
        throw new IndexerRequestError(
          "too_many_streams",
          `${events.streams} change streams are open, the most this indexer serves; try again later`,
          { retryAfterSecs: 10 },
        );
      }
      const headers = new Headers({
        "content-type": "text/event-stream; charset=utf-8",
        // nginx and other proxies pass each event on at once.
        "x-accel-buffering": "no",
      });
      setBaseHeaders(headers); // CORS, no-store, nosniff
      return new Response(body, { headers });
    },
  });
}
