/**
 * Reads the network's model list from the backend for the listing endpoints of both dialects,
 * keeping only well-formed entries (the list comes from the network), sorted and deduplicated.
 *
 * @module
 */

import {
  type ChatRequest,
  DaemonError,
  isNetworkModelId,
  type ModelId,
  type NetworkModel,
  requestController,
  withTimeout,
} from "../core/mod.ts";
import type { SurfaceContext } from "./context.ts";

const PRICE = /^(0|[1-9][0-9]{0,77})$/;

function wellFormed(model: NetworkModel): boolean {
  return (
    typeof model === "object" && model !== null &&
    (model.tier === "verified" || model.tier === "tee") &&
    isNetworkModelId(model.model) &&
    Number.isSafeInteger(model.contextLength) && model.contextLength >= 1 &&
    Number.isSafeInteger(model.providers) && model.providers >= 0 &&
    (model.cheapestPrice === null ||
      (typeof model.cheapestPrice === "object" &&
        PRICE.test(String(model.cheapestPrice.input)) &&
        PRICE.test(String(model.cheapestPrice.output)))) &&
    (model.capabilities === undefined ||
      (Array.isArray(model.capabilities) &&
        model.capabilities.every((c) => typeof c === "string" && /^[a-z_-]{1,32}$/.test(c)))) &&
    (model.kind === undefined || model.kind === "chat" || model.kind === "embedding") &&
    (model.supports === undefined ||
      (Array.isArray(model.supports) &&
        model.supports.every((c) => typeof c === "string" && /^[a-z_-]{1,32}$/.test(c)))) &&
    (model.embeddingDimensions === undefined ||
      (Number.isSafeInteger(model.embeddingDimensions) && model.embeddingDimensions >= 1))
  );
}

/**
 * The network's models, well-formed entries only (others are logged and skipped), one per tier
 * and model, sorted by model then tier. Waits at most the first-byte timeout.
 *
 * @throws {DaemonError} the backend's refusal (`no_gateway`…) or `timeout`.
 */
export async function listNetworkModels(
  context: SurfaceContext,
  httpRequest: Request,
): Promise<NetworkModel[]> {
  const { controller, release } = requestController(httpRequest);
  try {
    const models = await withTimeout(context.backend.listModels(controller.signal), {
      ms: context.firstByteTimeoutMs,
      controller,
      what: "no model list from the network",
    });
    if (!Array.isArray(models)) {
      throw new Error(`backend contract broken: listModels returned ${typeof models}`);
    }
    const seen = new Set<string>();
    const out: NetworkModel[] = [];
    for (const model of models) {
      if (!wellFormed(model)) {
        context.log(
          "daemon: skipped a malformed model entry",
          JSON.stringify(model)?.slice(0, 300),
        );
        continue;
      }
      const key = `${model.tier}/${model.model}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(model);
    }
    return out.sort((a, b) =>
      a.model < b.model ? -1 : a.model > b.model ? 1 : a.tier < b.tier ? -1 : 1
    );
  } finally {
    release();
  }
}

/** Finds a model in a list. */
export function findModel(
  models: readonly NetworkModel[],
  id: ModelId,
): NetworkModel | undefined {
  return models.find((m) => m.tier === id.tier && m.model === id.model);
}

/**
 * Refuses log probabilities for a model whose providers do not all advertise the `logprobs`
 * capability: answering none instead would be silently wrong. A model the network does not list
 * is left to the backend (`model_not_found`). `listing` names where the client can see each
 * model's capabilities in its dialect.
 *
 * @throws {DaemonError} `invalid_request_error` with `param: "logprobs"`.
 */
export async function checkLogprobs(
  context: SurfaceContext,
  asked: { request: ChatRequest; requestedModel: string; listing: string },
  httpRequest: Request,
): Promise<void> {
  const models = await listNetworkModels(context, httpRequest);
  const model = findModel(models, asked.request);
  if (!model || (model.supports ?? []).includes("logprobs")) return;
  throw new DaemonError(
    "invalid_request_error",
    `Cannot give logprobs for ${JSON.stringify(asked.requestedModel)}: its providers do not ` +
      `advertise the "logprobs" capability (${asked.listing} lists each model's capabilities); ` +
      "send the request without logprobs and top_logprobs",
    { param: "logprobs" },
  );
}
