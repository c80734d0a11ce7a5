/**
 * Sampling parameters typed and ranged per dialect (`daemon/surface/sampling.ts`): a value the
 * dialect's documentation does not allow — a word for a number, a negative token count, a
 * number JSON reads as infinity, a fraction for an integer, a value past its range — is a 400
 * whose message and `param` name the field, and nothing is sent; values within range pass.
 */

import assert from "node:assert/strict";
import { post, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";
const messages = [{ role: "user", content: "hi" }];

/** A request body with `raw` spliced in as JSON text, so that `1e999` reaches the daemon as is. */
function withRaw(body: Record<string, unknown>, field: string, raw: string): string {
  const path = field.split(".");
  const marker = "__RAW__";
  const copy = structuredClone(body);
  let node = copy as Record<string, unknown>;
  for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
  node[path.at(-1)!] = marker;
  return JSON.stringify(copy).replace(`"${marker}"`, raw);
}

const messagesSeen: string[] = [];

const DIALECTS = [
  {
    path: "/v1/chat/completions",
    body: { model: MODEL, messages },
    bad: [
      ["temperature", '"hot"'],
      ["temperature", "2.5"],
      ["temperature", "1e999"],
      ["top_p", "-0.1"],
      ["max_tokens", "-1"],
      ["max_tokens", "1e999"],
      ["max_tokens", "0"],
      ["max_tokens", "1.5"],
      ["max_completion_tokens", "-5"],
      ["presence_penalty", "3"],
      ["frequency_penalty", "-2.5"],
      ["seed", "1.5"],
      ["seed", "1e999"],
      ["stop", '["a","b","c","d","e"]'],
      ["stop", "7"],
      ["logit_bias", '{"50256":-101}'],
      ["logit_bias", '{"word":1}'],
    ],
    good: [["temperature", "0"], ["temperature", "2"], ["max_tokens", "1"], ["stop", '"x"']],
  },
  {
    path: "/v1/completions",
    body: { model: MODEL, prompt: "hi" },
    bad: [["temperature", '"hot"'], ["max_tokens", "-1"], ["top_p", "2"]],
    good: [["temperature", "1.2"], ["max_tokens", "8"]],
  },
  {
    path: "/v1/responses",
    body: { model: MODEL, input: "hi" },
    bad: [["temperature", "3"], ["max_output_tokens", "-1"], ["max_output_tokens", "1e999"]],
    good: [["temperature", "0.5"], ["max_output_tokens", "16"]],
  },
  {
    path: "/api/chat",
    body: { model: MODEL, messages, stream: false },
    bad: [
      ["options.temperature", '"hot"'],
      ["options.temperature", "-1"],
      ["options.num_predict", "-3"],
      ["options.num_predict", "1e999"],
      ["options.top_k", "1.5"],
      ["options.top_p", "1.5"],
      ["options.num_ctx", "0"],
    ],
    good: [["options.num_predict", "-1"], ["options.temperature", "3"], ["options.top_k", "40"]],
  },
] as const;

for (const dialect of DIALECTS) {
  Deno.test(`sampling (${dialect.path}): out of type or range is a 400 naming the field`, async () => {
    const fixture = surface();
    for (const [field, raw] of dialect.bad) {
      const response = await fixture.handler(post(dialect.path, withRaw(dialect.body, field, raw)));
      const label = `${field} = ${raw}`;
      assert.equal(response.status, 400, label);
      const body = await response.json();
      const message: string = typeof body.error === "string" ? body.error : body.error.message;
      assert.ok(message.includes(field), `${label}: ${message}`);
      if (typeof body.error !== "string") {
        assert.ok(String(body.error.param).startsWith(field), `${label}: ${body.error.param}`);
      }
      messagesSeen.push(message);
    }
    assert.equal(fixture.backend.chats.length, 0, "nothing was sent");
  });

  Deno.test(`sampling (${dialect.path}): values within range pass`, async () => {
    const fixture = surface();
    for (const [field, raw] of dialect.good) {
      const response = await fixture.handler(post(dialect.path, withRaw(dialect.body, field, raw)));
      assert.equal(response.status, 200, `${field} = ${raw}: ${await response.clone().text()}`);
      await response.body?.cancel();
    }
  });
}

Deno.test("sampling: the messages say what was found and what is expected", () => {
  if (Deno.env.get("SHOW")) console.log(messagesSeen.join("\n"));
  assert.ok(
    messagesSeen.some((m) => /temperature/.test(m) && /"hot"/.test(m)),
    "the word is shown",
  );
  assert.ok(messagesSeen.some((m) => /max_tokens/.test(m) && /-1/.test(m)), "the number is shown");
});
