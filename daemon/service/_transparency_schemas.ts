/**
 * The schemas of the daemon's transparency endpoints, `GET /v1/gateways` and
 * `GET /v1/verdicts`. Module-private (JSR's slow-types rule).
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import { ERROR_CODE, TIER, TIME } from "../surface/mod.ts";

/** The answer of `GET /v1/gateways`: the gateways' own shape. */
export const GATEWAYS = z.strictObject({
  gateways: z.array(z.strictObject({ url: z.url(), last_seen: TIME })),
}).openapi("Gateways");

/** The answer of `GET /v1/verdicts`. */
export const VERDICTS = z.strictObject({
  verdicts: z.array(z.strictObject({
    at: TIME,
    tier: TIER,
    model: z.string(),
    provider: z.string(),
    gateway: z.string(),
    outcome: z.enum(["accepted", "refused"]),
    verdict: z.string(),
    code: ERROR_CODE.nullable(),
  })),
}).openapi("Verdicts");

/** The query of `GET /v1/verdicts`, for a log of `capacity` verdicts. */
export function verdictsQuery(capacity: number) {
  return z.object({
    limit: z.coerce.number().int().min(1).max(capacity).optional().openapi({
      type: "integer",
      minimum: 1,
      maximum: capacity,
      description: `How many, 1 to ${capacity} (the log's capacity); default 50 or fewer.`,
    }),
  });
}
