/**
 * `POST /api/embed` and the older `POST /api/embeddings` (Ollama). The shared rules are
 * `surface/embeddings.ts`'s.
 *
 * @module
 */

import { embeddingsResponse, runEmbed, type SurfaceContext } from "../surface/mod.ts";
import type { OllamaEmbedBody, OllamaEmbeddingsBody } from "./_embed_schemas.ts";

/**
 * Serves `POST /api/embed`: `{model, embeddings, total_duration, load_duration,
 * prompt_eval_count}`.
 *
 * @throws {DaemonError} a refusal, rendered in the Ollama dialect.
 */
export async function serveOllamaEmbed(
  context: SurfaceContext,
  served: { body: OllamaEmbedBody; request: Request },
): Promise<Response> {
  const { body } = served;
  const started = performance.now();
  const reply = await runEmbed(context, {
    requestedModel: body.model,
    input: typeof body.input === "string" ? [body.input] : body.input,
    dimensions: body.dimensions,
  }, served.request);
  return embeddingsResponse({
    model: body.model,
    embeddings: reply.vectors,
    total_duration: Math.round((performance.now() - started) * 1e6),
    load_duration: 0,
    prompt_eval_count: reply.promptTokens,
  }, reply);
}

/**
 * Serves the older `POST /api/embeddings`: `{embedding}` for one `prompt`.
 *
 * @throws {DaemonError} a refusal, rendered in the Ollama dialect.
 */
export async function serveOllamaEmbeddings(
  context: SurfaceContext,
  served: { body: OllamaEmbeddingsBody; request: Request },
): Promise<Response> {
  const { body } = served;
  const reply = await runEmbed(context, {
    requestedModel: body.model,
    input: body.prompt,
  }, served.request);
  return embeddingsResponse({ embedding: reply.vectors[0] }, reply);
}
