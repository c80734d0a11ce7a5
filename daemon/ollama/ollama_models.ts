/**
 * The Ollama dialect's model endpoints: `GET /api/tags` (ids listed with `:latest`, as Open
 * WebUI appends it), `POST /api/show` (what Continue reads: `parameters`, `template`,
 * `details`, `model_info`, `capabilities`), `GET /api/ps` (nothing runs locally) and
 * `GET /api/version` (plain dotted integers, as Open WebUI parses them).
 *
 * @module
 */

import { DaemonError, formatModelId, type NetworkModel, parseModelId } from "../core/mod.ts";
import { JSON_TYPE, NDJSON_TYPE, ollamaHeaders } from "./ollama_reply.ts";
import { findModel, listNetworkModels, type SurfaceContext } from "../surface/mod.ts";
import type {
  OllamaDetails,
  OllamaPullBody,
  OllamaShow,
  OllamaShowBody,
  OllamaTag,
} from "./_ollama_schemas.ts";

/**
 * A model's Ollama-style capabilities: the backend's own when it gives them, else `embedding`
 * for an embedding model, `completion` plus `tools` and `vision` as supported for a chat model.
 */
function ollamaCapabilities(model: NetworkModel): string[] {
  if (model.capabilities) return [...model.capabilities];
  if (model.kind === "embedding") return ["embedding"];
  const supports = model.supports ?? [];
  return ["completion", ...["tools", "vision"].filter((c) => supports.includes(c))];
}

/** The `details` object of a listed model. */
function details(model: NetworkModel): OllamaDetails {
  const maker = model.model.split("/")[0];
  return {
    parent_model: "",
    format: "remote",
    family: maker,
    families: [maker],
    parameter_size: "",
    quantization_level: "",
  };
}

async function digest(id: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(id));
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Serves `GET /api/tags`: `{"models":[…]}` with `:latest` names. */
export async function serveOllamaTags(
  context: SurfaceContext,
  httpRequest: Request,
): Promise<Response> {
  const models = await listNetworkModels(context, httpRequest);
  const tags: OllamaTag[] = await Promise.all(models.map(async (model) => {
    const name = formatModelId(model, { latest: true });
    return {
      name,
      model: name,
      modified_at: context.startedAt.toISOString(),
      size: 0,
      digest: await digest(name),
      details: details(model),
      capabilities: ollamaCapabilities(model),
    };
  }));
  return new Response(JSON.stringify({ models: tags }), { headers: ollamaHeaders(JSON_TYPE) });
}

/**
 * Serves `POST /api/show` (`{"model": …}` or the legacy `{"name": …}`): parameters
 * (`num_ctx <context length>`), template, details, `model_info`, capabilities.
 *
 * @throws {DaemonError} `model_not_found` (`model '…' not found`), `invalid_request_error`
 * when no name is given, or the `ModelIdError` of a malformed id.
 */
export async function serveOllamaShow(
  context: SurfaceContext,
  show: { body: OllamaShowBody; request: Request },
): Promise<Response> {
  const { body } = show;
  const requested = body.model ?? body.name;
  if (requested === undefined) {
    throw new DaemonError(
      "invalid_request_error",
      'Cannot show a model: the request has no "model" (or "name")',
      { param: "model" },
    );
  }
  const id = parseModelId(requested);
  const models = await listNetworkModels(context, show.request);
  const model = findModel(models, id);
  if (!model) {
    throw new DaemonError("model_not_found", `model '${requested}' not found`, { param: "model" });
  }
  const name = formatModelId(model, { latest: true });
  const shown: OllamaShow = {
    license: "",
    modelfile: `# Served by the network through the local daemon (${model.tier} tier)\n` +
      `FROM ${name}\nPARAMETER num_ctx ${model.contextLength}\n`,
    parameters: `num_ctx ${model.contextLength}`,
    template: "{{ .Prompt }}",
    system: "",
    details: details(model),
    model_info: {
      "general.architecture": "net",
      "general.basename": model.model,
      "net.context_length": model.contextLength,
      "net.tier": model.tier,
      "net.providers": model.providers,
      "net.kind": model.kind ?? "chat",
      "net.capabilities": [...(model.supports ?? [])],
      ...(model.embeddingDimensions === undefined
        ? {}
        : { "net.embedding_length": model.embeddingDimensions }),
      ...(model.weightsDigests?.length ? { "net.weights_digests": [...model.weightsDigests] } : {}),
    },
    capabilities: ollamaCapabilities(model),
    modified_at: context.startedAt.toISOString(),
  };
  return new Response(JSON.stringify(shown), { headers: ollamaHeaders(JSON_TYPE) });
}

/**
 * Serves `POST /api/pull`: nothing to download, so a model the network offers is pulled at
 * once — `{"status":"success"}` (one NDJSON line when streamed, the default).
 *
 * @throws {DaemonError} `model_not_found`, `invalid_request_error` when no name is given, or
 * the `ModelIdError` of a malformed id.
 */
export async function serveOllamaPull(
  context: SurfaceContext,
  pull: { body: OllamaPullBody; request: Request },
): Promise<Response> {
  const { body } = pull;
  const requested = body.model ?? body.name;
  if (requested === undefined) {
    throw new DaemonError(
      "invalid_request_error",
      'Cannot pull a model: the request has no "model" (or "name")',
      { param: "model" },
    );
  }
  const models = await listNetworkModels(context, pull.request);
  if (!findModel(models, parseModelId(requested))) {
    throw new DaemonError("model_not_found", `model '${requested}' not found`, { param: "model" });
  }
  const stream = body.stream ?? true;
  return new Response(`${JSON.stringify({ status: "success" })}${stream ? "\n" : ""}`, {
    headers: ollamaHeaders(stream ? NDJSON_TYPE : JSON_TYPE),
  });
}

/** Serves `GET /api/ps`: nothing is loaded locally. */
export function serveOllamaPs(): Response {
  return new Response(JSON.stringify({ models: [] }), { headers: ollamaHeaders(JSON_TYPE) });
}

/** Serves `GET /api/version`: `{"version":"X.Y.Z"}`. */
export function serveOllamaVersion(version: string): Response {
  return new Response(JSON.stringify({ version }), { headers: ollamaHeaders(JSON_TYPE) });
}
