/**
 * The schemas both dialects share: times, tiers, token usage, the model id, embeddings inputs,
 * the two error shapes, and how an operation's answers are documented (the error answers of each
 * kind of operation, a body whole or streamed). Nothing the package exports refers to a schema
 * (JSR's slow-types rule); the dialects' own schemas are in `openai/` and `ollama/`.
 *
 * @module
 */

import { json, type MediaSpec, type ResponseSpec, z } from "../../http/mod.ts";
import {
  DAEMON_ERROR_STATUS,
  type DaemonErrorCode,
  type Dialect,
  MODEL_ID_FORMAT,
} from "../core/mod.ts";

/** An RFC 3339 time. */
export const TIME = z.iso.datetime({ offset: true }).openapi("Time");

const TIERS = ["verified", "tee"] as const;

/** A service tier. */
export const TIER = z.enum(TIERS).openapi("Tier");

/** A decimal integer of any size, as text (prices). */
export const DECIMAL = z.string().regex(/^(0|[1-9][0-9]*)$/).openapi("Decimal");

/** A non-negative count. */
export const COUNT = z.number().int().min(0);

/** Token counts of a reply. */
export const USAGE = z.strictObject({
  prompt_tokens: COUNT,
  completion_tokens: COUNT,
  total_tokens: COUNT,
  cost: z.number().min(0).optional().openapi({
    description: "What the reply cost (OpenRouter's field), in the chain's whole unit, when the " +
      "daemon paid for it: `cost_wei` ÷ 10^18, as precise as a JSON number is.",
  }),
  cost_wei: z.string().regex(/^(0|[1-9][0-9]*)$/).optional().openapi({
    description: "The exact cost in the chain's smallest unit, from the provider's signed ad " +
      "prices and this usage (`docs/protocol.md` §9).",
  }),
}).openapi("Usage");

/**
 * The model id of a request. The handler reads it with `parseModelId`, whose refusal names the
 * format (so any value is let through here, and the document says what is expected).
 */
export const REQUESTED_MODEL = z.unknown().optional().openapi({
  type: "string",
  description: `The model id: ${MODEL_ID_FORMAT}.`,
  examples: ["net/verified/devnet/echo"],
});

/** A client-visible error code. */
export const ERROR_CODE = z.enum(
  Object.keys(DAEMON_ERROR_STATUS) as [DaemonErrorCode, ...DaemonErrorCode[]],
);

/** An error under `/v1`. */
export const OPENAI_ERROR = z.strictObject({
  error: z.strictObject({
    message: z.string(),
    type: z.enum([
      "invalid_request_error",
      "insufficient_quota",
      "permission_error",
      "server_error",
    ]),
    param: z.string().nullable(),
    code: ERROR_CODE,
    budget: z.strictObject({
      scope: z.enum(["daemon", "key"]),
      key: z.string().optional(),
      spent: z.string(),
      cap: z.string(),
      max_spend: z.string(),
      period: z.enum(["day", "week", "month"]),
      resets_at: z.string(),
      needed: z.string(),
    }).optional().openapi({
      description: "With `budget_exceeded`: the cap that refused (amounts are decimal strings " +
        "in the chain's smallest unit), what was spent in its period, when it resets, and the " +
        "request's worst case.",
    }),
  }),
}).openapi("OpenAIError");

/** An error under `/v1/messages`, Anthropic's shape. */
export const ANTHROPIC_ERROR = z.strictObject({
  type: z.literal("error"),
  error: z.strictObject({
    type: z.enum([
      "invalid_request_error",
      "authentication_error",
      "permission_error",
      "not_found_error",
      "request_too_large",
      "rate_limit_error",
      "api_error",
      "overloaded_error",
      "timeout_error",
    ]),
    message: z.string(),
  }),
}).openapi("AnthropicError");

/** An error outside `/v1`. */
export const OLLAMA_ERROR = z.strictObject({ error: z.string() }).openapi("OllamaError");

/** The error shape of a dialect. */
export function errorSchema(dialect: Dialect): z.ZodType {
  if (dialect === "anthropic") return ANTHROPIC_ERROR;
  return dialect === "openai" ? OPENAI_ERROR : OLLAMA_ERROR;
}

/** What an operation does, for the error answers it documents. */
export type OperationKind =
  /** A local answer: only the hygiene refusals and size limits. */
  | "local"
  /** Reads the network's model list. */
  | "list"
  /** Takes a JSON body and reads the model list. */
  | "post"
  /** A chat: takes a JSON body and asks a provider. */
  | "chat";

/** The error answers of an operation of `kind` in `dialect`, by status. */
export function errorResponses(
  dialect: Dialect,
  kind: OperationKind,
): Record<number, ResponseSpec> {
  const content = { "application/json": { schema: errorSchema(dialect) } };
  const e = (description: string): ResponseSpec => ({ description, content });
  const retryAfter = z.object({
    "retry-after": z.string().regex(/^[0-9]+$/).optional().openapi({
      description: "Seconds after which asking again may succeed: sent with `no_provider` and " +
        "`overloaded`.",
    }),
  });
  const out: Record<number, ResponseSpec> = {
    403: e("`forbidden_host` (the Host header is not allowed) or `forbidden_origin`."),
    414: e("`url_too_long`: the URL is longer than 8,192 characters."),
    431: e("`headers_too_large`: the headers are larger than 32 KiB."),
    500: e("`internal_error`: an unexpected failure, logged; the message is generic."),
  };
  if (kind === "post" || kind === "chat") {
    out[400] = e(
      "`invalid_request_error`: bad JSON or a bad field (`param` names it under `/v1`).",
    );
    out[404] = e("`model_not_found`: the network offers no such model in that tier.");
    out[413] = e("`request_too_large`: the body is over the limit (`--max-body-bytes`).");
    out[415] = e(
      "`unsupported_media_type`: the body's `Content-Type` is not JSON (text, a form, or none).",
    );
  }
  if (kind !== "local") {
    out[502] = e(
      "`provider_error` (the provider answered with an error or broke the reply's contract), " +
        "`decryption_failed` or `stream_truncated` (the sealed reply could not be opened).",
    );
    out[503] = {
      ...e(
        "`no_gateway` (no gateway is reachable); `no_provider` (the model is offered but no " +
          "provider can serve it right now); `overloaded` (chats: the queue is full, or every " +
          "provider stayed at capacity until `--queue-timeout-secs`). `no_provider` and " +
          "`overloaded` carry `Retry-After`.",
      ),
      headers: retryAfter,
    };
    out[504] = e("`timeout`: no answer from the network in time.");
  }
  if (kind === "chat") {
    out[403] = e(
      "`forbidden_host` or `forbidden_origin`; or a refusal of trust, which a retry cannot fix " +
        "(nothing was sent; the message is fixed per code): `attestation_mock`, " +
        "`attestation_stale`, `measurement_not_approved`, `key_not_vouched`, `tier_mismatch`, " +
        "`attestation_binding_failed`, `gpu_not_attested`, `gpu_attestation_failed`, " +
        "`gpu_measurement_not_approved`, `model_not_attested`, `attestation_failed`.",
    );
    out[402] = e(
      "Money, which a retry cannot fix: `budget_exceeded` (a spend cap has less left than the " +
        "request's worst case; nothing was sealed; under `/v1` the error's `budget` says which " +
        "cap, what was spent and when it resets), `insufficient_deposit` (the consumer's " +
        "Escrow deposit cannot cover it), `payment_refused` (every provider refused the " +
        "daemon's voucher).",
    );
    out[422] = e("`provider_error` carrying the provider's own 422 (a request it refused).");
    out[429] = e("`provider_error` carrying the provider's own 429 (it is too busy).");
  }
  return out;
}

/** The headers naming who served a chat reply. */
export const SERVED_HEADERS = z.object({
  "x-net-provider": z.string().openapi({
    description: "The provider that served the reply (its address).",
  }),
  "x-net-tier": z.enum(TIERS).openapi({ description: "Its tier." }),
  "x-net-gateway": z.string().openapi({ description: "The gateway that relayed it." }),
  "x-net-verdict": z.string().openapi({
    description: "Why it was trusted, e.g. `endorsed-key by 0x07c5…, on-chain trust root`.",
  }),
  "x-net-receipt": z.string().optional().openapi({
    description: "TEE tier: the reply's id; `GET /v1/verdicts/{id}` serves its verified " +
      "receipt once the reply has ended.",
  }),
});

/** Most inputs one embeddings request may carry (OpenAI's own limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

function isText(value: unknown): boolean {
  return typeof value === "string" && value !== "";
}

function isTokenIds(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0 &&
    value.every((id) => Number.isSafeInteger(id) && id >= 0);
}

/**
 * Embeddings inputs, checked with one clear message each: a non-empty string, non-empty token
 * ids, or an array of at most {@linkcode MAX_EMBEDDING_INPUTS} of either (`tokenIds`: OpenAI's).
 * The dialect documents the shapes (`.openapi({ anyOf })`).
 */
export function embeddingInputs(tokenIds: boolean): z.ZodType<unknown> {
  const shapes = tokenIds
    ? "a non-empty string, an array of token ids, or an array of those"
    : "a non-empty string or an array of non-empty strings";
  return z.unknown().superRefine((value, ctx) => {
    const fail = (message: string) => ctx.addIssue({ code: "custom", input: value, message });
    if (isText(value) || (tokenIds && isTokenIds(value))) return;
    if (!Array.isArray(value) || value.length === 0) return fail(`must be ${shapes}`);
    if (value.length > MAX_EMBEDDING_INPUTS) {
      return fail(
        `has ${value.length} inputs, more than the ${MAX_EMBEDDING_INPUTS} one request may carry`,
      );
    }
    const bad = value.findIndex((item) => !isText(item) && !(tokenIds && isTokenIds(item)));
    if (bad >= 0) {
      ctx.addIssue({
        code: "custom",
        input: value[bad],
        path: [bad],
        message: `must be ${tokenIds ? "a non-empty string or token ids" : "a non-empty string"}`,
      });
    }
  });
}

/**
 * The body of an answer given whole (`application/json`, `whole`) or streamed: the stream's
 * media type, what it is, and the schema of each of its events or lines.
 */
export function wholeOrStreamed(
  whole: z.ZodType,
  stream: { type: "text/event-stream" | "application/x-ndjson"; text: string; item: z.ZodType },
): Record<string, MediaSpec> {
  return {
    "application/json": { schema: whole },
    [stream.type]: {
      schema: z.string().openapi({ description: stream.text }),
      itemSchema: stream.item,
    },
  };
}

/** One JSON answer and the error answers of an operation. */
export function answers(
  dialect: Dialect,
  kind: OperationKind,
  ok: ResponseSpec,
  extra: Record<number, string> = {},
): Record<number, ResponseSpec> {
  const content = json(errorSchema(dialect));
  return {
    200: ok,
    ...errorResponses(dialect, kind),
    ...Object.fromEntries(
      Object.entries(extra).map(([status, description]) => [status, { description, content }]),
    ),
  };
}
