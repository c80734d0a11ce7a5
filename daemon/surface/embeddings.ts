/**
 * Embeddings in both dialects: `POST /v1/embeddings` (OpenAI: floats or base64, `dimensions`),
 * `POST /api/embed` and the older `POST /api/embeddings` (Ollama). Each request is sealed to a
 * provider like a chat (`ChatBackend.embed`: same selection, trust, tiers and failover); the
 * daemon asks for floats and encodes base64 itself.
 *
 * Before anything is sent, the model must be one the network lists as an embedding model (a
 * chat model is refused with 400), and `dimensions` must be one it can give: its own length,
 * or less when it has the `dimensions` capability. A model the network does not list goes to
 * the backend, which answers `model_not_found`.
 *
 * @module
 */

import type { EmbeddingsReply, EmbeddingsRequest, NetworkModel } from "../core/backend.ts";
import { DaemonError } from "../core/daemon_error.ts";
import { parseModelId } from "../core/model_id.ts";
import { servedHeaders } from "./reply.ts";
import type { SurfaceContext } from "./context.ts";
import { requestController, withTimeout } from "../core/deadlines.ts";
import { findModel, listNetworkModels } from "./models.ts";
import type {
  OllamaEmbedBody,
  OllamaEmbeddingsBody,
  OpenAIEmbeddings,
  OpenAIEmbeddingsBody,
} from "./embeddings_schemas.ts";

/** One embeddings call, whatever the dialect. */
interface EmbedCall {
  /** The model id as the client wrote it. */
  readonly requestedModel: unknown;
  /** The inputs. */
  readonly input: EmbeddingsRequest["body"]["input"];
  /** The vector length asked for. */
  readonly dimensions?: number;
}

/** Checks the model and `dimensions` against the network's list (when it lists the model). */
function checkModel(model: NetworkModel | undefined, call: EmbedCall): void {
  if (!model) return;
  const name = JSON.stringify(call.requestedModel);
  if (model.kind !== "embedding") {
    throw new DaemonError(
      "invalid_request_error",
      `Cannot embed with ${name}: it is a chat model; use an embedding model (GET /v1/models ` +
        `lists each model's kind)`,
      { param: "model" },
    );
  }
  const full = model.embeddingDimensions;
  const asked = call.dimensions;
  if (asked === undefined || full === undefined || asked === full) return;
  if (!(model.supports ?? []).includes("dimensions")) {
    throw new DaemonError(
      "invalid_request_error",
      `Cannot embed with ${name}: it gives ${full} dimensions only, found dimensions ${asked} ` +
        `(the model lacks the "dimensions" capability)`,
      { param: "dimensions" },
    );
  }
  if (asked > full) {
    throw new DaemonError(
      "invalid_request_error",
      `Cannot embed with ${name}: dimensions must be from 1 to ${full}, found ${asked}`,
      { param: "dimensions" },
    );
  }
}

/**
 * Runs an embeddings call through the backend, within the first-byte timeout.
 *
 * @throws {DaemonError} a refusal (`invalid_request_error`, `model_not_found`, the backend's).
 */
async function runEmbed(
  context: SurfaceContext,
  call: EmbedCall,
  httpRequest: Request,
): Promise<EmbeddingsReply> {
  const id = parseModelId(call.requestedModel);
  const models = await listNetworkModels(context, httpRequest);
  checkModel(findModel(models, id), call);
  if (!context.backend.embed) {
    throw new DaemonError("model_not_found", `model '${call.requestedModel}' not found`, {
      param: "model",
    });
  }
  const request: EmbeddingsRequest = {
    tier: id.tier,
    model: id.model,
    body: {
      model: id.model,
      input: call.input,
      encoding_format: "float",
      ...(call.dimensions === undefined ? {} : { dimensions: call.dimensions }),
    },
  };
  const { controller, release } = requestController(httpRequest);
  try {
    const reply = await withTimeout(context.backend.embed(request, controller.signal), {
      ms: context.firstByteTimeoutMs,
      controller,
      what: "no embeddings from the network",
    }).catch((error) => {
      if (error instanceof DaemonError && error.code === "model_not_found") {
        throw new DaemonError("model_not_found", `model '${call.requestedModel}' not found`, {
          param: "model",
          cause: error,
        });
      }
      throw error;
    });
    if (reply?.served?.tier !== id.tier) {
      throw new Error(
        `backend contract broken: a ${id.tier}-tier embeddings reply says it was served by ${
          JSON.stringify(reply?.served)?.slice(0, 300)
        }`,
      );
    }
    return reply;
  } finally {
    release();
  }
}

function jsonResponse(body: unknown, reply: EmbeddingsReply): Response {
  return new Response(JSON.stringify(body), {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      ...servedHeaders(reply.served),
    },
  });
}

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
    usage: { prompt_tokens: reply.promptTokens, total_tokens: reply.promptTokens },
  };
  return jsonResponse(answer, reply);
}

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
  return jsonResponse({
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
  return jsonResponse({ embedding: reply.vectors[0] }, reply);
}
