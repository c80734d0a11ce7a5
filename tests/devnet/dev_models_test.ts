/**
 * The devnet's dev models as `docs/protocol.md` §7 documents them: `devnet/embed` (a hashed bag
 * of words) and `devnet/echo`'s tool rule; and the upstream engine's embeddings pass-through.
 */

import assert from "node:assert/strict";
import { type ChatChunk, EchoEngine, EMBED_MODEL, EngineError } from "../../devnet/engine.ts";
import { devToolCall } from "../../devnet/dev_tools.ts";
import { UpstreamEngine } from "../../devnet/upstream_engine.ts";
import { serve } from "../_http.ts";

const signal = new AbortController().signal;

function cosine(a: readonly number[], b: readonly number[]): number {
  return a.reduce((sum, x, i) => sum + x * b[i], 0) / (Math.hypot(...a) * Math.hypot(...b));
}

Deno.test("devnet/embed: deterministic unit vectors, shared words point alike, dimensions, usage", async () => {
  const engine = new EchoEngine();
  const models = await engine.models();
  assert.deepEqual(models.find((m) => m.id === EMBED_MODEL), {
    id: EMBED_MODEL,
    contextLength: 8192,
    kind: "embedding",
    capabilities: ["dimensions"],
    embeddingDimensions: 256,
  });
  const input = ["The cat sat on the mat", "the CAT sat", "quarterly revenue grew"];
  const list = await engine.embed({ model: EMBED_MODEL, input }, signal);
  const again = await engine.embed({ model: EMBED_MODEL, input }, signal);
  assert.deepEqual(list, again, "deterministic");
  assert.deepEqual(list.data.map((d) => d.index), [0, 1, 2]);
  for (const d of list.data) {
    assert.equal(d.embedding.length, 256);
    assert.ok(Math.abs(Math.hypot(...d.embedding) - 1) < 1e-6);
    assert.ok(d.embedding.every((x) => Math.fround(x) === x), "float32 values");
  }
  const [a, b, c] = list.data.map((d) => d.embedding);
  assert.ok(cosine(a, b) > 0.5 && cosine(a, c) < cosine(a, b));
  assert.equal(list.usage.prompt_tokens, 6 + 3 + 3);
  const short = await engine.embed({ model: EMBED_MODEL, input: "hello", dimensions: 8 }, signal);
  assert.equal(short.data[0].embedding.length, 8);
  const ids = await engine.embed({ model: EMBED_MODEL, input: [[1, 2, 3], [3, 2, 1]] }, signal);
  assert.deepEqual(ids.data[0].embedding, ids.data[1].embedding, "a bag: order does not count");
  for (
    const bad of [
      { input: "" },
      { input: [] },
      { input: [7, "x"] },
      { input: "x", dimensions: 257 },
      { input: "x", dimensions: 0 },
      { input: Array.from({ length: 2049 }, () => "x") },
    ]
  ) {
    await assert.rejects(
      engine.embed({ model: EMBED_MODEL, ...bad }, signal),
      (e: unknown) => e instanceof EngineError && e.reason === "invalid_request",
      JSON.stringify(bad),
    );
  }
  await assert.rejects(
    engine.embed({ model: "devnet/echo", input: "x" }, signal),
    (e: unknown) => e instanceof EngineError && e.reason === "unknown_model",
  );
});

Deno.test("devnet/echo's tool rule: the named or first function, its first required parameter, streamed in pieces", async () => {
  const tool = (name: string, parameters?: unknown) => ({
    type: "function",
    function: { name, parameters },
  });
  const body = (extra: Record<string, unknown>) => ({
    model: "devnet/echo",
    messages: [{ role: "user", content: " Paris " }],
    ...extra,
  });
  const weather = tool("get_weather", {
    type: "object",
    properties: { unit: { type: "string" }, city: { type: "string" } },
    required: ["city"],
  });
  assert.deepEqual(devToolCall(body({ tools: [weather] })), {
    name: "get_weather",
    arguments: '{"city":"Paris"}',
    pieces: ['{"city":', '"Paris"}'],
  });
  const time = tool("get_time", { type: "object", properties: { zone: {} } });
  assert.equal(
    devToolCall(
      body({
        tools: [weather, time],
        tool_choice: { type: "function", function: { name: "get_time" } },
      }),
    )
      ?.arguments,
    '{"zone":"Paris"}',
  );
  assert.equal(devToolCall(body({ tools: [tool("ping")] }))?.arguments, "{}");
  assert.equal(devToolCall(body({ tools: [weather], tool_choice: "none" })), undefined);
  assert.equal(devToolCall(body({})), undefined);

  const engine = new EchoEngine();
  const chunks: ChatChunk[] = [];
  for await (const c of engine.complete(body({ tools: [weather] }) as never, signal)) {
    chunks.push(c);
  }
  const deltas = chunks.flatMap((c) => c.choices.flatMap((ch) => ch.delta.tool_calls ?? []));
  assert.equal(deltas[0].function?.name, "get_weather");
  assert.match(deltas[0].id ?? "", /^call_/);
  assert.equal(deltas.map((d) => d.function?.arguments ?? "").join(""), '{"city":"Paris"}');
  assert.equal(chunks.at(-2)?.choices[0].finish_reason, "tool_calls");
  assert.ok(chunks.at(-1)?.usage);
  // With the result given back, the model answers with it.
  const answer: string[] = [];
  const followUp = {
    model: "devnet/echo",
    tools: [weather],
    messages: [
      { role: "user", content: "Paris" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: { name: "get_weather", arguments: "{}" },
        }],
      },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
    ],
  };
  for await (const c of engine.complete(followUp as never, signal)) {
    answer.push(c.choices[0]?.delta.content ?? "");
  }
  assert.equal(answer.join(""), "Tool get_weather returned: sunny");
});

Deno.test("upstream: embedding models are advertised with their length and passed through as floats", async () => {
  const seen: Record<string, unknown>[] = [];
  await using server = serve(async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/v1/models") {
      return Response.json({ data: [{ id: "llama3" }, { id: "nomic-embed-text" }] });
    }
    if (path === "/v1/embeddings") {
      const body = await req.json();
      seen.push(body);
      const n = Array.isArray(body.input) ? body.input.length : 1;
      return Response.json({
        data: Array.from({ length: n }, (_, index) => ({ index, embedding: [0.6, 0.8, 0] })),
        ...(body.input === "dimensions probe"
          ? {}
          : { usage: { prompt_tokens: 5, total_tokens: 5 } }),
      });
    }
    return new Response("not found", { status: 404 });
  });
  const engine = new UpstreamEngine(server.url);
  const models = await engine.models();
  assert.deepEqual(models, [
    { id: "upstream/llama3", contextLength: 8192, kind: "chat" },
    {
      id: "upstream/nomic-embed-text",
      contextLength: 8192,
      kind: "embedding",
      embeddingDimensions: 3,
    },
  ]);
  const list = await engine.embed!({
    model: "upstream/nomic-embed-text",
    input: ["a", "b"],
    encoding_format: "base64",
  }, signal);
  assert.equal(seen.at(-1)?.model, "nomic-embed-text");
  assert.equal(seen.at(-1)?.encoding_format, "float", "floats are asked for, whatever the client");
  assert.deepEqual(list, {
    object: "list",
    data: [
      { object: "embedding", index: 0, embedding: [0.6, 0.8, 0] },
      { object: "embedding", index: 1, embedding: [0.6, 0.8, 0] },
    ],
    model: "upstream/nomic-embed-text",
    usage: { prompt_tokens: 5, total_tokens: 5 },
  });
  await assert.rejects(
    engine.embed!({ model: "upstream/llama3", input: "x" }, signal),
    (e: unknown) => e instanceof EngineError && e.reason === "unknown_model",
  );
});
