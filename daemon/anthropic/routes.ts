/**
 * The Anthropic dialect's routes, each declared once with its schemas, its answers (errors in
 * Anthropic's shape) and its handler:
 *
 * | method | path                         | what                                         |
 * | ------ | ---------------------------- | -------------------------------------------- |
 * | POST   | `/v1/messages`               | a message, whole or streamed, onto chat      |
 * | POST   | `/v1/messages/count_tokens`  | the prompt's tokens, estimated               |
 *
 * Every answer also carries `request-id` (the layer's `X-Request-Id`, under the name Anthropic's
 * SDKs read).
 *
 * @module
 */

import type { Context } from "hono";
import { defineRoute, json, type Route, z } from "../../http/mod.ts";
import {
  answers,
  ANTHROPIC_ERROR,
  SERVED_HEADERS,
  type SurfaceContext,
  wholeOrStreamed,
} from "../surface/mod.ts";
import { serveCountTokens, serveMessages } from "./messages.ts";
import { anthropicCall } from "./request.ts";
import {
  COUNT_TOKENS,
  COUNT_TOKENS_REQUEST,
  MESSAGE_RESPONSE,
  MESSAGES_REQUEST,
  STREAM_EVENT,
} from "./_schemas.ts";

/** The answer with `request-id` set to the request's id. */
async function withRequestId(c: Context, answer: Promise<Response>): Promise<Response> {
  const response = await answer;
  const id = c.get("requestId");
  if (typeof id === "string") response.headers.set("request-id", id);
  return response;
}

/** The Anthropic dialect's routes, in the order the document lists them. */
export function anthropicRoutes(context: SurfaceContext): Route[] {
  return [
    defineRoute({
      method: "post",
      path: "/v1/messages",
      summary: "Message (Anthropic's Messages API, onto chat)",
      description: "`system`, `messages` (text, images, `tool_use` and `tool_result` blocks), " +
        "`tools`, `tool_choice`, `max_tokens`, `temperature`, `top_p` and " +
        "`output_config.format` become one chat completion, sealed to a provider; " +
        "`stop_sequences` are applied by the daemon. With `stream: true`, Server-Sent Events " +
        "in Anthropic's order: `message_start`, per block `content_block_start` (the first " +
        "followed by `ping`), its deltas and `content_block_stop`, then `message_delta` and " +
        "`message_stop`; an error after the start is one `event: error`. `x-api-key` is " +
        "accepted for the daemon's key, like `Authorization: Bearer`.",
      tags: ["anthropic"],
      body: { schema: MESSAGES_REQUEST },
      responses: answers("anthropic", "chat", {
        description: "The message, whole or streamed.",
        headers: SERVED_HEADERS,
        content: wholeOrStreamed(MESSAGE_RESPONSE, {
          type: "text/event-stream",
          text: "`event:` and `data:` pairs.",
          item: z.union([STREAM_EVENT, ANTHROPIC_ERROR]),
        }),
      }),
      handler: (c, { body }) =>
        withRequestId(c, serveMessages(context, { call: anthropicCall(body), request: c.req.raw })),
    }),
    defineRoute({
      method: "post",
      path: "/v1/messages/count_tokens",
      summary: "Count a prompt's tokens (Anthropic), estimated",
      description: "The prompt is translated as for `POST /v1/messages` (a bad block is " +
        "refused the same way) and its tokens estimated at about one per 4 bytes: the network " +
        "has no tokenizer endpoint, and each model counts its own way.",
      tags: ["anthropic"],
      body: { schema: COUNT_TOKENS_REQUEST },
      responses: answers("anthropic", "post", {
        description: "The estimate.",
        content: json(COUNT_TOKENS),
      }),
      handler: (c, { body }) =>
        withRequestId(c, serveCountTokens(context, { body, request: c.req.raw })),
    }),
  ];
}
