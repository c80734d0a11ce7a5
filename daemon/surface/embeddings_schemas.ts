/**
 * The embeddings endpoints' schemas, both dialects: `POST /v1/embeddings` (OpenAI),
 * `POST /api/embed` and the older `POST /api/embeddings` (Ollama). Module-private (JSR's
 * slow-types rule).
 *
 * @module
 */

import { z } from "../../http/mod.ts";
import { COUNT, REQUESTED_MODEL } from "./schemas.ts";

/** Most inputs one embeddings request may carry (OpenAI's own limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

const TEXT = z.string().min(1);

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
 */
function inputs(tokenIds: boolean) {
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

/** The body of `POST /v1/embeddings`. */
export const OPENAI_EMBEDDINGS_REQUEST = z.looseObject({
  model: REQUESTED_MODEL,
  input: (inputs(true) as z.ZodType<string | string[] | number[] | number[][]>).openapi({
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
  input: (inputs(false) as z.ZodType<string | string[]>).openapi({
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
