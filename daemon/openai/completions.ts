/**
 * Legacy prompt completions, `POST /v1/completions`, mapped onto the chat path: the `prompt`
 * becomes one user message, the reply a `text_completion` object, or with `stream: true` SSE
 * `text_completion` chunks then `data: [DONE]` (with `stream_options.include_usage`, a last
 * chunk with `choices: []` and `usage`). One prompt and one choice per request: `n` or
 * `best_of` above 1, `echo: true`, `suffix`, `logprobs`, `top_logprobs`, `tools` (or
 * `functions`) and several prompts are refused with 400. Unlike OpenAI's endpoint there is no
 * default `max_tokens` of 16: without it the provider decides.
 *
 * @module
 */

import {
  type ChatRequest,
  DaemonError,
  type ForwardedChatBody,
  parseModelId,
  streamErrorText,
} from "../core/mod.ts";
import {
  aggregateReply,
  type CancelNote,
  costHeader,
  endedByCancel,
  eventStreamHeaders,
  jsonHeaders,
  openaiUsage,
  randomId,
  type ReplyEvent,
  routed,
  serveReply,
  type SurfaceContext,
  withoutPreferences,
} from "../surface/mod.ts";
import type { CompletionsBody } from "./_completions_schemas.ts";

/** A validated completions request, as a chat call. */
export interface CompletionsCall {
  /** The model id as the client wrote it. */
  readonly requestedModel: string;
  /** What goes to the backend. */
  readonly request: ChatRequest;
  /** Whether the client wants a stream. */
  readonly stream: boolean;
  /** Whether the client asked for the usage chunk. */
  readonly includeUsage: boolean;
}

function refuse(message: string, param: string): DaemonError {
  return new DaemonError("invalid_request_error", `Cannot complete: ${message}`, { param });
}

/** The one prompt of a request. */
function promptOf(prompt: CompletionsBody["prompt"]): string {
  if (typeof prompt === "string") return prompt;
  if (prompt.length === 1) return prompt[0];
  throw refuse(`one prompt per request, found ${prompt.length}`, "prompt");
}

/**
 * Maps a validated completions body onto a chat call.
 *
 * @throws {DaemonError} `invalid_request_error` for what the mapping cannot keep (several
 * prompts or choices, `echo`, `suffix`), or the `ModelIdError` of a malformed id.
 */
export function completionsCall(body: CompletionsBody): CompletionsCall {
  if (body.model === undefined) throw refuse('the request has no "model"', "model");
  if ((body.n ?? 1) !== 1) throw refuse("one choice per request (n: 1)", "n");
  if ((body.best_of ?? 1) !== 1) throw refuse("best_of is not supported (best_of: 1)", "best_of");
  if (body.echo === true) throw refuse("echo is not supported", "echo");
  if (body.suffix != null && body.suffix !== "") {
    throw refuse("suffix (insertion) is not supported", "suffix");
  }
  for (const field of ["tools", "functions"] as const) {
    // Legacy completions have no tool calls to answer with: the provider's would be dropped.
    const list = body[field];
    if (list != null && !(Array.isArray(list) && list.length === 0)) {
      throw refuse(
        `${field} are not supported here; use POST /v1/chat/completions or /v1/responses`,
        field,
      );
    }
  }
  for (const field of ["logprobs", "top_logprobs"] as const) {
    // `top_logprobs` is chat's; forwarded, it would pass the chat path's capability check by.
    if (body[field] != null) {
      throw refuse(
        `${field} is not supported here; use POST /v1/chat/completions with logprobs: true`,
        field,
      );
    }
  }
  const id = parseModelId(body.model);
  const { prompt, stream, stream_options, n: _n, best_of: _b, echo: _e, suffix: _s, ...rest } =
    body;
  const forwarded: ForwardedChatBody = {
    ...rest,
    model: id.model,
    messages: [{ role: "user", content: promptOf(prompt) }],
    stream: true,
    stream_options: { include_usage: true },
  };
  delete forwarded.logprobs;
  delete forwarded.top_logprobs;
  return {
    requestedModel: body.model as string,
    request: routed(
      { tier: id.tier, model: id.model, body: withoutPreferences(forwarded), whole: !stream },
      body.provider,
    ),
    stream: stream ?? false,
    includeUsage: (stream ?? false) && stream_options?.include_usage === true,
  };
}

/**
 * Serves a completions call: one `text_completion`, or its SSE stream.
 *
 * @throws {DaemonError} (or any error, rendered as 500) when the reply fails before it starts.
 */
export function serveCompletions(
  context: SurfaceContext,
  served: { call: CompletionsCall; request: Request },
): Promise<Response> {
  const { call } = served;
  const head = {
    id: randomId(context, "cmpl-"),
    object: "text_completion" as const,
    created: Math.floor(context.clock().getTime() / 1000),
    model: call.requestedModel,
  };
  const what = `completion ${JSON.stringify(call.requestedModel)}`;
  const capabilities = { listing: "GET /v1/models", fields: { format: "response_format" } };
  return serveReply(context, { ...served, what, capabilities }, {
    async whole(events, reply) {
      const whole = await aggregateReply(context, events);
      const choice = { text: whole.content, index: 0, logprobs: null };
      const headers = jsonHeaders(reply.served);
      for (const [name, value] of costHeader(whole.usage)) headers.set(name, value);
      return new Response(
        JSON.stringify({
          ...head,
          choices: [{ ...choice, finish_reason: whole.finishReason }],
          usage: openaiUsage(whole.usage),
        }),
        { headers },
      );
    },
    stream(events, reply, cancel) {
      return {
        headers: eventStreamHeaders(reply.served),
        pieces: completionEvents(context, { call, head, events, cancel }),
      };
    },
  });
}

async function* completionEvents(
  context: SurfaceContext,
  stream: {
    call: CompletionsCall;
    head: { id: string; object: "text_completion"; created: number; model: string };
    events: AsyncGenerator<ReplyEvent, void, undefined>;
    cancel: CancelNote;
  },
): AsyncGenerator<string, void, undefined> {
  const { head, events, call } = stream;
  const chunk = (text: string, finish: string | null) =>
    `data: ${
      JSON.stringify({
        ...head,
        choices: [{ text, index: 0, logprobs: null, finish_reason: finish }],
      })
    }\n\n`;
  try {
    for await (const event of events) {
      if (event.type === "content") yield chunk(event.text, null);
      else if (event.type === "finish") yield chunk("", event.reason);
      else if (event.type === "usage" && call.includeUsage) {
        yield `data: ${
          JSON.stringify({ ...head, choices: [], usage: openaiUsage(event.usage) })
        }\n\n`;
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
