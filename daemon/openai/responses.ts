/**
 * The OpenAI Responses API, `POST /v1/responses`, mapped onto the chat path: the request
 * becomes one chat completion (sealed to a provider like any other), its reply a response
 * object, or with `stream: true` the standard event sequence.
 *
 * - `instructions` → a first `system` message; `input` (a string, or message items with text
 *   or image parts, `function_call` and `function_call_output` items) → the messages;
 *   `max_output_tokens` → `max_completion_tokens`; `temperature`, `top_p`, function `tools`,
 *   `tool_choice` and `text.format` (JSON schema / object) → their chat equivalents.
 * - The daemon keeps no conversation state: `previous_response_id` and `store: true` are
 *   refused with 400, saying so. Every response says `store: false`.
 * - Streamed: `response.created`, `response.in_progress`, per output item
 *   `response.output_item.added`, its deltas (`response.output_text.delta` inside
 *   `response.content_part.added`/`.done`, or `response.function_call_arguments.delta`) and
 *   `response.output_item.done`, then `response.completed` (or `response.incomplete` when the
 *   token limit cut it). A failure after the start is one `error` event, and the stream ends.
 *
 * @module
 */

import {
  type ChatRequest,
  DaemonError,
  type ForwardedChatBody,
  parseModelId,
  type Usage,
} from "../core/mod.ts";
import {
  aggregateReply,
  costHeader,
  eventStreamHeaders,
  jsonHeaders,
  openaiUsage,
  randomId,
  routed,
  serveReply,
  type SurfaceContext,
} from "../surface/mod.ts";
import { callItem, messageItem, responseEvents } from "./_responses_stream.ts";
import type { ResponseObject, ResponseOutputItem, ResponsesBody } from "./_responses_schemas.ts";

function invalid(message: string, param: string): DaemonError {
  return new DaemonError("invalid_request_error", `Cannot create a response: ${message}`, {
    param,
  });
}

/** An input message's content, as chat content. */
function chatContent(content: unknown, at: string): unknown {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) {
    throw invalid(
      `${at}.content must be a string or parts, found ${describeValue(content)}`,
      `${at}.content`,
    );
  }
  return content.map((part: Record<string, unknown>, i) => {
    if (part.type === "input_text" || part.type === "output_text" || part.type === "text") {
      if (typeof part.text !== "string") {
        throw invalid(
          `${at}.content[${i}].text must be a string, found ${describeValue(part.text)}`,
          `${at}.content[${i}].text`,
        );
      }
      return { type: "text", text: part.text };
    }
    if (part.type === "input_image" && typeof part.image_url === "string") {
      return { type: "image_url", image_url: { url: part.image_url } };
    }
    throw invalid(
      `${at}.content[${i}] has type ${JSON.stringify(part.type)}; supported: input_text, ` +
        "output_text, input_image (with image_url)",
      `${at}.content`,
    );
  });
}

function describeValue(value: unknown): string {
  if (value === undefined) return "none";
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : `a ${typeof value}`;
}

/** The chat messages of a Responses request. */
function chatMessages(body: ResponsesBody): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  // The calls the input makes, so that an output answers one of them (the daemon keeps no
  // earlier response an output could answer).
  const calls = new Set<string>();
  if (body.instructions) messages.push({ role: "system", content: body.instructions });
  if (typeof body.input === "string") return [...messages, { role: "user", content: body.input }];
  body.input.forEach((item, i) => {
    const at = `input[${i}]`;
    const type = item.type ?? "message";
    if (type === "message") {
      if (!item.role) throw invalid(`${at} has no role`, `${at}.role`);
      messages.push({ role: item.role, content: chatContent(item.content, at) });
    } else if (type === "function_call") {
      if (!item.call_id || !item.name) {
        throw invalid(`${at} (function_call) needs call_id and name`, at);
      }
      calls.add(item.call_id);
      const call = {
        id: item.call_id,
        type: "function",
        function: { name: item.name, arguments: item.arguments ?? "{}" },
      };
      const last = messages.at(-1);
      if (last?.role === "assistant" && Array.isArray(last.tool_calls)) last.tool_calls.push(call);
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (type === "function_call_output") {
      if (!item.call_id) throw invalid(`${at} (function_call_output) needs call_id`, at);
      if (!calls.has(item.call_id)) {
        throw invalid(
          `${at} is the output of call ${JSON.stringify(item.call_id)}, but no function_call ` +
            "before it in input has that call_id (the daemon keeps no earlier response: send " +
            "the function_call item too)",
          `${at}.call_id`,
        );
      }
      const output = typeof item.output === "string" ? item.output : JSON.stringify(item.output);
      messages.push({ role: "tool", tool_call_id: item.call_id, content: output ?? "" });
    } else {
      throw invalid(
        `${at} has type ${JSON.stringify(type)}; supported: message, function_call, ` +
          "function_call_output",
        `${at}.type`,
      );
    }
  });
  return messages;
}

/** The chat equivalents of the request's options. */
function chatOptions(body: ResponsesBody): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (body.max_output_tokens != null) out.max_completion_tokens = body.max_output_tokens;
  if (body.temperature != null) out.temperature = body.temperature;
  if (body.top_p != null) out.top_p = body.top_p;
  if (body.parallel_tool_calls != null) out.parallel_tool_calls = body.parallel_tool_calls;
  if (body.tools?.length) {
    out.tools = body.tools.map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        ...(tool.description ? { description: tool.description } : {}),
        ...(tool.parameters ? { parameters: tool.parameters } : {}),
        ...(tool.strict != null ? { strict: tool.strict } : {}),
      },
    }));
  }
  const choice = body.tool_choice;
  if (choice !== undefined) {
    out.tool_choice = typeof choice === "string"
      ? choice
      : { type: "function", function: { name: choice.name } };
  }
  const format = body.text?.format as Record<string, unknown> | undefined;
  if (
    format !== undefined && !["text", "json_object", "json_schema"].includes(format.type as string)
  ) {
    throw invalid(
      `text.format.type must be text, json_object or json_schema, found ${
        JSON.stringify(format.type)
      }`,
      "text.format.type",
    );
  }
  if (format?.type === "json_object") out.response_format = { type: "json_object" };
  if (format?.type === "json_schema") {
    const { type: _, ...schema } = format;
    out.response_format = { type: "json_schema", json_schema: schema };
  }
  return out;
}

/** A validated Responses request, as a chat call. */
export interface ResponsesCall {
  /** The model id as the client wrote it. */
  readonly requestedModel: string;
  /** What goes to the backend. */
  readonly request: ChatRequest;
  /** Whether the client wants events. */
  readonly stream: boolean;
  /** The request, for the fields a response echoes. */
  readonly body: ResponsesBody;
}

/**
 * Maps a validated Responses body onto a chat call.
 *
 * @throws {DaemonError} `invalid_request_error` for conversation state (`previous_response_id`,
 * `store: true`), an unsupported item or part; the `ModelIdError` of a malformed id.
 */
export function responsesCall(body: ResponsesBody): ResponsesCall {
  if (body.previous_response_id != null) {
    throw invalid(
      "previous_response_id is not supported: the daemon keeps no conversation state; send " +
        "the whole conversation in input",
      "previous_response_id",
    );
  }
  if (body.store === true) {
    throw invalid(
      "store: true is not supported: the daemon keeps no conversation state; send store: false",
      "store",
    );
  }
  if (body.model === undefined) throw invalid('the request has no "model"', "model");
  const id = parseModelId(body.model);
  const forwarded: ForwardedChatBody = {
    model: id.model,
    messages: chatMessages(body),
    ...chatOptions(body),
    stream: true,
    stream_options: { include_usage: true },
  };
  return {
    requestedModel: body.model as string,
    request: routed(
      { tier: id.tier, model: id.model, body: forwarded, whole: !body.stream },
      body.provider,
    ),
    stream: body.stream ?? false,
    body,
  };
}

/** Builds response objects for one call. */
class ResponseShape {
  readonly id: string;
  readonly #created: number;
  readonly #call: ResponsesCall;
  readonly #context: SurfaceContext;

  constructor(context: SurfaceContext, call: ResponsesCall) {
    this.#context = context;
    this.#call = call;
    this.id = randomId(context, "resp_");
    this.#created = Math.floor(context.clock().getTime() / 1000);
  }

  itemId(prefix: "msg_" | "fc_"): string {
    return randomId(this.#context, prefix);
  }

  object(output: ResponseOutputItem[], end?: { finish: string; usage: Usage }): ResponseObject {
    const { body } = this.#call;
    const cut = end?.finish === "length";
    return {
      id: this.id,
      object: "response",
      created_at: this.#created,
      status: end === undefined ? "in_progress" : cut ? "incomplete" : "completed",
      error: null,
      incomplete_details: cut ? { reason: "max_output_tokens" } : null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      model: this.#call.requestedModel,
      output,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: null,
      store: false,
      temperature: body.temperature ?? null,
      top_p: body.top_p ?? null,
      tool_choice: body.tool_choice ?? "auto",
      tools: body.tools ?? [],
      text: body.text ?? { format: { type: "text" } },
      truncation: "disabled",
      metadata: body.metadata ?? {},
      usage: end === undefined ? null : {
        input_tokens: end.usage.prompt_tokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: end.usage.completion_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: end.usage.total_tokens,
        ...costFields(end.usage),
      },
    };
  }
}

/**
 * Serves a Responses call: one response object, or its event stream.
 *
 * @throws {DaemonError} (or any error, rendered as 500) when the reply fails before it starts.
 */
export function serveResponses(
  context: SurfaceContext,
  served: { call: ResponsesCall; request: Request },
): Promise<Response> {
  const { call } = served;
  const shape = new ResponseShape(context, call);
  return serveReply(
    context,
    {
      ...served,
      what: `response ${JSON.stringify(call.requestedModel)}`,
      capabilities: { listing: "GET /v1/models", fields: { format: "text.format" } },
    },
    {
      async whole(events, reply) {
        const whole = await aggregateReply(context, events);
        const output: ResponseOutputItem[] = [];
        if (whole.content !== "" || whole.toolCalls.length === 0) {
          output.push(messageItem(shape.itemId("msg_"), whole.content, "completed"));
        }
        for (const tool of whole.toolCalls) {
          output.push(callItem(shape.itemId("fc_"), tool, "completed"));
        }
        const object = shape.object(output, { finish: whole.finishReason, usage: whole.usage });
        const headers = jsonHeaders(reply.served);
        for (const [name, value] of costHeader(whole.usage)) headers.set(name, value);
        return new Response(JSON.stringify(object), { headers });
      },
      stream(events, reply, cancel) {
        const pieces = responseEvents(context, { shape, events, cancel });
        return { headers: eventStreamHeaders(reply.served), pieces };
      },
    },
  );
}

/** OpenRouter's `cost` and the exact `cost_wei`, when the daemon paid for the reply. */
function costFields(usage: Usage): { cost?: number; cost_wei?: string } {
  const { cost, cost_wei } = openaiUsage(usage);
  return cost_wei === undefined ? {} : { cost, cost_wei };
}
