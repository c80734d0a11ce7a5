/**
 * An Anthropic Messages request translated into the one chat request the network takes
 * (OpenAI-shaped, `core/backend.ts`):
 *
 * - `system` (text or text blocks), and any `system` turn inside `messages`, → system messages;
 * - a user turn's `text` and `image` blocks → one user message (images as `image_url` parts: a
 *   `data:` URL for base64, the URL itself for `url`); its `tool_result` blocks → `tool`
 *   messages before it (`tool_call_id` = `tool_use_id`; text content joined; `is_error` prefixes
 *   `Error: `);
 * - an assistant turn's `text` → its content, its `tool_use` blocks → `tool_calls` (arguments
 *   = the input's JSON text); `thinking` and `redacted_thinking` blocks are dropped;
 * - `tools` → function tools (`input_schema` → `parameters`); `tool_choice` `auto`, `any`,
 *   `tool`, `none` → `auto`, `required`, that function, `none`; `disable_parallel_tool_use` →
 *   `parallel_tool_calls: false`;
 * - `max_tokens`, `temperature`, `top_p` as they are; `output_config.format` → a JSON-schema
 *   `response_format`. `top_k` has no OpenAI counterpart and is dropped; `stop_sequences` are
 *   the daemon's to apply (`_stop.ts`), not the provider's: OpenAI's `stop` would not say which
 *   sequence ended the text;
 * - any other block type (documents, server tools' results, …) and Anthropic's server tools are
 *   refused with a 400 naming them: the network runs none of them.
 *
 * @module
 */

import {
  type ChatRequest,
  DaemonError,
  type ForwardedChatBody,
  parseModelId,
} from "../core/mod.ts";
import { routed } from "../surface/mod.ts";
import type { CountTokensBody, MessagesBody } from "./_schemas.ts";

/** A validated Messages request, translated. */
export interface AnthropicCall {
  /** The model id as the client wrote it (echoed in the reply). */
  readonly requestedModel: string;
  /** What goes to the backend. */
  readonly request: ChatRequest;
  /** Whether the client wants a stream. */
  readonly stream: boolean;
  /** The stop sequences the daemon applies to the text. */
  readonly stopSequences: readonly string[];
  /** The prompt's estimated tokens, until the provider counts them. */
  readonly promptEstimate: number;
}

type Block = Record<string, unknown> & { type: string };
type ChatMessage = Record<string, unknown>;

function invalid(message: string, param: string): DaemonError {
  return new DaemonError("invalid_request_error", `Cannot create a message: ${message}`, {
    param,
  });
}

function text(value: unknown, at: string): string {
  if (typeof value !== "string") {
    throw invalid(`${at} must be a string, found ${value === null ? "null" : typeof value}`, at);
  }
  return value;
}

const SUPPORTED = "text, image, tool_use (assistant), tool_result (user), thinking";

function unsupported(block: Block, at: string): DaemonError {
  return invalid(
    `${at} has type ${JSON.stringify(block.type)}, which the network does not serve; ` +
      `supported: ${SUPPORTED}`,
    `${at}.type`,
  );
}

/** An image block as an OpenAI `image_url` part. */
function imagePart(block: Block, at: string): ChatMessage {
  const source = block.source as Record<string, unknown> | undefined;
  if (source?.type === "base64") {
    const type = text(source.media_type, `${at}.source.media_type`);
    return {
      type: "image_url",
      image_url: { url: `data:${type};base64,${text(source.data, `${at}.source.data`)}` },
    };
  }
  if (source?.type === "url") {
    return { type: "image_url", image_url: { url: text(source.url, `${at}.source.url`) } };
  }
  throw invalid(
    `${at}.source must be {"type":"base64",…} or {"type":"url",…}, found ${
      JSON.stringify(source?.type ?? null)
    }`,
    `${at}.source`,
  );
}

/** A `tool_result` block as a `tool` message. */
function toolResult(block: Block, at: string, pending: Set<string>): ChatMessage {
  const id = text(block.tool_use_id, `${at}.tool_use_id`);
  if (!pending.has(id)) {
    throw invalid(
      `${at} answers tool_use ${JSON.stringify(id)}, but no tool_use before it has that id ` +
        "(the daemon keeps no conversation: send the assistant turn that called it)",
      `${at}.tool_use_id`,
    );
  }
  pending.delete(id);
  let content = "";
  if (typeof block.content === "string") content = block.content;
  else if (Array.isArray(block.content)) {
    content = block.content.map((inner: Block, i) => {
      if (inner?.type === "text") return text(inner.text, `${at}.content[${i}].text`);
      throw invalid(
        `${at}.content[${i}] has type ${JSON.stringify(inner?.type)}; a tool result carries ` +
          "text on the network (OpenAI's tool messages)",
        `${at}.content[${i}].type`,
      );
    }).join("\n");
  } else if (block.content !== undefined) {
    throw invalid(`${at}.content must be a string or text blocks`, `${at}.content`);
  }
  return {
    role: "tool",
    tool_call_id: id,
    content: block.is_error === true ? `Error: ${content}` : content,
  };
}

/** A user turn: its tool results first, then its text and images. */
function userTurn(blocks: Block[], at: string, pending: Set<string>): ChatMessage[] {
  const results: ChatMessage[] = [];
  const parts: ChatMessage[] = [];
  blocks.forEach((block, i) => {
    const where = `${at}.content[${i}]`;
    if (block.type === "tool_result") results.push(toolResult(block, where, pending));
    else if (block.type === "text") {
      parts.push({ type: "text", text: text(block.text, `${where}.text`) });
    } else if (block.type === "image") parts.push(imagePart(block, where));
    else if (block.type !== "thinking" && block.type !== "redacted_thinking") {
      throw unsupported(block, where);
    }
  });
  return parts.length > 0 ? [...results, { role: "user", content: parts }] : results;
}

/** An assistant turn: its text, and its tool calls. */
function assistantTurn(blocks: Block[], at: string, pending: Set<string>): ChatMessage {
  let content = "";
  const calls: ChatMessage[] = [];
  blocks.forEach((block, i) => {
    const where = `${at}.content[${i}]`;
    if (block.type === "text") content += text(block.text, `${where}.text`);
    else if (block.type === "tool_use") {
      const id = text(block.id, `${where}.id`);
      const input = block.input ?? {};
      if (typeof input !== "object" || input === null || Array.isArray(input)) {
        throw invalid(`${where}.input must be an object`, `${where}.input`);
      }
      pending.add(id);
      calls.push({
        id,
        type: "function",
        function: { name: text(block.name, `${where}.name`), arguments: JSON.stringify(input) },
      });
    } else if (block.type !== "thinking" && block.type !== "redacted_thinking") {
      throw unsupported(block, where);
    }
  });
  return calls.length > 0
    ? { role: "assistant", content: content === "" ? null : content, tool_calls: calls }
    : { role: "assistant", content };
}

/** The system prompt as text: a string, or its text blocks joined. */
function systemText(system: MessagesBody["system"]): string {
  return typeof system === "string" ? system : (system ?? []).map((b) => b.text).join("\n");
}

/** The chat messages of a conversation. */
function chatMessages(body: CountTokensBody): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = systemText(body.system);
  if (system !== "") out.push({ role: "system", content: system });
  // The calls made so far and not answered: a tool_result must answer one of them.
  const pending = new Set<string>();
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (typeof message.content === "string") {
      out.push({ role: message.role, content: message.content });
      return;
    }
    const blocks = message.content as Block[];
    if (message.role === "assistant") out.push(assistantTurn(blocks, at, pending));
    else if (message.role === "user") out.push(...userTurn(blocks, at, pending));
    else {
      out.push({
        role: "system",
        content: blocks.map((b, j) => {
          if (b.type !== "text") throw unsupported(b, `${at}.content[${j}]`);
          return text(b.text, `${at}.content[${j}].text`);
        }).join("\n"),
      });
    }
  });
  return out;
}

/** The client's tools as function tools, and its tool choice. */
function chatTools(body: CountTokensBody): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (body.tools?.length) {
    out.tools = body.tools.map((tool, i) => {
      if ((tool.type !== undefined && tool.type !== "custom") || !tool.input_schema) {
        throw invalid(
          `tools[${i}] (${JSON.stringify(tool.name)}${
            tool.type ? `, type ${JSON.stringify(tool.type)}` : ""
          }) is not a client tool with an input_schema; the network runs only the client's own ` +
            "tools, none of Anthropic's server tools",
          `tools[${i}]`,
        );
      }
      return {
        type: "function",
        function: {
          name: tool.name,
          ...(tool.description ? { description: tool.description } : {}),
          parameters: tool.input_schema,
        },
      };
    });
  }
  const choice = body.tool_choice;
  if (choice) {
    if (choice.type === "tool" && !choice.name) {
      throw invalid('tool_choice of type "tool" needs a name', "tool_choice.name");
    }
    out.tool_choice = choice.type === "any"
      ? "required"
      : choice.type === "tool"
      ? { type: "function", function: { name: choice.name } }
      : choice.type;
    if (choice.disable_parallel_tool_use === true && out.tools) out.parallel_tool_calls = false;
  }
  return out;
}

/** About one token per 4 bytes of UTF-8: the estimate when no tokenizer is at hand. */
export function estimateTokens(messages: readonly unknown[], tools: unknown): number {
  const bytes = new TextEncoder().encode(JSON.stringify([messages, tools ?? null])).length;
  return Math.max(1, Math.ceil(bytes / 4));
}

/**
 * Translates a validated Messages body.
 *
 * @throws {DaemonError} `invalid_request_error` naming the block or tool at fault, or the
 * `ModelIdError` of a malformed model id.
 */
export function anthropicCall(body: MessagesBody): AnthropicCall {
  if (body.model === undefined) {
    throw invalid('the request has no "model"', "model");
  }
  const id = parseModelId(body.model);
  const messages = chatMessages(body);
  const tools = chatTools(body);
  const forwarded: ForwardedChatBody = {
    model: id.model,
    messages,
    ...tools,
    max_tokens: body.max_tokens,
    ...(body.temperature === undefined ? {} : { temperature: body.temperature }),
    ...(body.top_p === undefined ? {} : { top_p: body.top_p }),
    ...(body.output_config?.format
      ? {
        response_format: {
          type: "json_schema",
          json_schema: { name: "output", schema: body.output_config.format.schema, strict: true },
        },
      }
      : {}),
    stream: true,
    stream_options: { include_usage: true },
  };
  const stream = body.stream ?? false;
  return {
    requestedModel: body.model as string,
    request: routed(
      { tier: id.tier, model: id.model, body: forwarded, whole: !stream },
      body.provider,
    ),
    stream,
    stopSequences: body.stop_sequences ?? [],
    promptEstimate: estimateTokens(messages, tools.tools),
  };
}

/**
 * The estimated tokens of a count-tokens body (translated like a Messages body, so that a bad
 * block is refused the same way), and its model id.
 *
 * @throws {DaemonError} as {@linkcode anthropicCall}.
 */
export function countTokensCall(body: CountTokensBody): { model: string; estimate: number } {
  if (body.model === undefined) throw invalid('the request has no "model"', "model");
  parseModelId(body.model);
  const messages = chatMessages(body);
  return { model: body.model as string, estimate: estimateTokens(messages, chatTools(body).tools) };
}
