/**
 * Anthropic's Messages API served: `POST /v1/messages` (a translated chat, sealed to a provider
 * like every other, answered whole or streamed in Anthropic's shapes, `reply.ts`) and
 * `POST /v1/messages/count_tokens` (an estimate: the network has no tokenizer endpoint).
 *
 * @module
 */

import { DaemonError, parseModelId, streamErrorText } from "../core/mod.ts";
import {
  COST_HEADER,
  endedByCancel,
  eventStreamHeaders,
  findModel,
  jsonHeaders,
  listNetworkModels,
  serveReply,
  type SurfaceContext,
} from "../surface/mod.ts";
import { type AnthropicCall, countTokensCall } from "./request.ts";
import { streamEvents, wholeMessage } from "./reply.ts";
import type { CountTokensBody } from "./_schemas.ts";

/**
 * Serves a translated Messages call: one `message`, or its SSE stream.
 *
 * @throws {DaemonError} (or any error, rendered as 500) when the reply fails before it starts;
 * for a stream, later failures are one `event: error`.
 */
export async function serveMessages(
  context: SurfaceContext,
  served: { call: AnthropicCall; request: Request },
): Promise<Response> {
  const { call } = served;
  const what = `message ${JSON.stringify(call.requestedModel)}`;
  const capabilities = {
    listing: "GET /v1/models",
    fields: { format: "output_config.format" },
  };
  return await serveReply(context, { ...served, what, capabilities }, {
    async whole(events, reply) {
      const message = await wholeMessage(context, events, call);
      const headers = jsonHeaders(reply.served);
      if (message.usage.cost !== undefined) headers.set(COST_HEADER, message.usage.cost);
      return new Response(JSON.stringify(message), { headers });
    },
    stream(events, reply, cancel) {
      async function* pieces() {
        try {
          yield* streamEvents(context, events, call);
        } catch (error) {
          if (endedByCancel(context, cancel)) return;
          yield streamErrorText(error, "anthropic", { log: context.log });
        } finally {
          await events.return(undefined);
        }
      }
      return { headers: eventStreamHeaders(reply.served), pieces: pieces() };
    },
  });
}

/**
 * Serves `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, an estimate of the prompt's
 * tokens (about 4 bytes a token) for a model the network offers.
 *
 * @throws {DaemonError} `invalid_request_error` for a bad block or model id, `model_not_found`
 * for a model the network does not offer.
 */
export async function serveCountTokens(
  context: SurfaceContext,
  counted: { body: CountTokensBody; request: Request },
): Promise<Response> {
  const { model, estimate } = countTokensCall(counted.body);
  const models = await listNetworkModels(context, counted.request);
  if (!findModel(models, parseModelId(model))) {
    throw new DaemonError("model_not_found", `model '${model}' not found`, { param: "model" });
  }
  return new Response(JSON.stringify({ input_tokens: estimate }), { headers: jsonHeaders(null) });
}
