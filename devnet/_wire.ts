/**
 * The schemas of what the devnet's router, gateway and provider put on the wire
 * (`docs/protocol.md` §0–§6), declared once: the services validate their inputs against them
 * and generate their OpenAPI documents from them.
 *
 * @module
 */

import { MODEL_CAPABILITY_NAMES } from "../chain/ad.ts";
import { z } from "../http/mod.ts";

/** A string that must match `pattern`; a mismatch says `must be <says>` (the pattern is documented). */
export function matching(pattern: RegExp, says: string): z.ZodString {
  return z.string().refine((value) => pattern.test(value), { message: `must be ${says}` })
    .openapi({ pattern: pattern.source });
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const SEGMENT = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";
/** `maker/model` (`docs/protocol.md` §1). */
export const MODEL_ID = new RegExp(`^${SEGMENT}/${SEGMENT}$`);
/** The TEE nonce of a query string: 64 hex digits, no `0x` (`docs/protocol.md` §0). */
export const NONCE = /^[0-9a-fA-F]{64}$/;

/** A 20-byte address, either letter case. */
export const Address = matching(ADDRESS, "a 0x-prefixed address (0x and 40 hex digits)");
/** A model id. */
export const ModelId = matching(MODEL_ID, "maker/model, each part [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
/** The attestation nonce of a query string. */
export const Nonce = matching(NONCE, "64 hex digits (32 bytes, no 0x)").openapi({
  description: "32 random bytes issued by the daemon, as 64 hex digits without 0x",
  example: "ab".repeat(32),
});
/** A provider's tier. */
export const Tier = z.enum(["verified", "tee"]);
/** What a model does (`docs/protocol.md` §1); absent in an ad: `chat`. */
export const ModelKind = z.enum(["chat", "embedding"]);
/** What a model supports (`docs/protocol.md` §1). */
export const Capability = z.enum(MODEL_CAPABILITY_NAMES);

const Hex = z.string().regex(/^0x([0-9a-fA-F]{2})*$/);
const Amount = z.string().regex(/^(0|[1-9][0-9]{0,77})$/).openapi({
  description: "A decimal string of an unsigned integer (smallest token unit per 1M tokens)",
});
const Prices = z.object({ input: Amount, output: Amount }).strict();

/** The error body of every service of the network (`docs/protocol.md` §0). */
export const NetworkError = z.object({
  error: z.object({
    code: z.string().regex(/^[a-z][a-z0-9_]*$/).openapi({ description: "snake_case" }),
    message: z.string().openapi({ description: "What failed, what was found, what was expected" }),
  }).strict(),
}).strict().openapi("NetworkError");

/** A provider ad, version 1 (`docs/protocol.md` §1). */
export const ProviderAd = z.object({
  version: z.literal(1),
  provider: Address,
  tier: Tier,
  serving_key: Address,
  endpoint: z.string().max(2048),
  models: z.array(
    z.object({
      id: ModelId,
      kind: ModelKind.optional(),
      prices: Prices,
      context_length: z.number().int().min(1).max(2 ** 31 - 1),
      capabilities: z.array(Capability).optional(),
      embedding_dimensions: z.number().int().min(1).max(65_536).optional(),
      weights_digest: z.string().regex(/^0x[0-9a-fA-F]{64}$/).optional().openapi({
        description: "The digest of the weights served for the model (TEE tier: attested)",
      }),
    }).strict(),
  ).min(1).max(256),
}).strict().openapi("ProviderAd", { description: "A provider's ad as published (protocol §1)" });

/** A provider's live supply (`docs/protocol.md` §2). */
export const Capacity = z.object({
  max_concurrency: z.number().int().min(0),
  available_concurrency: z.number().int().min(0),
}).strict().openapi("Capacity");

/** A provider's live metrics (`docs/protocol.md` §2). */
export const Metrics = z.object({ tokens_per_sec: z.number().min(0) }).strict().openapi(
  "Metrics",
);

/** One entry of a router's `GET /v1/ads`, and a provider's `GET /v1/ad`. */
export const RouterEntry = z.object({
  ad: ProviderAd,
  capacity: Capacity,
  metrics: Metrics,
}).strict().openapi("RouterEntry");

/** A gateway's `GET /v1/gateways` answer (`docs/protocol.md` §3). */
export const GatewayList = z.object({
  gateways: z.array(z.object({ url: z.url(), last_seen: z.iso.datetime() }).strict()),
}).strict().openapi("GatewayList");

/** A gateway's `GET /v1/models` answer. */
export const ModelList = z.object({
  models: z.array(
    z.object({
      model: ModelId,
      tier: Tier,
      providers: z.number().int().min(1),
      context_length: z.number().int().min(1),
      cheapest_price: Prices,
      kind: ModelKind,
      capabilities: z.array(Capability).openapi({
        description: "What every provider listing the model supports",
      }),
      embedding_dimensions: z.number().int().min(1).optional().openapi({
        description: "An embedding model's vector length (the smallest its providers give)",
      }),
      weights_digests: z.array(z.string().regex(/^0x[0-9a-f]{64}$/)).optional().openapi({
        description: "The weights digests the providers' ads name for the model, distinct, " +
          "sorted (TEE tier: each attested by its provider's enclave)",
      }),
    }).strict(),
  ),
}).strict().openapi("ModelList");

/** A gateway's `GET /v1/providers` answer. */
export const ProviderList = z.object({
  providers: z.array(
    z.object({
      provider: Address,
      tier: Tier,
      ad: ProviderAd,
      capacity: z.union([Capacity, z.null()]),
      metrics: z.union([Metrics, z.null()]),
    }).strict(),
  ),
}).strict().openapi("ProviderList");

/** A key endorsement (`docs/protocol.md` §5). */
const KeyEndorsement = z.object({
  key_config: Hex,
  expires_at: z.number().int().min(0),
  nonce: Hex.nullable(),
  signature: Hex,
}).strict().openapi("KeyEndorsement");

/** A provider's `GET /v1/key` answer. */
export const ProviderKey = z.object({ provider: Address, endorsement: KeyEndorsement }).strict()
  .openapi("ProviderKey");

/** An attestation bundle (`docs/protocol.md` §6). */
export const AttestationBundle = z.object({
  format: z.enum(["tdx", "sev-snp", "mock"]),
  nonce: Hex,
  serving_public_key: Hex,
  quote: Hex,
  collateral: z.record(z.string(), z.unknown()).nullable(),
  endorsement: KeyEndorsement,
  gpus: z.array(
    z.object({
      report: Hex.openapi({ description: "The SPDM GET_MEASUREMENTS request and signed response" }),
      certificate_chain: z.string().openapi({ description: "The GPU's device chain, PEM" }),
    }).strict(),
  ).optional().openapi({ description: "One entry per GPU (protocol §6)" }),
  gpu_collateral: z.object({ ocsp: z.array(Hex), crls: z.array(Hex) }).strict().nullable()
    .optional().openapi({ description: "NVIDIA OCSP answers and CRLs for the GPU chains" }),
  models: z.array(
    z.object({ id: z.string(), weights_digest: Hex }).strict(),
  ).optional().openapi({ description: "The served models and their weights digests, by id" }),
}).openapi("AttestationBundle", {
  description: "The attestation bundle (protocol §6); `mock` bundles are always refused",
});

/** A sealed body: chunked OHTTP, opaque to everyone but its two ends (`docs/protocol.md` §7). */
export const Sealed = z.string().openapi({ description: "Chunked OHTTP bytes (protocol §7)" });

/** The sealed request's media type. */
export const SEALED_REQUEST = "message/ohttp-chunked-req";
/** The sealed response's media type. */
export const SEALED_RESPONSE = "message/ohttp-chunked-res";

/** An error answer, for a route's `responses`. */
export function errorAnswer(description: string): {
  description: string;
  content: { "application/json": { schema: typeof NetworkError } };
} {
  return { description, content: { "application/json": { schema: NetworkError } } };
}
