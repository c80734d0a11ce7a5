/**
 * The schemas of `POST /api/embed` and the older `POST /api/embeddings` (Ollama).
 * Module-private (JSR's slow-types rule).
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import { COUNT, embeddingInputs, MAX_EMBEDDING_INPUTS, REQUESTED_MODEL } from "../surface/mod.ts";

const TEXT = z.string().min(1);

const OLLAMA_EXTRAS = {
  options: z.record(z.string(), z.unknown()).optional().openapi({
    description: "Ignored (the provider runs the model).",
  }),
  keep_alive: z.union([z.string(), z.number()]).optional().openapi({
    description: "Ignored (nothing is loaded locally).",
  }),
};

/** The body of `POST /api/embed`. */
export const OLLAMA_EMBED_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  input: (embeddingInputs(false) as z.ZodType<string | string[]>).openapi({
    anyOf: [
      { type: "string", minLength: 1 },
      {
        type: "array",
        items: { type: "string", minLength: 1 },
        minItems: 1,
        maxItems: MAX_EMBEDDING_INPUTS,
      },
    ],
    description: `A string or an array of at most ${MAX_EMBEDDING_INPUTS} strings, none empty.`,
  }),
  truncate: z.boolean().optional().openapi({
    description: "Ignored: an input longer than the model's context is refused (400).",
  }),
  dimensions: z.number().int().min(1).optional(),
  ...OLLAMA_EXTRAS,
}).openapi("OllamaEmbedRequest", { required: ["model", "input"] });

/** A validated `POST /api/embed` body. */
export type OllamaEmbedBody = z.output<typeof OLLAMA_EMBED_REQUEST>;

/** The answer of `POST /api/embed`. */
export const OLLAMA_EMBED = z.strictObject({
  model: z.string(),
  embeddings: z.array(z.array(z.number())),
  total_duration: COUNT,
  load_duration: COUNT,
  prompt_eval_count: COUNT,
}).openapi("OllamaEmbed");

/** The body of `POST /api/embeddings` (the older endpoint: one prompt). */
export const OLLAMA_EMBEDDINGS_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  prompt: TEXT,
  ...OLLAMA_EXTRAS,
}).openapi("OllamaEmbeddingsRequest", { required: ["model", "prompt"] });

/** A validated `POST /api/embeddings` body. */
export type OllamaEmbeddingsBody = z.output<typeof OLLAMA_EMBEDDINGS_REQUEST>;

/** The answer of `POST /api/embeddings`. */
export const OLLAMA_EMBEDDINGS = z.strictObject({
  embedding: z.array(z.number()),
}).openapi("OllamaEmbeddings");
