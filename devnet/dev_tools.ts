/**
 * The tool rule of the devnet's dev chat model, `devnet/echo`: deterministic function calling,
 * so a tool call can be followed through the sealed path end to end.
 *
 * When the request offers `tools` (and `tool_choice` is not `"none"`) and its last message is
 * the user's, the model calls one function: the one `tool_choice` names, else the first
 * offered. Its arguments are one JSON object: the function's first parameter — the first name
 * in `parameters.required` that is a property, else the first property — set to the text of
 * the last user message (`{}` when the function takes no parameters). The arguments' JSON
 * text is streamed in pieces of at most 8 characters.
 *
 * @module
 */

import { type ChatBody, messageText } from "./engine.ts";

/** A tool call the dev model makes: the function and its arguments' JSON text, in pieces. */
export interface ToolCallPlan {
  /** The function's name. */
  readonly name: string;
  /** The arguments' JSON text. */
  readonly arguments: string;
  /** The same text cut in pieces (each a streamed delta). */
  readonly pieces: readonly string[];
}

/** Characters per streamed piece of the arguments. */
const PIECE = 8;

interface FunctionTool {
  type?: unknown;
  function?: { name?: unknown; parameters?: unknown };
}

function functionName(tool: FunctionTool): string | undefined {
  const name = tool?.function?.name;
  return tool?.type === "function" && typeof name === "string" && name !== "" ? name : undefined;
}

/** The parameter the dev model fills: the first required property, else the first property. */
function firstParameter(parameters: unknown): string | undefined {
  const schema = parameters as { properties?: unknown; required?: unknown } | undefined;
  const properties = schema?.properties;
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) {
    return undefined;
  }
  const names = Object.keys(properties);
  const required = Array.isArray(schema?.required) ? schema.required : [];
  return required.find((name): name is string => names.includes(name as string)) ?? names[0];
}

/** The tool call the dev model makes for `body`, or `undefined` when it answers in text. */
export function devToolCall(body: ChatBody): ToolCallPlan | undefined {
  const tools = Array.isArray(body.tools) ? body.tools as FunctionTool[] : [];
  const last = body.messages[body.messages.length - 1];
  if (tools.length === 0 || body.tool_choice === "none" || last?.role !== "user") return undefined;
  const chosen = (body.tool_choice as { function?: { name?: unknown } } | undefined)?.function
    ?.name;
  const tool = tools.find((t) => functionName(t) !== undefined && functionName(t) === chosen) ??
    tools.find((t) => functionName(t) !== undefined);
  if (!tool) return undefined;
  const parameter = firstParameter(tool.function?.parameters);
  const text = messageText(last.content).trim();
  const args = JSON.stringify(parameter === undefined ? {} : { [parameter]: text });
  const pieces: string[] = [];
  for (let at = 0; at < args.length; at += PIECE) pieces.push(args.slice(at, at + PIECE));
  return { name: functionName(tool)!, arguments: args, pieces };
}
