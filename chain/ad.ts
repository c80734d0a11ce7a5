/**
 * Provider ads (`docs/protocol.md` §1): a strict parser and validator, the ad type, and the
 * on-chain commitment `adCommitment(ad) = keccak256(UTF-8(JCS(ad)))` (RFC 8785 canonical
 * JSON, computed with the RFC author's reference implementation, npm `canonicalize`).
 *
 * @example Parse an ad and compute its commitment
 * ```ts
 * import { adCommitment, parseAd } from "@net/consumer/chain";
 *
 * const ad = parseAd(JSON.stringify({
 *   version: 1,
 *   provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
 *   tier: "verified",
 *   serving_key: "0xab8483f64d9c6d1ecf9b849ae677dd3315835cb2",
 *   endpoint: "http://127.0.0.1:9301",
 *   models: [{
 *     id: "devnet/tiny-chat",
 *     prices: { input: "150000", output: "600000" },
 *     context_length: 8192,
 *   }],
 * }));
 * console.log(adCommitment(ad)); // 0x… (32 bytes)
 * ```
 *
 * @module
 */

import canonicalize from "canonicalize";
import { type Address, type Hex, keccak256, stringToBytes } from "viem";
import { abbreviate, ReasonError } from "../errors.ts";
import { duplicateKey } from "../io/strict_json.ts";
import type { ProviderRecord, ProviderTier } from "./types.ts";

/** Largest accepted JSON text of one ad, in bytes (64 KiB). */
export const MAX_AD_BYTES = 65_536;
/** Most models one ad may list. */
export const MAX_AD_MODELS = 256;
/** Longest accepted endpoint URL, in characters. */
export const MAX_ENDPOINT_LENGTH = 2048;

/** What a model does: chat (and text completion) or embeddings. */
export type ModelKind = "chat" | "embedding";

/** The kinds a model entry may declare. */
export const MODEL_KINDS: readonly ModelKind[] = Object.freeze(["chat", "embedding"]);

/**
 * What a model supports beyond its kind's basics:
 *
 * - `tools`: function calling (`tools`, `tool_calls`) — chat;
 * - `vision`: image inputs — chat;
 * - `json_mode`: JSON mode, `response_format` `json_object` (the reply is one JSON object) —
 *   chat;
 * - `structured_outputs`: the reply is valid for a given JSON Schema (`response_format`
 *   `json_schema`, Ollama's `format` schema, the Responses API's `text.format`) — chat;
 * - `logprobs`: token log probabilities (`logprobs`, `top_logprobs`) — chat;
 * - `dimensions`: shorter vectors on request (the `dimensions` parameter) — embedding.
 */
export type ModelCapability =
  | "tools"
  | "vision"
  | "json_mode"
  | "structured_outputs"
  | "logprobs"
  | "dimensions";

/** Every capability, and the kind it belongs to. */
export const MODEL_CAPABILITIES: Readonly<Record<ModelCapability, ModelKind>> = Object.freeze({
  tools: "chat",
  vision: "chat",
  json_mode: "chat",
  structured_outputs: "chat",
  logprobs: "chat",
  dimensions: "embedding",
});

/** Every capability's name, in the order of {@linkcode MODEL_CAPABILITIES}. */
export const MODEL_CAPABILITY_NAMES: readonly [ModelCapability, ...ModelCapability[]] = Object
  .freeze(
    Object.keys(MODEL_CAPABILITIES) as [ModelCapability, ...ModelCapability[]],
  );

/** Most dimensions an embedding model may declare. */
export const MAX_EMBEDDING_DIMENSIONS = 65_536;

/** One model an ad offers. */
export interface AdModel {
  /** `maker/model`, each segment `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`. */
  id: string;
  /**
   * What the model does. Absent in ads written before kinds existed: such a model is a chat
   * model ({@linkcode modelKind}).
   */
  kind?: ModelKind;
  /** Prices in the smallest token unit per 1M tokens, decimal strings within uint256. */
  prices: { input: string; output: string };
  /** Context length in tokens, 1 ≤ n ≤ 2^31 − 1 (an embedding model: the longest input). */
  context_length: number;
  /**
   * What the model supports, unique, each of its kind ({@linkcode MODEL_CAPABILITIES}).
   * Absent: nothing beyond the kind's basics.
   */
  capabilities?: ModelCapability[];
  /** An embedding model's vector length, 1 ≤ n ≤ 65,536; only (and always) for that kind. */
  embedding_dimensions?: number;
  /**
   * The digest of the weights the provider serves for this model (`0x` and 64 hex digits, e.g.
   * the dm-verity root hash of its weights volume). The TEE tier attests it (`docs/protocol.md`
   * §6): a TEE provider's enclave binds the same digest into its quote.
   */
  weights_digest?: string;
}

/** A model entry's kind: `chat` when the entry does not say. */
export function modelKind(model: Pick<AdModel, "kind">): ModelKind {
  return model.kind ?? "chat";
}

/** A provider ad, version 1 (`docs/protocol.md` §1), exactly as published. */
export interface ProviderAd {
  /** Always 1. */
  version: 1;
  /** The provider's Registry address (as published; compare case-insensitively). */
  provider: Address;
  /** The provider's tier. */
  tier: ProviderTier;
  /** Address of the provider's serving key (as published). */
  serving_key: Address;
  /** Where gateways reach the provider: absolute http(s) URL, no credentials/query/fragment. */
  endpoint: string;
  /** 1 to 256 models, ids unique. */
  models: AdModel[];
}

/** Why an ad was refused. */
export type AdFailure =
  /** The JSON text is larger than {@linkcode MAX_AD_BYTES}. */
  | "too_large"
  /** The text is not JSON. */
  | "invalid_json"
  /** A field is missing, unknown or breaks its rule (`field` names it). */
  | "invalid_field"
  /** A field disagrees with the provider's Registry record (`field` names it). */
  | "registry_mismatch"
  /** The ad's commitment differs from the Registry's `adCommitment`. */
  | "commitment_mismatch";

/** Thrown when an ad cannot be parsed, validated or matched to its Registry record. */
export class AdError extends ReasonError<AdFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "AdError" as const;
  /** JSON path of the offending field (`models[2].prices.input`), or `""` for the whole ad. */
  readonly field: string;

  /** Creates the error with its reason and field. */
  constructor(reason: AdFailure, field: string, shortMessage: string) {
    super(reason, shortMessage);
    this.field = field;
  }
}

/** Options of {@linkcode parseAd} and {@linkcode validateAd}. */
export interface ValidateAdOptions {
  /**
   * The provider's Registry record. When given, the ad must also match it: same provider
   * address, same tier, `serving_key` equal to the `trustRoot`, and a commitment equal to the
   * record's `adCommitment`.
   *
   * @default {undefined}
   */
  record?: ProviderRecord;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const AMOUNT = /^(0|[1-9][0-9]{0,77})$/;
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const UINT256_MAX = (1n << 256n) - 1n;
const INT31_MAX = 2 ** 31 - 1;

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return JSON.stringify(abbreviate(value, 48));
  return `${typeof value} ${String(value)}`;
}

function fail(field: string, found: unknown, expected: string): never {
  throw new AdError(
    "invalid_field",
    field,
    `Cannot accept ad: ${field} is ${describe(found)}, expected ${expected}`,
  );
}

function object(
  value: unknown,
  field: string,
  keys: readonly string[],
  options: { optional?: readonly string[] } = {},
): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(field, value, "an object");
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!keys.includes(key)) {
      throw new AdError(
        "invalid_field",
        field ? `${field}.${key}` : key,
        `Cannot accept ad: unknown field ${JSON.stringify(key)}${
          field ? ` in ${field}` : ""
        }, expected only ${keys.join(", ")}`,
      );
    }
  }
  for (const key of keys) {
    if (!(key in record) && !options.optional?.includes(key)) {
      fail(field ? `${field}.${key}` : key, undefined, "a value");
    }
  }
  return record;
}

function address(value: unknown, field: string): Address {
  if (typeof value !== "string" || !ADDRESS.test(value)) {
    fail(field, value, "a 20-byte 0x-prefixed hex address");
  }
  return value as Address;
}

function amount(value: unknown, field: string): string {
  if (typeof value !== "string" || !AMOUNT.test(value) || BigInt(value) > UINT256_MAX) {
    fail(field, value, "a decimal string of an unsigned integer within uint256");
  }
  return value;
}

function endpoint(value: unknown, field: string): string {
  if (typeof value !== "string") fail(field, value, "an absolute http: or https: URL");
  if (value.length > MAX_ENDPOINT_LENGTH) {
    fail(field, value, `at most ${MAX_ENDPOINT_LENGTH} characters (found ${value.length})`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail(field, value, "an absolute http: or https: URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    fail(field, value, "an http: or https: URL");
  }
  if (url.username || url.password) fail(field, value, "a URL without credentials");
  if (url.search || value.includes("?")) fail(field, value, "a URL without a query");
  if (url.hash || value.includes("#")) fail(field, value, "a URL without a fragment");
  return value;
}

/** The optional fields of a model entry (absent ones stay absent: the commitment is unchanged). */
const OPTIONAL_MODEL_FIELDS = ["kind", "capabilities", "embedding_dimensions", "weights_digest"];

function kindOf(value: unknown, field: string): ModelKind {
  if (!MODEL_KINDS.includes(value as ModelKind)) {
    fail(field, value, MODEL_KINDS.map((k) => JSON.stringify(k)).join(" or "));
  }
  return value as ModelKind;
}

function capabilitiesOf(value: unknown, field: string, kind: ModelKind): ModelCapability[] {
  const ofKind = Object.entries(MODEL_CAPABILITIES).filter(([, k]) => k === kind).map(([c]) => c);
  const expected = `an array of unique capabilities of ${
    kind === "chat" ? "a" : "an"
  } ${kind} model (${ofKind.map((c) => JSON.stringify(c)).join(", ")})`;
  if (!Array.isArray(value) || value.length > ofKind.length) fail(field, value, expected);
  const seen = new Set<string>();
  value.forEach((item, i) => {
    if (typeof item !== "string" || !ofKind.includes(item) || seen.has(item)) {
      fail(`${field}[${i}]`, item, expected);
    }
    seen.add(item);
  });
  return [...value] as ModelCapability[];
}

function model(value: unknown, field: string): AdModel {
  const record = object(
    value,
    field,
    ["id", "prices", "context_length", ...OPTIONAL_MODEL_FIELDS],
    {
      optional: OPTIONAL_MODEL_FIELDS,
    },
  );
  const id = record.id;
  const segments = typeof id === "string" ? id.split("/") : [];
  if (segments.length !== 2 || !segments.every((s) => SEGMENT.test(s))) {
    fail(
      `${field}.id`,
      id,
      "maker/model with each segment [A-Za-z0-9][A-Za-z0-9._-]{0,63}",
    );
  }
  const prices = object(record.prices, `${field}.prices`, ["input", "output"]);
  const contextLength = record.context_length;
  if (
    typeof contextLength !== "number" || !Number.isInteger(contextLength) ||
    contextLength < 1 || contextLength > INT31_MAX
  ) {
    fail(`${field}.context_length`, contextLength, `an integer from 1 to ${INT31_MAX}`);
  }
  const kind = "kind" in record ? kindOf(record.kind, `${field}.kind`) : undefined;
  const entry: AdModel = {
    id: id as string,
    ...(kind === undefined ? {} : { kind }),
    prices: {
      input: amount(prices.input, `${field}.prices.input`),
      output: amount(prices.output, `${field}.prices.output`),
    },
    context_length: contextLength,
  };
  if ("capabilities" in record) {
    entry.capabilities = capabilitiesOf(
      record.capabilities,
      `${field}.capabilities`,
      modelKind(entry),
    );
  }
  const dimensions = record.embedding_dimensions;
  if (modelKind(entry) === "embedding") {
    if (
      typeof dimensions !== "number" || !Number.isInteger(dimensions) || dimensions < 1 ||
      dimensions > MAX_EMBEDDING_DIMENSIONS
    ) {
      fail(
        `${field}.embedding_dimensions`,
        dimensions,
        `an integer from 1 to ${MAX_EMBEDDING_DIMENSIONS} (an embedding model's vector length)`,
      );
    }
    entry.embedding_dimensions = dimensions;
  } else if ("embedding_dimensions" in record) {
    fail(`${field}.embedding_dimensions`, dimensions, "nothing (only embedding models have it)");
  }
  if ("weights_digest" in record) {
    const digest = record.weights_digest;
    if (typeof digest !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(digest)) {
      fail(`${field}.weights_digest`, digest, "0x and 64 hex digits (a 32-byte digest)");
    }
    entry.weights_digest = digest;
  }
  return entry;
}

/**
 * Validates a parsed ad against every rule of `docs/protocol.md` §1 and returns a typed copy
 * with the same values (addresses keep their published case, so the commitment is unchanged).
 *
 * @throws {AdError} `invalid_field` naming the field, what was found and what was expected;
 * with `options.record`, `registry_mismatch` or `commitment_mismatch`.
 */
export function validateAd(value: unknown, options: ValidateAdOptions = {}): ProviderAd {
  const record = object(value, "", [
    "version",
    "provider",
    "tier",
    "serving_key",
    "endpoint",
    "models",
  ]);
  if (record.version !== 1) fail("version", record.version, "the integer 1");
  const tier = record.tier;
  if (tier !== "verified" && tier !== "tee") fail("tier", tier, `"verified" or "tee"`);
  const models = record.models;
  if (!Array.isArray(models) || models.length < 1 || models.length > MAX_AD_MODELS) {
    fail("models", models, `an array of 1 to ${MAX_AD_MODELS} models`);
  }
  const ad: ProviderAd = {
    version: 1,
    provider: address(record.provider, "provider"),
    tier,
    serving_key: address(record.serving_key, "serving_key"),
    endpoint: endpoint(record.endpoint, "endpoint"),
    models: models.map((m, i) => model(m, `models[${i}]`)),
  };
  const seen = new Map<string, number>();
  ad.models.forEach((m, i) => {
    const earlier = seen.get(m.id);
    if (earlier !== undefined) {
      fail(`models[${i}].id`, m.id, `a unique id (models[${earlier}] has the same)`);
    }
    seen.set(m.id, i);
  });
  if (options.record) matchRecord(ad, options.record);
  return ad;
}

function matchRecord(ad: ProviderAd, record: ProviderRecord): void {
  const mismatch = (field: string, found: string, expected: string): never => {
    throw new AdError(
      "registry_mismatch",
      field,
      `Cannot accept ad: ${field} is ${found}, the Registry says ${expected}`,
    );
  };
  if (ad.provider.toLowerCase() !== record.address.toLowerCase()) {
    mismatch("provider", ad.provider.toLowerCase(), record.address.toLowerCase());
  }
  if (ad.tier !== record.tier) mismatch("tier", ad.tier, record.tier);
  if (ad.serving_key.toLowerCase() !== record.trustRoot.toLowerCase()) {
    mismatch("serving_key", ad.serving_key.toLowerCase(), `trustRoot ${record.trustRoot}`);
  }
  const commitment = adCommitment(ad);
  if (commitment !== record.adCommitment.toLowerCase()) {
    throw new AdError(
      "commitment_mismatch",
      "",
      `Cannot accept ad: its commitment is ${abbreviate(commitment, 14)}, the Registry holds ${
        abbreviate(record.adCommitment.toLowerCase(), 14)
      }`,
    );
  }
}

/**
 * Parses the JSON text of an ad (at most {@linkcode MAX_AD_BYTES} bytes) and validates it
 * with {@linkcode validateAd}.
 *
 * @throws {AdError} `too_large`, `invalid_json`, or any reason of {@linkcode validateAd}.
 */
export function parseAd(text: string | Uint8Array, options: ValidateAdOptions = {}): ProviderAd {
  const size = typeof text === "string" ? stringToBytes(text).length : text.length;
  if (size > MAX_AD_BYTES) {
    throw new AdError(
      "too_large",
      "",
      `Cannot accept ad: its JSON text is ${size} bytes, expected at most ${MAX_AD_BYTES}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(
      typeof text === "string" ? text : new TextDecoder("utf-8", { fatal: true }).decode(text),
    );
  } catch (cause) {
    throw new AdError(
      "invalid_json",
      "",
      `Cannot accept ad: it is not valid UTF-8 JSON (${
        cause instanceof Error ? cause.message : cause
      })`,
    );
  }
  const repeated = duplicateKey(
    typeof text === "string" ? text : new TextDecoder().decode(text),
  );
  if (repeated !== undefined) {
    throw new AdError(
      "invalid_json",
      "",
      `Cannot accept ad: the key ${JSON.stringify(repeated)} appears twice in one object ` +
        "(readers would disagree on which value counts)",
    );
  }
  return validateAd(value, options);
}

/** The RFC 8785 (JCS) canonical JSON text of an ad. */
export function canonicalAd(ad: ProviderAd): string {
  const text = canonicalize(ad);
  if (text === undefined) {
    throw new AdError("invalid_field", "", "Cannot canonicalize ad: it has no JSON form");
  }
  return text;
}

/** The ad's commitment: keccak256 of the UTF-8 bytes of its canonical JSON, lower-case hex. */
export function adCommitment(ad: ProviderAd): Hex {
  return keccak256(stringToBytes(canonicalAd(ad)));
}

/** Prices as bigints (or their decimal strings), per 1M tokens. */
export interface PricePair {
  /** Input tokens. */
  input: bigint | string;
  /** Output tokens. */
  output: bigint | string;
}

/** The blended price of a model: input + output per 1M tokens, exact. */
export function blendedPrice(prices: PricePair): bigint {
  return BigInt(prices.input) + BigInt(prices.output);
}

/**
 * Compares two prices by the "cheapest price" rule of `docs/protocol.md` §1: the lower
 * blended price first, ties to the lower output price. Negative when `a` is cheaper, positive
 * when `b` is, zero when they are equal under the rule. Exact (bigint).
 */
export function comparePrices(a: PricePair, b: PricePair): number {
  const ba = blendedPrice(a), bb = blendedPrice(b);
  if (ba !== bb) return ba < bb ? -1 : 1;
  const oa = BigInt(a.output), ob = BigInt(b.output);
  return oa === ob ? 0 : oa < ob ? -1 : 1;
}
