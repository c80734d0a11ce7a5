import assert from "node:assert/strict";
import { type ChatChunk, EngineError } from "../../devnet/engine.ts";
import { UpstreamEngine, upstreamModelSegment } from "../../devnet/upstream_engine.ts";
import { encodeSse } from "../../io/sse.ts";
import { closedPort, serve } from "../_http.ts";

/** A minimal OpenAI-compatible server: an external system the devnet provider forwards to. */
function fakeOpenAiServer(options: { usage: boolean }) {
  const seen: Record<string, unknown>[] = [];
  const server = serve(async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/v1/models") {
      return Response.json({
        object: "list",
        data: [{ id: "llama3.2:3b" }, { id: "Qwen/Qwen2.5-7B" }, { id: "" }],
      });
    }
    if (url.pathname === "/v1/chat/completions") {
      const body = await req.json();
      seen.push(body);
      if (body.model !== "llama3.2:3b") {
        return Response.json({ error: { message: "no such model" } }, { status: 404 });
      }
      const base = { id: "c1", object: "chat.completion.chunk", created: 5, model: body.model };
      const events = [
        { ...base, choices: [{ index: 0, delta: { role: "assistant" }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: { content: "Hi there" }, finish_reason: null }] },
        { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
        ...(options.usage
          ? [{
            ...base,
            choices: [],
            usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
          }]
          : []),
      ];
      return new Response(
        ReadableStream.from([
          ...events.map((e) => encodeSse(JSON.stringify(e))),
          encodeSse("[DONE]"),
        ]),
        { headers: { "content-type": "text/event-stream" } },
      );
    }
    return new Response("not found", { status: 404 });
  });
  return { server, seen };
}

async function collect(engine: UpstreamEngine, model: string) {
  const chunks: ChatChunk[] = [];
  const body = { model, messages: [{ role: "user", content: "hello you" }], temperature: 0.2 };
  for await (const c of engine.complete(body, new AbortController().signal)) chunks.push(c);
  return chunks;
}

Deno.test("model names become valid ad segments", () => {
  assert.equal(upstreamModelSegment("llama3.2:3b"), "llama3.2-3b");
  assert.equal(upstreamModelSegment("Qwen/Qwen2.5-7B"), "Qwen-Qwen2.5-7B");
  assert.equal(upstreamModelSegment("--x"), "x");
  assert.equal(upstreamModelSegment("::"), "model");
  assert.equal(upstreamModelSegment("a".repeat(100)).length, 64);
});

Deno.test("the upstream's models are advertised and its stream forwarded with usage", async () => {
  const { server, seen } = fakeOpenAiServer({ usage: true });
  await using _ = server;
  const engine = new UpstreamEngine(`${server.url}/v1/`, { apiKey: "k" });
  assert.deepEqual((await engine.models()).map((m) => m.id), [
    "upstream/llama3.2-3b",
    "upstream/Qwen-Qwen2.5-7B",
  ]);
  const chunks = await collect(engine, "upstream/llama3.2-3b");
  assert.equal(seen[0].model, "llama3.2:3b");
  assert.equal(seen[0].stream, true);
  assert.deepEqual(seen[0].stream_options, { include_usage: true });
  assert.equal(seen[0].temperature, 0.2);
  assert.ok(chunks.every((c) => c.model === "upstream/llama3.2-3b"));
  assert.deepEqual(chunks.at(-1)!.usage, {
    prompt_tokens: 9,
    completion_tokens: 2,
    total_tokens: 11,
  });
});

Deno.test("usage is counted locally when the upstream sends none", async () => {
  const { server } = fakeOpenAiServer({ usage: false });
  await using _ = server;
  const chunks = await collect(new UpstreamEngine(server.url), "upstream/llama3.2-3b");
  assert.deepEqual(chunks.at(-1)!.usage, {
    prompt_tokens: 3,
    completion_tokens: 2,
    total_tokens: 5,
  });
});

Deno.test("unknown models, upstream errors and an unreachable upstream are typed errors", async () => {
  const { server } = fakeOpenAiServer({ usage: true });
  await using _ = server;
  const engine = new UpstreamEngine(server.url);
  await assert.rejects(
    collect(engine, "upstream/nope"),
    (e: unknown) => e instanceof EngineError && e.reason === "unknown_model",
  );
  await assert.rejects(
    collect(engine, "upstream/Qwen-Qwen2.5-7B"),
    (e: unknown) =>
      e instanceof EngineError && e.reason === "upstream" && /status 404/.test(e.message),
  );
  const down = new UpstreamEngine(`http://127.0.0.1:${closedPort()}`, { timeoutMs: 1000 });
  await assert.rejects(
    down.models(),
    (e: unknown) => e instanceof EngineError && e.reason === "upstream",
  );
});

Deno.test("an abort stops the upstream's request at once, mid-stream; a long stream is not timed out", async () => {
  let cancelled = false;
  let sent = 0;
  await using server = serve((req) => {
    if (new URL(req.url).pathname === "/v1/models") {
      return Response.json({ object: "list", data: [{ id: "slow" }] });
    }
    const base = { id: "c1", object: "chat.completion.chunk", created: 5, model: "slow" };
    return new Response(
      new ReadableStream({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          const chunk = { ...base, choices: [{ index: 0, delta: { content: "x" } }] };
          controller.enqueue(encodeSse(JSON.stringify(chunk)));
          sent++;
        },
        cancel() {
          cancelled = true;
        },
      }, { highWaterMark: 0 }),
      { headers: { "content-type": "text/event-stream" } },
    );
  });
  // The timeout bounds the head only: this stream outlives it.
  const engine = new UpstreamEngine(server.url, { timeoutMs: 100 });
  const abort = new AbortController();
  const body = { model: "upstream/slow", messages: [{ role: "user", content: "go" }] };
  let received = 0;
  await assert.rejects(
    (async () => {
      for await (const _ of engine.complete(body, abort.signal)) {
        if (++received === 20) abort.abort(new Error("the requester went away"));
      }
    })(),
    /the requester went away/,
  );
  assert.ok(received >= 20, `${received} chunks before the abort (the stream ran past 100 ms)`);
  for (let i = 0; i < 50 && !cancelled; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(cancelled, "the upstream's response was cancelled");
  const after = sent;
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(sent <= after + 1, "the upstream stopped producing");
});
