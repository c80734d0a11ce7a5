/**
 * A streamed response (`POST /v1/responses` with `stream: true`): the events that build its
 * output items from the reply's events, numbered in order, and the items themselves (shared
 * with the whole answer).
 *
 * @module
 */

import { streamErrorText, type ToolCallDelta, type Usage } from "../core/mod.ts";
import {
  type CancelNote,
  endedByCancel,
  providerError,
  randomId,
  ReplyBudget,
  type ReplyEvent,
  type SurfaceContext,
  ToolCallAssembler,
} from "../surface/mod.ts";
import type { ResponseObject, ResponseOutputItem } from "./_responses_schemas.ts";

/** What builds the response objects of one call (`responses.ts`). */
export interface ResponseBuilder {
  /** A fresh item id with `prefix`. */
  itemId(prefix: "msg_" | "fc_"): string;
  /** The response object with `output`; in progress until `end` is given. */
  object(output: ResponseOutputItem[], end?: { finish: string; usage: Usage }): ResponseObject;
}

/** A message output item. */
export function messageItem(
  id: string,
  text: string,
  status: "in_progress" | "completed",
): ResponseOutputItem {
  return {
    type: "message",
    id,
    status,
    role: "assistant",
    content: status === "completed" ? [{ type: "output_text", text, annotations: [] }] : [],
  };
}

/** A function-call output item. */
export function callItem(
  id: string,
  call: { id: string; name: string; arguments: string },
  status: "in_progress" | "completed",
): ResponseOutputItem {
  return {
    type: "function_call",
    id,
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
    status,
  };
}

/** The open output item of a stream. */
type Open =
  | { kind: "message"; id: string; index: number; text: string }
  | { kind: "call"; id: string; index: number; callIndex: number };

/** A streamed tool call, by its index in the reply; `done` once its output item is done. */
interface StreamedCall {
  id: string;
  name: string;
  arguments: string;
  done: boolean;
}

/**
 * The output items of a streamed response and the events that build them, numbered in order
 * (`sequence_number`): one item open at a time, a message's text deltas or a tool call's
 * argument deltas, each item done before the next is added.
 */
class StreamedItems {
  /** The items so far (the open one as it was added). */
  readonly output: ResponseOutputItem[] = [];
  readonly #context: SurfaceContext;
  readonly #shape: ResponseBuilder;
  // The assembler charges the calls' fragments to the reply budget; `#calls` keeps them.
  readonly #tools: ToolCallAssembler;
  readonly #calls = new Map<number, StreamedCall>();
  #open: Open | undefined;
  #sequence = 0;

  constructor(context: SurfaceContext, shape: ResponseBuilder) {
    this.#context = context;
    this.#shape = shape;
    this.#tools = new ToolCallAssembler(new ReplyBudget(context.maxReplyBytes));
  }

  /** One event, `event: <type>` then `data: <JSON>`, with the next sequence number. */
  emit(type: string, data: Record<string, unknown>): string {
    const body = JSON.stringify({ type, sequence_number: this.#sequence++, ...data });
    return `event: ${type}\ndata: ${body}\n\n`;
  }

  /** A piece of text: to the open message, or to a new one. */
  *text(text: string): Generator<string> {
    const current = this.#open;
    let open: Open & { kind: "message" };
    if (current?.kind === "message") open = current;
    else {
      yield* this.close();
      open = yield* this.#openMessage();
    }
    open.text += text;
    yield this.emit("response.output_text.delta", {
      item_id: open.id,
      output_index: open.index,
      content_index: 0,
      delta: text,
    });
  }

  /**
   * A tool-call fragment: to the open call of its index, or to a new item.
   *
   * @throws {DaemonError} `provider_error` for a call resumed after its item is done, or the
   * reply budget exhausted.
   */
  *toolCall(delta: ToolCallDelta): Generator<string> {
    this.#tools.add(delta);
    const index = delta.index;
    if (this.#calls.get(index)?.done) {
      // Its output item is done: the stream cannot take it back (a streamed reply sends each
      // tool call whole before the next).
      throw providerError(`tool call ${index} continued after another output item began`);
    }
    let open = this.#open?.kind === "call" && this.#open.callIndex === index
      ? this.#open
      : undefined;
    if (!open) {
      yield* this.close();
      const id = delta.id ?? randomId(this.#context, "call_");
      this.#calls.set(index, { id, name: "", arguments: "", done: false });
      const itemId = this.#shape.itemId("fc_");
      this.#open = open = { kind: "call", id: itemId, index: this.output.length, callIndex: index };
      const name = delta.function?.name ?? "";
      this.output.push(callItem(itemId, { id, name, arguments: "" }, "in_progress"));
      yield this.emit("response.output_item.added", {
        output_index: open.index,
        item: this.output[open.index],
      });
    }
    const call = this.#calls.get(index)!;
    call.name += delta.function?.name ?? "";
    const piece = delta.function?.arguments;
    if (piece) {
      call.arguments += piece;
      yield this.emit("response.function_call_arguments.delta", {
        item_id: open.id,
        output_index: open.index,
        delta: piece,
      });
    }
  }

  /**
   * Closes the open item, and for a reply with no item at all gives it one empty message (as
   * the whole answer has it).
   *
   * @throws {DaemonError} `provider_error` for a tool call without a function name.
   */
  *end(): Generator<string> {
    yield* this.close();
    if (this.output.length === 0) {
      yield* this.#openMessage();
      yield* this.close();
    }
  }

  /**
   * Closes the open item: its `done` events.
   *
   * @throws {DaemonError} `provider_error` for a tool call without a function name.
   */
  *close(): Generator<string> {
    const open = this.#open;
    if (!open) return;
    const index = open.index;
    if (open.kind === "message") {
      const base = { item_id: open.id, output_index: index, content_index: 0 };
      const part = { type: "output_text", text: open.text, annotations: [] };
      yield this.emit("response.output_text.done", { ...base, text: open.text });
      yield this.emit("response.content_part.done", { ...base, part });
      this.output[index] = messageItem(open.id, open.text, "completed");
    } else {
      const call = this.#calls.get(open.callIndex)!;
      call.done = true;
      if (!call.name) throw providerError(`tool call ${open.callIndex} has no function name`);
      yield this.emit("response.function_call_arguments.done", {
        item_id: open.id,
        output_index: index,
        arguments: call.arguments,
      });
      this.output[index] = callItem(open.id, call, "completed");
    }
    yield this.emit("response.output_item.done", { output_index: index, item: this.output[index] });
    this.#open = undefined;
  }

  *#openMessage(): Generator<string, Open & { kind: "message" }> {
    const open = {
      kind: "message" as const,
      id: this.#shape.itemId("msg_"),
      index: this.output.length,
      text: "",
    };
    this.#open = open;
    this.output.push(messageItem(open.id, "", "in_progress"));
    yield this.emit("response.output_item.added", {
      output_index: open.index,
      item: this.output[open.index],
    });
    yield this.emit("response.content_part.added", {
      item_id: open.id,
      output_index: open.index,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] },
    });
    return open;
  }
}

/** The SSE events of a streamed response (`event: <type>` then `data: <JSON>`). */
export async function* responseEvents(
  context: SurfaceContext,
  stream: {
    shape: ResponseBuilder;
    events: AsyncGenerator<ReplyEvent, void, undefined>;
    cancel: CancelNote;
  },
): AsyncGenerator<string, void, undefined> {
  const { shape, events } = stream;
  const items = new StreamedItems(context, shape);
  let finish = "stop";
  let usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  try {
    yield items.emit("response.created", { response: shape.object([]) });
    yield items.emit("response.in_progress", { response: shape.object([]) });
    for await (const event of events) {
      if (event.type === "content" && event.text !== "") yield* items.text(event.text);
      else if (event.type === "tool_call") yield* items.toolCall(event.delta);
      else if (event.type === "finish") finish = event.reason;
      else if (event.type === "usage") usage = event.usage;
    }
    yield* items.end();
    const done = shape.object(items.output, { finish, usage });
    yield items.emit(done.status === "incomplete" ? "response.incomplete" : "response.completed", {
      response: done,
    });
  } catch (error) {
    if (endedByCancel(context, stream.cancel)) return;
    const body = JSON.parse(streamErrorText(error, "openai", { log: context.log }).slice(6));
    yield items.emit("error", {
      code: body.error.code,
      message: body.error.message,
      param: body.error.param ?? null,
    });
  } finally {
    await events.return(undefined);
  }
}
