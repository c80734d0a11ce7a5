/**
 * The schemas of the daemon's transparency endpoints, `GET /v1/gateways`, `GET /v1/verdicts`
 * and `GET /v1/verdicts/{id}`. Module-private (JSR's slow-types rule).
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

/** The path of `GET /v1/verdicts/{id}`: a reply's id from its `x-net-receipt` header. */
export const RECEIPT_PATH = z.object({
  id: z.string().regex(/^r[0-9a-f]{32}$/).openapi({
    description: "The reply's id: its `x-net-receipt` header (`r` and 32 hex digits).",
  }),
});

/** The answer of `GET /v1/verdicts/{id}`: a receipt record (`docs/protocol.md` §8). */
export const RECEIPT_RECORD = z.strictObject({
  version: z.literal(1),
  provider: z.string(),
  verified_at: TIME,
  measurements: z.array(z.string()),
  attestation: z.record(z.string(), z.unknown()).openapi({
    description: "The attestation bundle the reply was sealed under (protocol §6).",
  }),
  receipt: z.record(z.string(), z.unknown()).openapi({
    description: "The provider's receipt for the reply (protocol §8).",
  }),
}).openapi("ReceiptRecord", {
  description: "A verified receipt and its attestation; `deno task verify-receipt <file>` " +
    "re-verifies it offline.",
});
