/**
 * The Anthropic dialect at the handler, with the official `@anthropic-ai/sdk` as the oracle (on
 * a real socket, the test double behind): a plain message, a stream with Anthropic's exact event
 * sequence, a tool round trip (`tool_use` → `tool_result`), stop sequences applied by the daemon
 * (also split across pieces), system prompts and multi-turn translated, `count_tokens`, errors
 * in Anthropic's shape (the SDK's own error classes), and refusals of blocks and tools the
 * network does not serve.
 */

import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { post, serveSurface, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

function client(url: string): Anthropic {
  return new Anthropic({ baseURL: url, apiKey: "not-needed", maxRetries: 0 });
}

/** The `event:` names of an SSE body, in order. */
function eventNames(text: string): string[] {
  return [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
}

Deno.test("anthropic SDK: a plain message, with usage and who served it", async () => {
  await using server = serveSurface();
  const anthropic = client(server.url);
  const { data: message, response } = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 64,
    system: "Be brief.",
    messages: [
      { role: "user", content: "first question" },
      { role: "assistant", content: [{ type: "text", text: "first answer" }] },
      { role: "user", content: [{ type: "text", text: "alpha beta" }] },
    ],
  }).withResponse();
  assert.equal(message.type, "message");
  assert.equal(message.role, "assistant");
  assert.equal(message.model, MODEL);
  assert.match(message.id, /^msg_[0-9a-f]{24}$/);
  assert.deepEqual(message.content, [{ type: "text", text: "Echo: alpha beta" }]);
  assert.equal(message.stop_reason, "end_turn");
  assert.equal(message.stop_sequence, null);
  assert.equal(message.usage.output_tokens, 3);
  assert.ok(message.usage.input_tokens > 0);
  assert.equal(response.headers.get("x-net-tier"), "verified");
  assert.equal(response.headers.get("request-id"), response.headers.get("x-request-id"));
  const forwarded = server.backend.chats[0].request.body;
  assert.deepEqual(forwarded.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "first question" },
    { role: "assistant", content: "first answer" },
    { role: "user", content: [{ type: "text", text: "alpha beta" }] },
  ]);
  assert.equal(forwarded.max_tokens, 64);
});

Deno.test("anthropic SDK: a stream in Anthropic's exact event order, assembled by the SDK", async () => {
  await using server = serveSurface();
  const raw = await fetch(`${server.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 64,
      stream: true,
      messages: [{ role: "user", content: "one two" }],
    }),
  });
  assert.equal(raw.status, 200);
  assert.match(raw.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.deepEqual(eventNames(await raw.text()), [
    "message_start",
    "content_block_start",
    "ping",
    "content_block_delta",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  const anthropic = client(server.url);
  const stream = anthropic.messages.stream({
    model: MODEL,
    max_tokens: 64,
    messages: [{ role: "user", content: "one two three" }],
  });
  let text = "";
  stream.on("text", (piece) => text += piece);
  const final = await stream.finalMessage();
  assert.equal(text, "Echo: one two three");
  assert.deepEqual(final.content, [{ type: "text", text: "Echo: one two three" }]);
  assert.equal(final.stop_reason, "end_turn");
  assert.equal(final.usage.output_tokens, 4, "the provider's count, from message_delta");
  assert.equal(final.usage.input_tokens, 3, "the provider's count replaces the estimate");
});

Deno.test("anthropic SDK: a tool round trip, whole and streamed", async () => {
  await using server = serveSurface();
  const anthropic = client(server.url);
  const tools: Anthropic.Tool[] = [{
    name: "get_weather",
    description: "The weather in a city",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  }];
  const question: Anthropic.MessageParam = { role: "user", content: "weather in Paris?" };
  const first = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 64,
    tools,
    tool_choice: { type: "auto" },
    messages: [question],
  });
  assert.equal(first.stop_reason, "tool_use");
  const use = first.content.find((b) => b.type === "tool_use")!;
  assert.ok(use.type === "tool_use");
  assert.equal(use.name, "get_weather");
  assert.deepEqual(use.input, { city: "Paris", unit: "celsius" });
  assert.deepEqual(server.backend.chats[0].request.body.tools, [{
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city",
      parameters: tools[0].input_schema,
    },
  }]);
  assert.equal(server.backend.chats[0].request.body.tool_choice, "auto");

  const streamed = await anthropic.messages.stream({
    model: MODEL,
    max_tokens: 64,
    tools,
    messages: [question],
  }).finalMessage();
  const streamedUse = streamed.content.find((b) => b.type === "tool_use")!;
  assert.ok(streamedUse.type === "tool_use");
  assert.deepEqual(streamedUse.input, { city: "Paris", unit: "celsius" });
  assert.equal(streamed.stop_reason, "tool_use");

  const answer = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 64,
    tools,
    messages: [
      question,
      { role: "assistant", content: first.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: use.id, content: "21C and sunny" }],
      },
    ],
  });
  assert.deepEqual(answer.content, [{ type: "text", text: "The weather is 21C and sunny" }]);
  const sent = server.backend.chats.at(-1)!.request.body.messages as Record<string, unknown>[];
  assert.deepEqual(sent.slice(1), [
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: use.id,
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
      }],
    },
    { role: "tool", tool_call_id: use.id, content: "21C and sunny" },
  ]);
});

Deno.test("anthropic SDK: stop_sequences end the text at the first one, named, whole and streamed", async () => {
  await using server = serveSurface();
  const anthropic = client(server.url);
  const whole = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 64,
    stop_sequences: ["gamma", "beta"],
    messages: [{ role: "user", content: "alpha beta gamma delta" }],
  });
  assert.deepEqual(whole.content, [{ type: "text", text: "Echo: alpha " }]);
  assert.equal(whole.stop_reason, "stop_sequence");
  assert.equal(whole.stop_sequence, "beta");
  // Split across two pieces (" alpha" then " beta"): held back until it is known.
  const streamed = await anthropic.messages.stream({
    model: MODEL,
    max_tokens: 64,
    stop_sequences: ["a be"],
    messages: [{ role: "user", content: "alpha beta gamma" }],
  }).finalMessage();
  assert.deepEqual(streamed.content, [{ type: "text", text: "Echo: alph" }]);
  assert.equal(streamed.stop_reason, "stop_sequence");
  assert.equal(streamed.stop_sequence, "a be");
  const cut = server.backend.chats.at(-1)!;
  assert.ok(cut.signal.aborted && cut.closed, "the generation was stopped");
  assert.equal(server.backend.chats[0].request.body.stop, undefined, "not the provider's to apply");
});

Deno.test("anthropic SDK: count_tokens estimates a translated prompt", async () => {
  await using server = serveSurface();
  const anthropic = client(server.url);
  const small = await anthropic.messages.countTokens({
    model: MODEL,
    messages: [{ role: "user", content: "hi" }],
  });
  const large = await anthropic.messages.countTokens({
    model: MODEL,
    system: "You are a careful assistant who answers in full sentences.",
    messages: [{ role: "user", content: "hi ".repeat(200) }],
  });
  assert.ok(small.input_tokens > 0 && large.input_tokens > small.input_tokens * 10);
  await assert.rejects(
    anthropic.messages.countTokens({
      model: "net/verified/nobody/none",
      messages: [{ role: "user", content: "hi" }],
    }),
    (error: unknown) => error instanceof Anthropic.NotFoundError,
  );
});

Deno.test("anthropic SDK: errors are Anthropic's shape and the SDK's own classes", async () => {
  await using server = serveSurface();
  const anthropic = client(server.url);
  await assert.rejects(
    anthropic.messages.create({
      model: "claude-sonnet-4",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }],
    }),
    (error: unknown) =>
      error instanceof Anthropic.BadRequestError &&
      (error.error as { error: { type: string } }).error.type === "invalid_request_error",
  );
  await assert.rejects(
    anthropic.messages.create({
      model: "net/verified/nobody/none",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }],
    }),
    (error: unknown) => error instanceof Anthropic.NotFoundError,
  );
  const raw = await fetch(`${server.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: -1,
      messages: [{ role: "user", content: "x" }],
    }),
  });
  assert.equal(raw.status, 400);
  const body = await raw.json();
  assert.deepEqual(Object.keys(body), ["type", "error"]);
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "invalid_request_error");
  assert.match(body.error.message, /max_tokens must be at least 1; found a number \(-1\)/);
});

Deno.test("anthropic: blocks and tools the network does not serve are refused, naming them", async () => {
  const fixture = surface();
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { messages: [{ role: "user", content: [{ type: "document", source: {} }] }] },
      /messages\[0\]\.content\[0\] has type "document", which the network does not serve/,
    ],
    [
      {
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "web_search_20250305", name: "web_search" }],
      },
      /tools\[0\] \("web_search", type "web_search_20250305"\) is not a client tool/,
    ],
    [
      {
        messages: [{
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "1" }],
        }],
      },
      /answers tool_use "toolu_x", but no tool_use before it has that id/,
    ],
    [
      { messages: [{ role: "user", content: "x" }], temperature: 1.5 },
      /temperature must be at most 1/,
    ],
    [{ messages: [{ role: "user", content: "x" }], max_tokens: undefined }, /max_tokens/],
  ];
  for (const [patch, message] of cases) {
    const response = await fixture.handler(post("/v1/messages", {
      model: MODEL,
      max_tokens: 16,
      ...patch,
    }));
    assert.equal(response.status, 400, JSON.stringify(patch));
    const body = await response.json();
    assert.equal(body.error.type, "invalid_request_error");
    assert.match(body.error.message, message);
  }
  assert.equal(fixture.backend.chats.length, 0, "nothing was sent");
});

Deno.test("anthropic: structured output with output_config.format, refused without the capability", async () => {
  const fixture = surface();
  const schema = { type: "object", properties: { city: { type: "string" } } };
  const ok = await fixture.handler(post("/v1/messages", {
    model: MODEL,
    max_tokens: 16,
    messages: [{ role: "user", content: "Paris" }],
    output_config: { format: { type: "json_schema", schema } },
  }));
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  assert.deepEqual(fixture.backend.chats[0].request.body.response_format, {
    type: "json_schema",
    json_schema: { name: "output", schema, strict: true },
  });
  const refused = await fixture.handler(post("/v1/messages", {
    model: "net/verified/acme/big-model",
    max_tokens: 16,
    messages: [{ role: "user", content: "Paris" }],
    output_config: { format: { type: "json_schema", schema } },
  }));
  assert.equal(refused.status, 400);
  assert.match((await refused.json()).error.message, /"structured_outputs" capability/);
});
