/**
 * Reads the network's model list from the backend for the listing endpoints of both dialects,
 * keeping only well-formed entries (the list comes from the network), sorted and deduplicated.
 *
 * @module
 */

import {
  type ChatRequest,
  DaemonError,
  type ForwardedChatBody,
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

/** Where a dialect's request carries what a capability is needed for, for messages and `param`. */
export interface CapabilityFields {
  /** The structured-output field: `response_format`, Ollama's `format`, `text.format`, … */
  readonly format: string;
  /** The log-probabilities field. @default {"logprobs"} */
  readonly logprobs?: string;
}

/** One capability a request needs, and the field that needs it. */
interface Need {
  /** Any one of these will do (`json_object` is honoured by `structured_outputs` too). */
  readonly anyOf: readonly string[];
  /** The request's field that needs it. */
  readonly field: string;
  /** What the field asks, e.g. `a JSON schema`. */
  readonly asks: string;
}

/** The capabilities a forwarded chat body needs beyond a plain chat. */
export function capabilitiesNeeded(body: ForwardedChatBody, fields: CapabilityFields): Need[] {
  const needs: Need[] = [];
  if (body.logprobs === true || (body.top_logprobs !== undefined && body.top_logprobs !== null)) {
    needs.push({ anyOf: ["logprobs"], field: fields.logprobs ?? "logprobs", asks: "logprobs" });
  }
  const format = (body.response_format as { type?: unknown } | undefined)?.type;
  if (format === "json_schema") {
    needs.push({ anyOf: ["structured_outputs"], field: fields.format, asks: "a JSON schema" });
  } else if (format === "json_object") {
    needs.push({
      anyOf: ["json_mode", "structured_outputs"],
      field: fields.format,
      asks: "JSON mode",
    });
  }
  return needs;
}

/**
 * Refuses a request that needs a capability (log probabilities, JSON mode, structured outputs)
 * of a model whose providers do not all advertise it: answering free text or no log
 * probabilities instead would be silently wrong. Reads the model list only when something is
 * needed; a model the network does not list is left to the backend (`model_not_found`).
 * `listing` names where the client can see each model's capabilities in its dialect.
 *
 * @throws {DaemonError} `invalid_request_error` naming the capability, with the field as `param`.
 */
export async function checkCapabilities(
  context: SurfaceContext,
  asked: {
    request: ChatRequest;
    requestedModel: string;
    listing: string;
    fields: CapabilityFields;
  },
  httpRequest: Request,
): Promise<void> {
  const needs = capabilitiesNeeded(asked.request.body, asked.fields);
  if (needs.length === 0) return;
  const models = await listNetworkModels(context, httpRequest);
  const model = findModel(models, asked.request);
  if (!model) return;
  const supports = model.supports ?? [];
  const missing = needs.find((need) => !need.anyOf.some((c) => supports.includes(c)));
  if (!missing) return;
  const capability = missing.anyOf.map((c) => JSON.stringify(c)).join(" or ");
  throw new DaemonError(
    "invalid_request_error",
    `Cannot give ${missing.asks} (${missing.field}) for ${
      JSON.stringify(asked.requestedModel)
    }: its providers do not advertise the ${capability} capability (${asked.listing} lists ` +
      `each model's capabilities); send the request without ${missing.field}`,
    { param: missing.field },
  );
}
