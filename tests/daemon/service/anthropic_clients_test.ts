/**
 * The Anthropic Messages API through the sealed path, with the official clients against the
 * real daemon in front of the real devnet: the `@anthropic-ai/sdk` (a plain message, a stream,
 * a tool round trip, `stop_sequences`, the API key as `x-api-key`), and Claude Code itself
 * (`claude -p`, headless, `ANTHROPIC_BASE_URL` at the daemon) when `NET_CLAUDE_CODE_BIN` names
 * its binary: `npm install @anthropic-ai/claude-code` brings a 370 MB native binary, more than
 * the test dependencies should carry, so `deno task test` skips it without one, and the gate
 * (`.ci/run`, `CI=true`) installs it and fails when it is missing (it runs offline:
 * `docs/daemon.md`, "Claude Code", says how to run this test).
 */

import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { startDevnet } from "../../../devnet/network.ts";
import { claudeCodeBin, SKIP_CLAUDE_CODE } from "../../_claude_code.ts";
import { startDaemon } from "../_e2e.ts";

const MODEL = "net/verified/devnet/echo";
const KEY = "net_anthropic-test-key-0123456789";

Deno.test("Anthropic SDK through the sealed path: plain, streamed, tools, stop sequences", async (t) => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways, apiKey: KEY });
  // The SDK sends its key as x-api-key; the daemon requires its key (as beyond loopback).
  const anthropic = new Anthropic({ baseURL: daemon.url, apiKey: KEY, maxRetries: 0 });

  await t.step("a plain message, served and verified", async () => {
    const { data, response } = await anthropic.messages.create({
      model: MODEL,
      max_tokens: 256,
      system: "You are the devnet.",
      messages: [{ role: "user", content: "What is sealed end to end?" }],
    }).withResponse();
    assert.equal(data.content[0].type, "text");
    assert.match((data.content[0] as Anthropic.TextBlock).text, /What is sealed end to end\?/);
    assert.equal(data.stop_reason, "end_turn");
    assert.ok(data.usage.input_tokens > 0 && data.usage.output_tokens > 0);
    assert.match(response.headers.get("x-net-verdict") ?? "", /^endorsed-key by 0x/);
    assert.ok(devnet.providers.some((p) => p.address === response.headers.get("x-net-provider")));
  });

  await t.step("a stream, assembled by the SDK", async () => {
    const stream = anthropic.messages.stream({
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: "user", content: "stream me please" }],
    });
    const pieces: string[] = [];
    stream.on("text", (text) => pieces.push(text));
    const final = await stream.finalMessage();
    assert.ok(pieces.length > 3, "the text arrived in pieces");
    assert.equal(pieces.join(""), (final.content[0] as Anthropic.TextBlock).text);
    assert.match(pieces.join(""), /stream me please/);
    assert.ok(final.usage.output_tokens >= pieces.length - 1, "the provider's count");
  });

  await t.step("a tool round trip: tool_use, then tool_result", async () => {
    const tools: Anthropic.Tool[] = [{
      name: "lookup",
      description: "Looks a word up",
      input_schema: {
        type: "object",
        properties: { word: { type: "string" } },
        required: ["word"],
      },
    }];
    const question: Anthropic.MessageParam = { role: "user", content: "sealed" };
    const call = await anthropic.messages.stream({
      model: MODEL,
      max_tokens: 256,
      tools,
      messages: [question],
    })
      .finalMessage();
    assert.equal(call.stop_reason, "tool_use");
    const use = call.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!;
    assert.equal(use.name, "lookup");
    assert.deepEqual(use.input, { word: "sealed" });
    const answer = await anthropic.messages.create({
      model: MODEL,
      max_tokens: 256,
      tools,
      messages: [
        question,
        { role: "assistant", content: call.content },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: use.id, content: "closed" }],
        },
      ],
    });
    assert.deepEqual(answer.content, [{ type: "text", text: "Tool lookup returned: closed" }]);
  });

  await t.step("stop_sequences: the text ends before the first, which is named", async () => {
    const message = await anthropic.messages.create({
      model: MODEL,
      max_tokens: 256,
      stop_sequences: ["STOP"],
      messages: [{ role: "user", content: "one two STOP three four" }],
    });
    assert.equal(message.stop_reason, "stop_sequence");
    assert.equal(message.stop_sequence, "STOP");
    const text = (message.content[0] as Anthropic.TextBlock).text;
    assert.match(text, /one two $/);
    assert.ok(!text.includes("three"));
  });

  await t.step("without the key, Anthropic's authentication_error", async () => {
    const stranger = new Anthropic({ baseURL: daemon.url, apiKey: "wrong", maxRetries: 0 });
    await assert.rejects(
      stranger.messages.create({
        model: MODEL,
        max_tokens: 8,
        messages: [{ role: "user", content: "x" }],
      }),
      (error: unknown) => error instanceof Anthropic.AuthenticationError,
    );
  });
});

Deno.test("openai SDK through the sealed path: stream() and runTools({ stream: true })", async () => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const openai = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const parameters = {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
  };
  const final = await openai.chat.completions.stream({
    model: MODEL,
    messages: [{ role: "user", content: "Paris" }],
    tools: [{ type: "function", function: { name: "get_weather", parameters } }],
  }).finalChatCompletion();
  const [call] = final.choices[0].message.tool_calls!;
  assert.ok(call.type === "function");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
  const seen: unknown[] = [];
  const runner = openai.chat.completions.runTools({
    model: MODEL,
    stream: true,
    messages: [{ role: "user", content: "Lisbon" }],
    tools: [{
      type: "function",
      function: {
        name: "get_weather",
        description: "The weather in a city",
        parameters,
        parse: JSON.parse,
        function: (args: unknown) => {
          seen.push(args);
          return "sunny";
        },
      },
    }],
  });
  assert.equal(await runner.finalContent(), "Tool get_weather returned: sunny");
  assert.deepEqual(seen, [{ city: "Lisbon" }]);
});

Deno.test({
  name: "Claude Code (claude -p) is answered through the daemon, sealed, with the daemon's key",
  ignore: SKIP_CLAUDE_CODE,
  async fn() {
    const claude = claudeCodeBin();
    await using devnet = await startDevnet({ tokenDelayMs: 0 });
    await using daemon = await startDaemon({ bootstrap: devnet.gateways, apiKey: KEY });
    const home = await Deno.makeTempDir({ prefix: "net-claude-home-" });
    try {
      const output = await new Deno.Command(claude, {
        args: [
          "-p",
          "hello from Claude Code",
          "--model",
          MODEL,
          "--tools",
          "",
          "--output-format",
          "json",
        ],
        clearEnv: true,
        env: {
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
          HOME: home,
          ANTHROPIC_BASE_URL: daemon.url,
          ANTHROPIC_API_KEY: KEY,
          ANTHROPIC_DEFAULT_HAIKU_MODEL: MODEL,
          DISABLE_TELEMETRY: "1",
          DISABLE_AUTOUPDATER: "1",
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(output.stdout);
      assert.equal(output.code, 0, `${stdout}\n${new TextDecoder().decode(output.stderr)}`);
      const result = JSON.parse(stdout);
      assert.equal(result.is_error, false, stdout);
      assert.match(result.result, /You said: ".*hello from Claude Code/s);
      assert.match(result.result, /echoed by devnet\/echo/);
      const verdicts = await (await fetch(`${daemon.url}/v1/verdicts?limit=5`, {
        headers: { "x-api-key": KEY },
      })).json();
      assert.ok(verdicts.verdicts.some((v: { outcome: string }) => v.outcome === "accepted"));
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
});
