/**
 * The OpenAI dialect: `POST /v1/chat/completions` and `GET /v1/models` (and
 * `GET /v1/models/{id}`), shaped as `../shared/design/clients.md` describes and as the official
 * SDKs parse them.
 *
 * - Non-streaming: one `chat.completion` object with `usage`.
 * - Streaming (`stream: true`): `text/event-stream`; a first chunk with `delta.role`, content
 *   (or tool-call) deltas, a chunk with `finish_reason`, then, only when the client asked with
 *   `stream_options.include_usage`, a chunk with `choices: []` and `usage`; then
 *   `data: [DONE]`. Every chunk carries the same `id` and `created`. An error after the stream
 *   has started is one `data: {"error":{…}}` event, and the stream ends without `[DONE]`.
 * - Tool calls use string `arguments` (the JSON text), as OpenAI does.
 *
 * The functions here take a validated request (`_openai_schemas.ts`); routing is in
 * `routes.ts`, hygiene in `service/hygiene.ts`, error rendering in `core/http_error.ts`.
 *
 * @module
 */

import {
  type ChatRequest,
  DaemonError,
  formatModelId,
  type ForwardedChatBody,
  type NetworkModel,
  parseModelId,
  streamErrorText,
  type ToolCallDelta,
} from "../core/mod.ts";
import {
  aggregateReply,
  type CancelNote,
  costHeader,
  endedByCancel,
  eventStreamHeaders,
  findModel,
  jsonHeaders,
  listNetworkModels,
  openaiUsage,
  randomId,
  type ReplyEvent,
  routed,
  serveReply,
  type SurfaceContext,
  validate,
  withoutPreferences,
} from "../surface/mod.ts";
import {
  type ChatCompletion,
  type ChatCompletionChunkOut,
  OPENAI_CHAT_REQUEST,
  type OpenAIChatBody,
  type OpenAIModelEntry,
} from "./_openai_schemas.ts";

/** A validated `POST /v1/chat/completions` request. */
export interface OpenAIChatCall {
  /** The model id as the client wrote it (echoed in the reply). */
  readonly requestedModel: string;
  /** What goes to the backend. */
  readonly request: ChatRequest;
  /** Whether the client wants a stream. */
  readonly stream: boolean;
  /** Whether the client asked for the usage chunk (`stream_options.include_usage`). */
  readonly includeUsage: boolean;
}

/**
 * Builds the call of a validated chat-completions body: the client's body with
 * `model` = `maker/model`, `stream: true` and `stream_options: {include_usage: true}`, and
 * without `n`.
 *
 * @throws {DaemonError} `invalid_request_error` when there is no `model`, or the `ModelIdError`
 * of a malformed model id (rendered as a 400 with `param: "model"`).
 */
export function openAIChatCall(body: OpenAIChatBody): OpenAIChatCall {
  if (body.model === undefined) {
    throw new DaemonError("invalid_request_error", 'Cannot chat: the request has no "model"', {
      param: "model",
    });
  }
  const id = parseModelId(body.model);
  const stream = body.stream ?? false;
  const forwarded: ForwardedChatBody = {
    ...body,
    model: id.model,
    stream: true,
    stream_options: { include_usage: true },
  };
  delete forwarded.n;
  return {
    requestedModel: body.model as string,
    request: routed(
      { tier: id.tier, model: id.model, body: withoutPreferences(forwarded), whole: !stream },
      body.provider,
    ),
    stream,
    includeUsage: stream && body.stream_options?.include_usage === true,
  };
}

/**
 * Validates a raw chat-completions body and builds its call.
 *
 * @throws {DaemonError} `invalid_request_error` naming the field (`param`), or the
 * `ModelIdError` of a malformed model id.
 */
export function parseOpenAIChat(body: unknown): OpenAIChatCall {
  return openAIChatCall(validate(OPENAI_CHAT_REQUEST, body));
}

/**
 * Serves a validated chat call: the backend's reply as a `chat.completion` object, or as an
 * SSE stream.
 *
 * @throws {DaemonError} (or any error, rendered as 500) when the reply fails before it starts;
 * for a stream, later failures are sent in-stream.
 */
export async function serveOpenAIChat(
  context: SurfaceContext,
  served: { call: OpenAIChatCall; request: Request },
): Promise<Response> {
  const { call } = served;
  const id = randomId(context, "chatcmpl-");
  const created = Math.floor(context.clock().getTime() / 1000);
  const what = `chat ${JSON.stringify(call.requestedModel)}`;
  const capabilities = { listing: "GET /v1/models", fields: { format: "response_format" } };
  return await serveReply(context, { ...served, what, capabilities }, {
    async whole(events, reply) {
      const whole = await aggregateReply(context, events);
      const completion: ChatCompletion = {
        id,
        object: "chat.completion",
        created,
        model: call.requestedModel,
        choices: [{
          index: 0,
          message: {
            role: "assistant",
            content: whole.content === "" && whole.toolCalls.length > 0 ? null : whole.content,
            refusal: whole.refusal === "" ? null : whole.refusal,
            ...(whole.reasoning ? { reasoning_content: whole.reasoning } : {}),
            ...(whole.toolCalls.length > 0
              ? {
                tool_calls: whole.toolCalls.map((call) => ({
                  id: call.id,
                  type: "function" as const,
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
              : {}),
          },
          logprobs: whole.logprobs === null ? null : { content: whole.logprobs, refusal: null },
          finish_reason: whole.finishReason,
        }],
        usage: openaiUsage(whole.usage),
      };
      const headers = jsonHeaders(reply.served);
      for (const [name, value] of costHeader(whole.usage)) headers.set(name, value);
      return new Response(JSON.stringify(completion), { headers });
    },
    stream(events, reply, cancel) {
      const pieces = sseEvents(context, { call, events, id, created, cancel });
      return { headers: eventStreamHeaders(reply.served), pieces };
    },
  });
}

/**
 * The SSE events of a streamed reply. Each event is the JSON text `JSON.stringify` would give
 * for a `chat.completion.chunk` (same fields, same order), built from a prefix and a suffix
 * fixed per reply: only the delta is serialised per token.
 */
async function* sseEvents(
  context: SurfaceContext,
  stream: {
    call: OpenAIChatCall;
    events: AsyncGenerator<ReplyEvent, void, undefined>;
    id: string;
    created: number;
    cancel: CancelNote;
  },
): AsyncGenerator<string, void, undefined> {
  const { call, events } = stream;
  type Delta = ChatCompletionChunkOut["choices"][number]["delta"];
  const prefix = `data: {"id":${JSON.stringify(stream.id)},"object":"chat.completion.chunk",` +
    `"created":${stream.created},"model":${JSON.stringify(call.requestedModel)},` +
    `"choices":[{"index":0,"delta":`;
  const usage = call.includeUsage ? `,"usage":null` : "";
  const open = `,"logprobs":null,"finish_reason":null}]${usage}}\n\n`;
  const chunk = (delta: Delta, finishReason: string | null = null) =>
    `${prefix}${JSON.stringify(delta)}${
      finishReason === null
        ? open
        : `,"logprobs":null,"finish_reason":${JSON.stringify(finishReason)}}]${usage}}\n\n`
    }`;
  // A tool call's first fragment carries what OpenAI's does — `id`, `type: "function"`, the
  // function's `name` and `arguments` (empty when none yet) — whatever the provider sent, so
  // clients that assemble calls (the SDKs' stream helpers) find every field; the rest carry
  // their pieces.
  const started = new Set<number>();
  const toolDelta = (delta: ToolCallDelta): ToolCallDelta => {
    if (started.has(delta.index)) {
      return delta.function ? { index: delta.index, function: delta.function } : delta;
    }
    started.add(delta.index);
    return {
      index: delta.index,
      id: delta.id ?? randomId(context, "call_"),
      type: "function",
      function: { name: delta.function?.name ?? "", arguments: delta.function?.arguments ?? "" },
    };
  };
  try {
    yield chunk({ role: "assistant", content: "" });
    for await (const event of events) {
      switch (event.type) {
        case "content":
          yield `${prefix}{"content":${JSON.stringify(event.text)}}${open}`;
          break;
        case "refusal":
          yield chunk({ refusal: event.text });
          break;
        case "reasoning":
          yield chunk({ reasoning_content: event.text });
          break;
        case "tool_call":
          yield chunk({ tool_calls: [toolDelta(event.delta)] });
          break;
        case "logprobs":
          yield `${prefix}{},"logprobs":${
            JSON.stringify({ content: event.content, refusal: null })
          },"finish_reason":null}]${usage}}\n\n`;
          break;
        case "finish":
          yield chunk({}, event.reason);
          break;
        case "usage":
          if (call.includeUsage) {
            const last: ChatCompletionChunkOut = {
              id: stream.id,
              object: "chat.completion.chunk",
              created: stream.created,
              model: call.requestedModel,
              choices: [],
              usage: openaiUsage(event.usage),
            };
            yield `data: ${JSON.stringify(last)}\n\n`;
          }
          break;
      }
    }
    yield "data: [DONE]\n\n";
  } catch (error) {
    if (endedByCancel(context, stream.cancel)) return;
    yield streamErrorText(error, "openai", { log: context.log });
  } finally {
    await events.return(undefined);
  }
}

/** Renders a network model as a `/v1/models` entry. */
export function openaiModelEntry(context: SurfaceContext, model: NetworkModel): OpenAIModelEntry {
  return {
    id: formatModelId(model),
    object: "model",
    created: Math.floor(context.startedAt.getTime() / 1000),
    owned_by: model.model.split("/")[0],
    net: {
      tier: model.tier,
      providers: model.providers,
      context_length: model.contextLength,
      cheapest_price: model.cheapestPrice
        ? { input: model.cheapestPrice.input, output: model.cheapestPrice.output }
        : null,
      kind: model.kind ?? "chat",
      capabilities: [...(model.supports ?? [])],
      ...(model.embeddingDimensions === undefined
        ? {}
        : { embedding_dimensions: model.embeddingDimensions }),
      ...(model.weightsDigests?.length ? { weights_digests: [...model.weightsDigests] } : {}),
    },
  };
}

/** Serves `GET /v1/models`: `{"object":"list","data":[…]}`. */
export async function serveOpenAIModels(
  context: SurfaceContext,
  httpRequest: Request,
): Promise<Response> {
  const models = await listNetworkModels(context, httpRequest);
  const data = models.map((model) => openaiModelEntry(context, model));
  return new Response(JSON.stringify({ object: "list", data }), { headers: jsonHeaders(null) });
}

/**
 * Serves `GET /v1/models/{id}`: the entry, or 404 `model_not_found`.
 *
 * @throws {DaemonError} `model_not_found`, or a `ModelIdError` for a malformed id.
 */
export async function serveOpenAIModel(
  context: SurfaceContext,
  lookup: { request: Request; model: string },
): Promise<Response> {
  const requested = lookup.model;
  const id = parseModelId(requested);
  const models = await listNetworkModels(context, lookup.request);
  const found = findModel(models, id);
  if (!found) {
    throw new DaemonError("model_not_found", `model '${requested}' not found`, { param: "model" });
  }
  return new Response(JSON.stringify(openaiModelEntry(context, found)), {
    headers: jsonHeaders(null),
  });
}
