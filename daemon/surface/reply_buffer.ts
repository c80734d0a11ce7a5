/**
 * What the surface holds of a reply in memory, bounded by `maxReplyBytes`: the whole reply of a
 * `stream: false` request, and tool calls assembled from their fragments.
 *
 * @module
 */

import type { ToolCallDelta, Usage } from "../core/mod.ts";
import { randomId, type SurfaceContext } from "./context.ts";
import { providerError, type ReplyEvent, type TokenLogprob } from "./reply_events.ts";

/** The UTF-8 length of `text`, without encoding it. */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2; // a surrogate pair: 2 code units, 4 bytes
        i++;
      } else bytes += 2;
    } else bytes += 2;
  }
  return bytes;
}

/**
 * How much of a provider's reply the surface may hold in memory (`maxReplyBytes`). A provider
 * is untrusted: without a bound, one that keeps streaming would make the daemon buffer until
 * the process runs out of memory.
 */
export class ReplyBudget {
  readonly #max: number;
  #used = 0;

  /** Creates a budget of `maxBytes` UTF-8 bytes. */
  constructor(maxBytes: number) {
    this.#max = maxBytes;
  }

  /** Bytes charged so far. */
  get used(): number {
    return this.#used;
  }

  /**
   * Charges `text` to the budget.
   *
   * @throws {DaemonError} `provider_error` once the total passes the limit.
   */
  charge(text: string, what: string): void {
    this.#used += utf8Length(text);
    if (this.#used > this.#max) {
      throw providerError(
        `the reply is larger than the daemon buffers (more than ${this.#max} bytes, reached ` +
          `while reading ${what}); limit: maxReplyBytes`,
      );
    }
  }
}

/** A tool call assembled from its streamed fragments. */
export interface AssembledToolCall {
  /** The call id (the provider's, or a fresh one). */
  id: string;
  /** The function name. */
  name: string;
  /** The arguments' JSON text. */
  arguments: string;
}

/** Assembles tool-call fragments by index, within a {@linkcode ReplyBudget}. */
export class ToolCallAssembler {
  readonly #calls = new Map<number, { id?: string; name: string; arguments: string }>();
  readonly #budget: ReplyBudget;

  /** Creates an assembler whose names, ids and arguments are charged to `budget`. */
  constructor(budget: ReplyBudget) {
    this.#budget = budget;
  }

  /**
   * Adds one fragment.
   *
   * @throws {DaemonError} `provider_error` when the budget is exhausted.
   */
  add(delta: ToolCallDelta): void {
    const call = this.#calls.get(delta.index) ?? { name: "", arguments: "" };
    const what = `tool call ${delta.index}`;
    if (delta.id) {
      this.#budget.charge(delta.id, what);
      call.id = delta.id;
    }
    if (delta.function?.name) {
      this.#budget.charge(delta.function.name, what);
      call.name += delta.function.name;
    }
    if (delta.function?.arguments) {
      this.#budget.charge(delta.function.arguments, what);
      call.arguments += delta.function.arguments;
    }
    this.#calls.set(delta.index, call);
  }

  /** Whether any fragment was added. */
  get size(): number {
    return this.#calls.size;
  }

  /**
   * The assembled calls, by index. Ids the provider did not send are made up.
   *
   * @throws {DaemonError} `provider_error` for a call without a function name.
   */
  calls(context: SurfaceContext): AssembledToolCall[] {
    return [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([index, call]) => {
      if (!call.name) throw providerError(`tool call ${index} has no function name`);
      return {
        id: call.id ?? randomId(context, "call_"),
        name: call.name,
        arguments: call.arguments,
      };
    });
  }
}

/** A whole reply, for `stream: false` clients. */
export interface AggregatedReply {
  /** The text. */
  content: string;
  /** Refusal text, if any. */
  refusal: string;
  /** Reasoning text, if the provider reported any. */
  reasoning: string;
  /** The tool calls. */
  toolCalls: AssembledToolCall[];
  /** Why generation stopped. */
  finishReason: string;
  /** Token counts. */
  usage: Usage;
  /** The tokens' log probabilities, when the provider gave them. */
  logprobs: TokenLogprob[] | null;
}

/**
 * Reads a whole reply, holding at most `context.maxReplyBytes` of text and tool-call fragments.
 * Past the limit it stops reading at once (leaving the loop closes `events`, which aborts the
 * backend) and fails.
 *
 * @throws {DaemonError} as {@linkcode replyEvents}, and `provider_error` for a reply over the
 * limit.
 */
export async function aggregateReply(
  context: SurfaceContext,
  events: AsyncIterable<ReplyEvent>,
): Promise<AggregatedReply> {
  let content = "";
  let refusal = "";
  let reasoning = "";
  let finishReason = "stop";
  let usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const budget = new ReplyBudget(context.maxReplyBytes);
  const tools = new ToolCallAssembler(budget);
  let logprobs: TokenLogprob[] | null = null;
  for await (const event of events) {
    switch (event.type) {
      case "content":
        budget.charge(event.text, "content");
        content += event.text;
        break;
      case "refusal":
        budget.charge(event.text, "refusal");
        refusal += event.text;
        break;
      case "reasoning":
        budget.charge(event.text, "reasoning");
        reasoning += event.text;
        break;
      case "tool_call":
        tools.add(event.delta);
        break;
      case "finish":
        finishReason = event.reason;
        break;
      case "usage":
        usage = event.usage;
        break;
      case "logprobs":
        budget.charge(JSON.stringify(event.content), "logprobs");
        (logprobs ??= []).push(...event.content);
        break;
    }
  }
  return {
    content,
    refusal,
    reasoning,
    toolCalls: tools.calls(context),
    finishReason,
    usage,
    logprobs,
  };
}
