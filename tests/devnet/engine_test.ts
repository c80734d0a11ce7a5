import assert from "node:assert/strict";
import {
  type ChatChunk,
  devTokens,
  EchoEngine,
  EngineError,
  messageText,
} from "../../devnet/engine.ts";

const clock = () => new Date("2026-11-22T12:00:00Z");

async function run(engine: EchoEngine, body: Record<string, unknown>, signal?: AbortSignal) {
  const chunks: ChatChunk[] = [];
  for await (
    const c of engine.complete(
      body as never,
      signal ?? new AbortController().signal,
    )
  ) chunks.push(c);
  return chunks;
}

Deno.test("devTokens and messageText", () => {
  assert.deepEqual(devTokens(" Hello,  world! "), [" Hello,", "  world!"]);
  assert.deepEqual(devTokens(""), []);
  assert.equal(messageText("a"), "a");
  assert.equal(
    messageText([{ type: "text", text: "a" }, { type: "image_url" }, { type: "text", text: "b" }]),
    "ab",
  );
  assert.equal(messageText(null), "");
});

Deno.test("echo streams role, content, finish and real usage", async () => {
  const engine = new EchoEngine({ tokenDelayMs: 0, clock, servedBy: "provider 0xabc" });
  const messages = [
    { role: "system", content: "Be brief." },
    { role: "user", content: "What is two plus two?" },
  ];
  const chunks = await run(engine, { model: "devnet/echo", messages });
  assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "" });
  const text = chunks.flatMap((c) => c.choices.map((x) => x.delta.content ?? "")).join("");
  assert.equal(
    text,
    'You said: "What is two plus two?" — echoed by devnet/echo on provider 0xabc.',
  );
  const finish = chunks.at(-2)!;
  assert.equal(finish.choices[0].finish_reason, "stop");
  const usage = chunks.at(-1)!;
  assert.deepEqual(usage.choices, []);
  const prompt = devTokens("system Be brief.").length +
    devTokens("user What is two plus two?").length;
  assert.deepEqual(usage.usage, {
    prompt_tokens: prompt,
    completion_tokens: devTokens(text).length,
    total_tokens: prompt + devTokens(text).length,
  });
  assert.ok(chunks.every((c) => c.id === chunks[0].id && c.created === 1795348800));
});

Deno.test("echo honours max_tokens with finish_reason length", async () => {
  const engine = new EchoEngine({ tokenDelayMs: 0, clock });
  const chunks = await run(engine, {
    model: "devnet/echo",
    messages: [{ role: "user", content: "one two three four five" }],
    max_tokens: 3,
  });
  assert.equal(chunks.at(-2)!.choices[0].finish_reason, "length");
  assert.equal(chunks.at(-1)!.usage!.completion_tokens, 3);
});

Deno.test("echo refuses unknown models and empty messages, and stops on abort", async () => {
  const engine = new EchoEngine({ tokenDelayMs: 1, clock });
  await assert.rejects(
    run(engine, { model: "devnet/other", messages: [{ role: "user", content: "x" }] }),
    (e: unknown) => e instanceof EngineError && e.reason === "unknown_model",
  );
  await assert.rejects(
    run(engine, { model: "devnet/echo", messages: [] }),
    (e: unknown) => e instanceof EngineError && e.reason === "invalid_request",
  );
  const controller = new AbortController();
  const seen: ChatChunk[] = [];
  await assert.rejects(async () => {
    for await (
      const c of engine.complete(
        { model: "devnet/echo", messages: [{ role: "user", content: "a b c d e f g h" }] },
        controller.signal,
      )
    ) {
      seen.push(c);
      if (seen.length === 2) controller.abort(new Error("client went away"));
    }
  }, /client went away/);
  assert.equal(seen.length, 2);
});
