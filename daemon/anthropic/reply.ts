/**
 * A reply in Anthropic's shapes: one `message` (`stream: false`), or Server-Sent Events in
 * Anthropic's exact sequence — `message_start`; per content block `content_block_start` (the
 * first followed by a `ping`), its deltas (`text_delta`, or `input_json_delta` for a tool call)
 * and `content_block_stop`; then `message_delta` (stop reason, the provider's token counts) and
 * `message_stop`. An error after the start is one `event: error`, and the stream ends.
 *
 * Stop reasons: `stop` → `end_turn`, `length` → `max_tokens`, `tool_calls` → `tool_use`,
 * `content_filter` (or a refusal) → `refusal`; a stop sequence the daemon found
 * (`_stop.ts`) → `stop_sequence`, naming it. A stop sequence ends the provider's generation at
 * once (the request is aborted): its token counts are then not known, and the usage reported is
 * an estimate — the prompt's (about 4 bytes a token), and one token per piece of text received.
 * `message_start` carries the prompt's estimate too; `message_delta` the provider's counts.
 *
 * @module
 */

import type { ToolCallDelta, Usage } from "../core/mod.ts";
import {
  ollamaCost,
  randomId,
  ReplyBudget,
  type ReplyEvent,
  type SurfaceContext,
  ToolCallAssembler,
} from "../surface/mod.ts";
import { providerError } from "../surface/mod.ts";
import type { AnthropicCall } from "./request.ts";
import type { MessageResponse } from "./_schemas.ts";
import { StopScanner } from "./_stop.ts";

/** Why generation stopped, in Anthropic's words. */
type StopReason = NonNullable<MessageResponse["stop_reason"]>;

/** The provider's finish reason in Anthropic's words. */
export function stopReason(finish: string): StopReason {
  switch (finish) {
    case "length":
      return "max_tokens";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "content_filter":
      return "refusal";
    default:
      return "end_turn";
  }
}

/** Anthropic's usage object from the provider's counts. */
function usageOf(usage: Usage): MessageResponse["usage"] {
  return {
    input_tokens: usage.prompt_tokens,
    output_tokens: usage.completion_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    ...ollamaCost(usage),
  };
}

/** One step of a reply, read with the stop sequences applied. */
type Step =
  | { type: "text"; text: string }
  | { type: "tool_call"; delta: ToolCallDelta }
  | { type: "end"; reason: StopReason; sequence: string | null; usage: Usage };

/**
 * The reply's events as steps: text cut at the first stop sequence (the rest of the generation
 * is then abandoned: leaving the loop closes `events`, which aborts the request), tool-call
 * fragments, and one last `end`. Reasoning is dropped (Anthropic's thinking blocks need a
 * signature no provider gives); a refusal's text is passed on as text.
 */
async function* steps(
  events: AsyncGenerator<ReplyEvent, void, undefined>,
  call: AnthropicCall,
): AsyncGenerator<Step, void, undefined> {
  const scanner = new StopScanner(call.stopSequences);
  let finish = "stop";
  let refused = false;
  let pieces = 0;
  for await (const event of events) {
    if (event.type === "content" || event.type === "refusal") {
      refused ||= event.type === "refusal";
      pieces++;
      const step = scanner.push(event.text);
      if (step.text) yield { type: "text", text: step.text };
      if (step.stop !== undefined) {
        const estimate = { prompt_tokens: call.promptEstimate, completion_tokens: pieces };
        yield {
          type: "end",
          reason: "stop_sequence",
          sequence: step.stop,
          usage: { ...estimate, total_tokens: estimate.prompt_tokens + pieces },
        };
        return;
      }
    } else if (event.type === "tool_call") yield { type: "tool_call", delta: event.delta };
    else if (event.type === "finish") finish = event.reason;
    else if (event.type === "usage") {
      const rest = scanner.flush();
      if (rest) yield { type: "text", text: rest };
      const reason = refused ? "refusal" : stopReason(finish);
      yield { type: "end", reason, sequence: null, usage: event.usage };
    }
  }
}

/**
 * The whole answer: a `message` with a text block (when there is text, or nothing else) and a
 * `tool_use` block per tool call (its input parsed from the arguments' JSON text).
 *
 * @throws {DaemonError} as the reply's events, and `provider_error` for a tool call whose
 * arguments are not a JSON object.
 */
export async function wholeMessage(
  context: SurfaceContext,
  events: AsyncGenerator<ReplyEvent, void, undefined>,
  call: AnthropicCall,
): Promise<MessageResponse> {
  const budget = new ReplyBudget(context.maxReplyBytes);
  const tools = new ToolCallAssembler(budget);
  let text = "";
  let end: Extract<Step, { type: "end" }> | undefined;
  for await (const step of steps(events, call)) {
    if (step.type === "text") {
      budget.charge(step.text, "content");
      text += step.text;
    } else if (step.type === "tool_call") tools.add(step.delta);
    else end = step;
  }
  if (!end) throw providerError("the reply ended without usage");
  const content: MessageResponse["content"] = [];
  const calls = tools.calls(context);
  if (text !== "" || calls.length === 0) content.push({ type: "text", text });
  for (const tool of calls) {
    content.push({ type: "tool_use", id: tool.id, name: tool.name, input: toolInput(tool) });
  }
  return {
    id: randomId(context, "msg_"),
    type: "message",
    role: "assistant",
    model: call.requestedModel,
    content,
    stop_reason: end.reason,
    stop_sequence: end.sequence,
    usage: usageOf(end.usage),
  };
}

function toolInput(tool: { name: string; arguments: string }): Record<string, unknown> {
  if (tool.arguments.trim() === "") return {};
  try {
    const input = JSON.parse(tool.arguments);
    if (typeof input === "object" && input !== null && !Array.isArray(input)) return input;
  } catch {
    // Reported below.
  }
  throw providerError(
    `tool call ${JSON.stringify(tool.name)} has arguments that are not a JSON object`,
  );
}

function event(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The streamed answer's SSE events (without the error event, which the caller adds): text and
 * tool calls as content blocks, in order, a tool call's arguments streamed as `input_json_delta`
 * pieces. A provider that interleaves two tool calls' fragments breaks the one-block-at-a-time
 * order Anthropic's stream has: `provider_error`.
 */
export async function* streamEvents(
  context: SurfaceContext,
  events: AsyncGenerator<ReplyEvent, void, undefined>,
  call: AnthropicCall,
): AsyncGenerator<string, void, undefined> {
  const message: MessageResponse = {
    id: randomId(context, "msg_"),
    type: "message",
    role: "assistant",
    model: call.requestedModel,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: usageOf({ prompt_tokens: call.promptEstimate, completion_tokens: 0, total_tokens: 0 }),
  };
  yield event("message_start", { type: "message_start", message });
  let index = -1;
  let open: "text" | number | null = null; // the open block: text, or a tool call's index
  const closedTools = new Set<number>();
  let pinged = false;
  function* start(block: unknown): Generator<string> {
    if (open !== null) yield* stop();
    index++;
    yield event("content_block_start", {
      type: "content_block_start",
      index,
      content_block: block,
    });
    if (!pinged) {
      pinged = true;
      yield event("ping", { type: "ping" });
    }
  }
  function* stop(): Generator<string> {
    if (typeof open === "number") closedTools.add(open);
    open = null;
    yield event("content_block_stop", { type: "content_block_stop", index });
  }
  for await (const step of steps(events, call)) {
    if (step.type === "text") {
      if (open !== "text") {
        yield* start({ type: "text", text: "" });
        open = "text";
      }
      yield event("content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "text_delta", text: step.text },
      });
    } else if (step.type === "tool_call") {
      const delta = step.delta;
      if (open !== delta.index) {
        if (closedTools.has(delta.index)) {
          throw providerError(`tool call ${delta.index} resumed after another one started`);
        }
        yield* start({
          type: "tool_use",
          id: delta.id ?? randomId(context, "toolu_"),
          name: delta.function?.name ?? "",
          input: {},
        });
        open = delta.index;
      }
      const piece = delta.function?.arguments;
      if (piece) {
        yield event("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: piece },
        });
      }
    } else {
      if (index < 0) {
        yield* start({ type: "text", text: "" });
        open = "text";
      }
      if (open !== null) yield* stop();
      yield event("message_delta", {
        type: "message_delta",
        delta: { stop_reason: step.reason, stop_sequence: step.sequence },
        usage: {
          input_tokens: step.usage.prompt_tokens,
          output_tokens: step.usage.completion_tokens,
          ...ollamaCost(step.usage),
        },
      });
      yield event("message_stop", { type: "message_stop" });
    }
  }
}
