/**
 * Checking a provider's embeddings answer (`docs/protocol.md` §7) before a client sees it: an
 * OpenAI embeddings list with one finite float vector per input (within float32's range), every
 * vector of one length (the `dimensions` asked for, else the provider's advertised length), and a
 * token count.
 *
 * @module
 */

import { DaemonError } from "../core/mod.ts";

/** The checked answer: vectors in input order, and the input tokens. */
export interface CheckedEmbeddings {
  /** `vectors[i]` embeds input `i`. */
  readonly vectors: number[][];
  /** Input tokens, as the provider counted them (0 when it did not say). */
  readonly promptTokens: number;
}

/**
 * The largest float32: a component beyond it would be sent as a number with floats but as
 * Infinity in base64 (float32 bytes), so the two encodings of one answer would disagree.
 */
const FLOAT32_MAX = 3.4028234663852886e38;

function malformed(what: string): DaemonError {
  return new DaemonError(
    "provider_error",
    `The provider's embeddings answer is malformed: ${what}`,
  );
}

/**
 * Checks `answer` for `inputs` inputs.
 *
 * @throws {DaemonError} `provider_error` naming what is wrong.
 */
export function checkedEmbeddings(
  answer: unknown,
  inputs: number,
  dimensions: number | undefined,
): CheckedEmbeddings {
  const data = (answer as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw malformed('expected {"data": [...]}');
  if (data.length !== inputs) {
    throw malformed(`${data.length} vectors for ${inputs} inputs`);
  }
  const vectors: number[][] = new Array(inputs);
  let length: number | undefined = dimensions;
  data.forEach((item, position) => {
    const index = (item as { index?: unknown })?.index ?? position;
    const embedding = (item as { embedding?: unknown })?.embedding;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= inputs) {
      throw malformed(`data[${position}].index is ${JSON.stringify(index)}`);
    }
    if (vectors[index as number] !== undefined) {
      throw malformed(`two vectors for input ${index}`);
    }
    if (
      !Array.isArray(embedding) || embedding.length === 0 ||
      !embedding.every((x) => typeof x === "number" && Math.abs(x) <= FLOAT32_MAX)
    ) {
      throw malformed(
        `data[${position}].embedding is not an array of finite numbers within float32's range`,
      );
    }
    length ??= embedding.length;
    if (embedding.length !== length) {
      throw malformed(`data[${position}] has ${embedding.length} dimensions, expected ${length}`);
    }
    vectors[index as number] = embedding;
  });
  const tokens = (answer as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens;
  return {
    vectors,
    promptTokens: Number.isSafeInteger(tokens) && (tokens as number) >= 0 ? tokens as number : 0,
  };
}
