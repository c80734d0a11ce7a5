/**
 * What the devnet provider does with an opened sealed embeddings request
 * (`docs/protocol.md` §7): the Binary HTTP request `POST /v1/embeddings` carrying an OpenAI
 * embeddings body (`model` = `maker/model`, `input`, optional `dimensions`). It takes one of the
 * provider's slots, asks the engine, bills the input tokens at the model's input price, and
 * seals one `application/json` answer: the OpenAI embeddings list with float vectors and
 * `usage`. Refusals are sealed error statuses, as for chat.
 *
 * @module
 */

import type { OpenedHttpRequest } from "../crypto/mod.ts";
import type { EmbedBody } from "./engine.ts";
import { admitPayment, type ChatContext, engineFailure, sealedErrors } from "./provider_chat.ts";

/** The path of a sealed embeddings request. */
export const EMBEDDINGS_PATH = "/v1/embeddings";

/**
 * Answers an opened embeddings request with its sealed reply.
 *
 * Sealed refusals: `405` for another method, `400` for a body that is not an embeddings
 * request (or one the engine refuses), `404` for a model not served here or not an embedding
 * model, `503` when every slot is taken, `502` when an upstream fails.
 */
export async function answerEmbeddings(
  opened: OpenedHttpRequest,
  context: ChatContext,
): Promise<ReadableStream<Uint8Array>> {
  const sealedError = sealedErrors(opened);
  const slot = context.slot ?? context.load.reserve();
  const refuse = (status: number, type: string, message: string) => {
    slot?.release();
    return sealedError(status, type, message);
  };
  if (opened.method !== "POST") {
    return refuse(405, "method_not_allowed", `Use POST ${EMBEDDINGS_PATH}`);
  }
  let body: EmbedBody;
  try {
    body = JSON.parse(opened.text());
    if (typeof body !== "object" || body === null || typeof body.model !== "string") {
      throw new Error("not an embeddings request");
    }
  } catch {
    return refuse(400, "invalid_request_error", "The body is not an embeddings request");
  }
  const prices = context.prices.get(body.model);
  // A model served here but not for embeddings is refused by the engine (`unknown_model`).
  if (!prices || !context.engine.embed) {
    return refuse(
      404,
      "model_not_found",
      `Model ${JSON.stringify(body.model)} is not an embedding model served here`,
    );
  }
  if (!slot) {
    return sealedError(503, "overloaded", `All ${context.load.maxConcurrency} slots are busy`);
  }
  const paid = await admitPayment(context, {
    kind: "embeddings",
    model: body.model,
    body: {},
    bytes: opened.body.length,
  }, sealedError);
  if (paid instanceof ReadableStream) {
    slot.release();
    return paid;
  }
  const served = slot.serve(prices, paid);
  const abort = new AbortController();
  const { signal } = context;
  const onGone = () => abort.abort(signal?.reason ?? new Error("the requester went away"));
  if (signal?.aborted) onGone();
  else signal?.addEventListener("abort", onGone, { once: true });
  try {
    const list = await context.engine.embed(body, abort.signal);
    served.billInput(list.usage.prompt_tokens);
    return opened.respond({
      status: 200,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...list, model: body.model }),
    });
  } catch (error) {
    if (!abort.signal.aborted) context.log(`embeddings failed: ${error}`);
    return engineFailure(error, sealedError);
  } finally {
    signal?.removeEventListener("abort", onGone);
    served.release();
  }
}
