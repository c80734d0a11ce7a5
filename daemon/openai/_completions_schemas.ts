/**
 * The schemas of `POST /v1/completions` (legacy prompt completions). Module-private (JSR's
 * slow-types rule).
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import {
  COUNT,
  OPENAI_SAMPLING,
  PROVIDER_PREFERENCES,
  REQUESTED_MODEL,
  USAGE,
} from "../surface/mod.ts";

/** The body of `POST /v1/completions`. */
export const COMPLETIONS_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  prompt: z.union([z.string(), z.array(z.string()).min(1)]).openapi({
    description: "One prompt (a string, or an array of one string).",
  }),
  stream: z.boolean().optional().openapi({ default: false }),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  n: z.number().int().nullable().optional(),
  best_of: z.number().int().nullable().optional(),
  echo: z.boolean().nullable().optional(),
  suffix: z.string().nullable().optional(),
  logprobs: z.number().int().nullable().optional(),
  ...OPENAI_SAMPLING,
  provider: PROVIDER_PREFERENCES.optional(),
}).openapi("CompletionRequest", {
  description: "The legacy OpenAI request; other fields (`temperature`, `stop`, …) are " +
    "forwarded to the provider as they are.",
  required: ["model", "prompt"],
});

/** A validated completions body. */
export type CompletionsBody = z.output<typeof COMPLETIONS_REQUEST>;

const CHOICE = z.strictObject({
  text: z.string(),
  index: z.literal(0),
  logprobs: z.null(),
  finish_reason: z.string().nullable(),
});

const HEAD = {
  id: z.string().regex(/^cmpl-/),
  object: z.literal("text_completion"),
  created: COUNT,
  model: z.string().openapi({ description: "The model id as the client wrote it." }),
};

/** A whole completion. */
export const COMPLETION = z.strictObject({
  ...HEAD,
  choices: z.array(CHOICE).length(1),
  usage: USAGE,
}).openapi("Completion");

/** One streamed chunk. */
export const COMPLETION_CHUNK = z.strictObject({
  ...HEAD,
  choices: z.array(CHOICE).max(1),
  usage: USAGE.optional(),
}).openapi("CompletionChunk");
