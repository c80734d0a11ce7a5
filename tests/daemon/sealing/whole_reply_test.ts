/**
 * A provider's whole reply (`stream: false`: one sealed `chat.completion`), opened by
 * `openSealedReply` from real sealed replies (the crypto API's server side, as a provider seals
 * them), and read by the surfaces as the same chunks a stream gives.
 */

import assert from "node:assert/strict";
import {
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  type HttpResponseInit,
  openHttpRequest,
  sealHttpRequest,
} from "../../../crypto/mod.ts";
import type { ChatCompletionChunk } from "../../../daemon/core/backend.ts";
import { DaemonError } from "../../../daemon/core/daemon_error.ts";
import { openSealedReply } from "../../../daemon/sealing/sealed_reply.ts";
import { ALIVE, completionChunk } from "../../../daemon/sealing/_whole_reply.ts";

const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
const keyConfig = encodeKeyConfig(key.config);
const encoder = new TextEncoder();
const JSON_HEAD = { "content-type": "application/json" };

const COMPLETION = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1_800_000_000,
  model: "devnet/echo",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello there" },
    logprobs: { content: [{ token: "Hello", logprob: 0, bytes: null, top_logprobs: [] }] },
    finish_reason: "stop",
  }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};

/** Opens a sealed whole reply whose body is `pieces` (each its own sealed chunk). */
async function open(
  response: Omit<HttpResponseInit, "body"> & { pieces: (string | Uint8Array)[] },
  signal?: AbortSignal,
) {
  const sealed = await sealHttpRequest(keyConfig, { body: { model: "devnet/echo" } });
  const opened = await openHttpRequest(key, sealed.body);
  const body = ReadableStream.from(
    response.pieces.map((p) => typeof p === "string" ? encoder.encode(p) : p),
  );
  const parts: Uint8Array[] = [];
  for await (const part of opened.respond({ ...response, body })) parts.push(part);
  return await openSealedReply(sealed, ReadableStream.from(parts), { signal });
}

async function all(rest: AsyncGenerator<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const chunk of rest) out.push(chunk);
  return out;
}

Deno.test("whole reply: opens at its head; a sign of life per piece, then the completion as one chunk", async () => {
  const text = JSON.stringify(COMPLETION);
  const reply = await open({
    status: 200,
    headers: JSON_HEAD,
    pieces: [" ", " ", text.slice(0, 40), text.slice(40)],
  });
  assert.equal(reply.first, undefined, "a whole reply has no first chunk at its head");
  const chunks = await all(reply.rest);
  assert.deepEqual(chunks.slice(0, 4), [ALIVE, ALIVE, ALIVE, ALIVE]);
  assert.equal(chunks.length, 5);
  assert.deepEqual(chunks[4], {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1_800_000_000,
    model: "devnet/echo",
    choices: [{
      index: 0,
      delta: { role: "assistant", content: "Hello there" },
      logprobs: COMPLETION.choices[0].logprobs,
      finish_reason: "stop",
    }],
    usage: COMPLETION.usage,
  });
});

Deno.test("whole reply: tool calls are numbered in order, as a stream numbers them", () => {
  const chunk = completionChunk(JSON.stringify({
    ...COMPLETION,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "a", arguments: "{}" } },
          { id: "call_b", type: "function", function: { name: "b", arguments: '{"x":1}' } },
        ],
      },
      finish_reason: "tool_calls",
    }],
  }));
  assert.deepEqual(chunk.choices[0].delta.tool_calls, [
    { index: 0, id: "call_a", type: "function", function: { name: "a", arguments: "{}" } },
    { index: 1, id: "call_b", type: "function", function: { name: "b", arguments: '{"x":1}' } },
  ]);
  assert.equal(chunk.choices[0].finish_reason, "tool_calls");
});

Deno.test("whole reply: not JSON, an error object or not a chat.completion is a provider_error", async () => {
  const cases: [string, string, RegExp][] = [
    ["not JSON", "{", /is not JSON/],
    ["an error after the head", '  {"error":{"message":"engine died"}}', /mid-reply: engine died/],
    ["a chunk, not a completion", JSON.stringify({ object: "chat.completion.chunk" }), /not a/],
    ["no choices", JSON.stringify({ object: "chat.completion" }), /not a chat.completion/],
    ["empty", "", /is not JSON/],
  ];
  for (const [label, body, message] of cases) {
    const reply = await open({ status: 200, headers: JSON_HEAD, pieces: body ? [body] : [] });
    const error = await all(reply.rest).then(() => undefined, (e) => e);
    assert.ok(error instanceof DaemonError, `${label}: ${error}`);
    assert.equal(error.code, "provider_error", label);
    assert.match(error.shortMessage, message, label);
  }
});

Deno.test("whole reply: a completion counts only once the sealed stream's end authenticated", async () => {
  const sealed = await sealHttpRequest(keyConfig, { body: { model: "devnet/echo" } });
  const opened = await openHttpRequest(key, sealed.body);
  const parts: Uint8Array[] = [];
  const body = ReadableStream.from([encoder.encode(JSON.stringify(COMPLETION))]);
  for await (const part of opened.respond({ status: 200, headers: JSON_HEAD, body })) {
    parts.push(part);
  }
  // Cut before the final chunk: the whole answer was read, but it is not authenticated as whole.
  const reply = await openSealedReply(sealed, ReadableStream.from(parts.slice(0, -1)));
  const chunks: ChatCompletionChunk[] = [];
  const error = await (async () => {
    for await (const chunk of reply.rest) chunks.push(chunk);
  })().then(() => undefined, (e) => e);
  assert.ok(error instanceof DaemonError);
  assert.equal(error.code, "stream_truncated");
  assert.ok(chunks.every((c) => c === ALIVE), "no completion before the authenticated end");
});
