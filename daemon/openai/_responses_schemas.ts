/**
 * The schemas of `POST /v1/responses` (the OpenAI Responses API, the part the daemon maps onto
 * chat): what it takes and what it answers. Module-private (JSR's slow-types rule).
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import {
  COUNT,
  PROVIDER_PREFERENCES,
  REQUESTED_MODEL,
  RESPONSES_SAMPLING,
} from "../surface/mod.ts";

const PART = z.looseObject({ type: z.string().min(1) }).openapi("ResponseInputPart", {
  description: "`input_text` / `output_text` (`text`), `input_image` (`image_url`).",
});

/** One item of `input`: a message, a function call, or a function call's output. */
const ITEM = z.looseObject({
  type: z.string().optional().openapi({
    description: "`message` (the default), `function_call` or `function_call_output`.",
  }),
  role: z.enum(["user", "system", "developer", "assistant"]).optional(),
  content: z.union([z.string(), z.array(PART)]).optional(),
  call_id: z.string().optional(),
  name: z.string().optional(),
  arguments: z.string().optional(),
  output: z.unknown().optional(),
}).openapi("ResponseInputItem");

const TOOL = z.looseObject({
  type: z.literal("function").openapi({ description: "Only function tools are supported." }),
  name: z.string().min(1),
  description: z.string().nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
}).openapi("ResponseFunctionTool");

/** The body of `POST /v1/responses`. */
export const RESPONSES_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  input: z.union([z.string().min(1), z.array(ITEM).min(1)]),
  instructions: z.string().nullable().optional(),
  ...RESPONSES_SAMPLING,
  provider: PROVIDER_PREFERENCES.optional(),
  tools: z.array(TOOL).optional(),
  tool_choice: z.union([
    z.enum(["auto", "none", "required"]),
    z.looseObject({ type: z.literal("function"), name: z.string() }),
  ]).optional(),
  stream: z.boolean().optional().openapi({ default: false }),
  store: z.boolean().nullable().optional().openapi({
    description: "Only `false` (or absent): the daemon keeps no conversation state.",
  }),
  previous_response_id: z.string().nullable().optional().openapi({
    description: "Refused (400): the daemon keeps no conversation state; send the whole input.",
  }),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).optional() }).optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
  user: z.string().optional(),
}).openapi("ResponseRequest", {
  description: "The Responses API request, mapped onto a chat completion; other fields are " +
    "ignored.",
  required: ["model", "input"],
});

/** A validated `POST /v1/responses` body. */
export type ResponsesBody = z.output<typeof RESPONSES_REQUEST>;

const OUTPUT_TEXT = z.strictObject({
  type: z.literal("output_text"),
  text: z.string(),
  annotations: z.array(z.unknown()).max(0),
});

const MESSAGE_ITEM = z.strictObject({
  type: z.literal("message"),
  id: z.string().regex(/^msg_/),
  status: z.enum(["in_progress", "completed", "incomplete"]),
  role: z.literal("assistant"),
  content: z.array(OUTPUT_TEXT),
});

const CALL_ITEM = z.strictObject({
  type: z.literal("function_call"),
  id: z.string().regex(/^fc_/),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string().openapi({ description: "JSON text." }),
  status: z.enum(["in_progress", "completed", "incomplete"]),
});

const OUTPUT_ITEM = z.union([MESSAGE_ITEM, CALL_ITEM]).openapi("ResponseOutputItem");

/** A response object (whole, or as `response.created` / `response.completed` carry it). */
export const RESPONSE = z.strictObject({
  id: z.string().regex(/^resp_/),
  object: z.literal("response"),
  created_at: COUNT,
  status: z.enum(["in_progress", "completed", "incomplete"]),
  error: z.null(),
  incomplete_details: z.strictObject({ reason: z.string() }).nullable(),
  instructions: z.string().nullable(),
  max_output_tokens: z.number().int().nullable(),
  model: z.string().openapi({ description: "The model id as the client wrote it." }),
  output: z.array(OUTPUT_ITEM),
  parallel_tool_calls: z.boolean(),
  previous_response_id: z.null(),
  store: z.literal(false),
  temperature: z.number().nullable(),
  top_p: z.number().nullable(),
  tool_choice: z.unknown(),
  tools: z.array(z.unknown()),
  text: z.unknown(),
  truncation: z.literal("disabled"),
  metadata: z.record(z.string(), z.string()),
  usage: z.strictObject({
    input_tokens: COUNT,
    input_tokens_details: z.strictObject({ cached_tokens: COUNT }),
    output_tokens: COUNT,
    output_tokens_details: z.strictObject({ reasoning_tokens: COUNT }),
    total_tokens: COUNT,
    cost: z.number().min(0).optional().openapi({
      description: "What it cost in the chain's whole unit, when the daemon paid for it.",
    }),
    cost_wei: z.string().regex(/^(0|[1-9][0-9]*)$/).optional().openapi({
      description: "The exact cost in the chain's smallest unit.",
    }),
  }).nullable(),
}).openapi("Response");

/** A response object, as the surface builds it. */
export type ResponseObject = z.input<typeof RESPONSE>;

/** An output item, as the surface builds it. */
export type ResponseOutputItem = z.input<typeof OUTPUT_ITEM>;

/** One streamed event (`event: <type>`, `data: <this>`). */
export const RESPONSE_EVENT = z.looseObject({
  type: z.enum([
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.completed",
    "response.incomplete",
    "error",
  ]),
  sequence_number: COUNT,
}).openapi("ResponseStreamEvent");
