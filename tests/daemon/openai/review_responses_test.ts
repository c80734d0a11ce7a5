/**
 * Review of `POST /v1/responses` as a hostile provider or a careless client would use it: tool
 * calls streamed in unusual but valid orders come out as the non-streamed answer does, a
 * stream the events cannot represent is one `error` event (never an internal error), and the
 * request refusals the mapping must make before anything is sent.
 */

import assert from "node:assert/strict";
import { eventually } from "../_load.ts";
import { post, serveSurface, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";
const BASE = { id: "chatcmpl-x", object: "chat.completion.chunk", created: 1, model: "m" };

function toolDelta(index: number, fields: Record<string, unknown>) {
  return {
    ...BASE,
    choices: [{ index: 0, delta: { tool_calls: [{ index, ...fields }] }, finish_reason: null }],
  };
}

const END = [
  { ...BASE, choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
  { ...BASE, choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } },
];

function events(text: string): { event: string; data: Record<string, unknown> }[] {
  return text.split("\n\n").filter((e) => e !== "").map((e) => {
    const [head, data] = e.split("\n");
    return { event: head.slice("event: ".length), data: JSON.parse(data.slice("data: ".length)) };
  });
}

/** The streamed and the whole answer to one scripted reply. */
async function bothWays(rawChunks: unknown[]) {
  const streamed = surface({ rawChunks });
  const answer = await streamed.handler(
    post("/v1/responses", { model: MODEL, input: "hi", stream: true }),
  );
  assert.equal(answer.status, 200);
  const list = events(await answer.text());
  const whole = surface({ rawChunks });
  const object = await (await whole.handler(post("/v1/responses", { model: MODEL, input: "hi" })))
    .json();
  return { list, object, logged: [...streamed.logged, ...whole.logged] };
}

Deno.test("responses stream: a tool call whose index is not 0 streams like the whole answer (no internal error)", async () => {
  const { list, object, logged } = await bothWays([
    toolDelta(3, { id: "call_3", function: { name: "lookup", arguments: '{"q":' } }),
    toolDelta(3, { function: { arguments: '"x"}' } }),
    ...END,
  ]);
  assert.deepEqual(logged, [], "nothing unexpected logged");
  const last = list.at(-1)!;
  assert.equal(last.event, "response.completed", JSON.stringify(last.data));
  const done = last.data.response as { output: unknown[] };
  assert.deepEqual(done.output, object.output);
  assert.deepEqual(
    object.output.map((o: { call_id: string; arguments: string }) => [o.call_id, o.arguments]),
    [
      ["call_3", '{"q":"x"}'],
    ],
  );
});

Deno.test("responses stream: a tool call whose name comes after its id streams like the whole answer", async () => {
  const { list, object, logged } = await bothWays([
    toolDelta(0, { id: "call_a", function: { name: "first", arguments: "{}" } }),
    toolDelta(1, { id: "call_b" }),
    toolDelta(1, { function: { name: "second", arguments: "{}" } }),
    ...END,
  ]);
  assert.deepEqual(logged, []);
  const last = list.at(-1)!;
  assert.equal(last.event, "response.completed", JSON.stringify(last.data));
  assert.deepEqual((last.data.response as { output: unknown[] }).output, object.output);
  assert.deepEqual(object.output.map((o: { name: string }) => o.name), ["first", "second"]);
});

Deno.test("responses stream: a tool call resumed after its item is done is one provider error event", async () => {
  const { list, logged } = await bothWays([
    toolDelta(0, { id: "call_a", function: { name: "first", arguments: '{"a":' } }),
    toolDelta(1, { id: "call_b", function: { name: "second", arguments: "{}" } }),
    toolDelta(0, { function: { arguments: "1}" } }),
    ...END,
  ]);
  assert.deepEqual(logged, []);
  const last = list.at(-1)!;
  assert.equal(last.event, "error");
  assert.equal(last.data.code, "provider_error");
  assert.match(String(last.data.message), /tool call 0/);
  assert.ok(!list.some((e) => e.event === "response.completed"));
  // The item the stream said was done is never taken back.
  const doneArgs = list.filter((e) => e.event === "response.function_call_arguments.done")
    .map((e) => e.data.arguments);
  assert.deepEqual(doneArgs, ['{"a":']);
});

Deno.test("responses stream: sequence numbers count every event from 0, errors included", async () => {
  const { list } = await bothWays([
    toolDelta(0, { id: "call_a", function: { arguments: "{}" } }), // never named
    ...END,
  ]);
  assert.deepEqual(list.map((e) => e.data.sequence_number), list.map((_, i) => i));
  assert.equal(list.at(-1)!.event, "error");
  assert.match(String(list.at(-1)!.data.message), /no function name/);
});

Deno.test("responses: an output without its call, a part without text, an unknown text format → 400 naming the field, nothing sent", async () => {
  const fixture = surface();
  const cases: [Record<string, unknown>, string][] = [
    [
      { input: [{ type: "function_call_output", call_id: "call_nowhere", output: "42" }] },
      "input[0].call_id",
    ],
    [
      {
        input: [
          { role: "user", content: "weather?" },
          { type: "function_call_output", call_id: "c1", output: "sunny" },
          { type: "function_call", call_id: "c1", name: "get_weather", arguments: "{}" },
        ],
      },
      "input[1].call_id",
    ],
    [
      { input: [{ role: "user", content: [{ type: "input_text", text: 5 }] }] },
      "input[0].content[0].text",
    ],
    [{ input: [{ role: "user", content: [{ type: "input_text" }] }] }, "input[0].content[0].text"],
    [{ input: [{ role: "user" }] }, "input[0].content"],
    [{ input: "hi", text: { format: { type: "xml" } } }, "text.format.type"],
  ];
  for (const [body, param] of cases) {
    const answer = await fixture.handler(post("/v1/responses", { model: MODEL, ...body }));
    assert.equal(answer.status, 400, JSON.stringify(body));
    const error = (await answer.json()).error;
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, param, JSON.stringify(body));
  }
  assert.equal(fixture.backend.chats.length, 0, "the provider received nothing");
});

Deno.test("responses: what OpenAI accepts is accepted: previous_response_id null, store false, text format text", async () => {
  const fixture = surface();
  for (
    const extra of [
      { previous_response_id: null },
      { store: false },
      { store: null },
      { text: { format: { type: "text" } } },
      { instructions: null },
    ]
  ) {
    const answer = await fixture.handler(
      post("/v1/responses", { model: MODEL, input: "hi", ...extra }),
    );
    assert.equal(answer.status, 200, JSON.stringify(extra));
    await answer.body?.cancel();
  }
});

Deno.test("responses and completions: a client that goes away mid-stream aborts the provider's reply and closes it", async () => {
  for (
    const [path, body] of [
      ["/v1/responses", { model: MODEL, input: "one two three four five", stream: true }],
      ["/v1/completions", { model: MODEL, prompt: "one two three four five", stream: true }],
    ] as const
  ) {
    await using served = serveSurface({ stallAfter: 3 });
    const controller = new AbortController();
    const answer = await fetch(`${served.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    assert.equal(answer.status, 200);
    const reader = answer.body!.getReader();
    const first = await reader.read();
    assert.ok(!first.done && first.value.length > 0, "some events arrived");
    controller.abort();
    await reader.cancel().catch(() => {});
    const [chat] = served.backend.chats;
    await eventually(
      () => chat.signal.aborted && chat.closed,
      2000,
      () => `${path}: aborted ${chat.signal.aborted}, closed ${chat.closed}`,
    );
    await eventually(
      () => served.logged.some((l) => /cancelled by the client/.test(l.message)),
      2000,
      () => `${path}: ${JSON.stringify(served.logged.map((l) => l.message))}`,
    );
    assert.ok(
      !served.logged.some((l) => /unexpected/.test(l.message)),
      JSON.stringify(served.logged.map((l) => l.message)),
    );
  }
});

Deno.test("responses stream: an empty reply is one empty message, as in the whole answer", async () => {
  const { list, object } = await bothWays([
    { ...BASE, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    { ...BASE, choices: [], usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 } },
  ]);
  const last = list.at(-1)!;
  assert.equal(last.event, "response.completed");
  assert.deepEqual((last.data.response as { output: unknown[] }).output, object.output);
  assert.equal(object.output.length, 1);
  assert.deepEqual(list.map((e) => e.event).slice(2, -1), [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
  ]);
});
