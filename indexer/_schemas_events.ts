/**
 * The schema of each event of `GET /events` (private to `indexer/`), documented as the
 * stream's item schema; `events.ts` and `_state_events.ts` produce them.
 *
 * @module
 */

import { z } from "../http/mod.ts";
import { count, decimal, nullable, time } from "./_schemas.ts";

const at = time("When the indexer published it.");
const address = z.string().regex(/^0x[0-9a-f]{40}$/);

/** The data of one event (its `event:` line is its `type`). */
export const IndexerEventSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("ready"),
    last_id: count("The id of the last event published so far (0: none)."),
  }).strict().describe("First on every stream (no id): connected."),
  z.object({ type: z.literal("reset"), reason: z.string() }).strict().describe(
    "The events after the client's `Last-Event-ID` are no longer kept: read everything again.",
  ),
  z.object({
    type: z.literal("snapshot"),
    at,
    block_number: decimal("The block of the new snapshot."),
    block_hash: z.string(),
    taken_at: time(),
    live_verified: count(),
    bonded: count(),
    routers_reachable: count(),
  }).strict().describe("A new snapshot is served."),
  z.object({
    type: z.literal("provider_joined"),
    at,
    provider: address,
    tier: z.enum(["verified", "tee"]),
    models: count(),
  }).strict().describe("A provider became live-verified."),
  z.object({
    type: z.literal("provider_left"),
    at,
    provider: address,
    reason: z.string().describe(
      "`not_bonded`, `unknown_provider`, `not_served` (no router lists it) or the rejection " +
        "reason of its entry.",
    ),
  }).strict().describe("A provider is no longer live-verified."),
  z.object({
    type: z.literal("provider_rejected"),
    at,
    provider: address,
    router: address,
    reason: z.string(),
    message: z.string(),
  }).strict().describe("A router's entry for a provider failed verification (newly)."),
  z.object({
    type: z.literal("epoch_closed"),
    at,
    epoch: decimal("The epoch that closed."),
    next_epoch: decimal("The current epoch now."),
  }).strict().describe("The Emission clock moved to a new epoch."),
  z.object({
    type: z.literal("settlements"),
    at,
    confirmed_block: nullable(decimal()),
    failing: z.boolean(),
    code: nullable(z.string()),
    settlements: nullable(count()),
  }).strict().describe("The settlement history moved (or started or stopped failing)."),
  z.object({
    type: z.literal("health"),
    at,
    failing: z.boolean(),
    code: nullable(z.string()),
    message: nullable(z.string()),
  }).strict().describe("Refreshes started or stopped failing, or fail for another reason."),
  z.object({
    type: z.literal("tee_evidence"),
    at,
    provider: address,
    status: z.enum(["verified", "refused", "not_offered", "unreachable"]),
    message: nullable(z.string()),
  }).strict().describe("A TEE-tier provider's evidence check found something new."),
]).openapi("IndexerEvent");
