/**
 * Strict inputs, from the route schemas: a chat message with a role outside its dialect's set,
 * a `content` that is `null` (where the dialect does not allow it), neither a string nor (OpenAI)
 * an array of content parts, or nested past the layer's depth; a prompt or a model name of the
 * wrong type. Each is a 400 in the dialect's error shape that names the field, and the provider
 * (the test double, which records every call) receives nothing. What worked before keeps
 * working: fields the daemon does not know are forwarded as they are.
 */

import assert from "node:assert/strict";
import { ndjson, post, sseData, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

/** `depth` arrays nested in each other around a string. */
function nested(depth: number): unknown {
  let value: unknown = "x";
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

interface Refusal {
  /** The field the error must name. */
  field: string;
  /** When the field is nested too deep: the layer names the deepest path, under `field`. */
  under?: boolean;
}

/** Sends `body` to `path` and checks the 400, its shape and its field; nothing reached the backend. */
async function refused(path: string, body: unknown, expected: Refusal): Promise<void> {
  const fixture = surface();
  const response = await fixture.handler(post(path, body));
  const where = `${path} ${JSON.stringify(body).slice(0, 120)}`;
  assert.equal(response.status, 400, where);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const answer = await response.json();
  assert.deepEqual(Object.keys(answer), ["error"], where);
  const matches = (field: string) =>
    expected.under ? field.startsWith(expected.field) : field === expected.field;
  if (path.startsWith("/v1/")) {
    assert.deepEqual(Object.keys(answer.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(answer.error.type, "invalid_request_error", where);
    assert.equal(answer.error.code, "invalid_request_error", where);
    assert.ok(matches(answer.error.param), `${where}: param ${answer.error.param}`);
    assert.ok(answer.error.message.includes(answer.error.param), answer.error.message);
  } else {
    assert.equal(typeof answer.error, "string", where);
    // Ollama's error is a message alone: the field is what it names first.
    const named = /^Cannot (?:read the request|parse the request body): (\S+) /
      .exec(answer.error)?.[1] ?? "";
    assert.ok(matches(named), `${where}: ${answer.error}`);
  }
  assert.equal(fixture.backend.chats.length, 0, `${where}: the provider received nothing`);
  assert.equal(fixture.backend.listCalls, 0, `${where}: the network was not asked`);
}

const chats = [
  { path: "/v1/chat/completions", roles: "system, developer, user, assistant, tool, function" },
  { path: "/api/chat", roles: "system, user, assistant, tool" },
];

Deno.test("strict input: a role outside the dialect's set is refused, naming it", async () => {
  for (const { path, roles } of chats) {
    await refused(path, { model: MODEL, messages: [{ role: "hacker", content: "hi" }] }, {
      field: "messages[0].role",
    });
    const fixture = surface();
    const response = await fixture.handler(
      post(path, { model: MODEL, messages: [{ role: "hacker", content: "hi" }] }),
    );
    const text = await response.text();
    assert.ok(text.includes(roles), `${path} lists the roles it takes: ${text}`);
    assert.ok(text.includes('found \\"hacker\\"'), `${path} shows what it found: ${text}`);
  }
  // The other dialect's roles are not borrowed.
  await refused("/api/chat", { model: MODEL, messages: [{ role: "developer", content: "x" }] }, {
    field: "messages[0].role",
  });
});

Deno.test("strict input: a null, non-string or non-parts content is refused, naming it", async () => {
  for (const { path } of chats) {
    for (const content of [null, 7, true, { text: "hi" }]) {
      await refused(path, {
        model: MODEL,
        messages: [{ role: "system", content: "be brief" }, { role: "user", content }],
      }, { field: "messages[1].content" });
    }
  }
  // OpenAI: an array must hold content parts (objects with a type); Ollama: only a string.
  await refused("/v1/chat/completions", {
    model: MODEL,
    messages: [{ role: "user", content: ["hi"] }],
  }, { field: "messages[0].content[0]" });
  await refused("/v1/chat/completions", {
    model: MODEL,
    messages: [{ role: "user", content: [{ text: "hi" }] }],
  }, { field: "messages[0].content[0].type" });
  await refused("/api/chat", {
    model: MODEL,
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  }, { field: "messages[0].content" });
  // A null content in an assistant message is OpenAI's only where it calls tools.
  await refused("/v1/chat/completions", {
    model: MODEL,
    messages: [{ role: "assistant", content: null }, { role: "user", content: "x" }],
  }, { field: "messages[0].content" });
  await refused("/api/chat", {
    model: MODEL,
    messages: [{
      role: "assistant",
      content: null,
      tool_calls: [{ function: { name: "f", arguments: {} } }],
    }],
  }, { field: "messages[0].content" });
});

Deno.test("strict input: a content nested past the layer's depth is refused, naming it", async () => {
  for (const { path } of chats) {
    await refused(path, { model: MODEL, messages: [{ role: "user", content: nested(40) }] }, {
      field: "messages[0].content",
      under: true,
    });
  }
  // Within the depth limit, a nested array is still not content.
  await refused("/api/chat", { model: MODEL, messages: [{ role: "user", content: nested(5) }] }, {
    field: "messages[0].content",
  });
  await refused("/v1/chat/completions", {
    model: MODEL,
    messages: [{ role: "user", content: nested(5) }],
  }, { field: "messages[0].content[0]" });
});

Deno.test("strict input: /api/generate's prompt and /api/show's model and name are checked", async () => {
  for (const prompt of [null, 7, ["hi"], nested(40)]) {
    await refused("/api/generate", { model: MODEL, prompt }, {
      field: "prompt",
      under: Array.isArray(prompt),
    });
  }
  for (const field of ["model", "name"]) {
    for (const value of [null, 7, { id: MODEL }, nested(40)]) {
      await refused("/api/show", { [field]: value }, {
        field,
        under: Array.isArray(value) || typeof value === "object",
      });
    }
  }
});

Deno.test("strict input: what worked before still works, and unknown fields are forwarded", async () => {
  const fixture = surface();
  const tool = { type: "function", function: { name: "f", parameters: { type: "object" } } };
  const openai = await fixture.handler(post("/v1/chat/completions", {
    model: MODEL,
    stream: true,
    temperature: 0.2,
    tools: [tool],
    response_format: { type: "json_object" },
    x_vendor_option: { deep: [1, 2, 3] },
    messages: [
      { role: "developer", content: "be brief" },
      { role: "user", content: [{ type: "text", text: "hi" }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "42" },
      { role: "user", content: "thanks", name: "ada" },
    ],
  }));
  assert.equal(openai.status, 200);
  assert.equal(sseData(await openai.text()).at(-1), "[DONE]");
  const forwarded = fixture.backend.chats[0].request.body;
  assert.equal(forwarded.temperature, 0.2);
  assert.deepEqual(forwarded.tools, [tool]);
  assert.deepEqual(forwarded.response_format, { type: "json_object" });
  assert.deepEqual(forwarded.x_vendor_option, { deep: [1, 2, 3] });
  assert.equal((forwarded.messages[4] as { name?: string }).name, "ada");

  const ollama = await fixture.handler(post("/api/chat", {
    model: MODEL,
    keep_alive: "5m",
    options: { temperature: 0.3, num_ctx: 4096, mirostat: 1 },
    messages: [{ role: "user", content: "hi", images: null }, { role: "assistant" }, {
      role: "user",
      content: "again",
    }],
  }));
  assert.equal(ollama.status, 200);
  assert.equal(ndjson(await ollama.text()).at(-1)?.done, true);
  assert.equal(fixture.backend.chats[1].request.body.temperature, 0.3);
  const generate = await fixture.handler(post("/api/generate", {
    model: MODEL,
    prompt: "hi",
    system: null,
    raw: true,
    stream: false,
  }));
  assert.equal(generate.status, 200);
  await generate.body?.cancel();
  assert.equal(fixture.backend.chats.length, 3);
});
