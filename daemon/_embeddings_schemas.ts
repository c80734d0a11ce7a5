/**
 * The embeddings endpoints' schemas, both dialects: `POST /v1/embeddings` (OpenAI),
 * `POST /api/embed` and the older `POST /api/embeddings` (Ollama). Module-private (JSR's
 * slow-types rule).
 *
 * @module
 */

import { z } from "../http/mod.ts";
import { COUNT, REQUESTED_MODEL } from "./_schemas.ts";

/** Most inputs one embeddings request may carry (OpenAI's own limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

const TOKEN_IDS = z.array(z.number().int().min(0)).min(1);
const TEXT = z.string().min(1);

/** The body of `POST /v1/embeddings`. */
export const OPENAI_EMBEDDINGS_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  input: z.union([
    TEXT,
    z.array(TEXT).min(1).max(MAX_EMBEDDING_INPUTS),
    TOKEN_IDS,
    z.array(TOKEN_IDS).min(1).max(MAX_EMBEDDING_INPUTS),
  ]).openapi({
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
  usage: z.strictObject({ prompt_tokens: COUNT, total_tokens: COUNT }),
}).openapi("Embeddings");

/** The answer of `POST /v1/embeddings`, as the surface builds it. */
export type OpenAIEmbeddings = z.input<typeof OPENAI_EMBEDDINGS>;

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
  input: z.union([TEXT, z.array(TEXT).min(1).max(MAX_EMBEDDING_INPUTS)]).openapi({
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
