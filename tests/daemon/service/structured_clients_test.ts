/**
 * Structured outputs with the clients people use, unmodified, against the real daemon in front
 * of the real devnet (the sealed path to `devnet/echo`, which advertises `json_mode` and
 * `structured_outputs` and writes JSON valid for the schema it is given): the openai SDK's
 * `chat.completions.parse` and `responses.parse`, the Vercel AI SDK's `generateObject` (chat
 * and Responses), LangChain's `withStructuredOutput`, ollama-js with `format`, and the Anthropic
 * SDK's `messages.parse`. Each client parses and validates the answer itself; the test checks
 * the values came from the prompt. Then, at the handler, a model without the capability: the
 * same clients get a clear 400 naming it, not a JSON parse error.
 */

import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { zodOutputFormat } from "@anthropic-ai/sdk/helpers/zod";
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject } from "ai";
import { ChatOpenAI } from "@langchain/openai";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import { startDevnet } from "../../../devnet/network.ts";
import { startDaemon } from "../_e2e.ts";
import { serveSurface } from "../_surface.ts";

const CHAT = "net/verified/devnet/echo";
const PROMPT = "Pancakes for two";

const Recipe = z.object({
  title: z.string(),
  servings: z.number().int().min(1).max(12),
  difficulty: z.enum(["easy", "hard"]),
  tags: z.array(z.string()).min(1),
  // At most `minItems: 1`: Anthropic's structured outputs move larger bounds into the description.
  steps: z.array(z.object({ order: z.number().int(), text: z.string() })).min(1),
  note: z.string().nullable(),
});
type Recipe = z.infer<typeof Recipe>;

/** What devnet/echo writes for `Recipe` from the prompt: the client's own parse succeeded. */
function fromPrompt(recipe: Recipe, label: string): void {
  assert.equal(recipe.title, PROMPT, label);
  assert.equal(recipe.servings, 3, `${label}: the prompt's word count, within bounds`);
  assert.equal(recipe.difficulty, "easy", label);
  assert.ok(recipe.steps.length >= 1, label);
  Recipe.parse(recipe);
}

Deno.test("structured outputs through the sealed path, with every client's own parser", async (t) => {
  await using devnet = await startDevnet({ tokenDelayMs: 0 });
  await using daemon = await startDaemon({ bootstrap: devnet.gateways });
  const openai = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const messages = [{ role: "user" as const, content: PROMPT }];

  await t.step("openai SDK: chat.completions.parse with zodResponseFormat", async () => {
    const completion = await openai.chat.completions.parse({
      model: CHAT,
      messages,
      response_format: zodResponseFormat(Recipe, "recipe"),
    });
    fromPrompt(completion.choices[0].message.parsed!, "chat.completions.parse");
    const stream = openai.chat.completions.stream({
      model: CHAT,
      messages,
      response_format: zodResponseFormat(Recipe, "recipe"),
    });
    fromPrompt((await stream.finalChatCompletion()).choices[0].message.parsed!, "streamed");
  });

  await t.step("openai SDK: responses.parse with zodTextFormat", async () => {
    const response = await openai.responses.parse({
      model: CHAT,
      input: PROMPT,
      text: { format: zodTextFormat(Recipe, "recipe") },
    });
    fromPrompt(response.output_parsed!, "responses.parse");
  });

  await t.step("Vercel AI SDK: generateObject, chat and Responses", async () => {
    const provider = createOpenAI({ baseURL: `${daemon.url}/v1`, apiKey: "unused" });
    for (const [label, model] of [["chat", provider.chat(CHAT)], ["responses", provider(CHAT)]]) {
      const { object } = await generateObject({
        model: model as ReturnType<typeof provider.chat>,
        schema: Recipe,
        prompt: PROMPT,
        maxRetries: 0,
      });
      fromPrompt(object, `generateObject (${label})`);
    }
  });

  await t.step("LangChain: ChatOpenAI.withStructuredOutput (JSON schema)", async () => {
    const model = new ChatOpenAI({
      model: CHAT,
      apiKey: "unused",
      configuration: { baseURL: `${daemon.url}/v1` },
      maxRetries: 0,
    });
    const structured = model.withStructuredOutput(Recipe, { method: "jsonSchema" });
    fromPrompt(await structured.invoke(PROMPT) as Recipe, "withStructuredOutput");
  });

  await t.step("ollama-js: chat and generate with format (a schema, and json)", async () => {
    const ollama = new Ollama({ host: daemon.url });
    const chat = await ollama.chat({ model: CHAT, messages, format: z.toJSONSchema(Recipe) });
    fromPrompt(Recipe.parse(JSON.parse(chat.message.content)), "ollama chat");
    const generate = await ollama.generate({
      model: CHAT,
      prompt: PROMPT,
      format: z.toJSONSchema(Recipe),
    });
    fromPrompt(Recipe.parse(JSON.parse(generate.response ?? "")), "ollama generate");
    const json = await ollama.chat({ model: CHAT, messages, format: "json" });
    assert.deepEqual(JSON.parse(json.message.content), { echo: PROMPT });
  });

  await t.step("Anthropic SDK: messages.parse with zodOutputFormat", async () => {
    const anthropic = new Anthropic({ baseURL: daemon.url, apiKey: "unused", maxRetries: 0 });
    const message = await anthropic.messages.parse({
      model: CHAT,
      max_tokens: 1024,
      messages,
      output_config: { format: zodOutputFormat(Recipe) },
    });
    fromPrompt(message.parsed_output!, "messages.parse");
  });
});

Deno.test("structured outputs from a model without the capability: each client gets a clear 400", async () => {
  await using server = serveSurface();
  const PLAIN = "net/verified/acme/big-model";
  const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
  await assert.rejects(
    openai.chat.completions.parse({
      model: PLAIN,
      messages: [{ role: "user", content: PROMPT }],
      response_format: zodResponseFormat(Recipe, "recipe"),
    }),
    (error: unknown) =>
      error instanceof OpenAI.BadRequestError &&
      (error.error as { param: string }).param === "response_format" &&
      /do not advertise the "structured_outputs" capability/.test(error.message),
  );
  const provider = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });
  await assert.rejects(
    generateObject({ model: provider.chat(PLAIN), schema: Recipe, prompt: PROMPT, maxRetries: 0 }),
    /do not advertise the "structured_outputs" capability/,
  );
  const ollama = new Ollama({ host: server.url });
  await assert.rejects(
    ollama.chat({
      model: PLAIN,
      messages: [{ role: "user", content: PROMPT }],
      format: z.toJSONSchema(Recipe),
    }),
    /Cannot give a JSON schema \(format\)/,
  );
  const anthropic = new Anthropic({ baseURL: server.url, apiKey: "unused", maxRetries: 0 });
  await assert.rejects(
    anthropic.messages.parse({
      model: PLAIN,
      max_tokens: 64,
      messages: [{ role: "user", content: PROMPT }],
      output_config: { format: zodOutputFormat(Recipe) },
    }),
    (error: unknown) =>
      error instanceof Anthropic.BadRequestError && /output_config\.format/.test(error.message),
  );
  assert.equal(server.backend.chats.length, 0, "nothing was sent");
});
