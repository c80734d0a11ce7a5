/**
 * Sampling parameters, typed and ranged per dialect as each documents them, so that a value no
 * provider would take (`temperature: "hot"`, `max_tokens: -1`, `1e999`, which JSON reads as
 * infinity) is a 400 naming the field before anything is sent, instead of a provider's refusal
 * (or worse, its silent default) after the request was sealed and paid for. Each dialect's
 * request schema spreads the fields of its dialect.
 *
 * | dialect                  | field (range)                                                                                                                                                                                                            |
 * | ------------------------ | ------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------ |
 * | OpenAI chat, completions | `temperature` 0–2, `top_p` 0–1, `presence_penalty` and `frequency_penalty` −2–2, `max_tokens` and `max_completion_tokens` integers ≥ 1, `seed` an integer, `stop` a string or up to 4, `logit_bias` token id → −100–100 |
 * | OpenAI Responses         | `temperature` 0–2, `top_p` 0–1, `max_output_tokens` an integer ≥ 1, `max_tool_calls` an integer ≥ 1                                                                                                                     |
 * | Ollama `options`         | `temperature` ≥ 0, `top_p` and `min_p` 0–1, `top_k` an integer ≥ 0, `num_predict` an integer ≥ −2, `num_ctx` an integer ≥ 1, `seed` an integer, penalties −2–2, `repeat_penalty` ≥ 0, `stop` a string or strings      |
 * | Anthropic                | `max_tokens` an integer ≥ 1 (required), `temperature` and `top_p` 0–1, `top_k` an integer ≥ 0, `stop_sequences` up to 64 non-empty strings                                                                              |
 *
 * Every number must be finite; every integer a safe integer.
 *
 * @module
 */

import { z } from "../../http/mod.ts";

/** A finite number in `[min, max]`. */
function ranged(min: number, max: number): z.ZodNumber {
  return z.number().min(min).max(max);
}

/** An OpenAI field: it may also be `null` (the SDKs send it for "unset"). */
function openai<T extends z.ZodType>(schema: T) {
  return schema.nullable().optional();
}

/** The sampling fields of OpenAI's chat completions (and legacy completions). */
export const OPENAI_SAMPLING = {
  temperature: openai(ranged(0, 2)),
  top_p: openai(ranged(0, 1)),
  presence_penalty: openai(ranged(-2, 2)),
  frequency_penalty: openai(ranged(-2, 2)),
  max_tokens: openai(z.number().int().min(1)),
  max_completion_tokens: openai(z.number().int().min(1)),
  seed: openai(z.number().int()),
  stop: openai(z.union([z.string(), z.array(z.string()).max(4)])),
  logit_bias: openai(z.record(z.string().regex(/^[0-9]+$/), ranged(-100, 100))),
  parallel_tool_calls: openai(z.boolean()),
  user: openai(z.string()),
};

/** The sampling fields of OpenAI's Responses API. */
export const RESPONSES_SAMPLING = {
  temperature: openai(ranged(0, 2)),
  top_p: openai(ranged(0, 1)),
  max_output_tokens: openai(z.number().int().min(1)),
  max_tool_calls: openai(z.number().int().min(1)),
  parallel_tool_calls: openai(z.boolean()),
};

/** The Ollama `options` the daemon translates or checks (others are accepted and ignored). */
export const OLLAMA_SAMPLING = {
  temperature: openai(z.number().min(0)),
  top_p: openai(ranged(0, 1)),
  min_p: openai(ranged(0, 1)),
  top_k: openai(z.number().int().min(0)),
  presence_penalty: openai(ranged(-2, 2)),
  frequency_penalty: openai(ranged(-2, 2)),
  repeat_penalty: openai(z.number().min(0)),
  seed: openai(z.number().int()),
  num_predict: openai(z.number().int().min(-2)),
  num_ctx: openai(z.number().int().min(1)),
  stop: openai(z.union([z.string(), z.array(z.string())])),
};

/** The most stop sequences one Anthropic request may give (the daemon checks them itself). */
export const MAX_STOP_SEQUENCES = 64;

/** The sampling fields of Anthropic's Messages API. */
export const ANTHROPIC_SAMPLING = {
  max_tokens: z.number().int().min(1),
  temperature: ranged(0, 1).optional(),
  top_p: ranged(0, 1).optional(),
  top_k: z.number().int().min(0).optional(),
  stop_sequences: z.array(z.string().min(1).max(1000)).max(MAX_STOP_SEQUENCES).optional(),
};
