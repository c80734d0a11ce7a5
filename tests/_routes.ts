/**
 * The route-table check every service runs: the live hono route table and the generated
 * OpenAPI document list the same operations. A route mounted without a declaration (so without
 * schemas) or a documented operation that nothing serves fails it.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Service } from "../http/mod.ts";
import { openApiPathOfHono } from "../http/route.ts";

/** `METHOD /path` of every route in the live table (middleware excluded). */
export function liveOperations(service: Service): string[] {
  return [
    ...new Set(
      service.app.routes
        .filter((route) => route.method !== "ALL")
        .map((route) => `${route.method} ${openApiPathOfHono(route.path)}`),
    ),
  ].sort();
}

/** `METHOD /path` of every operation in the generated document. */
export function documentedOperations(service: Service): string[] {
  const paths = (service.document().paths ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`)
  ).sort();
}

/** Fails when the live table and the document disagree, naming each side's extras. */
export function assertRoutesDocumented(service: Service): void {
  const live = liveOperations(service);
  const documented = documentedOperations(service);
  const undocumented = live.filter((op) => !documented.includes(op));
  const unserved = documented.filter((op) => !live.includes(op));
  assert.deepEqual(
    { undocumented, unserved },
    { undocumented: [], unserved: [] },
    "every route must be declared with its schemas, and every documented operation served",
  );
}
