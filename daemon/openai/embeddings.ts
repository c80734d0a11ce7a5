/**
 * `POST /v1/embeddings` (OpenAI): floats, or with `encoding_format: base64` their little-endian
 * float32 bytes; `dimensions` for a shorter vector. The shared rules are
 * `surface/embeddings.ts`'s.
 *
 * @module
 */

import { formatCost } from "../../chain/cost.ts";
import { embeddingsResponse, runEmbed, type SurfaceContext } from "../surface/mod.ts";
import type { OpenAIEmbeddings, OpenAIEmbeddingsBody } from "./_embeddings_schemas.ts";

/** A vector as base64 of its little-endian float32 bytes (OpenAI's `encoding_format: base64`). */
export function base64Vector(vector: readonly number[]): string {
  const floats = new Float32Array(vector);
  const bytes = new Uint8Array(floats.buffer);
  if (new Uint16Array(new Uint8Array([1, 0]).buffer)[0] !== 1) {
    for (let i = 0; i < bytes.length; i += 4) bytes.subarray(i, i + 4).reverse();
  }
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

/**
 * Serves `POST /v1/embeddings`.
 *
 * @throws {DaemonError} a refusal, rendered in the OpenAI dialect.
 */
export async function serveOpenAIEmbeddings(
  context: SurfaceContext,
  served: { body: OpenAIEmbeddingsBody; request: Request },
): Promise<Response> {
  const { body } = served;
  const reply = await runEmbed(context, {
    requestedModel: body.model,
    input: body.input,
    dimensions: body.dimensions,
  }, served.request);
  const base64 = body.encoding_format === "base64";
  const answer: OpenAIEmbeddings = {
    object: "list",
    data: reply.vectors.map((vector, index) => ({
      object: "embedding",
      index,
      embedding: base64 ? base64Vector(vector) : vector,
    })),
    model: body.model as string,
    usage: {
      prompt_tokens: reply.promptTokens,
      total_tokens: reply.promptTokens,
      ...(reply.costWei === undefined ? {} : {
        cost: Number(formatCost(reply.costWei)),
        cost_wei: String(reply.costWei),
      }),
    },
  };
  return embeddingsResponse(answer, reply);
}
