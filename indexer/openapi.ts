/**
 * The OpenAPI 3.1 description of the indexer's HTTP API, served at `GET /openapi.json`:
 * every endpoint, the body of every answer (JSON Schema 2020-12) and the error shape. The
 * field meanings are those of `docs/indexer.md`; `tests/indexer/openapi_test.ts` checks real
 * answers of an indexer over a real chain and real routers against it.
 *
 * @example
 * ```ts
 * import { INDEXER_OPENAPI } from "./openapi.ts";
 *
 * console.assert(INDEXER_OPENAPI.openapi === "3.1.1");
 * ```
 *
 * @module
 */

import { VERSION } from "../version.ts";
import { REJECTION_REASONS } from "./verify_entry.ts";

/** An OpenAPI document: a JSON object with its version in `openapi`. */
export interface IndexerOpenApiDocument {
  /** The OpenAPI version, `3.1.x`. */
  readonly openapi: string;
  /** Every other field of the document. */
  readonly [field: string]: unknown;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const decimal = (description: string) => ({ ...ref("Decimal"), description });
const count = (description: string) => ({ type: "integer", minimum: 0, description });
const nullable = (schema: Record<string, unknown>) => ({ oneOf: [schema, { type: "null" }] });
const closed = (
  properties: Record<string, unknown>,
  description?: string,
): Record<string, unknown> => ({
  type: "object",
  ...(description ? { description } : {}),
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});
const json = (schema: Record<string, unknown>) => ({
  "application/json": { schema },
});

/** Every error code of the indexer's answers (`docs/indexer.md`). */
const ERROR_CODES = [
  "not_found",
  "method_not_allowed",
  "no_snapshot",
  "stale",
  "chain_unreachable",
  "chain_error",
  "routers_unreachable",
  "aborted",
  "internal",
  "internal_error",
];

const unavailable = {
  description:
    "No fresh snapshot: before the first refresh (`no_snapshot`), after a failed refresh " +
    "(`chain_unreachable`, `chain_error`, `routers_unreachable`, `internal`) or when the " +
    "snapshot is older than the freshness bound (`stale`). Never stale data.",
  headers: { "Retry-After": { $ref: "#/components/headers/RetryAfter" } },
  content: json(ref("Error")),
};

const dataOperation = (summary: string, description: string, schema: string) => ({
  get: {
    summary,
    description,
    operationId: schema.charAt(0).toLowerCase() + schema.slice(1),
    responses: {
      "200": { description: "The current snapshot's view.", content: json(ref(schema)) },
      "500": { $ref: "#/components/responses/InternalError" },
      "503": unavailable,
    },
  },
});

/** The indexer's OpenAPI 3.1 document. */
export const INDEXER_OPENAPI: IndexerOpenApiDocument = {
  openapi: "3.1.1",
  jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
  info: {
    title: "net-consumer indexer",
    version: VERSION,
    summary: "Read-only statistics of the network: supply, stake, emission, settled volume.",
    description:
      "Every listed provider is bonded on chain and served by a router with an ad whose " +
      "keccak256(JCS(ad)) equals its on-chain commitment. When no fresh snapshot exists the " +
      "data endpoints answer 503 with `Retry-After`, never stale numbers.\n\n" +
      "Conventions: token amounts, prices, block numbers, epochs and timestamps read from " +
      "chain are decimal strings; counts are JSON numbers; addresses and hashes are lower-case " +
      "0x hex; times are RFC 3339 UTC.\n\n" +
      "Every answer carries `Access-Control-Allow-Origin: *`, `Cache-Control: no-store` and " +
      "`X-Content-Type-Options: nosniff`. `HEAD` answers like `GET` without a body; `OPTIONS` " +
      "on a known path is a CORS preflight (204). An unknown path is answered with the " +
      "`NotFound` response, another method on a known path with `MethodNotAllowed`.",
    license: { name: "Apache-2.0", identifier: "Apache-2.0" },
  },
  servers: [{ url: "http://127.0.0.1:8088", description: "The default bind address" }],
  paths: {
    "/stats": dataOperation(
      "Network summary",
      "Providers registered, bonded and live-verified; stake; routers and their reports; " +
        "TEE measurements; emission; capacity; rejected ads; settled volume.",
      "Stats",
    ),
    "/models": dataOperation(
      "Models offered",
      "One entry per model id served by live-verified providers, sorted by id.",
      "Models",
    ),
    "/providers": dataOperation(
      "Live-verified providers",
      "One entry per live-verified provider, sorted by address.",
      "Providers",
    ),
    "/health": {
      get: {
        summary: "Readiness",
        description:
          "200 when the data endpoints would answer 200, 503 (with `Retry-After`) when not. " +
          "The body is the same shape either way; `live: true` says the process is up.",
        operationId: "health",
        responses: {
          "200": { description: "Serving fresh data.", content: json(ref("Health")) },
          "500": { $ref: "#/components/responses/InternalError" },
          "503": {
            description: "Not serving now; the body says why.",
            headers: { "Retry-After": { $ref: "#/components/headers/RetryAfter" } },
            content: json(ref("Health")),
          },
        },
      },
    },
    "/openapi.json": {
      get: {
        summary: "This document",
        operationId: "openapi",
        responses: {
          "200": {
            description: "The OpenAPI 3.1 document of the indexer.",
            content: json({
              type: "object",
              properties: {
                openapi: { type: "string", pattern: "^3\\.1\\.\\d+$" },
                info: { type: "object" },
                paths: { type: "object" },
              },
              required: ["openapi", "info", "paths"],
            }),
          },
          "500": { $ref: "#/components/responses/InternalError" },
        },
      },
    },
  },
  components: {
    headers: {
      RetryAfter: {
        description: "Seconds until the next refresh may succeed (at least 1).",
        required: true,
        schema: { type: "integer", minimum: 1 },
      },
      Allow: {
        description: "The methods of the path.",
        required: true,
        schema: { type: "string", const: "GET, HEAD, OPTIONS" },
      },
    },
    responses: {
      NotFound: {
        description: "No such path.",
        content: json(ref("Error")),
      },
      MethodNotAllowed: {
        description: "The path exists; only GET, HEAD and OPTIONS do.",
        headers: { Allow: { $ref: "#/components/headers/Allow" } },
        content: json(ref("Error")),
      },
      InternalError: {
        description: "An unexpected failure, logged; the message is generic.",
        content: json(ref("Error")),
      },
    },
    schemas: {
      Decimal: {
        type: "string",
        pattern: "^(0|[1-9][0-9]*)$",
        description: "An unsigned integer in decimal (uint256 values do not fit a JSON number).",
      },
      Address: { type: "string", pattern: "^0x[0-9a-f]{40}$" },
      Hash: { type: "string", pattern: "^0x[0-9a-f]{64}$" },
      Time: { type: "string", format: "date-time" },
      Tier: { type: "string", enum: ["verified", "tee"] },
      RejectionReason: { type: "string", enum: [...REJECTION_REASONS] },
      RejectionCounts: closed(
        Object.fromEntries(REJECTION_REASONS.map((r) => [r, { type: "integer", minimum: 0 }])),
        "Rejected router entries by reason, every reason present.",
      ),
      Capacity: closed({
        max_concurrency: count("Most concurrent requests."),
        available_concurrency: count("Of those, free now."),
      }),
      Metrics: closed({
        tokens_per_sec: { type: "number", minimum: 0, description: "Observed decode throughput." },
      }),
      Price: closed({
        input: decimal("Smallest token unit per 1M input tokens."),
        output: decimal("Smallest token unit per 1M output tokens."),
      }),
      ErrorDetail: closed({ code: { type: "string" }, message: { type: "string" } }),
      Error: closed({
        error: closed({
          code: { type: "string", enum: ERROR_CODES },
          message: {
            type: "string",
            description: "What failed, what was found, what was expected.",
          },
        }),
      }, "The network's error shape (`docs/protocol.md` §0)."),
      Snapshot: closed({
        block_number: decimal("The block every chain value was read at."),
        block_hash: ref("Hash"),
        block_timestamp: decimal("Unix seconds."),
        taken_at: { ...ref("Time"), description: "When the refresh started." },
      }, "Which block and when."),
      Router: closed({
        id: ref("Address"),
        url: { type: "string", description: "As stored on chain." },
        reachable: { type: "boolean" },
        error: nullable(ref("ErrorDetail")),
        entries: count("Entries listed."),
        accepted: count("Entries verified."),
        rejected: ref("RejectionCounts"),
        rejected_examples: {
          type: "array",
          maxItems: 10,
          items: closed({
            provider: nullable(ref("Address")),
            reason: ref("RejectionReason"),
            message: { type: "string" },
          }),
        },
      }),
      Stats: closed({
        providers: closed({
          registered: count("Providers the Registry lists."),
          bonded: count("Active and staked at least the minimum bond."),
          live_verified: count("Bonded and served by a router with a matching ad."),
        }),
        validators: count("Validators the Registry lists."),
        staked_security: decimal("Total stake in the Staking contract."),
        min_provider_bond: decimal("The minimum bond of a provider."),
        routers: closed({
          total: count("Routers the Registry lists."),
          reachable: count("Of those, answered with a valid envelope."),
          list: { type: "array", items: ref("Router") },
        }),
        tee_measurements: { type: "array", items: ref("Hash") },
        emission: closed({
          total_emitted: decimal("Emitted so far."),
          cap: decimal("Upper bound of the total."),
          current_epoch: decimal("The epoch now."),
          current_epoch_reward: decimal("Reward of the current epoch."),
          emitted_epochs: decimal("Epochs emitted."),
          schedule: closed({
            rule: { type: "string", const: "halving" },
            genesis_time: decimal("Start of epoch 0, Unix seconds."),
            epoch_length: decimal("Seconds."),
            initial_reward: decimal("Reward of epoch 0."),
            halving_interval: decimal("Epochs between halvings."),
          }),
        }),
        capacity: ref("Capacity"),
        models: count("Distinct models served by live-verified providers."),
        rejected_ads: closed({
          total: count("All rejections."),
          by_reason: ref("RejectionCounts"),
        }),
        settlements: closed({
          scanned_to_block: nullable(ref("Decimal")),
          confirmations: count("Depth at which settlements count."),
          amount: decimal("Settled amount."),
          tokens: decimal("Settled tokens."),
          count: count("Settlements."),
        }),
        snapshot: ref("Snapshot"),
      }),
      Model: closed({
        model: { type: "string", pattern: "^[^/]+/[^/]+$", description: "maker/model" },
        cheapest_price: closed({
          input: decimal("Input price."),
          output: decimal("Output price."),
          provider: ref("Address"),
          tier: ref("Tier"),
        }),
        providers: count("Live-verified providers serving it."),
        tiers: closed({ verified: count("Verified tier."), tee: count("TEE tier.") }),
        reputation: nullable({ type: "number", minimum: 0, maximum: 1 }),
        tokens_per_sec: { type: "number", minimum: 0 },
        context_length: { type: "integer", minimum: 1 },
      }),
      Models: closed({ models: { type: "array", items: ref("Model") } }),
      EpochVolume: closed({
        epoch: decimal("The epoch."),
        amount: decimal("Settled amount."),
        tokens: decimal("Settled tokens."),
        settlements: count("Settlements."),
      }),
      Provider: closed({
        provider: ref("Address"),
        tier: ref("Tier"),
        stake: decimal("Stake in the Staking contract."),
        serving_key: ref("Address"),
        ad_commitment: ref("Hash"),
        endpoint: { type: "string", format: "uri" },
        models: {
          type: "array",
          items: closed({
            model: { type: "string" },
            prices: ref("Price"),
            context_length: { type: "integer", minimum: 1 },
          }),
        },
        capacity: ref("Capacity"),
        metrics: ref("Metrics"),
        routers: { type: "array", items: { type: "string" }, minItems: 1 },
        settled: closed({
          epochs: { type: "array", items: ref("EpochVolume") },
          total: closed({
            amount: decimal("Settled amount."),
            tokens: decimal("Settled tokens."),
            settlements: count("Settlements."),
          }),
        }),
        reputation: nullable({ type: "number", minimum: 0, maximum: 1 }),
      }),
      Providers: closed({ providers: { type: "array", items: ref("Provider") } }),
      Health: closed({
        status: { type: "string", enum: ["ok", "starting", "unavailable", "stale"] },
        live: { type: "boolean", const: true },
        serving: { type: "boolean" },
        error: nullable(ref("ErrorDetail")),
        last_snapshot_at: nullable(ref("Time")),
        last_attempt_at: nullable(ref("Time")),
        last_error: nullable(closed({
          code: { type: "string" },
          message: { type: "string" },
          at: ref("Time"),
        })),
        snapshot: nullable({
          type: "object",
          allOf: [ref("SnapshotFields")],
          properties: { age_secs: count("Age of the served snapshot, seconds.") },
          required: ["age_secs"],
          unevaluatedProperties: false,
        }),
        routers: nullable(closed({ total: count("Routers."), reachable: count("Reachable.") })),
        refresh_secs: { type: "integer", minimum: 1 },
        stale_after_secs: { type: "integer", minimum: 1 },
        next_refresh_at: nullable(ref("Time")),
        refreshing: { type: "boolean" },
        settlements: closed({
          scanned_to_block: nullable(ref("Decimal")),
          rescans: count("Rescans from the start block."),
          last_rescan: nullable(closed({ at: ref("Time"), reason: { type: "string" } })),
        }),
      }),
      SnapshotFields: {
        type: "object",
        properties: {
          block_number: ref("Decimal"),
          block_hash: ref("Hash"),
          block_timestamp: ref("Decimal"),
          taken_at: ref("Time"),
        },
        required: ["block_number", "block_hash", "block_timestamp", "taken_at"],
      },
    },
  },
};
