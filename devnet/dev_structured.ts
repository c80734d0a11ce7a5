/**
 * Structured output for the devnet's dev chat model, `devnet/echo`: a small deterministic
 * generator that writes a JSON value valid for a given JSON Schema, so that `response_format`
 * (`json_schema`, `json_object`) can be followed through the sealed path end to end and a
 * client's parser checked against it.
 *
 * The value is built from the schema alone and the last user message's text, the same for the
 * same request:
 *
 * - `const`, then the first `enum` value; `anyOf` / `oneOf`: the first branch that can be built;
 *   `allOf`: the branches merged; `$ref` to `#`, `#/$defs/…` or `#/definitions/…`;
 * - a string is the user's text — or, with a `format` (`date-time`, `date`, `time`, `email`,
 *   `uri`, `uuid`, `ipv4`, `ipv6`, `hostname`, `duration`), an example of it — cut or padded to
 *   `minLength`/`maxLength`, and it must match `pattern` (a few candidates are tried; a pattern
 *   none of them matches is refused, naming the field);
 * - a number is the count of words in the text, moved into `minimum`/`maximum` (exclusive ones
 *   too) and onto `multipleOf`; an integer the same, whole; a boolean `true`;
 * - an array has `minItems` items (at least one unless `maxItems` is 0), from `prefixItems`
 *   then `items`, made distinct for `uniqueItems`; an object has every declared property
 *   (required ones first, within `maxProperties`) and fills `minProperties` with
 *   `additionalProperties` when they are allowed;
 * - a type list (`["string", "null"]`) takes its first type that is not `null`.
 *
 * Annotations (`title`, `description`, `default`, `examples`, …) are ignored. A recursive schema
 * stops recursing past 8 levels where it can (no optional property, the fewest items).
 *
 * @module
 */

import { EngineError } from "./engine_error.ts";

/** A JSON Schema: an object, or `true` / `false`. */
export type JsonSchema = boolean | { [keyword: string]: unknown };

/** What the generator needs besides the schema. */
interface Context {
  /** The whole schema, for `$ref`. */
  root: JsonSchema;
  /** The user's text. */
  text: string;
  /** Where the generator is, for messages: `properties.city`. */
  path: string;
  /** Nesting depth (recursion stops being optional past {@linkcode SHALLOW}). */
  depth: number;
  /** Where the whole schema came from, for messages. */
  label: string;
}

/** Past this depth, optional properties and items are left out. */
const SHALLOW = 8;
/** Past this depth, the schema is refused (it requires endless nesting). */
const DEEPEST = 64;

const FORMATS: Readonly<Record<string, string>> = {
  "date-time": "2026-01-01T00:00:00Z",
  date: "2026-01-01",
  time: "00:00:00Z",
  email: "echo@example.com",
  uri: "https://example.com/echo",
  url: "https://example.com/echo",
  uuid: "00000000-0000-4000-8000-000000000000",
  ipv4: "192.0.2.1",
  ipv6: "2001:db8::1",
  hostname: "example.com",
  duration: "P1D",
};

function refuse(context: Context, what: string): never {
  const where = context.path ? ` at ${context.path}` : "";
  throw new EngineError(
    "invalid_request",
    `Cannot follow ${context.label}${where}: ${what}`,
  );
}

function at(context: Context, step: string): Context {
  return {
    ...context,
    path: context.path ? `${context.path}.${step}` : step,
    depth: context.depth,
  };
}

function deeper(context: Context, step: string): Context {
  return { ...at(context, step), depth: context.depth + 1 };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function resolve(ref: unknown, context: Context): JsonSchema {
  if (typeof ref !== "string" || !(ref === "#" || ref.startsWith("#/"))) {
    refuse(context, `$ref ${JSON.stringify(ref)} is not a reference inside the schema`);
  }
  let node: unknown = context.root;
  for (const raw of ref.slice(2).split("/").filter((s) => s !== "")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    node = isObject(node) ? node[key] : undefined;
  }
  if (typeof node !== "boolean" && !isObject(node)) {
    refuse(context, `$ref ${JSON.stringify(ref)} names nothing in the schema`);
  }
  return node;
}

/** `allOf` branches and the rest of the schema merged into one (properties and required joined). */
function merged(schema: Record<string, unknown>, context: Context): Record<string, unknown> {
  const { allOf, ...rest } = schema;
  if (!Array.isArray(allOf)) return schema;
  let out: Record<string, unknown> = { ...rest };
  for (const [i, part] of allOf.entries()) {
    const branch = flatten(part as JsonSchema, at(context, `allOf[${i}]`));
    if (branch === false) refuse(context, "allOf has a branch that allows nothing");
    if (branch === true) continue;
    out = {
      ...branch,
      ...out,
      properties: { ...(branch.properties as object), ...(out.properties as object) },
      required: [
        ...new Set([
          ...(Array.isArray(branch.required) ? branch.required : []),
          ...(Array.isArray(out.required) ? out.required : []),
        ]),
      ],
    };
  }
  return out;
}

/** The schema with `$ref` followed and `allOf` merged. */
function flatten(schema: JsonSchema, context: Context): JsonSchema {
  if (typeof schema === "boolean") return schema;
  let node = schema;
  for (let hops = 0; typeof node.$ref === "string"; hops++) {
    if (hops > DEEPEST) refuse(context, "$ref goes round in circles");
    const { $ref, ...rest } = node;
    const target = resolve($ref, context);
    if (target === false) refuse(context, `$ref ${JSON.stringify($ref)} allows nothing`);
    node = target === true ? rest : { ...target, ...rest };
  }
  return merged(node, context);
}

/** A JSON value valid for `schema`, built from the user's `text`. */
export function valueFor(schema: JsonSchema, text: string, label = "the schema"): unknown {
  return build(schema, { root: schema, text, path: "", depth: 0, label });
}

function build(raw: JsonSchema, context: Context, index = 0): unknown {
  if (context.depth > DEEPEST) refuse(context, "the schema requires endless nesting");
  const schema = flatten(raw, context);
  if (schema === true) return context.text;
  if (schema === false) refuse(context, "the schema allows nothing (false)");
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) {
    if (schema.enum.length === 0) refuse(context, "enum is empty");
    return schema.enum[index % schema.enum.length];
  }
  for (const keyword of ["anyOf", "oneOf"] as const) {
    const branches = schema[keyword];
    if (!Array.isArray(branches)) continue;
    const { [keyword]: _, ...rest } = schema;
    const errors: string[] = [];
    for (const [i, branch] of branches.entries()) {
      try {
        const combined = typeof branch === "boolean" ? branch : { ...rest, ...branch };
        return build(combined, at(context, `${keyword}[${i}]`), index);
      } catch (error) {
        if (!(error instanceof EngineError)) throw error;
        errors.push(error.shortMessage);
      }
    }
    refuse(context, `no branch of ${keyword} can be followed (${errors.join("; ")})`);
  }
  switch (typeOf(schema, context)) {
    case "null":
      return null;
    case "boolean":
      return true;
    case "integer":
      return numberFor(schema, context, index, true);
    case "number":
      return numberFor(schema, context, index, false);
    case "string":
      return stringFor(schema, context, index);
    case "array":
      return arrayFor(schema, context);
    default:
      return objectFor(schema, context);
  }
}

const TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"];

function typeOf(schema: Record<string, unknown>, context: Context): string {
  const type = schema.type;
  const listed = Array.isArray(type) ? type : type === undefined ? [] : [type];
  for (const t of listed) {
    if (typeof t !== "string" || !TYPES.includes(t)) {
      refuse(context, `type ${JSON.stringify(t)} is not a JSON Schema type`);
    }
  }
  const chosen = listed.find((t) => t !== "null") ?? listed[0];
  if (chosen !== undefined) return chosen as string;
  if ("properties" in schema || "required" in schema) return "object";
  if ("items" in schema || "prefixItems" in schema) return "array";
  if ("minLength" in schema || "maxLength" in schema || "pattern" in schema) return "string";
  if ("minimum" in schema || "maximum" in schema) return "number";
  return "string";
}

function count(schema: Record<string, unknown>, key: string, context: Context): number | undefined {
  const value = schema[key];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    refuse(context, `${key} must be a non-negative integer, found ${JSON.stringify(value)}`);
  }
  return value;
}

function stringFor(schema: Record<string, unknown>, context: Context, index: number): string {
  const min = count(schema, "minLength", context) ?? 0;
  const max = count(schema, "maxLength", context) ?? Infinity;
  if (min > max) refuse(context, `minLength ${min} is more than maxLength ${max}`);
  const format = typeof schema.format === "string" ? FORMATS[schema.format] : undefined;
  const suffix = index > 0 ? ` ${index + 1}` : "";
  const fit = (text: string) => {
    const chars = [...text].slice(0, max);
    while (chars.length < min) chars.push("x");
    return chars.join("");
  };
  const candidates = [
    ...(format ? [format] : []),
    fit(`${context.text || "echo"}${suffix}`),
    ...["x", "a", "A", "0", "echo", "ECHO", "abc"].map(fit),
  ];
  const pattern = schema.pattern;
  if (pattern === undefined) return candidates[0];
  let regex: RegExp;
  try {
    regex = new RegExp(String(pattern), "u");
  } catch {
    return refuse(context, `pattern ${JSON.stringify(pattern)} is not a regular expression`);
  }
  const found = candidates.find((c) => regex.test(c));
  if (found === undefined) {
    refuse(
      context,
      `devnet/echo cannot write a string matching pattern ${JSON.stringify(pattern)} ` +
        "(it writes the user's text, a format's example, or a few fixed words)",
    );
  }
  return found;
}

function bound(schema: Record<string, unknown>, key: string, context: Context): number | undefined {
  const value = schema[key];
  if (value === undefined || typeof value === "boolean") return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    refuse(context, `${key} must be a finite number, found ${JSON.stringify(value)}`);
  }
  return value;
}

function numberFor(
  schema: Record<string, unknown>,
  context: Context,
  index: number,
  integer: boolean,
): number {
  const step = bound(schema, "multipleOf", context) ?? (integer ? 1 : undefined);
  if (step !== undefined && step <= 0) refuse(context, "multipleOf must be more than 0");
  let low = bound(schema, "minimum", context) ?? -Infinity;
  let high = bound(schema, "maximum", context) ?? Infinity;
  const exLow = schema.exclusiveMinimum === true ? low : bound(schema, "exclusiveMinimum", context);
  const exHigh = schema.exclusiveMaximum === true
    ? high
    : bound(schema, "exclusiveMaximum", context);
  const unit = integer || step !== undefined ? (step ?? 1) : 1e-6;
  if (exLow !== undefined) low = Math.max(low, exLow + (step === undefined ? unit : 0));
  if (exHigh !== undefined) high = Math.min(high, exHigh - (step === undefined ? unit : 0));
  const words = (context.text.match(/\S+/g) ?? []).length + index;
  let value = Math.min(Math.max(words, low), high);
  if (step !== undefined) {
    value = Math.ceil(value / step) * step;
    if (exLow !== undefined && value <= exLow) value += step;
    if (value > high || (exHigh !== undefined && value >= exHigh)) {
      value = Math.floor(high / step) * step;
    }
  }
  const ok = value >= low && value <= high && (exLow === undefined || value > exLow) &&
    (exHigh === undefined || value < exHigh) &&
    (step === undefined || Number.isInteger(Number((value / step).toFixed(9))));
  if (!ok) refuse(context, "no number meets its minimum, maximum and multipleOf");
  return value;
}

function arrayFor(schema: Record<string, unknown>, context: Context): unknown[] {
  const min = count(schema, "minItems", context) ?? 0;
  const max = count(schema, "maxItems", context) ?? Infinity;
  if (min > max) refuse(context, `minItems ${min} is more than maxItems ${max}`);
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems as JsonSchema[] : [];
  const items = schema.items === undefined ? true : schema.items as JsonSchema;
  const wanted = context.depth >= SHALLOW ? min : Math.max(min, 1);
  const length = Math.min(max, items === false ? prefix.length : Math.max(wanted, 0));
  const out: unknown[] = [];
  for (let i = 0; i < length; i++) {
    const item = i < prefix.length ? prefix[i] : items;
    out.push(build(item, deeper(context, `[${i}]`), schema.uniqueItems === true ? i : 0));
  }
  if (out.length < min) refuse(context, `cannot write the ${min} items minItems asks for`);
  if (schema.uniqueItems === true) {
    const texts = out.map((v) => JSON.stringify(v));
    if (new Set(texts).size !== texts.length) refuse(context, "cannot make the items distinct");
  }
  return out;
}

function objectFor(schema: Record<string, unknown>, context: Context): Record<string, unknown> {
  const properties = isObject(schema.properties)
    ? schema.properties as Record<string, JsonSchema>
    : {};
  const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
  const max = count(schema, "maxProperties", context) ?? Infinity;
  const min = count(schema, "minProperties", context) ?? 0;
  const extra = schema.additionalProperties === undefined
    ? true
    : schema.additionalProperties as JsonSchema;
  const names = [
    ...required,
    ...(context.depth >= SHALLOW
      ? []
      : Object.keys(properties).filter((n) => !required.includes(n))),
  ].slice(0, Math.max(max, required.length));
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const property = properties[name] ?? extra;
    if (property === false) {
      refuse(context, `property ${JSON.stringify(name)} is required but not allowed`);
    }
    out[name] = build(property, deeper(context, name));
  }
  for (let i = 1; Object.keys(out).length < min; i++) {
    if (extra === false || i > min + names.length) {
      refuse(context, `cannot write the ${min} properties minProperties asks for`);
    }
    const name = `key${i}`;
    if (!(name in out)) out[name] = build(extra, deeper(context, name));
  }
  return out;
}

/**
 * The JSON text `devnet/echo` answers for `response_format`, or `undefined` when it answers in
 * free text (no `response_format`, or `type: "text"`). `json_object` (JSON mode) is the object
 * `{"echo": <text>}`; `json_schema` a value valid for `json_schema.schema` (JSON mode when the
 * schema is left out).
 *
 * @throws {EngineError} `invalid_request` for a `response_format` that is not one of OpenAI's,
 * or a schema the generator cannot follow (the message names the field).
 */
export function structuredReply(responseFormat: unknown, text: string): string | undefined {
  if (responseFormat === undefined || responseFormat === null) return undefined;
  const format = responseFormat as { type?: unknown; json_schema?: unknown };
  if (
    !isObject(format) || !["text", "json_object", "json_schema"].includes(format.type as string)
  ) {
    throw new EngineError(
      "invalid_request",
      `Cannot follow response_format: its type must be "text", "json_object" or "json_schema", ` +
        `found ${JSON.stringify(isObject(format) ? format.type : format)}`,
    );
  }
  if (format.type === "text") return undefined;
  if (format.type === "json_object") return JSON.stringify({ echo: text });
  const spec = format.json_schema;
  if (
    !isObject(spec) || typeof spec.name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(spec.name)
  ) {
    throw new EngineError(
      "invalid_request",
      "Cannot follow response_format: json_schema must be an object whose name is 1 to 64 " +
        `letters, digits, _ or -, found ${JSON.stringify(isObject(spec) ? spec.name : spec)}`,
    );
  }
  if (spec.schema === undefined) return JSON.stringify({ echo: text });
  if (typeof spec.schema !== "boolean" && !isObject(spec.schema)) {
    throw new EngineError(
      "invalid_request",
      "Cannot follow response_format: json_schema.schema must be a JSON Schema object, found " +
        JSON.stringify(spec.schema),
    );
  }
  return JSON.stringify(
    valueFor(spec.schema as JsonSchema, text, "response_format.json_schema.schema"),
  );
}
