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

import { MODEL_CAPABILITY_NAMES } from "../chain/ad.ts";
import { z } from "../http/mod.ts";
import { REJECTION_REASONS, type RejectionReason } from "./verify_entry.ts";

/**
 * A decimal string with the meaning of its field. Inline, not a named component: the
 * generator turns a described copy of a named schema into the component itself (the first
 * copy's description replaces the component's), so a named schema is only ever used as is.
 */
export const decimal = (description = DECIMAL) =>
  z.string().regex(/^(0|[1-9][0-9]*)$/).describe(description);
const DECIMAL = "An unsigned integer in decimal (uint256 values do not fit a JSON number).";
/** An RFC 3339 UTC time (inline, like {@linkcode decimal}). */
export const time = (description?: string) => {
  const schema = z.iso.datetime();
  return description ? schema.describe(description) : schema;
};
const Address = z.string().regex(/^0x[0-9a-f]{40}$/).openapi("Address");
const Hash = z.string().regex(/^0x[0-9a-f]{64}$/).openapi("Hash");
const Tier = z.enum(["verified", "tee"]).openapi("Tier");
const RejectionReasonSchema = z.enum(REJECTION_REASONS as [RejectionReason, ...RejectionReason[]])
  .openapi("RejectionReason");

/** A count the indexer makes: a JSON integer, at least 0. */
export const count = (description?: string) => {
  const schema = z.int().min(0);
  return description ? schema.describe(description) : schema;
};
/** The schema or `null` (a union: `.nullable()` on a named schema documents it wrongly). */
export const nullable = <T extends z.ZodType>(schema: T) => z.union([schema, z.null()]);

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
  "unknown_provider",
  "invalid_request",
  "method_not_allowed",
  "url_too_long",
  "headers_too_large",
  "no_snapshot",
  "stale",
  "too_many_streams",
  "chain_unreachable",
  "rpc_rate_limited",
  "rpc_error",
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

/** The fields of a snapshot, shared with `/health`. */
export const snapshotFields = {
  block_number: decimal("The block every chain value was read at."),
  block_hash: Hash,
  block_timestamp: decimal("Unix seconds."),
  taken_at: time("When the refresh started."),
};

const nextCursor = nullable(z.string()).describe(
  "Pass it as `cursor` to get the next page; null on the last page.",
);

/** The history's own state, carried by every body with settlement figures. */
/** The fields of the history's state, shared with `/health`. */
export const historyFields = {
  synced: z.boolean().describe(
    "Whether the settlement history has caught up with the snapshot (it counts every block up " +
      "to the snapshot's block minus the confirmation depth). Until then every figure derived " +
      "from settlements is null: never zero, never partial.",
  ),
  scanned_to_block: nullable(
    decimal("The last block the settlement figures count (the history's last confirmed block)."),
  ),
  head_block: nullable(decimal("The chain head the history last measured.")),
  confirmations: count("Depth at which settlements count, blocks."),
};

/** The `history` object of the list bodies. */
export const HistorySchema = z.object(historyFields).strict().openapi("HistoryState", {
  description: "How far the settlement history is; settlement figures are null unless synced.",
});

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
    ...historyFields,
    amount: nullable(decimal("All settled amount, every provider (listed or not).")),
    tokens: nullable(decimal("All settled tokens.")),
    count: nullable(count("All settlements.")),
    signed_amount: nullable(
      decimal("The part of `amount` paid by consumers' vouchers (backed by their signatures)."),
    ),
    signed_count: nullable(count("Settlements paid by consumers' vouchers.")),
    paying_consumers: nullable(
      count("Distinct consumers who paid with a voucher in the current epoch."),
    ),
  }).strict().describe(
    "All settled volume counted so far, with the history's own state; the figures are " +
      "null until the history has caught up with the snapshot (`synced`).",
  ),
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
  reputation: nullable(reputation).describe(
    "Mean reputation of those providers; null when none has one (also while the history is " +
      "not synced).",
  ),
  tokens_per_sec: z.number().min(0),
  context_length: z.int().min(1),
  kind: z.enum(["chat", "embedding"]).describe(
    "What the model does: embedding when every provider's ad says so, else chat (an ad without " +
      "a kind offers a chat model).",
  ),
  capabilities: z.array(z.enum(MODEL_CAPABILITY_NAMES))
    .describe("What every provider listing the model supports, sorted."),
  embedding_dimensions: z.int().min(1).optional().describe(
    "An embedding model's vector length: the smallest its providers advertise.",
  ),
}).strict().openapi("Model");

/** The `/models` body. */
export const ModelsSchema = z.object({
  models: z.array(ModelSchema),
  next_cursor: nextCursor,
  history: HistorySchema,
}).strict().openapi("Models");

/** Settled amount, tokens and settlements. */
const VolumeSchema = z.object({
  amount: decimal("Settled amount."),
  tokens: decimal("Settled tokens."),
  settlements: count("Settlements."),
}).strict().openapi("Volume");

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
  settled: nullable(
    z.object({
      epochs: z.array(EpochVolumeSchema).describe(
        "The last 8 epochs up to the current one (fewer near genesis), oldest first, zeros " +
          "included.",
      ),
      total: VolumeSchema,
    }).strict(),
  ).describe("Its settled volume; null until the history is synced."),
  reputation: nullable(reputation).describe(
    "Share of the last 8 finished epochs with a settlement; null before the first epoch " +
      "finished and while the history is not synced.",
  ),
}).strict().openapi("Provider");

/** The `/providers` body. */
export const ProvidersSchema = z.object({
  providers: z.array(ProviderSchema),
  next_cursor: nextCursor,
  history: HistorySchema,
}).strict().openapi("Providers");

/** One epoch of `/epochs`. */
export const EpochSchema = z.object({
  epoch: decimal("The epoch."),
  reward: decimal(
    "Its emission reward: the schedule's reward (`initial_reward` halved every " +
      "`halving_interval` epochs), limited by what the cap leaves after the earlier epochs.",
  ),
  emitted: z.boolean().describe("Whether the Emission contract has emitted it."),
  finished: z.boolean().describe("Whether the epoch has ended (it is before the current one)."),
  amount: nullable(decimal("Settled amount, every provider; null unless synced.")),
  tokens: nullable(decimal("Settled tokens; null unless synced.")),
  settlements: nullable(count("Settlements; null unless synced.")),
  providers: nullable(count("Providers paid at least once in it; null unless synced.")),
  signed_amount: nullable(
    decimal("Of `amount`, what consumers' vouchers paid (backed by their signatures)."),
  ),
  signed_settlements: nullable(count("Settlements paid by consumers' vouchers.")),
  paying_consumers: nullable(
    count("Distinct consumers who paid with a voucher in it; null unless synced."),
  ),
}).strict().openapi("Epoch");

/** The `/epochs` body. */
export const EpochsSchema = z.object({
  epochs: z.array(EpochSchema),
  next_cursor: nextCursor,
  history: HistorySchema,
  snapshot: SnapshotSchema,
}).strict().openapi("Epochs");

/** One epoch of a provider's history. */
const ProviderEpochSchema = z.object({
  epoch: decimal("The epoch."),
  amount: decimal("Settled amount."),
  tokens: decimal("Settled tokens."),
  settlements: count("Settlements."),
}).strict().openapi("ProviderEpoch");

/** The `/providers/{address}` body. */
/** The trust fields of `/providers/{address}` (`views_trust.ts`). */
export const ProviderTrustSchema = z.object({
  verification: z.object({
    ad_commitment: z.enum(["verified", "rejected", "not_seen"]).describe(
      "`verified`: a router serves an ad whose keccak256(JCS(ad)) equals the on-chain " +
        "commitment; `rejected`: its entry failed verification (`reason`); `not_seen`: no " +
        "router lists it now.",
    ),
    reason: nullable(RejectionReasonSchema),
    message: nullable(z.string()),
    routers: count("Routers serving a verified entry for it."),
  }).strict(),
  tee: nullable(
    z.object({
      evidence: nullable(
        z.object({
          status: z.enum(["verified", "refused", "not_offered", "unreachable"]).describe(
            "What the indexer's last check of its attestation found (`verified`: the quote " +
              "chains to the vendor roots, its measurement is approved, and it attests the " +
              "Registry's serving key).",
          ),
          checked_at: time("When it was checked."),
          age_secs: count("How long ago, seconds."),
          format: nullable(z.enum(["tdx", "sev-snp"])),
          measurement: nullable(z.string().describe("The attested measurement id.")),
          tcb_status: nullable(z.string().describe("From the collateral; `unknown` without.")),
          expires_at: nullable(time("When a verified outcome stops being valid.")),
          message: nullable(z.string().describe("Why it is not `verified`.")),
        }).strict(),
      ).describe("Null until the indexer has checked it (it is checked once live-verified)."),
      approved_measurements: count("Measurements the Registry approves (network-wide)."),
      gpu: nullable(
        z.object({
          count: count("GPUs the verified evidence attests."),
          measurements: z.array(z.string()).describe("Each GPU's approved measurement id."),
          drivers: z.array(z.string()).describe("Each GPU's driver version."),
        }).strict(),
      ).describe(
        "The GPUs of the machine, verified with its evidence (NVIDIA reports to the pinned " +
          "root, measurements approved, bound to the nonce); null unless `evidence` is verified.",
      ),
    }).strict(),
  ).describe("For a TEE-tier provider; null for the verified tier."),
}).strict().openapi("ProviderTrust");

export const ProviderDetailSchema = z.object({
  provider: Address,
  registry: nullable(
    z.object({
      tier: Tier,
      active: z.boolean(),
      stake: decimal("Stake in the Staking contract."),
      bonded: z.boolean().describe("Active and staked at least the minimum bond."),
      serving_key: Address,
      ad_commitment: Hash,
    }).strict(),
  ).describe(
    "Its Registry record at the snapshot's block; null when the Registry does not list it.",
  ),
  live: nullable(ProviderSchema).describe(
    "Its `/providers` entry when it is live-verified now; null otherwise.",
  ),
  settled: z.object({
    total: nullable(
      z.object({
        amount: decimal("Settled amount."),
        tokens: decimal("Settled tokens."),
        settlements: count("Settlements."),
        epochs: count("Epochs with at least one settlement."),
        first_epoch: nullable(decimal("The first epoch with a settlement.")),
        last_epoch: nullable(decimal("The last epoch with a settlement.")),
      }).strict(),
    ).describe("All its settled volume; null unless synced."),
    epochs: nullable(z.array(ProviderEpochSchema)).describe(
      "A page of the epochs in which it was paid (only those), in the requested order; null " +
        "unless synced.",
    ),
    next_cursor: nextCursor,
  }).strict(),
  verification: ProviderTrustSchema.shape.verification,
  tee: ProviderTrustSchema.shape.tee,
  history: HistorySchema,
  snapshot: SnapshotSchema,
}).strict().openapi("ProviderDetail");

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

/** `limit`: items per page. */
const limit = (max: number, fallback: number) =>
  z.coerce.number().int().min(1).max(max).optional().describe(
    `Items per page, 1 to ${max}. Default: ${fallback}.`,
  );
/** `cursor`: the previous page's `next_cursor`. */
const cursorParam = (what: string) =>
  z.string().min(1).max(256).optional().describe(
    `The previous page's \`next_cursor\` (${what}); the page starts strictly after it.`,
  );
const order = z.enum(["asc", "desc"]).optional().describe(
  "`asc` (oldest first, the default) or `desc` (newest first).",
);

/** The most providers or models per page, and the default. */
export const MAX_LIST_PAGE = 1_000;
/** The most epochs per page. */
export const MAX_EPOCH_PAGE = 1_000;
/** The default number of epochs per page. */
export const DEFAULT_EPOCH_PAGE = 100;

/** The query of `/providers`. */
export const ProvidersQuery = z.object({
  limit: limit(MAX_LIST_PAGE, MAX_LIST_PAGE),
  cursor: cursorParam("an address").pipe(
    z.string().regex(/^0x[0-9a-fA-F]{40}$/).optional(),
  ),
  model: z.string().min(1).max(256).optional().describe("Only providers serving this model id."),
  tier: Tier.optional().describe("Only providers of this tier."),
});

/** The query of `/models`. */
export const ModelsQuery = z.object({
  limit: limit(MAX_LIST_PAGE, MAX_LIST_PAGE),
  cursor: cursorParam("a model id"),
  model: z.string().min(1).max(256).optional().describe("Only this model id."),
  tier: Tier.optional().describe(
    "Only offers of providers of this tier (the figures are computed over those alone).",
  ),
});

const epochCursor = cursorParam("an epoch").pipe(
  z.string().regex(/^(0|[1-9][0-9]{0,77})$/).optional(),
);

/** The query of `/epochs`. */
export const EpochsQuery = z.object({
  limit: limit(MAX_EPOCH_PAGE, DEFAULT_EPOCH_PAGE),
  cursor: epochCursor,
  order,
});

/** The path parameter of `/providers/{address}`. */
export const ProviderParams = z.object({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/).describe("The provider's address."),
});

/** The query of `/providers/{address}`. */
export const ProviderQuery = z.object({
  limit: limit(MAX_EPOCH_PAGE, DEFAULT_EPOCH_PAGE),
  cursor: epochCursor,
  order,
});
