/**
 * Today's client libraries, unmodified, against the real daemon in front of the real devnet:
 * embeddings (`openai`, `ollama`, the Vercel AI SDK, LangChain), tool calls through the sealed
 * path in both dialects (the dev model's documented rule, `devnet/dev_tools.ts`), Ollama's
 * `show` capabilities and `pull`. One devnet per test, several clients on it.
 */

import assert from "node:assert/strict";
import OpenAI from "openai";
import { Ollama } from "ollama";
import { createOpenAI } from "@ai-sdk/openai";
import { embed, embedMany, generateText, streamText } from "ai";
import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { startDevnet } from "../../../devnet/network.ts";
import { startDaemon } from "../_e2e.ts";
import { okJson } from "../../_http.ts";

const EMBED = "net/verified/devnet/embed";
const CHAT = "net/verified/devnet/echo";

function openai(url: string): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i] * b[i];
  return dot / (Math.hypot(...a) * Math.hypot(...b));
}

function decodeFloat32(base64: string): number[] {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  return Array.from(new Float32Array(bytes.buffer));
}

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    },
  },
};

Deno.test("embeddings: openai (float, base64, dimensions), ollama embed/embeddings, AI SDK, LangChain", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const client = openai(daemon.url);

  const { data: floats, response } = await client.embeddings.create({
    model: EMBED,
    input: ["the cat sat on the mat", "a cat on a mat", "quarterly revenue grew"],
    encoding_format: "float",
  }).withResponse();
  assert.equal(floats.object, "list");
  assert.equal(floats.model, EMBED);
  assert.deepEqual(floats.data.map((d) => d.index), [0, 1, 2]);
  assert.ok(floats.data.every((d) => d.embedding.length === 256));
  assert.ok(floats.usage.prompt_tokens > 0);
  assert.equal(floats.usage.total_tokens, floats.usage.prompt_tokens);
  const [cat, cat2, revenue] = floats.data.map((d) => d.embedding);
  assert.ok(cosine(cat, cat2) > cosine(cat, revenue), "texts sharing words are closer");
  assert.equal(response.headers.get("x-net-tier"), "verified");
  assert.ok(devnet.providers.some((p) => p.address === response.headers.get("x-net-provider")));

  // The SDK's default asks for base64 and decodes it: the same numbers as the floats.
  const sdkDefault = await client.embeddings.create({
    model: EMBED,
    input: "the cat sat on the mat",
  });
  assert.deepEqual(sdkDefault.data[0].embedding, cat);
  const raw = await okJson(fetch(`${daemon.url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: EMBED,
      input: "the cat sat on the mat",
      encoding_format: "base64",
    }),
  }));
  assert.equal(typeof raw.data[0].embedding, "string");
  assert.deepEqual(decodeFloat32(raw.data[0].embedding), cat);

  const short = await client.embeddings.create({ model: EMBED, input: "hello", dimensions: 16 });
  assert.equal(short.data[0].embedding.length, 16);
  assert.ok(Math.abs(Math.hypot(...short.data[0].embedding) - 1) < 1e-5);

  const ollama = new Ollama({ host: daemon.url });
  const embedded = await ollama.embed({
    model: `${EMBED}:latest`,
    input: ["the cat sat on the mat", "hello"],
  });
  assert.equal(embedded.embeddings.length, 2);
  assert.deepEqual(embedded.embeddings[0], cat);
  assert.ok(embedded.prompt_eval_count > 0);
  const older = await ollama.embeddings({ model: EMBED, prompt: "the cat sat on the mat" });
  assert.deepEqual(older.embedding, cat);

  const provider = createOpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused" });
  const one = await embed({
    model: provider.embedding(EMBED),
    value: "the cat sat on the mat",
    maxRetries: 0,
  });
  assert.deepEqual(one.embedding, cat);
  const many = await embedMany({
    model: provider.embedding(EMBED),
    values: ["a", "b"],
    maxRetries: 0,
  });
  assert.equal(many.embeddings.length, 2);

  const lc = new OpenAIEmbeddings({
    model: EMBED,
    apiKey: "unused",
    configuration: { baseURL: `${daemon.url}/v1` },
    maxRetries: 0,
  });
  assert.deepEqual(await lc.embedQuery("the cat sat on the mat"), cat);
  const docs = await lc.embedDocuments(["the cat sat on the mat", "a cat on a mat"]);
  assert.deepEqual(docs, [cat, cat2]);
});

Deno.test("tools through the sealed path: openai (whole and streamed), ollama, LangChain bindTools", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const client = openai(daemon.url);
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: "user", content: "Paris" },
  ];

  const whole = await client.chat.completions.create({
    model: CHAT,
    messages,
    tools: [weatherTool],
  });
  const call = whole.choices[0].message.tool_calls?.[0];
  assert.equal(whole.choices[0].finish_reason, "tool_calls");
  assert.ok(call && call.type === "function");
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });

  const stream = await client.chat.completions.create({
    model: CHAT,
    messages,
    tools: [weatherTool],
    stream: true,
  });
  const pieces: string[] = [];
  let finish;
  for await (const chunk of stream) {
    for (const delta of chunk.choices[0]?.delta?.tool_calls ?? []) {
      if (delta.function?.arguments) pieces.push(delta.function.arguments);
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.ok(pieces.length > 1, `the arguments arrive in pieces, found ${pieces.length}`);
  assert.deepEqual(JSON.parse(pieces.join("")), { city: "Paris" });
  assert.equal(finish, "tool_calls");

  // The tool's result goes back; the dev model answers with it.
  const answered = await client.chat.completions.create({
    model: CHAT,
    tools: [weatherTool],
    messages: [
      ...messages,
      whole.choices[0].message,
      { role: "tool", tool_call_id: call.id, content: "18 °C and sunny" },
    ],
  });
  assert.equal(answered.choices[0].message.content, "Tool get_weather returned: 18 °C and sunny");

  const ollama = new Ollama({ host: daemon.url });
  const chat = await ollama.chat({
    model: CHAT,
    messages: [{ role: "user", content: "Paris" }],
    tools: [weatherTool],
    stream: false,
  });
  assert.equal(chat.message.tool_calls?.[0].function.name, "get_weather");
  assert.deepEqual(chat.message.tool_calls?.[0].function.arguments, { city: "Paris" });

  const shown = await ollama.show({ model: CHAT });
  assert.deepEqual(shown.capabilities, ["completion", "tools"]);
  const embedShown = await ollama.show({ model: "net/verified/devnet/embed" });
  assert.deepEqual(embedShown.capabilities, ["embedding"]);
  assert.equal(
    (embedShown.model_info as unknown as Record<string, unknown>)["net.embedding_length"],
    256,
  );
  const tags = await okJson(fetch(`${daemon.url}/api/tags`));
  const capabilities = Object.fromEntries(
    tags.models.map((m: { name: string; capabilities: string[] }) => [m.name, m.capabilities]),
  );
  assert.deepEqual(capabilities[`${CHAT}:latest`], ["completion", "tools"]);
  assert.deepEqual(capabilities[`${EMBED}:latest`], ["embedding"]);
  const listed = await client.models.retrieve(EMBED) as unknown as {
    net: { kind: string; capabilities: string[]; embedding_dimensions: number };
  };
  assert.deepEqual(listed.net.kind, "embedding");
  assert.deepEqual(listed.net.capabilities, ["dimensions"]);
  assert.equal(listed.net.embedding_dimensions, 256);
  const pulled = await ollama.pull({ model: CHAT, stream: false });
  assert.equal(pulled.status, "success");
  let last;
  for await (const part of await ollama.pull({ model: CHAT, stream: true })) last = part;
  assert.equal(last?.status, "success");

  const lc = new ChatOpenAI({
    model: CHAT,
    apiKey: "unused",
    configuration: { baseURL: `${daemon.url}/v1` },
    maxRetries: 0,
  }).bindTools([weatherTool]);
  const message = await lc.invoke("Paris");
  assert.equal(message.tool_calls?.[0]?.name, "get_weather");
  assert.deepEqual(message.tool_calls?.[0]?.args, { city: "Paris" });
});

Deno.test("Responses API: openai responses.create (plain, streamed, tools) and the AI SDK's default openai(model)", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const client = openai(daemon.url);

  const plain = await client.responses.create({
    model: CHAT,
    instructions: "Be brief.",
    input: "What is the capital of France?",
    max_output_tokens: 200,
    temperature: 0.5,
  });
  assert.equal(plain.object, "response");
  assert.equal(plain.status, "completed");
  assert.match(plain.output_text, /What is the capital of France\?/);
  assert.ok(plain.usage && plain.usage.input_tokens > 0 && plain.usage.output_tokens > 0);

  const types: string[] = [];
  let text = "";
  let completed;
  for await (
    const event of await client.responses.create({ model: CHAT, input: "stream me", stream: true })
  ) {
    types.push(event.type);
    if (event.type === "response.output_text.delta") text += event.delta;
    if (event.type === "response.completed") completed = event.response;
  }
  assert.equal(types[0], "response.created");
  assert.equal(types.at(-1), "response.completed");
  assert.ok(types.includes("response.output_text.delta"));
  assert.match(text, /stream me/);
  assert.equal(completed?.output_text ?? text, text);

  const tool = {
    type: "function" as const,
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    strict: false,
  };
  const called = await client.responses.create({ model: CHAT, input: "Paris", tools: [tool] });
  const call = called.output.find((item) => item.type === "function_call");
  assert.ok(call && call.type === "function_call");
  assert.equal(call.name, "get_weather");
  assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });
  const followed = await client.responses.create({
    model: CHAT,
    tools: [tool],
    input: [
      { role: "user", content: "Paris" },
      { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: "function_call_output", call_id: call.call_id, output: "sunny" },
    ],
  });
  assert.equal(followed.output_text, "Tool get_weather returned: sunny");
  let streamedArgs = "";
  for await (
    const event of await client.responses.create({
      model: CHAT,
      input: "Paris",
      tools: [tool],
      stream: true,
    })
  ) {
    if (event.type === "response.function_call_arguments.delta") streamedArgs += event.delta;
  }
  assert.deepEqual(JSON.parse(streamedArgs), { city: "Paris" });

  await assert.rejects(
    client.responses.create({ model: CHAT, input: "hi", previous_response_id: "resp_1" }),
    (error: unknown) =>
      error instanceof OpenAI.BadRequestError && error.message.includes("no conversation state"),
  );
  await assert.rejects(
    client.responses.create({ model: CHAT, input: "hi", store: true }),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "store",
  );

  const provider = createOpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused" });
  const generated = await generateText({
    model: provider(CHAT),
    prompt: "hello from the AI SDK",
    maxRetries: 0,
  });
  assert.match(generated.text, /hello from the AI SDK/);
  assert.ok((generated.usage.inputTokens ?? 0) > 0);
  const streamed = streamText({
    model: provider(CHAT),
    prompt: "streamed by the AI SDK",
    maxRetries: 0,
  });
  let all = "";
  for await (const piece of streamed.textStream) all += piece;
  assert.match(all, /streamed by the AI SDK/);
});

Deno.test("logprobs: passed through from a model that advertises them, whole and streamed", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const client = openai(daemon.url);
  const models = await okJson(fetch(`${daemon.url}/v1/models`));
  const echo = models.data.find((m: { id: string }) => m.id === CHAT);
  assert.deepEqual(echo.net.capabilities, ["json_mode", "logprobs", "structured_outputs", "tools"]);
  const whole = await client.chat.completions.create({
    model: CHAT,
    messages: [{ role: "user", content: "two words" }],
    logprobs: true,
    top_logprobs: 1,
  });
  const tokens = whole.choices[0].logprobs?.content ?? [];
  assert.equal(tokens.map((t) => t.token).join(""), whole.choices[0].message.content);
  assert.ok(tokens.every((t) => t.logprob === 0 && t.top_logprobs.length === 1));
  const stream = await client.chat.completions.create({
    model: CHAT,
    messages: [{ role: "user", content: "two words" }],
    logprobs: true,
    stream: true,
  });
  let text = "";
  let fromLogprobs = "";
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    for (const t of chunk.choices[0]?.logprobs?.content ?? []) fromLogprobs += t.token;
  }
  assert.equal(fromLogprobs, text);
});

Deno.test("logprobs: the ollama client gets them per line and whole, on chat and generate", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const ollama = new Ollama({ host: daemon.url });
  const whole = await ollama.chat({
    model: CHAT,
    messages: [{ role: "user", content: "three little words" }],
    logprobs: true,
    top_logprobs: 2,
  });
  const tokens = whole.logprobs ?? [];
  assert.ok(tokens.length > 1, `${tokens.length} log probabilities`);
  assert.equal(tokens.map((t) => t.token).join(""), whole.message.content);
  assert.ok(tokens.every((t) => t.logprob === 0 && (t.top_logprobs ?? []).length >= 1));
  const stream = await ollama.generate({
    model: CHAT,
    prompt: "three little words",
    logprobs: true,
    stream: true,
  });
  let text = "";
  let fromLogprobs = "";
  let lines = 0;
  for await (const part of stream) {
    text += part.response ?? "";
    const pieces = part.logprobs ?? [];
    // Each line carries the log probabilities of its own text.
    assert.equal(pieces.map((t) => t.token).join(""), part.response ?? "");
    fromLogprobs += pieces.map((t) => t.token).join("");
    if (pieces.length > 0) lines++;
  }
  assert.ok(lines > 1, `${lines} lines with log probabilities`);
  assert.equal(fromLogprobs, text);
  assert.match(text, /three little words/);
});

Deno.test("completions: openai completions.create, whole and streamed, with usage", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const client = openai(daemon.url);
  const whole = await client.completions.create({ model: CHAT, prompt: "Once upon a time" });
  assert.equal(whole.object, "text_completion");
  assert.match(whole.id, /^cmpl-/);
  assert.match(whole.choices[0].text, /Once upon a time/);
  assert.equal(whole.choices[0].finish_reason, "stop");
  assert.ok((whole.usage?.completion_tokens ?? 0) > 0);
  const stream = await client.completions.create({
    model: CHAT,
    prompt: "Once upon a time",
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let usage;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? "";
    usage = chunk.usage ?? usage;
  }
  // The same echo, whichever provider served it.
  assert.match(text, /^You said: "Once upon a time" — echoed by devnet\/echo on /);
  assert.ok(usage && usage.total_tokens === usage.prompt_tokens + usage.completion_tokens);
  await assert.rejects(
    client.completions.create({ model: CHAT, prompt: ["a", "b"] }),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "prompt",
  );
});
