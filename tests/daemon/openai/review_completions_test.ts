/**
 * Review of `POST /v1/completions` as a careless client would use it: what the mapping onto
 * chat must refuse before anything reaches the network.
 */

import assert from "node:assert/strict";
import { post, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

Deno.test("completions: top_logprobs cannot slip past the logprobs refusal; nothing is sent", async () => {
  const fixture = surface();
  for (const extra of [{ top_logprobs: 3 }, { top_logprobs: 0 }, { logprobs: 2 }]) {
    const answer = await fixture.handler(post("/v1/completions", {
      model: MODEL,
      prompt: "hi",
      ...extra,
    }));
    assert.equal(answer.status, 400, JSON.stringify(extra));
    const error = (await answer.json()).error;
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, Object.keys(extra)[0], JSON.stringify(extra));
  }
  assert.equal(fixture.backend.chats.length, 0, "the provider received nothing");
  // A null is no request for them.
  const ok = await fixture.handler(post("/v1/completions", {
    model: MODEL,
    prompt: "hi",
    top_logprobs: null,
  }));
  assert.equal(ok.status, 200);
  assert.equal(fixture.backend.chats[0].request.body.top_logprobs, undefined);
});

Deno.test("completions: tools are refused (a tool call has no place in a text_completion); nothing is sent", async () => {
  const fixture = surface();
  const tool = { type: "function", function: { name: "get_weather", parameters: {} } };
  for (
    const [extra, param] of [
      [{ tools: [tool] }, "tools"],
      [{ functions: [{ name: "get_weather" }] }, "functions"],
    ] as const
  ) {
    const answer = await fixture.handler(post("/v1/completions", {
      model: MODEL,
      prompt: "weather?",
      ...extra,
    }));
    assert.equal(answer.status, 400, JSON.stringify(extra));
    assert.equal((await answer.json()).error.param, param);
  }
  assert.equal(fixture.backend.chats.length, 0, "the provider received nothing");
  const ok = await fixture.handler(post("/v1/completions", {
    model: MODEL,
    prompt: "weather?",
    tools: [],
  }));
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
});
