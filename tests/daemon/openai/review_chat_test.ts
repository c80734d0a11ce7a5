/**
 * Review of the logprobs rule on `POST /v1/chat/completions` as a careless client would meet
 * it: a value of another type is a 400 naming the field, never a way past the capability
 * check to a provider.
 */

import assert from "node:assert/strict";
import { post, surface } from "../_surface.ts";

const MODEL = "net/verified/devnet/tiny-chat";

Deno.test("chat: logprobs and top_logprobs of the wrong type are 400 naming the field; nothing is sent", async () => {
  const fixture = surface();
  const cases: [Record<string, unknown>, string][] = [
    [{ logprobs: "true" }, "logprobs"],
    [{ logprobs: 1 }, "logprobs"],
    [{ top_logprobs: "2" }, "top_logprobs"],
    [{ top_logprobs: 21 }, "top_logprobs"],
    [{ top_logprobs: 1.5 }, "top_logprobs"],
  ];
  for (const [extra, param] of cases) {
    const answer = await fixture.handler(post("/v1/chat/completions", {
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      ...extra,
    }));
    assert.equal(answer.status, 400, JSON.stringify(extra));
    const error = (await answer.json()).error;
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, param, JSON.stringify(extra));
  }
  assert.equal(fixture.backend.chats.length, 0, "the provider received nothing");
  for (const extra of [{ logprobs: false }, { logprobs: null }, { top_logprobs: null }]) {
    const answer = await fixture.handler(post("/v1/chat/completions", {
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      ...extra,
    }));
    assert.equal(answer.status, 200, JSON.stringify(extra));
    await answer.body?.cancel();
  }
});
