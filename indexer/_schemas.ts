/**
 * The schemas of every body the indexer answers with: the route declarations (`handler.ts`)
 * document them in the generated OpenAPI 3.1 document, and the views' types (`views.ts`) are
 * inferred from them. Module-private: no exported type of a published module names a schema.
 *
 * Conventions (`docs/protocol.md` §0): token amounts, prices, block numbers, epochs and
 * timestamps read from chain are decimal strings; counts are JSON numbers; addresses and
 * hashes are lower-case 0x hex; times are RFC 3339 UTC. Every object is closed
 * (`additionalProperties: false`).
 *
 * @module
 */

import { z } from "../http/mod.ts";
import { REJECTION_REASONS, type RejectionReason } from "./verify_entry.ts";

/**
 * A decimal string with the meaning of its field. Inline, not a named component: the
 * generator turns a described copy of a named schema into the component itself (the first
 * copy's description replaces the component's), so a named schema is only ever used as is.
 */
const decimal = (description = DECIMAL) =>
  z.string().regex(/^(0|[1-9][0-9]*)$/).describe(description);
const DECIMAL = "An unsigned integer in decimal (uint256 values do not fit a JSON number).";
/** An RFC 3339 UTC time (inline, like {@linkcode decimal}). */
const time = (description?: string) => {
  const schema = z.iso.datetime();
  return description ? schema.describe(description) : schema;
};
const Address = z.string().regex(/^0x[0-9a-f]{40}$/).openapi("Address");
const Hash = z.string().regex(/^0x[0-9a-f]{64}$/).openapi("Hash");
const Tier = z.enum(["verified", "tee"]).openapi("Tier");
const RejectionReasonSchema = z.enum(REJECTION_REASONS as [RejectionReason, ...RejectionReason[]])
  .openapi("RejectionReason");

/** A count the indexer makes: a JSON integer, at least 0. */
const count = (description?: string) => {
  const schema = z.int().min(0);
  return description ? schema.describe(description) : schema;
};
/** The schema or `null` (a union: `.nullable()` on a named schema documents it wrongly). */
const nullable = <T extends z.ZodType>(schema: T) => z.union([schema, z.null()]);

const RejectionCounts = z.object(
  Object.fromEntries(REJECTION_REASONS.map((reason) => [reason, count()])) as Record<
    RejectionReason,
    z.ZodInt
  >,
).strict().openapi("RejectionCounts", {
  description: "Rejected router entries by reason, every reason present.",
});

const Capacity = z.object({
  max_concurrency: count("Most concurrent requests."),
  available_concurrency: count("Of those, free now."),
}).strict().openapi("Capacity");

const Metrics = z.object({
  tokens_per_sec: z.number().min(0).describe("Observed decode throughput."),
}).strict().openapi("Metrics");

const Price = z.object({
  input: decimal("Smallest token unit per 1M input tokens."),
  output: decimal("Smallest token unit per 1M output tokens."),
}).strict().openapi("Price");

/** `{code, message}`: why something is not available. */
export const ErrorDetail = z.object({ code: z.string(), message: z.string() }).strict()
  .openapi("ErrorDetail");

/** Every error code of the indexer's answers (`docs/indexer.md`). */
export const ERROR_CODES = [
  "not_found",
  "method_not_allowed",
  "url_too_long",
  "headers_too_large",
  "no_snapshot",
  "stale",
  "chain_unreachable",
  "chain_error",
  "routers_unreachable",
  "aborted",
  "internal",
  "internal_error",
] as const;

/** The network's error shape (`docs/protocol.md` §0). */
export const ErrorSchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES),
    message: z.string().describe("What failed, what was found, what was expected."),
  }).strict(),
}).strict().openapi("Error", { description: "The network's error shape (`docs/protocol.md` §0)." });

const snapshotFields = {
  block_number: decimal("The block every chain value was read at."),
  block_hash: Hash,
  block_timestamp: decimal("Unix seconds."),
  taken_at: time("When the refresh started."),
};

/** Which block and when: the `snapshot` object of every data body. */
export const SnapshotSchema = z.object(snapshotFields).strict().openapi("Snapshot", {
  description: "Which block and when.",
});

/** One router in `/stats`. */
export const RouterSchema = z.object({
  id: Address,
  url: z.string().describe("As stored on chain."),
  reachable: z.boolean(),
  error: nullable(ErrorDetail),
  entries: count("Entries listed."),
  accepted: count("Entries verified."),
  rejected: RejectionCounts,
  rejected_examples: z.array(
    z.object({
      provider: nullable(Address),
      reason: RejectionReasonSchema,
      message: z.string(),
    }).strict(),
  ).max(10),
}).strict().openapi("Router");

/** The `/stats` body. */
export const StatsSchema = z.object({
  providers: z.object({
    registered: count("Providers the Registry lists."),
    bonded: count("Active and staked at least the minimum bond."),
    live_verified: count("Bonded and served by a router with a matching ad."),
  }).strict(),
  validators: count("Validators the Registry lists."),
  staked_security: decimal("Total stake in the Staking contract."),
  min_provider_bond: decimal("The minimum bond of a provider."),
  routers: z.object({
    total: count("Routers the Registry lists."),
    reachable: count("Of those, answered with a valid envelope."),
    list: z.array(RouterSchema),
  }).strict(),
  tee_measurements: z.array(Hash),
  emission: z.object({
    total_emitted: decimal("Emitted so far."),
    cap: decimal("Upper bound of the total."),
    current_epoch: decimal("The epoch now."),
    current_epoch_reward: decimal("Reward of the current epoch."),
    emitted_epochs: decimal("Epochs emitted."),
    schedule: z.object({
      rule: z.literal("halving"),
      genesis_time: decimal("Start of epoch 0, Unix seconds."),
      epoch_length: decimal("Seconds."),
      initial_reward: decimal("Reward of epoch 0."),
      halving_interval: decimal("Epochs between halvings."),
    }).strict(),
  }).strict(),
  capacity: Capacity,
  models: count("Distinct models served by live-verified providers."),
  rejected_ads: z.object({
    total: count("All rejections."),
    by_reason: RejectionCounts,
  }).strict(),
  settlements: z.object({
    scanned_to_block: nullable(decimal()),
    confirmations: count("Depth at which settlements count."),
    amount: decimal("Settled amount."),
    tokens: decimal("Settled tokens."),
    count: count("Settlements."),
  }).strict(),
  snapshot: SnapshotSchema,
}).strict().openapi("Stats");

const reputation = z.number().min(0).max(1);

/** One entry of `/models`. */
export const ModelSchema = z.object({
  model: z.string().regex(/^[^/]+\/[^/]+$/).describe("maker/model"),
  cheapest_price: z.object({
    input: decimal("Input price."),
    output: decimal("Output price."),
    provider: Address,
    tier: Tier,
  }).strict(),
  providers: count("Live-verified providers serving it."),
  tiers: z.object({ verified: count("Verified tier."), tee: count("TEE tier.") }).strict(),
  reputation: nullable(reputation),
  tokens_per_sec: z.number().min(0),
  context_length: z.int().min(1),
}).strict().openapi("Model");

/** The `/models` body. */
export const ModelsSchema = z.object({ models: z.array(ModelSchema) }).strict().openapi("Models");

/** Settled volume of one epoch. */
export const EpochVolumeSchema = z.object({
  epoch: decimal("The epoch."),
  amount: decimal("Settled amount."),
  tokens: decimal("Settled tokens."),
  settlements: count("Settlements."),
}).strict().openapi("EpochVolume");

/** One entry of `/providers`. */
export const ProviderSchema = z.object({
  provider: Address,
  tier: Tier,
  stake: decimal("Stake in the Staking contract."),
  serving_key: Address,
  ad_commitment: Hash,
  endpoint: z.url(),
  models: z.array(
    z.object({ model: z.string(), prices: Price, context_length: z.int().min(1) }).strict(),
  ),
  capacity: Capacity,
  metrics: Metrics,
  routers: z.array(z.string()).min(1),
  settled: z.object({
    epochs: z.array(EpochVolumeSchema),
    total: z.object({
      amount: decimal("Settled amount."),
      tokens: decimal("Settled tokens."),
      settlements: count("Settlements."),
    }).strict(),
  }).strict(),
  reputation: nullable(reputation),
}).strict().openapi("Provider");

/** The `/providers` body. */
export const ProvidersSchema = z.object({ providers: z.array(ProviderSchema) }).strict()
  .openapi("Providers");

/** The `/health` body (the same shape for its 200 and its 503). */
export const HealthSchema = z.object({
  status: z.enum(["ok", "starting", "unavailable", "stale"]),
  live: z.literal(true),
  serving: z.boolean(),
  error: nullable(ErrorDetail),
  last_snapshot_at: nullable(time()),
  last_attempt_at: nullable(time()),
  last_error: nullable(z.object({ code: z.string(), message: z.string(), at: time() }).strict()),
  snapshot: nullable(
    z.object({ ...snapshotFields, age_secs: count("Age of the served snapshot, seconds.") })
      .strict(),
  ),
  routers: nullable(
    z.object({ total: count("Routers."), reachable: count("Reachable.") }).strict(),
  ),
  refresh_secs: z.int().min(1),
  stale_after_secs: z.int().min(1),
  next_refresh_at: nullable(time()),
  refreshing: z.boolean(),
  settlements: z.object({
    scanned_to_block: nullable(decimal()),
    rescans: count("Rescans from the start block."),
    last_rescan: nullable(z.object({ at: time(), reason: z.string() }).strict()),
  }).strict(),
}).strict().openapi("Health");

/** The `Retry-After` header of every 503. */
export const RetryAfterHeaders = z.object({
  "Retry-After": z.int().min(1).describe(
    "Seconds until the next refresh may succeed (at least 1).",
  ),
});

/** The `Allow` header of a 405. */
export const AllowHeaders = z.object({
  Allow: z.literal("GET, HEAD, OPTIONS").describe("The methods of the path."),
});
