/**
 * The real `ollama` npm library drives a real `Deno.serve` on 127.0.0.1 (port 0) running the
 * daemon handler over the in-test backend (a test double of the network layer:
 * `_test_backend.ts`). Plus handler-level checks of the NDJSON lines and unit tests of the
 * request translation.
 */

import assert from "node:assert/strict";
import { Ollama } from "ollama";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import {
  isZeroKeepAlive,
  parseOllamaRequest,
  translateMessages,
  translateOptions,
} from "../../../daemon/ollama/ollama_request.ts";
import { doneReason } from "../../../daemon/ollama/ollama_reply.ts";
import { get, ndjson, post, serveSurface, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

function client(url: string): Ollama {
  return new Ollama({ host: url });
}

const weatherTool = {
  type: "function",
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

function assertCounters(line: Record<string, unknown>): void {
  for (
    const field of [
      "total_duration",
      "load_duration",
      "prompt_eval_count",
      "prompt_eval_duration",
      "eval_count",
      "eval_duration",
    ]
  ) {
    assert.ok(
      Number.isSafeInteger(line[field]) && (line[field] as number) >= 0,
      `${field} must be a non-negative integer, found ${line[field]}`,
    );
  }
}

Deno.test("ollama SDK: list, show, ps and version", async () => {
  await using server = serveSurface();
  const ollama = client(server.url);
  const { models } = await ollama.list();
  assert.deepEqual(models.map((m) => m.name), [
    "net/verified/acme/big-model:latest",
    "net/tee/devnet/tiny-chat:latest",
    "net/verified/devnet/tiny-chat:latest",
  ]);
  for (const model of models) {
    assert.equal(model.model, model.name, "Open WebUI keys on model, Continue on name");
    assert.match(model.digest, /^[0-9a-f]{64}$/);
    assert.equal(model.size, 0);
    assert.ok(!Number.isNaN(new Date(model.modified_at).getTime()));
    assert.deepEqual(Object.keys(model.details).sort(), [
      "families",
      "family",
      "format",
      "parameter_size",
      "parent_model",
      "quantization_level",
    ]);
  }
  assert.equal(new Set(models.map((m) => m.digest)).size, 3, "one digest per model");

  const shown = await ollama.show({ model: "net/verified/devnet/tiny-chat" });
  assert.equal(shown.parameters, "num_ctx 8192");
  assert.equal(typeof shown.template, "string");
  assert.deepEqual(shown.capabilities, ["completion", "tools"]);
  assert.equal(
    (shown.model_info as unknown as Record<string, unknown>)["net.context_length"],
    8192,
  );
  assert.equal(shown.details.family, "devnet");
  const tee = await ollama.show({ model: "net/tee/devnet/tiny-chat:latest" });
  assert.equal(tee.parameters, "num_ctx 4096");
  assert.deepEqual(tee.capabilities, ["completion"], "the default capabilities");

  await assert.rejects(
    ollama.show({ model: "net/tee/acme/big-model:latest" }),
    (error: unknown) =>
      (error as { status_code?: number }).status_code === 404 &&
      (error as Error).message === "model 'net/tee/acme/big-model:latest' not found",
  );
  assert.deepEqual(await ollama.ps(), { models: [] });
  assert.deepEqual(await ollama.version(), { version: "0.1.0" });
});

Deno.test("ollama: /api/show accepts the legacy name key (Continue)", async () => {
  const fixture = surface();
  const response = await fixture.handler(post("/api/show", { name: `${MODEL}:latest` }));
  assert.equal(response.status, 200);
  const shown = await response.json();
  assert.equal(shown.parameters, "num_ctx 8192");
  assert.deepEqual(Object.keys(shown).sort(), [
    "capabilities",
    "details",
    "license",
    "model_info",
    "modelfile",
    "modified_at",
    "parameters",
    "system",
    "template",
  ]);
  const missing = await fixture.handler(post("/api/show", {}));
  assert.equal(missing.status, 400);
  assert.match((await missing.json()).error, /no "model"/);
});

Deno.test("ollama SDK: non-streaming chat is one done:true object with counters", async () => {
  await using server = serveSurface();
  const response = await client(server.url).chat({
    model: `${MODEL}:latest`,
    messages: [{ role: "user", content: "hello brave new world" }],
    options: { temperature: 0.5, num_predict: 32, stop: ["END"], top_k: 5, num_ctx: 4096 },
  });
  assert.equal(response.model, `${MODEL}:latest`);
  assert.equal(response.message.role, "assistant");
  assert.equal(response.message.content, "Echo: hello brave new world");
  assert.equal(response.done, true);
  assert.equal(response.done_reason, "stop");
  assert.equal(response.prompt_eval_count, 4);
  assert.equal(response.eval_count, 5);
  assertCounters(response as unknown as Record<string, unknown>);
  const body = server.backend.chats[0].request.body;
  assert.equal(body.model, "devnet/tiny-chat");
  assert.equal(body.stream, true);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.equal(body.temperature, 0.5);
  assert.equal(body.max_tokens, 32);
  assert.deepEqual(body.stop, ["END"]);
  assert.equal(body.top_k, undefined, "options without an OpenAI counterpart are dropped");
  assert.equal(body.num_ctx, undefined);
});

Deno.test("ollama SDK: streaming chat ends with done:true and its counters", async () => {
  await using server = serveSurface();
  const parts = [];
  for await (
    const part of await client(server.url).chat({
      model: MODEL,
      messages: [{ role: "user", content: "one two three" }],
      stream: true,
    })
  ) {
    parts.push(part);
  }
  const last = parts[parts.length - 1];
  assert.equal(last.done, true);
  assert.equal(last.done_reason, "stop");
  assert.equal(last.prompt_eval_count, 3);
  assert.equal(last.eval_count, 4);
  assertCounters(last as unknown as Record<string, unknown>);
  assert.ok(parts.slice(0, -1).every((p) => p.done === false));
  assert.equal(parts.map((p) => p.message.content).join(""), "Echo: one two three");
  assert.ok(parts.every((p) => p.model === MODEL && p.message.role === "assistant"));
});

Deno.test("ollama SDK: generate streams and answers non-streaming, with a system prompt", async () => {
  await using server = serveSurface();
  const ollama = client(server.url);
  const whole = await ollama.generate({
    model: MODEL,
    prompt: "why is the sky",
    system: "Be brief.",
  });
  assert.equal(whole.response, "Echo: why is the sky");
  assert.equal(whole.done, true);
  assert.equal(whole.prompt_eval_count, 6);
  assert.equal(whole.eval_count, 5);
  assertCounters(whole as unknown as Record<string, unknown>);
  assert.deepEqual(server.backend.chats[0].request.body.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "why is the sky" },
  ]);

  const parts = [];
  for await (
    const part of await ollama.generate({ model: MODEL, prompt: "blue sky", stream: true })
  ) {
    parts.push(part);
  }
  assert.equal(parts.map((p) => p.response).join(""), "Echo: blue sky");
  assert.equal(parts[parts.length - 1].done, true);
  assert.equal(parts[parts.length - 1].eval_count, 3);
});

Deno.test("ollama SDK: tool calls carry object arguments, and the round trip works", async () => {
  await using server = serveSurface();
  const ollama = client(server.url);
  const messages: {
    role: string;
    content: string;
    tool_calls?: { function: { name: string; arguments: Record<string, unknown> } }[];
    tool_name?: string;
  }[] = [{ role: "user", content: "What is the weather in Paris?" }];
  const first = await ollama.chat({ model: MODEL, messages, tools: [weatherTool] });
  assert.equal(first.done_reason, "stop", "Ollama reports tool calls with done_reason stop");
  const calls = first.message.tool_calls!;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].function.name, "get_weather");
  assert.deepEqual(calls[0].function.arguments, { city: "Paris", unit: "celsius" });
  assert.deepEqual(server.backend.chats[0].request.body.tools, [weatherTool]);

  // Send the assistant message back as the client received it, without ids (as ollama-js
  // users do), and answer with a tool result named after the function.
  messages.push({
    role: "assistant",
    content: "",
    tool_calls: calls.map((c) => ({ function: c.function })),
  });
  messages.push({ role: "tool", content: "21C and sunny", tool_name: "get_weather" });
  const second = await ollama.chat({ model: MODEL, messages, tools: [weatherTool] });
  assert.equal(second.message.content, "The weather is 21C and sunny");
  const forwarded = server.backend.chats[1].request.body.messages as Record<string, unknown>[];
  const assistant = forwarded[1] as {
    tool_calls: { id: string; function: { arguments: string } }[];
  };
  assert.equal(typeof assistant.tool_calls[0].function.arguments, "string");
  assert.deepEqual(JSON.parse(assistant.tool_calls[0].function.arguments), {
    city: "Paris",
    unit: "celsius",
  });
  assert.equal(
    forwarded[2].tool_call_id,
    assistant.tool_calls[0].id,
    "the result answers the call",
  );

  const parts = [];
  for await (
    const part of await ollama.chat({
      model: MODEL,
      messages: [{ role: "user", content: "weather?" }],
      tools: [weatherTool],
      stream: true,
    })
  ) {
    parts.push(part);
  }
  const withCalls = parts.filter((p) => p.message.tool_calls?.length);
  assert.equal(withCalls.length, 1, "the assembled call is sent once");
  assert.deepEqual(withCalls[0].message.tool_calls![0].function.arguments, {
    city: "Paris",
    unit: "celsius",
  });
  assert.equal(parts[parts.length - 1].done, true);
});

Deno.test("ollama SDK: images are sent as image_url parts with a sniffed type", async () => {
  await using server = serveSurface();
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
  await client(server.url).chat({
    model: MODEL,
    messages: [{ role: "user", content: "what is this", images: [png] }],
  });
  const [message] = server.backend.chats[0].request.body.messages as {
    content: { type: string; text?: string; image_url?: { url: string } }[];
  }[];
  assert.equal(message.content[0].text, "what is this");
  assert.equal(message.content[1].type, "image_url");
  assert.equal(message.content[1].image_url!.url, "data:image/png;base64,iVBORw0KGgoAAAAN");
});

Deno.test("ollama SDK: load and unload (Open WebUI) answer done_reason without the network", async () => {
  await using server = serveSurface();
  const ollama = client(server.url);
  const unloaded = await ollama.generate({ model: MODEL, prompt: "", keep_alive: 0 });
  assert.equal(unloaded.done, true);
  assert.equal(unloaded.done_reason, "unload");
  const loaded = await ollama.generate({ model: MODEL, prompt: "" });
  assert.equal(loaded.done_reason, "load");
  const chatUnload = await ollama.chat({ model: MODEL, messages: [], keep_alive: "0s" });
  assert.equal(chatUnload.done_reason, "unload");
  const parts = [];
  for await (
    const part of await ollama.generate({ model: MODEL, prompt: "", keep_alive: 0, stream: true })
  ) {
    parts.push(part);
  }
  assert.equal(parts.length, 1);
  assert.equal(parts[0].done_reason, "unload");
  assert.equal(server.backend.chats.length, 0, "nothing went to the network");
  await assert.rejects(
    ollama.generate({ model: "llama3", prompt: "", keep_alive: 0 }),
    (error: unknown) => (error as { status_code?: number }).status_code === 400,
  );
});

Deno.test("ollama SDK: errors carry the status, and mid-stream errors are thrown", async () => {
  {
    await using server = serveSurface();
    const ollama = client(server.url);
    await assert.rejects(
      ollama.chat({ model: "llama3.2", messages: [{ role: "user", content: "x" }] }),
      (error: unknown) =>
        (error as { status_code?: number }).status_code === 400 &&
        (error as Error).message.includes("net/<tier>/<maker>/<model>"),
    );
    await assert.rejects(
      ollama.chat({ model: "net/tee/acme/big-model", messages: [{ role: "user", content: "x" }] }),
      (error: unknown) =>
        (error as { status_code?: number }).status_code === 404 &&
        (error as Error).message === "model 'net/tee/acme/big-model' not found",
    );
  }
  for (const [code, status] of [["attestation_mock", 403], ["no_provider", 503]] as const) {
    await using server = serveSurface({ failBefore: new DaemonError(code, "refused") });
    await assert.rejects(
      client(server.url).chat({
        model: "net/tee/devnet/tiny-chat",
        messages: [{ role: "user", content: "x" }],
        stream: true,
      }),
      (error: unknown) =>
        (error as { name?: string }).name === "ResponseError" &&
        (error as { status_code?: number }).status_code === status,
    );
  }
  {
    await using server = serveSurface({
      failAfter: { chunks: 3, error: new DaemonError("decryption_failed", "tag mismatch") },
    });
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (
          const part of await client(server.url).chat({
            model: MODEL,
            messages: [{ role: "user", content: "a b c" }],
            stream: true,
          })
        ) {
          seen.push(part.message.content);
        }
      })(),
      (error: unknown) =>
        (error as Error).message === "The provider's sealed reply could not be opened",
    );
    assert.equal(seen.join(""), "Echo: a");
  }
});

Deno.test("ollama: the NDJSON lines are exact, and the stream defaults to on", async () => {
  const fixture = surface();
  const response = await fixture.handler(
    post("/api/chat", { model: MODEL, messages: [{ role: "user", content: "hi" }] }),
  );
  assert.equal(response.headers.get("content-type"), "application/x-ndjson");
  assert.equal(response.headers.get("x-net-tier"), "verified");
  const lines = ndjson(await response.text());
  assert.deepEqual(lines.map((l) => Object.keys(l)), [
    ["model", "created_at", "message", "done"],
    ["model", "created_at", "message", "done"],
    [
      "model",
      "created_at",
      "message",
      "done",
      "done_reason",
      "total_duration",
      "load_duration",
      "prompt_eval_count",
      "prompt_eval_duration",
      "eval_count",
      "eval_duration",
    ],
  ]);
  assert.deepEqual(lines.map((l) => l.message), [
    { role: "assistant", content: "Echo:" },
    { role: "assistant", content: " hi" },
    { role: "assistant", content: "" },
  ]);
  const last = lines[2];
  assert.equal(last.prompt_eval_count, 1);
  assert.equal(last.eval_count, 2);
  // The fixture's clock advances 10 ms per reading: the durations are whole nanoseconds.
  assert.equal((last.total_duration as number) % 1_000_000, 0);
  assert.equal(
    last.total_duration,
    (last.prompt_eval_duration as number) + (last.eval_duration as number),
  );
  assert.ok((last.eval_duration as number) > 0);
});

Deno.test("ollama: thinking is passed on only when asked for", async () => {
  const base = { id: "x", object: "chat.completion.chunk", created: 1, model: "m" };
  const rawChunks = [
    { ...base, choices: [{ index: 0, delta: { role: "assistant", reasoning_content: "hmm" } }] },
    { ...base, choices: [{ index: 0, delta: { content: "42" }, finish_reason: "stop" }] },
    { ...base, choices: [], usage: { prompt_tokens: 2, completion_tokens: 3 } },
  ];
  for (const think of [true, false]) {
    const fixture = surface({ rawChunks });
    const response = await fixture.handler(
      post("/api/chat", {
        model: MODEL,
        think: think ? "high" : false,
        stream: false,
        messages: [{ role: "user", content: "q" }],
      }),
    );
    const body = await response.json();
    assert.equal(body.message.content, "42");
    assert.equal(body.message.thinking, think ? "hmm" : undefined);
    assert.equal(body.eval_count, 3);
    assert.equal(
      fixture.backend.chats[0].request.body.reasoning_effort,
      think ? "high" : undefined,
    );
  }
});

Deno.test("ollama: request translation is validated field by field", () => {
  assert.deepEqual(
    translateOptions({
      temperature: 0,
      top_p: 0.9,
      seed: 1,
      num_predict: -1,
      stop: "x",
      repeat_penalty: 2,
    }),
    { temperature: 0, top_p: 0.9, seed: 1, stop: ["x"] },
  );
  for (const bad of [{ temperature: "hot" }, { seed: 1.5 }, { stop: [1] }, "fast"]) {
    assert.throws(
      () => translateOptions(bad),
      (error: unknown) => error instanceof DaemonError && error.code === "invalid_request_error",
      JSON.stringify(bad),
    );
  }
  assert.throws(
    () => translateMessages([{ role: "tool", content: "orphan" }]),
    (error: unknown) =>
      error instanceof DaemonError && /no earlier assistant tool call/.test(error.message),
  );
  assert.throws(
    () => translateMessages([{ role: "user", content: "x", images: ["not base64!"] }]),
    (error: unknown) => error instanceof DaemonError && error.param === "messages[0].images[0]",
  );
  const translated = translateMessages([
    {
      role: "assistant",
      content: "",
      tool_calls: [
        { function: { name: "a", arguments: { x: 1 } } },
        { function: { name: "b", arguments: {} } },
      ],
    },
    { role: "tool", content: "B", tool_name: "b" },
    { role: "tool", content: "A" },
  ]);
  assert.deepEqual(translated.map((m) => m.tool_call_id), [undefined, "call_0_1", "call_0_0"]);
  const json = parseOllamaRequest("chat", {
    model: MODEL,
    messages: [{ role: "user", content: "x" }],
    format: { type: "object" },
  });
  assert.equal(json.kind, "chat");
  if (json.kind === "chat") {
    assert.deepEqual(json.call.request.body.response_format, {
      type: "json_schema",
      json_schema: { name: "response", schema: { type: "object" } },
    });
    assert.equal(json.call.stream, true, "stream defaults to true");
  }
  assert.throws(() => parseOllamaRequest("generate", { model: MODEL, prompt: 5 }), DaemonError);
  assert.ok(isZeroKeepAlive(0) && isZeroKeepAlive("0") && isZeroKeepAlive("0m"));
  assert.ok(!isZeroKeepAlive("5m") && !isZeroKeepAlive(-1) && !isZeroKeepAlive(undefined));
  assert.equal(doneReason("tool_calls"), "stop");
  assert.equal(doneReason("length"), "length");
});

Deno.test("ollama: GET / and HEAD / answer 200 (liveness probes)", async () => {
  const fixture = surface();
  const root = await fixture.handler(get("/"));
  assert.equal(root.status, 200);
  assert.equal(await root.text(), "Ollama is running");
  const head = await fixture.handler(new Request("http://127.0.0.1:11435/", { method: "HEAD" }));
  assert.equal(head.status, 200);
  assert.equal(head.body, null);
});

// Ollama sends a reply's tool calls in one line at the end, so a streamed /api/chat buffers the
// tool-call fragments: they are bounded like a stream:false reply.
Deno.test("ollama: streamed tool calls are buffered within maxReplyBytes, then an in-stream error", async () => {
  const base = { id: "x", object: "chat.completion.chunk", created: 1, model: "m" };
  const fragment = (fn: Record<string, unknown>) => ({
    ...base,
    choices: [{
      index: 0,
      delta: { tool_calls: [{ index: 0, function: fn }] },
      finish_reason: null,
    }],
  });
  const fixture = surface({
    rawChunks: [
      fragment({ name: "get_weather", arguments: "" }),
      ...Array(1000).fill(fragment({ arguments: '{"city":"Paris"},' })),
    ],
  }, { maxReplyBytes: 256 });
  const response = await fixture.handler(
    post("/api/chat", { model: MODEL, messages: [{ role: "user", content: "weather?" }] }),
  );
  assert.equal(response.status, 200);
  const lines = ndjson(await response.text());
  const last = lines[lines.length - 1];
  assert.deepEqual(Object.keys(last), ["error"]);
  assert.match(String(last.error), /maxReplyBytes/);
  assert.ok(fixture.backend.chats[0].signal.aborted);
  assert.ok(fixture.backend.chats[0].closed);
});
