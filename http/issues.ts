/**
 * Schema failures in plain words. A zod issue becomes one sentence that names the field (as a
 * client writes it: `messages[0].content`), says what it must be and what was found:
 *
 * ```
 * messages[0].role must be one of system, user, assistant, tool; found "hacker"
 * ```
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { describeIssue } from "./issues.ts";
 *
 * const input = { messages: [{ role: "hacker" }] };
 * const schema = z.object({
 *   messages: z.array(z.object({ role: z.enum(["user", "assistant"]) })),
 * });
 * const issue = schema.safeParse(input).error!.issues[0];
 * const { field, message } = describeIssue(issue, input);
 * console.assert(field === "messages[0].role");
 * console.assert(message === 'messages[0].role must be one of user, assistant; found "hacker"');
 * ```
 *
 * @module
 */

import type { z } from "zod";
import { abbreviate } from "../errors.ts";

/** A path inside a JSON value. */
export type JsonPath = readonly PropertyKey[];

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Writes a path the way a client writes it: `messages[0].content`, `["odd key"]`. */
export function fieldPath(path: JsonPath): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && IDENTIFIER.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** Describes a found value: `nothing`, `null`, `a number (3)`, `"text"`, `an array`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return JSON.stringify(abbreviate(value, 40));
    case "number":
    case "bigint":
      return `a number (${abbreviate(String(value), 24)})`;
    case "boolean":
      return String(value);
    case "object":
      return "an object";
    default:
      return `a ${typeof value}`;
  }
}

function at(value: unknown, path: JsonPath): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

const ARTICLE: Readonly<Record<string, string>> = {
  array: "an array",
  object: "an object",
  int: "an integer",
  integer: "an integer",
  string: "a string",
  number: "a number",
  boolean: "a boolean",
  null: "null",
};

function typeName(expected: string): string {
  return ARTICLE[expected] ?? `a ${expected}`;
}

function literal(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function sizeRule(issue: z.core.$ZodIssueTooBig | z.core.$ZodIssueTooSmall): string {
  const small = issue.code === "too_small";
  const bound = String(small ? issue.minimum : issue.maximum);
  const exclusive = issue.inclusive === false;
  const word = small
    ? (exclusive ? "more than" : "at least")
    : (exclusive ? "fewer than" : "at most");
  switch (issue.origin) {
    case "string":
      return `must have ${word} ${bound} character${bound === "1" ? "" : "s"}`;
    case "array":
    case "set":
      return `must have ${word} ${bound} item${bound === "1" ? "" : "s"}`;
    default: {
      const relation = small
        ? (exclusive ? "greater than" : "at least")
        : (exclusive ? "less than" : "at most");
      return `must be ${relation} ${bound}`;
    }
  }
}

/** The union branch that got furthest into the value, when one went deeper than the union. */
function deepestBranch(issue: z.core.$ZodIssueInvalidUnion): z.core.$ZodIssue | undefined {
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    for (const inner of branch) {
      if (inner.path.length > 0 && (!best || inner.path.length > best.path.length)) best = inner;
    }
  }
  return best;
}

/** What the field must be, from one issue (without the field or the found value). */
function rule(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return `must be ${typeName(issue.expected)}`;
    case "invalid_value":
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map(literal).join(", ")}`;
    case "too_big":
    case "too_small":
      return sizeRule(issue);
    case "invalid_format":
      return issue.format === "regex"
        ? `must match ${(issue as { pattern?: string }).pattern ?? "its pattern"}`
        : `must be a valid ${issue.format}`;
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "invalid_union": {
      const options = (issue as { options?: unknown[] }).options;
      if (options) return `must be one of ${options.map(literal).join(", ")}`;
      const types = issue.errors.flatMap((branch) =>
        branch.length === 1 && branch[0].path.length === 0 ? [rule(branch[0])] : []
      );
      if (types.length < issue.errors.length) return "does not match any of the accepted forms";
      return `must be ${types.map((text) => text.replace(/^must be /, "")).join(" or ")}`;
    }
    default:
      return issue.message;
  }
}

/**
 * The field and the sentence of one issue, `input` being the value that was validated (to
 * quote what was found). The field is `""` when the whole value is at fault.
 */
export function describeIssue(
  issue: z.core.$ZodIssue,
  input: unknown,
): { field: string; message: string } {
  if (issue.code === "unrecognized_keys") {
    const field = fieldPath([...issue.path, issue.keys[0]]);
    const more = issue.keys.length > 1 ? ` (and ${issue.keys.length - 1} more)` : "";
    return { field, message: `${field} is not a known field${more}; remove it` };
  }
  if (issue.code === "invalid_key") {
    const field = fieldPath(issue.path);
    const parent = fieldPath(issue.path.slice(0, -1));
    const key = JSON.stringify(abbreviate(String(issue.path.at(-1)), 40));
    const inner = issue.issues[0] ? rule(issue.issues[0]) : "must be valid";
    return { field, message: `${parent || "the body"} has the key ${key}, whose name ${inner}` };
  }
  if (issue.code === "invalid_union" && !(issue as { options?: unknown[] }).options) {
    const deeper = deepestBranch(issue);
    if (deeper) {
      return describeIssue({ ...deeper, path: [...issue.path, ...deeper.path] }, input);
    }
  }
  const field = fieldPath(issue.path);
  const value = at(input, issue.path);
  const found = describeValue(value);
  // JSON reads a number too large for a double (`1e999`) as infinity.
  const infinite = issue.code === "invalid_type" && typeof value === "number" &&
    !Number.isFinite(value);
  const must = infinite ? "must be a finite number" : rule(issue);
  return { field, message: `${field || "the body"} ${must}; found ${found}` };
}
