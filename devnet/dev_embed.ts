/**
 * The devnet's dev embedding model, `devnet/embed`: a **hashed bag of words**, not a trained
 * model. Each input's words (runs of letters and digits, lower-cased; a token-id input's ids)
 * are hashed (FNV-1a, 32 bits) into one of 256 buckets with a hashed sign, counted, and the
 * vector is scaled to length 1. Texts that share words point the same way, so cosine
 * similarity works for tests and demos; nothing else about meaning does. Deterministic: the
 * same text always gives the same vector, on every provider.
 *
 * `dimensions: d` (1 ≤ d ≤ 256) hashes the words into `d` buckets instead, so every word
 * counts at any size (two different texts differ even at 4 dimensions). Components are float32 values, so a vector sent as base64 float32 decodes to exactly
 * the numbers sent as JSON. An input is never the zero vector: one whose words cancel out is
 * the unit vector of its text's own bucket.
 *
 * @module
 */

import { devTokens } from "./engine.ts";
import { EngineError } from "./engine_error.ts";

/** The subset of an OpenAI embeddings request an engine reads. */
export interface EmbedBody {
  /** `maker/model`. */
  model: string;
  /** A string, an array of strings, an array of token ids, or an array of those. */
  input: unknown;
  /** The vector length asked for. */
  dimensions?: number | null;
  /** `float` or `base64`: engines answer floats; the daemon encodes for its client. */
  encoding_format?: string | null;
  [key: string]: unknown;
}

/** An OpenAI embeddings answer with float vectors. */
export interface EmbeddingList {
  object: "list";
  data: { object: "embedding"; index: number; embedding: number[] }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** One input, read: the features it hashes and the tokens it counts. */
interface Item {
  readonly features: string[];
  readonly tokens: number;
  readonly text: string;
}

function isTokenIds(value: unknown): value is number[] {
  return Array.isArray(value) && value.length > 0 &&
    value.every((id) => Number.isSafeInteger(id) && id >= 0);
}

function fromText(text: string, at: string): Item {
  if (text.trim() === "") {
    throw new EngineError("invalid_request", `Cannot embed: ${at} is empty`);
  }
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return { features: words, tokens: devTokens(text).length, text };
}

/** Most inputs one embeddings request may carry (the daemon's limit too, OpenAI's own). */
export const MAX_EMBEDDING_INPUTS = 2048;

/**
 * The inputs of a request, each read; refuses what is not one of the four input shapes, and
 * more than {@linkcode MAX_EMBEDDING_INPUTS} inputs.
 */
export function embeddingInputs(input: unknown): Item[] {
  if (typeof input === "string") return [fromText(input, "input")];
  if (isTokenIds(input)) {
    return [{ features: input.map((id) => `t${id}`), tokens: input.length, text: input.join(" ") }];
  }
  if (Array.isArray(input) && input.length > MAX_EMBEDDING_INPUTS) {
    throw new EngineError(
      "invalid_request",
      `Cannot embed: ${input.length} inputs, more than the ${MAX_EMBEDDING_INPUTS} one request may carry`,
    );
  }
  if (Array.isArray(input) && input.length > 0) {
    return input.map((item, i) => {
      if (typeof item === "string") return fromText(item, `input[${i}]`);
      if (isTokenIds(item)) {
        return { features: item.map((id) => `t${id}`), tokens: item.length, text: item.join(" ") };
      }
      throw new EngineError(
        "invalid_request",
        `Cannot embed: input[${i}] must be a non-empty string or array of token ids`,
      );
    });
  }
  throw new EngineError(
    "invalid_request",
    "Cannot embed: input must be a non-empty string, array of strings, array of token ids, or " +
      "array of those",
  );
}

/** FNV-1a, 32 bits, over the UTF-16 code units of `text`. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The dev model's unit vector of one input, `dimensions` long. */
export function devVector(item: Item, full: number, dimensions: number): number[] {
  // Hashed straight into `dimensions` buckets (never more than `full`): every word counts
  // at any size, so two different texts differ even at 4 dimensions.
  const kept = new Float64Array(Math.min(dimensions, full));
  for (const feature of item.features) {
    const sign = fnv1a(`${feature}\u0000sign`) & 1 ? 1 : -1;
    kept[fnv1a(feature) % kept.length] += sign;
  }
  let norm = Math.hypot(...kept);
  if (norm === 0) {
    kept[fnv1a(item.text) % dimensions] = 1;
    norm = 1;
  }
  return Array.from(kept, (x) => Math.fround(x / norm));
}

/**
 * The dev model's answer to `body`: one unit vector per input, with usage (the dev tokenizer's
 * count: whitespace-separated pieces of text, one per token id).
 *
 * @throws {EngineError} `invalid_request` for a malformed or empty input, an input longer than
 * `maxTokens`, or `dimensions` outside 1…`dimensions`.
 */
export function devEmbeddings(
  body: EmbedBody,
  model: { dimensions: number; maxTokens: number },
): EmbeddingList {
  const items = embeddingInputs(body.input);
  const asked = body.dimensions ?? model.dimensions;
  if (!Number.isInteger(asked) || asked < 1 || asked > model.dimensions) {
    throw new EngineError(
      "invalid_request",
      `Cannot embed: dimensions must be an integer from 1 to ${model.dimensions}, found ${asked}`,
    );
  }
  let tokens = 0;
  const data = items.map((item, index) => {
    if (item.tokens > model.maxTokens) {
      throw new EngineError(
        "invalid_request",
        `Cannot embed: input ${index} has ${item.tokens} tokens, more than the model's ${model.maxTokens}`,
      );
    }
    tokens += item.tokens;
    return {
      object: "embedding" as const,
      index,
      embedding: devVector(item, model.dimensions, asked),
    };
  });
  return {
    object: "list",
    data,
    model: body.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}
