/**
 * The field tables of `docs/indexer.md` are checked against the answers' schemas (as the
 * generated OpenAPI document has them, from the zod schemas): every field a table names exists,
 * and every field of the answer is in its table — as a row, under a row for one of its parents
 * (whose meaning then describes it), or over rows for its children. A field added to a schema
 * without its row, or a row left for a field that went away, fails here.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createIndexerService } from "../../indexer/handler.ts";
import { initialState } from "../../indexer/state.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DOCUMENT = createIndexerService({ state: () => initialState(30, 60) }).document();

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
};
const COMPONENTS = (DOCUMENT.components?.schemas ?? {}) as Record<string, Schema>;

/** Every field path of an answer's schema: `a.b`, arrays as `a[]` (`a[].b` for their items). */
function fieldPaths(schema: Schema, prefix = "", out = new Set<string>(), depth = 0): Set<string> {
  while (schema.$ref) schema = COMPONENTS[schema.$ref.split("/").at(-1)!];
  if (depth > 10) return out;
  for (const variant of schema.anyOf ?? schema.oneOf ?? []) {
    fieldPaths(variant, prefix, out, depth + 1);
  }
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const path = prefix ? `${prefix}.${name}` : name;
    out.add(path);
    fieldPaths(field, path, out, depth + 1);
  }
  if (schema.items) {
    if (prefix) out.add(`${prefix}[]`);
    fieldPaths(schema.items, `${prefix}[]`, out, depth + 1);
  }
  return out;
}

/** The 200 JSON answer's schema of `GET path`. */
function answerSchema(path: string): Schema {
  const item = (DOCUMENT.paths as Record<string, Record<string, unknown>>)[path];
  const get = item?.get as {
    responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  };
  const schema = get?.responses["200"]?.content?.["application/json"]?.schema;
  assert.ok(schema, `GET ${path} has no JSON answer in the document`);
  return schema;
}

/**
 * The field paths a table's first column names: `a.b`, several as `` `a.b`, `.c` `` (a sibling
 * of the one before), `…` ending a name that is cut short (any name it starts).
 */
function documentedPaths(section: string): string[] {
  const out: string[] = [];
  const lines = section.split("\n");
  const header = lines.findIndex((line) => /^\|\s*field\s*\|/.test(line));
  assert.ok(header >= 0, "the section has no field table");
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break;
    let previous = "";
    for (const name of line.split("|")[1].matchAll(/`([^`]+)`/g).map((m) => m[1])) {
      const path = name.startsWith(".")
        ? previous.slice(0, previous.lastIndexOf(".")) + name
        : name;
      out.push(path);
      previous = path;
    }
  }
  return out;
}

/** Whether the documented path `doc` names the schema path `field` (`…` matches any rest). */
function names(doc: string, field: string): boolean {
  return doc.endsWith("…") ? field.startsWith(doc.slice(0, -1)) : doc === field;
}

/** Whether `parent` is `child` or one of its ancestors. */
function under(child: string, parent: string): boolean {
  return child === parent || child.startsWith(`${parent}.`) || child.startsWith(`${parent}[]`);
}

/** Each documented endpoint: its section, and where its table's fields sit in the answer. */
const TABLES: { path: string; base: string }[] = [
  { path: "/stats", base: "" },
  { path: "/models", base: "models[]" },
  { path: "/providers", base: "providers[]" },
  { path: "/providers/{address}", base: "" },
  { path: "/epochs", base: "" },
  { path: "/health", base: "" },
];

const DOC = await Deno.readTextFile(`${ROOT}docs/indexer.md`);

for (const { path, base } of TABLES) {
  Deno.test(`docs/indexer.md: the GET ${path} table matches its answer's fields`, () => {
    const start = DOC.indexOf(`\n### \`GET ${path}\``);
    assert.ok(start >= 0, `no section for GET ${path}`);
    const section = DOC.slice(start + 1, DOC.indexOf("\n### ", start + 1));
    const documented = documentedPaths(section);
    const all = [...fieldPaths(answerSchema(path))];
    const fields = base
      ? all.filter((f) => f.startsWith(`${base}.`)).map((f) => f.slice(base.length + 1))
      : all;
    assert.ok(fields.length > 3, `GET ${path}: ${fields.length} fields in the schema`);
    const unknown = documented.filter((doc) => !fields.some((field) => names(doc, field)));
    assert.deepEqual(unknown, [], `GET ${path}: rows for fields the answer does not have`);
    const missing = fields.filter((field) =>
      !documented.some((doc) =>
        names(doc, field) || under(field, doc) ||
        fields.some((f) => names(doc, f) && under(f, field))
      )
    );
    assert.deepEqual(missing, [], `GET ${path}: fields without a row`);
  });
}

Deno.test("docs/indexer.md checks: a forgotten row and a stale row are both found", () => {
  const fields = ["a", "a.b", "a.c", "d", "d[]", "d[].e"];
  const covered = (documented: string[]) =>
    fields.filter((field) =>
      !documented.some((doc) =>
        names(doc, field) || under(field, doc) ||
        fields.some((f) => names(doc, f) && under(f, field))
      )
    );
  assert.deepEqual(covered(["a.b", "a.c", "d[]"]), []);
  assert.deepEqual(covered(["a.b", "d"]), ["a.c"], "a.c forgotten");
  assert.deepEqual(covered(["a.…", "d"]), [], "a.… names both");
  assert.deepEqual(
    documentedPaths("| field | meaning |\n| - | - |\n| `a.b`, `.c` | x |\n| `d[].e` | y |\n"),
    ["a.b", "a.c", "d[].e"],
  );
});
