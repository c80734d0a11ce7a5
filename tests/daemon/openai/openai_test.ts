/**
 * The real `openai` npm SDK drives a real `Deno.serve` on 127.0.0.1 (port 0) running the daemon
 * handler over the in-test backend (a test double of the network layer: `_test_backend.ts`).
 * Plus handler-level checks of the exact SSE bytes.
 */

import assert from "node:assert/strict";
import OpenAI, {
  APIError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
} from "openai";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import { parseOpenAIChat } from "../../../daemon/openai/openai.ts";
import { post, serveSurface, sseData, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

function client(url: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: "not-needed", maxRetries: 0 });
}

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string" } },
      required: ["city"],
    },
  },
};

Deno.test("openai SDK: lists the network's models as net/<tier>/<maker>/<model>", async () => {
  await using server = serveSurface();
  const openai = client(server.url);
  const ids: string[] = [];
  for await (const model of openai.models.list()) {
    assert.equal(model.object, "model");
    assert.equal(model.owned_by, model.id.split("/")[2]);
    assert.equal(typeof model.created, "number");
    ids.push(model.id);
  }
  assert.deepEqual(ids, [
    "net/verified/acme/big-model",
    "net/tee/devnet/tiny-chat",
    "net/verified/devnet/tiny-chat",
  ]);
  const one = await openai.models.retrieve("net/tee/devnet/tiny-chat");
  assert.equal(one.id, "net/tee/devnet/tiny-chat");
  await assert.rejects(
    openai.models.retrieve("net/tee/acme/big-model"),
    (error: unknown) =>
      error instanceof NotFoundError && error.code === "model_not_found" &&
      error.message.includes("model 'net/tee/acme/big-model' not found"),
  );
});

Deno.test("openai SDK: non-streaming chat returns the whole completion with usage", async () => {
  await using server = serveSurface();
  const openai = client(server.url);
  const { data: completion, response } = await openai.chat.completions.create({
    model: MODEL,
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "hello brave new world" },
    ],
    temperature: 0.2,
    max_tokens: 64,
  }).withResponse();
  assert.equal(completion.object, "chat.completion");
  assert.match(completion.id, /^chatcmpl-[0-9a-f]{24}$/);
  assert.equal(completion.model, MODEL);
  assert.equal(completion.choices.length, 1);
  assert.equal(completion.choices[0].message.role, "assistant");
  assert.equal(completion.choices[0].message.content, "Echo: hello brave new world");
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.deepEqual(completion.usage, { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 });
  assert.equal(
    response.headers.get("x-net-provider"),
    "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
  );
  assert.equal(response.headers.get("x-net-tier"), "verified");
  assert.equal(response.headers.get("x-net-verdict"), "endorsed-key");
  assert.equal(response.headers.get("x-net-gateway"), "http://127.0.0.1:9201");

  const [forwarded] = server.backend.chats;
  assert.equal(forwarded.request.tier, "verified");
  assert.equal(forwarded.request.model, "devnet/tiny-chat");
  assert.equal(forwarded.request.body.model, "devnet/tiny-chat");
  assert.equal(forwarded.request.body.stream, true, "the provider is always asked to stream");
  assert.deepEqual(forwarded.request.body.stream_options, { include_usage: true });
  assert.equal(forwarded.request.body.temperature, 0.2);
  assert.equal(forwarded.request.body.max_tokens, 64);
  assert.equal(forwarded.request.body.messages.length, 2);
});

async function collect(
  stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>,
): Promise<OpenAI.Chat.Completions.ChatCompletionChunk[]> {
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

Deno.test("openai SDK: streaming without include_usage: role first, deltas, finish, no usage", async () => {
  await using server = serveSurface();
  const openai = client(server.url);
  const chunks = await collect(
    await openai.chat.completions.create({
      model: `${MODEL}:latest`,
      messages: [{ role: "user", content: "one two three" }],
      stream: true,
    }),
  );
  assert.equal(chunks[0].choices[0].delta.role, "assistant");
  assert.equal(chunks[0].choices[0].delta.content, "");
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
  assert.equal(text, "Echo: one two three");
  const last = chunks[chunks.length - 1];
  assert.equal(last.choices[0].finish_reason, "stop");
  assert.ok(chunks.every((c) => c.choices.length === 1), "no usage chunk was asked for");
  assert.ok(chunks.every((c) => !("usage" in c)), "no usage field without include_usage");
  assert.equal(new Set(chunks.map((c) => c.id)).size, 1, "one id on every chunk");
  assert.equal(new Set(chunks.map((c) => c.created)).size, 1, "one created on every chunk");
  assert.ok(
    chunks.every((c) => c.object === "chat.completion.chunk" && c.model === `${MODEL}:latest`),
  );
  assert.deepEqual(
    server.backend.chats[0].request.body.stream_options,
    { include_usage: true },
    "the daemon still asked the provider for usage",
  );
});

Deno.test("openai SDK: streaming with include_usage ends with a usage chunk", async () => {
  await using server = serveSurface();
  const openai = client(server.url);
  const chunks = await collect(
    await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "alpha beta" }],
      stream: true,
      stream_options: { include_usage: true },
    }),
  );
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
  const finish = chunks[chunks.length - 2];
  assert.equal(finish.choices[0].finish_reason, "stop");
  assert.ok(chunks.slice(0, -1).every((c) => c.usage === null), "usage: null before the last");
});

Deno.test("openai SDK: tool calls carry string arguments, and the round trip works", async () => {
  await using server = serveSurface();
  const openai = client(server.url);
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
    { role: "user", content: "What is the weather in Paris?" },
  ];
  const first = await openai.chat.completions.create({
    model: MODEL,
    messages,
    tools: [weatherTool],
  });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, null);
  const calls = choice.message.tool_calls!;
  assert.equal(calls.length, 1);
  const call = calls[0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
  assert.equal(call.id, "call_weather_1");
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  assert.equal(typeof call.function.arguments, "string");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris", unit: "celsius" });
  assert.deepEqual(server.backend.chats[0].request.body.tools, [weatherTool]);

  messages.push(choice.message, { role: "tool", tool_call_id: call.id, content: "21C and sunny" });
  const second = await openai.chat.completions.create({
    model: MODEL,
    messages,
    tools: [weatherTool],
  });
  assert.equal(second.choices[0].message.content, "The weather is 21C and sunny");

  const streamed = await collect(
    await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "weather in Paris?" }],
      tools: [weatherTool],
      stream: true,
    }),
  );
  const fragments = streamed.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
  assert.equal(fragments[0].id, "call_weather_1");
  assert.equal(fragments[0].type, "function", "the first fragment says what it is");
  assert.equal(fragments[0].function?.name, "get_weather");
  assert.equal(typeof fragments[0].function?.arguments, "string");
  assert.ok(fragments.slice(1).every((f) => f.id === undefined && f.type === undefined));
  assert.ok(fragments.every((f) => f.index === 0));
  const args = fragments.map((f) => f.function?.arguments ?? "").join("");
  assert.deepEqual(JSON.parse(args), { city: "Paris", unit: "celsius" });
  assert.equal(streamed[streamed.length - 1].choices[0].finish_reason, "tool_calls");
});

Deno.test("openai SDK: chat.completions.stream() assembles a streamed tool call", async () => {
  await using server = serveSurface();
  const openai = client(server.url);
  const stream = openai.chat.completions.stream({
    model: MODEL,
    messages: [{ role: "user", content: "weather in Paris?" }],
    tools: [weatherTool],
  });
  const done: string[] = [];
  stream.on("tool_calls.function.arguments.done", (event) => done.push(event.name));
  const final = await stream.finalChatCompletion();
  const [call] = final.choices[0].message.tool_calls!;
  assert.equal(call.type, "function");
  assert.equal(call.id, "call_weather_1");
  assert.ok(call.type === "function" && call.function.name === "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris", unit: "celsius" });
  assert.deepEqual(done, ["get_weather"]);
});

Deno.test("openai SDK: runTools({ stream: true }) calls the function and answers with its result", async () => {
  await using server = serveSurface();
  const openai = client(server.url);
  const calls: unknown[] = [];
  const runner = openai.chat.completions.runTools({
    model: MODEL,
    stream: true,
    messages: [{ role: "user", content: "What is the weather in Paris?" }],
    tools: [{
      type: "function",
      function: {
        name: "get_weather",
        description: "The weather in a city",
        parameters: weatherTool.function.parameters,
        parse: JSON.parse,
        function: (args: unknown) => {
          calls.push(args);
          return "18C and cloudy";
        },
      },
    }],
  });
  assert.equal(await runner.finalContent(), "The weather is 18C and cloudy");
  assert.deepEqual(calls, [{ city: "Paris", unit: "celsius" }]);
  assert.equal(server.backend.chats.length, 2, "the call, then the answer to its result");
});

Deno.test("openai SDK: errors surface as the SDK's own types with status and code", async () => {
  {
    await using server = serveSurface();
    const openai = client(server.url);
    await assert.rejects(
      openai.chat.completions.create({
        model: "gpt-4o",
        messages: [{ role: "user", content: "x" }],
      }),
      (error: unknown) =>
        error instanceof BadRequestError && error.status === 400 &&
        error.code === "invalid_request_error" && error.param === "model" &&
        error.message.includes("net/<tier>/<maker>/<model>"),
    );
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: [] }),
      (error: unknown) => error instanceof BadRequestError && error.param === "messages",
    );
    await assert.rejects(
      openai.chat.completions.create({
        model: "net/tee/acme/big-model",
        messages: [{ role: "user", content: "x" }],
      }),
      (error: unknown) => error instanceof NotFoundError && error.code === "model_not_found",
    );
  }
  // Refusals of trust are 403s (a retry cannot fix them), the rest 5xx.
  const refusals = [
    ["attestation_mock", 403],
    ["attestation_stale", 403],
    ["no_gateway", 503],
    ["no_provider", 503],
  ] as const;
  for (const [code, status] of refusals) {
    await using server = serveSurface({ failBefore: new DaemonError(code, "refused") });
    await assert.rejects(
      client(server.url).chat.completions.create({
        model: "net/tee/devnet/tiny-chat",
        messages: [{ role: "user", content: "x" }],
        stream: true,
      }),
      (error: unknown) =>
        (status === 403
          ? error instanceof PermissionDeniedError
          : error instanceof InternalServerError) &&
        (error as InternalServerError).status === status &&
        (error as InternalServerError).code === code,
    );
  }
  {
    await using server = serveSurface({}, { allowedOrigins: [] });
    const openai = new OpenAI({
      baseURL: `${server.url}/v1`,
      apiKey: "x",
      maxRetries: 0,
      defaultHeaders: { origin: "https://evil.example" },
    });
    await assert.rejects(
      openai.models.list(),
      (error: unknown) =>
        error instanceof PermissionDeniedError && error.code === "forbidden_origin",
    );
  }
});

Deno.test("openai SDK: an error after the stream started is raised by the SDK's iterator", async () => {
  await using server = serveSurface({
    failAfter: { chunks: 3, error: new DaemonError("stream_truncated", "cut at chunk 3") },
  });
  const stream = await client(server.url).chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "a b c d e" }],
    stream: true,
  });
  const seen: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta?.content ?? "");
    })(),
    (error: unknown) =>
      error instanceof APIError && error.code === "stream_truncated" &&
      !error.message.includes("cut at chunk"),
  );
  assert.equal(seen.join(""), "Echo: a");
});

Deno.test("openai: the SSE bytes are exactly data: events, a blank line each, then [DONE]", async () => {
  const fixture = surface();
  const response = await fixture.handler(
    post("/v1/chat/completions", {
      model: MODEL,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hi" }],
    }),
  );
  assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
  assert.equal(response.headers.get("content-length"), null);
  const id = "chatcmpl-" + "ab".repeat(12);
  const created = Math.floor(new Date("2026-11-22T12:00:00.000Z").getTime() / 1000);
  const chunk = (delta: unknown, finish: string | null = null) =>
    JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created,
      model: MODEL,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      usage: null,
    });
  assert.deepEqual(sseData(await response.text()), [
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Echo:" }),
    chunk({ content: " hi" }),
    chunk({}, "stop"),
    JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created,
      model: MODEL,
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    }),
    "[DONE]",
  ]);
});

Deno.test("openai: the forwarded body keeps the client's options and drops only what it must", () => {
  const call = parseOpenAIChat({
    model: "net/tee/devnet/tiny-chat:latest",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    stream: false,
    stream_options: { include_usage: true },
    n: 1,
    temperature: 0,
    response_format: { type: "json_object" },
    seed: 7,
  });
  assert.equal(call.stream, false);
  assert.equal(call.includeUsage, false, "include_usage only counts when streaming");
  assert.deepEqual(call.request.body, {
    model: "devnet/tiny-chat",
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    stream: true,
    stream_options: { include_usage: true },
    temperature: 0,
    response_format: { type: "json_object" },
    seed: 7,
  });
  assert.throws(
    () => parseOpenAIChat({ model: MODEL, messages: [{ role: "user", content: "x" }], n: 2 }),
    (error: unknown) => error instanceof DaemonError && error.param === "n",
  );
  assert.throws(
    () =>
      parseOpenAIChat({ model: MODEL, messages: [{ role: "user", content: "x" }], stream: "yes" }),
    (error: unknown) => error instanceof DaemonError && error.param === "stream",
  );
});
