/**
 * What the embeddings endpoints of every dialect share (`openai/embeddings.ts`,
 * `ollama/embed.ts`): each request is sealed to a provider like a chat (`ChatBackend.embed`:
 * same selection, trust, tiers and failover); the daemon asks for floats, and a dialect encodes
 * them as it speaks.
 *
 * Before anything is sent, the model must be one the network lists as an embedding model (a
 * chat model is refused with 400), and `dimensions` must be one it can give: its own length,
 * or less when it has the `dimensions` capability. A model the network does not list goes to
 * the backend, which answers `model_not_found`.
 *
 * @module
 */

import {
  DaemonError,
  type EmbeddingsReply,
  type EmbeddingsRequest,
  type NetworkModel,
  parseModelId,
  payerOf,
  requestController,
  withTimeout,
} from "../core/mod.ts";
import type { SurfaceContext } from "./context.ts";
import { findModel, listNetworkModels } from "./models.ts";
import { servedHeaders } from "./reply.ts";
import { costHeader } from "./cost.ts";
import { MAX_EMBEDDING_INPUTS } from "./schemas.ts";

/** What an embeddings route's documentation says, in every dialect. */
export const EMBEDDINGS_DESCRIPTION: string =
  "Sealed to a provider like a chat (same tiers, trust and failover). The model must be an " +
  "embedding model (a chat model: 400); `dimensions` other than the model's own length needs " +
  `its \`dimensions\` capability. At most ${MAX_EMBEDDING_INPUTS} inputs per request.`;

/** One embeddings call, whatever the dialect. */
export interface EmbedCall {
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
export async function runEmbed(
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
    payer: payerOf(httpRequest),
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

/** An embeddings answer: `body` as JSON, with the served-by headers of `reply`. */
export function embeddingsResponse(body: unknown, reply: EmbeddingsReply): Response {
  const cost = reply.costWei === undefined ? [] : costHeader({ cost_wei: String(reply.costWei) });
  return new Response(JSON.stringify(body), {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      ...servedHeaders(reply.served),
      ...Object.fromEntries(cost),
    },
  });
}
