/**
 * The Anthropic dialect's schemas: what `POST /v1/messages` and `POST /v1/messages/count_tokens`
 * take, and what they answer (a `message`, the stream's events, the token count). Module-private
 * (JSR's slow-types rule).
 *
 * Requests are checked where a client can be wrong in a way a provider would not notice (roles,
 * content blocks, tools, the sampling parameters' types and ranges); fields with no counterpart
 * on the network (`metadata`, `thinking`, `context_management`, `service_tier`, …) are accepted
 * and ignored, as Claude Code sends several of them on every request.
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import {
  ANTHROPIC_SAMPLING,
  COUNT,
  PROVIDER_PREFERENCES,
  REQUESTED_MODEL,
} from "../surface/mod.ts";

/** A content block: an object with its `type` (checked block by block when translated). */
const BLOCK = z.looseObject({ type: z.string().min(1) }).openapi("AnthropicContentBlock", {
  description: "A content block: `text`, `image` (base64 or URL), `tool_use` (assistant), " +
    "`tool_result` (user); `thinking` blocks are dropped; other types are refused.",
});

const TEXT_BLOCK = z.looseObject({ type: z.literal("text"), text: z.string() });

const MESSAGE = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(BLOCK)]),
}).openapi("AnthropicTurn", {
  description: "A turn: `content` is text or content blocks. A `system` turn inside `messages` " +
    "(Claude Code sends one) becomes a system message at that place.",
});

const TOOL = z.looseObject({
  type: z.string().optional(),
  name: z.string().min(1).max(128),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
}).openapi("AnthropicTool", {
  description: "A client tool: `name`, `description`, `input_schema`. Anthropic's server tools " +
    "(web search, code execution, …) are refused: the network runs only the client's tools.",
});

const TOOL_CHOICE = z.looseObject({
  type: z.enum(["auto", "any", "tool", "none"]),
  name: z.string().min(1).optional(),
  disable_parallel_tool_use: z.boolean().optional(),
}).openapi("AnthropicToolChoice");

const OUTPUT_FORMAT = z.looseObject({
  type: z.literal("json_schema"),
  schema: z.record(z.string(), z.unknown()),
});

/** The fields both endpoints take. */
const CONVERSATION = {
  model: REQUESTED_MODEL,
  messages: z.array(MESSAGE).min(1),
  system: z.union([z.string(), z.array(TEXT_BLOCK)]).optional(),
  tools: z.array(TOOL).optional(),
  tool_choice: TOOL_CHOICE.optional(),
  provider: PROVIDER_PREFERENCES.optional(),
};

/** The body of `POST /v1/messages`. */
export const MESSAGES_REQUEST = z.looseObject({
  ...CONVERSATION,
  ...ANTHROPIC_SAMPLING,
  stream: z.boolean().optional().openapi({ default: false }),
  output_config: z.looseObject({ format: OUTPUT_FORMAT.nullable().optional() }).optional()
    .openapi({
      description: "`format` (a JSON schema) from a model with the `structured_outputs` " +
        "capability (else a 400); other settings (`effort`) are ignored.",
    }),
}).openapi("AnthropicMessagesRequest", {
  description: "Anthropic's Messages API request, translated to one chat completion. Fields " +
    "with no counterpart on the network (`metadata`, `thinking`, …) are ignored.",
  required: ["model", "messages", "max_tokens"],
});

/** A validated Messages body. */
export type MessagesBody = z.output<typeof MESSAGES_REQUEST>;

/** The body of `POST /v1/messages/count_tokens`. */
export const COUNT_TOKENS_REQUEST = z.looseObject(CONVERSATION).openapi(
  "AnthropicCountTokensRequest",
  { required: ["model", "messages"] },
);

/** A validated count-tokens body. */
export type CountTokensBody = z.output<typeof COUNT_TOKENS_REQUEST>;

/** The answer of `POST /v1/messages/count_tokens`. */
export const COUNT_TOKENS = z.strictObject({
  input_tokens: COUNT.openapi({
    description: "An estimate: about one token per 4 bytes of the prompt's text (the network " +
      "has no tokenizer endpoint).",
  }),
}).openapi("AnthropicTokenCount");

/** What the daemon paid for the reply (`docs/daemon.md`, "Money"): an extension, when paid. */
const COST = z.string().regex(/^[0-9]+(\.[0-9]+)?$/).openapi({
  description: "The reply's exact cost in the chain's whole unit (18 decimals), when paid.",
});

const USAGE = z.strictObject({
  input_tokens: COUNT,
  output_tokens: COUNT,
  cache_creation_input_tokens: COUNT,
  cache_read_input_tokens: COUNT,
  cost: COST.optional(),
}).openapi("AnthropicUsage");

/** A block of an answer. */
const OUT_BLOCK = z.union([
  z.strictObject({ type: z.literal("text"), text: z.string() }),
  z.strictObject({
    type: z.literal("tool_use"),
    id: z.string(),
    name: z.string(),
    input: z.record(z.string(), z.unknown()),
  }),
]);

/** Why generation stopped, in Anthropic's words. */
export const STOP_REASON = z.enum([
  "end_turn",
  "max_tokens",
  "stop_sequence",
  "tool_use",
  "refusal",
]);

/** A Messages answer. */
export const MESSAGE_RESPONSE = z.strictObject({
  id: z.string().regex(/^msg_/),
  type: z.literal("message"),
  role: z.literal("assistant"),
  model: z.string().openapi({ description: "The model id as the client wrote it." }),
  content: z.array(OUT_BLOCK),
  stop_reason: STOP_REASON.nullable(),
  stop_sequence: z.string().nullable(),
  usage: USAGE,
}).openapi("AnthropicMessage");

/** A message answer, as the surface builds it. */
export type MessageResponse = z.output<typeof MESSAGE_RESPONSE>;

/** One event of a streamed answer (the `data:` of an SSE event named by its `type`). */
export const STREAM_EVENT = z.union([
  z.strictObject({ type: z.literal("message_start"), message: MESSAGE_RESPONSE }),
  z.strictObject({
    type: z.literal("content_block_start"),
    index: COUNT,
    content_block: OUT_BLOCK,
  }),
  z.strictObject({ type: z.literal("ping") }),
  z.strictObject({
    type: z.literal("content_block_delta"),
    index: COUNT,
    delta: z.union([
      z.strictObject({ type: z.literal("text_delta"), text: z.string() }),
      z.strictObject({ type: z.literal("input_json_delta"), partial_json: z.string() }),
    ]),
  }),
  z.strictObject({ type: z.literal("content_block_stop"), index: COUNT }),
  z.strictObject({
    type: z.literal("message_delta"),
    delta: z.strictObject({ stop_reason: STOP_REASON, stop_sequence: z.string().nullable() }),
    usage: z.strictObject({ input_tokens: COUNT, output_tokens: COUNT, cost: COST.optional() }),
  }),
  z.strictObject({ type: z.literal("message_stop") }),
]).openapi("AnthropicStreamEvent");
