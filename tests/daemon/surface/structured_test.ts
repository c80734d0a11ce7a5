/**
 * Structured outputs on every chat surface, at the handler (the test double behind it): a JSON
 * schema or JSON mode reaches the provider as `response_format` when the model's providers
 * advertise the capability (`structured_outputs`; `json_mode` or `structured_outputs` for JSON
 * mode), and is refused with a 400 naming the capability and the field otherwise — nothing is
 * sent, the model is never answered in free text.
 */

import assert from "node:assert/strict";
import { post, surface } from "../_surface.ts";

const CAPABLE = "net/verified/devnet/tiny-chat";
const PLAIN = "net/verified/acme/big-model";
const SCHEMA = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
  additionalProperties: false,
};
const messages = [{ role: "user", content: "Paris" }];

/** Each surface: its path, a body asking for `schema` (or JSON mode), its field, its error. */
const SURFACES = [
  {
    name: "chat completions",
    path: "/v1/chat/completions",
    body: (model: string, json: "schema" | "object") => ({
      model,
      messages,
      response_format: json === "schema"
        ? { type: "json_schema", json_schema: { name: "city", schema: SCHEMA, strict: true } }
        : { type: "json_object" },
    }),
    field: "response_format",
    message: async (r: Response) => (await r.json()).error,
  },
  {
    name: "responses",
    path: "/v1/responses",
    body: (model: string, json: "schema" | "object") => ({
      model,
      input: "Paris",
      text: {
        format: json === "schema"
          ? { type: "json_schema", name: "city", schema: SCHEMA, strict: true }
          : { type: "json_object" },
      },
    }),
    field: "text.format",
    message: async (r: Response) => (await r.json()).error,
  },
  {
    name: "completions",
    path: "/v1/completions",
    body: (model: string, json: "schema" | "object") => ({
      model,
      prompt: "Paris",
      response_format: json === "schema"
        ? { type: "json_schema", json_schema: { name: "city", schema: SCHEMA } }
        : { type: "json_object" },
    }),
    field: "response_format",
    message: async (r: Response) => (await r.json()).error,
  },
  {
    name: "ollama chat",
    path: "/api/chat",
    body: (model: string, json: "schema" | "object") => ({
      model,
      messages,
      stream: false,
      format: json === "schema" ? SCHEMA : "json",
    }),
    field: "format",
    message: async (r: Response) => ({ message: (await r.json()).error, param: "format" }),
  },
  {
    name: "ollama generate",
    path: "/api/generate",
    body: (model: string, json: "schema" | "object") => ({
      model,
      prompt: "Paris",
      stream: false,
      format: json === "schema" ? SCHEMA : "json",
    }),
    field: "format",
    message: async (r: Response) => ({ message: (await r.json()).error, param: "format" }),
  },
];

for (const s of SURFACES) {
  Deno.test(`structured outputs (${s.name}): passed to a model that advertises them`, async () => {
    const fixture = surface();
    const schema = await fixture.handler(post(s.path, s.body(CAPABLE, "schema")));
    assert.equal(schema.status, 200, await schema.clone().text());
    await schema.body?.cancel();
    const format = fixture.backend.chats[0].request.body.response_format as {
      type: string;
      json_schema: { schema: unknown };
    };
    assert.equal(format.type, "json_schema");
    assert.deepEqual(format.json_schema.schema, SCHEMA);
    const object = await fixture.handler(post(s.path, s.body(CAPABLE, "object")));
    assert.equal(object.status, 200);
    await object.body?.cancel();
    assert.deepEqual(fixture.backend.chats[1].request.body.response_format, {
      type: "json_object",
    });
  });

  Deno.test(`structured outputs (${s.name}): refused with a 400 naming the capability`, async () => {
    const fixture = surface();
    for (
      const [json, capability] of [
        ["schema", '"structured_outputs"'],
        ["object", '"json_mode" or "structured_outputs"'],
      ] as const
    ) {
      const refused = await fixture.handler(post(s.path, s.body(PLAIN, json)));
      assert.equal(refused.status, 400);
      const error = await s.message(refused);
      assert.equal(error.param, s.field);
      assert.match(
        error.message,
        new RegExp(
          `^Cannot give (a JSON schema|JSON mode) \\(${s.field.replace(".", "\\.")}\\) for ` +
            `"${PLAIN}": its providers do not advertise the ${capability} capability`,
        ),
      );
    }
    assert.equal(fixture.backend.chats.length, 0, "nothing was sent");
  });
}
