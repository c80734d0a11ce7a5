/**
 * The schemas of `POST /v1/embeddings` (OpenAI). Module-private (JSR's slow-types rule).
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import { COUNT, embeddingInputs, MAX_EMBEDDING_INPUTS, REQUESTED_MODEL } from "../surface/mod.ts";

/** The body of `POST /v1/embeddings`. */
export const OPENAI_EMBEDDINGS_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  input: (embeddingInputs(true) as z.ZodType<string | string[] | number[] | number[][]>).openapi({
    anyOf: [
      { type: "string", minLength: 1 },
      {
        type: "array",
        items: { type: "string", minLength: 1 },
        minItems: 1,
        maxItems: MAX_EMBEDDING_INPUTS,
      },
      { type: "array", items: { type: "integer", minimum: 0 }, minItems: 1 },
      {
        type: "array",
        items: { type: "array", items: { type: "integer", minimum: 0 }, minItems: 1 },
        minItems: 1,
        maxItems: MAX_EMBEDDING_INPUTS,
      },
    ],
    description: "A string, an array of strings, an array of token ids, or an array of those; " +
      `at most ${MAX_EMBEDDING_INPUTS} inputs, none empty.`,
  }),
  encoding_format: z.enum(["float", "base64"]).optional().openapi({ default: "float" }),
  dimensions: z.number().int().min(1).optional().openapi({
    description: "A shorter vector, for models with the `dimensions` capability.",
  }),
  user: z.string().optional(),
}).openapi("EmbeddingsRequest", {
  description: "The OpenAI request; other fields are ignored.",
  required: ["model", "input"],
});

/** A validated `POST /v1/embeddings` body. */
export type OpenAIEmbeddingsBody = z.output<typeof OPENAI_EMBEDDINGS_REQUEST>;

/** The answer of `POST /v1/embeddings`. */
export const OPENAI_EMBEDDINGS = z.strictObject({
  object: z.literal("list"),
  data: z.array(z.strictObject({
    object: z.literal("embedding"),
    index: COUNT,
    embedding: z.union([z.array(z.number()), z.string()]).openapi({
      description: "Floats, or with `encoding_format: base64` their little-endian float32 " +
        "bytes in base64.",
    }),
  })),
  model: z.string().openapi({ description: "The model id as the client wrote it." }),
  usage: z.strictObject({
    prompt_tokens: COUNT,
    total_tokens: COUNT,
    cost: z.number().min(0).optional(),
    cost_wei: z.string().regex(/^(0|[1-9][0-9]*)$/).optional(),
  }),
}).openapi("Embeddings");

/** The answer of `POST /v1/embeddings`, as the surface builds it. */
export type OpenAIEmbeddings = z.input<typeof OPENAI_EMBEDDINGS>;
