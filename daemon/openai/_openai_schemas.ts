/**
 * The OpenAI dialect's schemas: what `POST /v1/chat/completions` takes, and what the `/v1`
 * endpoints answer. Module-private (JSR's slow-types rule); the types the surface builds its
 * answers with come from the same schemas.
 *
 * Requests are checked strictly where a client can be wrong in a way a provider would not
 * notice or would be confused by (a message's `role` and `content`, the sampling parameters'
 * types and ranges: `surface/sampling.ts`), and loosely elsewhere: fields the daemon does not
 * know (`tools`, vendor options, …) are forwarded to the provider as they are.
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import {
  COUNT,
  DECIMAL,
  OPENAI_SAMPLING,
  PROVIDER_PREFERENCES,
  REQUESTED_MODEL,
  TIER,
  USAGE,
} from "../surface/mod.ts";

/** The roles of an OpenAI chat message. */
export const OPENAI_ROLES = [
  "system",
  "developer",
  "user",
  "assistant",
  "tool",
  "function",
] as const;

/** One part of a message's content (`text`, `image_url`, `input_audio`, `file`, …). */
const CONTENT_PART = z.looseObject({ type: z.string().min(1) }).openapi("ContentPart", {
  description: "A content part: an object with its `type` (`text`, `image_url`, …).",
});

const CONTENT = z.union([z.string(), z.array(CONTENT_PART)]);

/** Where `content` may be `null`: an assistant message that calls tools (or a function). */
function mayBeNull(message: Record<string, unknown>): boolean {
  return message.role === "assistant" &&
    ((message.tool_calls ?? null) !== null || (message.function_call ?? null) !== null);
}

const MESSAGE = z.looseObject({
  role: z.enum(OPENAI_ROLES),
  content: CONTENT.nullable().optional(),
}).superRefine((message, ctx) => {
  if (message.content === null && !mayBeNull(message)) {
    ctx.addIssue({
      code: "custom",
      path: ["content"],
      input: null,
      message: "must be a string or an array of content parts (null only in an assistant " +
        "message with tool_calls)",
    });
  }
}).openapi("ChatMessage", {
  description: "A message. `content` is a string or an array of content parts; `null` only in " +
    "an assistant message with `tool_calls`. Other fields are forwarded as they are.",
});

/** The body of `POST /v1/chat/completions`. */
export const OPENAI_CHAT_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  messages: z.array(MESSAGE).min(1),
  stream: z.boolean().optional().openapi({ default: false }),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  n: z.literal(1).nullable().optional(),
  // Typed, so that a truthy `logprobs: "true"` or `1` cannot pass the capability check by.
  logprobs: z.boolean().nullable().optional().openapi({
    description: "From a model with the `logprobs` capability (else a 400).",
  }),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  ...OPENAI_SAMPLING,
  provider: PROVIDER_PREFERENCES.optional(),
}).openapi("ChatCompletionRequest", {
  description: "The OpenAI request; other fields are forwarded to the provider as they are.",
  required: ["model", "messages"],
});

/** A validated chat-completions body. */
export type OpenAIChatBody = z.output<typeof OPENAI_CHAT_REQUEST>;

const TOOL_CALL = z.strictObject({
  id: z.string(),
  type: z.literal("function"),
  function: z.strictObject({
    name: z.string(),
    arguments: z.string().openapi({ description: "JSON text." }),
  }),
}).openapi("ToolCall");

const TOOL_CALL_DELTA = z.strictObject({
  index: COUNT,
  id: z.string().optional().openapi({ description: "On a call's first fragment." }),
  type: z.literal("function").optional().openapi({ description: "On a call's first fragment." }),
  function: z.strictObject({ name: z.string().optional(), arguments: z.string().optional() })
    .optional(),
}).openapi("ToolCallDelta", {
  description: "A piece of a tool call: the first of each `index` has `id`, `type`, and the " +
    "function's `name` and `arguments` (empty when none yet); the others a piece of `arguments`.",
});

const COMPLETION_ID = z.string().regex(/^chatcmpl-/);

const TOKEN_LOGPROB = z.strictObject({
  token: z.string(),
  logprob: z.number(),
  bytes: z.array(z.number().int()).nullable(),
});

/** Token log probabilities, passed through from a model with the `logprobs` capability. */
const LOGPROBS = z.strictObject({
  content: z.array(TOKEN_LOGPROB.extend({ top_logprobs: z.array(TOKEN_LOGPROB) })),
  refusal: z.null(),
}).nullable().openapi("Logprobs", {
  description: "`null` unless `logprobs: true` was asked of a model with the `logprobs` " +
    "capability (others are refused with 400).",
});

/** A whole reply (`stream: false`). */
export const CHAT_COMPLETION = z.strictObject({
  id: COMPLETION_ID,
  object: z.literal("chat.completion"),
  created: COUNT,
  model: z.string().openapi({ description: "The model id as the client wrote it." }),
  choices: z.array(z.strictObject({
    index: z.literal(0),
    message: z.strictObject({
      role: z.literal("assistant"),
      content: z.string().nullable(),
      refusal: z.string().nullable(),
      reasoning_content: z.string().optional(),
      tool_calls: z.array(TOOL_CALL).optional(),
    }),
    logprobs: LOGPROBS,
    finish_reason: z.string(),
  })).min(1).max(1),
  usage: USAGE,
}).openapi("ChatCompletion");

/** A whole reply, as the surface builds it. */
export type ChatCompletion = z.input<typeof CHAT_COMPLETION>;

/** One streamed chunk (`stream: true`). */
export const CHAT_COMPLETION_CHUNK = z.strictObject({
  id: COMPLETION_ID,
  object: z.literal("chat.completion.chunk"),
  created: COUNT,
  model: z.string(),
  choices: z.array(z.strictObject({
    index: z.literal(0),
    delta: z.strictObject({
      role: z.literal("assistant").optional(),
      content: z.string().optional(),
      refusal: z.string().optional(),
      reasoning_content: z.string().optional(),
      tool_calls: z.array(TOOL_CALL_DELTA).optional(),
    }),
    logprobs: LOGPROBS,
    finish_reason: z.string().nullable(),
  })).max(1),
  usage: z.union([USAGE, z.null()]).optional(),
}).openapi("ChatCompletionChunk");

/** One streamed chunk, as the surface builds it. */
export type ChatCompletionChunkOut = z.input<typeof CHAT_COMPLETION_CHUNK>;

/** One entry of `GET /v1/models`. */
export const MODEL_ENTRY = z.strictObject({
  id: z.string().regex(/^net\/(verified|tee)\/[^/]+\/[^/]+$/),
  object: z.literal("model"),
  created: COUNT,
  owned_by: z.string(),
  net: z.strictObject({
    tier: TIER,
    providers: COUNT,
    context_length: z.number().int().min(1),
    cheapest_price: z.strictObject({ input: DECIMAL, output: DECIMAL }).nullable(),
    kind: z.enum(["chat", "embedding"]).openapi({ description: "What the model does." }),
    capabilities: z.array(z.string()).openapi({
      description: "What every provider of it supports (`tools`, `vision`, `json_mode`, " +
        "`logprobs`, `dimensions`; `docs/protocol.md` §1).",
    }),
    embedding_dimensions: z.number().int().min(1).optional().openapi({
      description: "An embedding model's vector length.",
    }),
    weights_digests: z.array(z.string()).optional().openapi({
      description: "The digests of the weights its providers' ads name (`0x` + 64 hex), when " +
        "they name any. In the TEE tier a provider is used only when its enclave attests the " +
        "digest its ad names.",
    }),
  }),
}).openapi("Model");

/** One entry of `GET /v1/models`, as the surface builds it. */
export type OpenAIModelEntry = z.input<typeof MODEL_ENTRY>;

/** The answer of `GET /v1/models`. */
export const MODEL_LIST = z.strictObject({
  object: z.literal("list"),
  data: z.array(MODEL_ENTRY),
}).openapi("ModelList");

/** The path of `GET /v1/models/{model}`: the id may contain its slashes, or encode them. */
export const MODEL_PATH = z.object({
  model: z.string().openapi({
    description: "`net/<tier>/<maker>/<model>`; its slashes may be sent as they are or " +
      "percent-encoded.",
  }),
});
