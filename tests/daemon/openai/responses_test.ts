/**
 * `POST /v1/responses` at the handler, over the in-test backend: how a Responses request maps
 * onto the chat the provider receives, the event sequence, a failure after the start as one
 * `error` event, a cut reply as `incomplete`, and the refusals (nothing sent).
 */

import assert from "node:assert/strict";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import { post, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

function events(text: string): { event: string; data: Record<string, unknown> }[] {
  return text.split("\n\n").filter((e) => e !== "").map((e) => {
    const [head, data] = e.split("\n");
    assert.match(head, /^event: /);
    assert.match(data, /^data: /);
    const parsed = JSON.parse(data.slice(6));
    assert.equal(parsed.type, head.slice(7), "the event names its data's type");
    return { event: head.slice(7), data: parsed };
  });
}

Deno.test("responses: input items, instructions, options and tools become one chat", async () => {
  const fixture = surface();
  const answer = await fixture.handler(post("/v1/responses", {
    model: MODEL,
    instructions: "Be brief.",
    input: [
      { role: "user", content: [{ type: "input_text", text: "weather?" }] },
      { type: "function_call", call_id: "c1", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "function_call_output", call_id: "c1", output: "sunny" },
    ],
    max_output_tokens: 64,
    temperature: 0.3,
    tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }],
    tool_choice: { type: "function", name: "get_weather" },
    text: { format: { type: "json_object" } },
  }));
  assert.equal(answer.status, 200);
  const object = await answer.json();
  assert.equal(object.object, "response");
  assert.equal(object.store, false);
  const [chat] = fixture.backend.chats;
  const body = chat.request.body;
  assert.deepEqual(body.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: [{ type: "text", text: "weather?" }] },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "c1",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris"}' },
      }],
    },
    { role: "tool", tool_call_id: "c1", content: "sunny" },
  ]);
  assert.equal(body.max_completion_tokens, 64);
  assert.equal(body.temperature, 0.3);
  assert.deepEqual(body.tools, [{
    type: "function",
    function: { name: "get_weather", parameters: { type: "object" } },
  }]);
  assert.deepEqual(body.tool_choice, { type: "function", function: { name: "get_weather" } });
  assert.deepEqual(body.response_format, { type: "json_object" });
});

Deno.test("responses: the streamed event sequence, sequence numbers in order", async () => {
  const fixture = surface();
  const answer = await fixture.handler(post("/v1/responses", {
    model: MODEL,
    input: "one two three",
    stream: true,
  }));
  assert.equal(answer.status, 200);
  const list = events(await answer.text());
  const names = list.map((e) => e.event);
  assert.deepEqual(names.slice(0, 4), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
  ]);
  assert.deepEqual(names.slice(-4), [
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
  assert.deepEqual(list.map((e) => e.data.sequence_number), list.map((_, i) => i));
  const text = list.filter((e) => e.event === "response.output_text.delta")
    .map((e) => e.data.delta).join("");
  const done = list.at(-1)!.data.response as { output: { content: { text: string }[] }[] };
  assert.equal(done.output[0].content[0].text, text);
});

Deno.test("responses: a failure after the start is one error event; the stream ends", async () => {
  const fixture = surface({
    failAfter: { chunks: 2, error: new DaemonError("stream_truncated", "cut") },
  });
  const answer = await fixture.handler(post("/v1/responses", {
    model: MODEL,
    input: "one two three four",
    stream: true,
  }));
  const list = events(await answer.text());
  assert.equal(list.at(-1)!.event, "error");
  assert.equal(list.at(-1)!.data.code, "stream_truncated");
  assert.ok(!list.some((e) => e.event === "response.completed"));
});

Deno.test("responses: state, unsupported items and bad fields are 400 in the OpenAI shape, nothing sent", async () => {
  const fixture = surface();
  const cases: [Record<string, unknown>, string][] = [
    [{ model: MODEL, input: "hi", previous_response_id: "resp_1" }, "previous_response_id"],
    [{ model: MODEL, input: "hi", store: true }, "store"],
    [{ model: MODEL, input: [{ type: "reasoning", summary: [] }] }, "input[0].type"],
    [
      { model: MODEL, input: [{ role: "user", content: [{ type: "input_file" }] }] },
      "input[0].content",
    ],
    [{ model: MODEL, input: "hi", tools: [{ type: "web_search" }] }, "tools[0].type"],
    [{ model: MODEL }, "input"],
    [{ model: MODEL, input: 3 }, "input"],
    [{ input: "hi" }, "model"],
  ];
  for (const [body, param] of cases) {
    const answer = await fixture.handler(post("/v1/responses", body));
    assert.equal(answer.status, 400, JSON.stringify(body));
    const error = (await answer.json()).error;
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, param, JSON.stringify(body));
  }
  assert.equal(fixture.backend.chats.length, 0, "the provider received nothing");
});
