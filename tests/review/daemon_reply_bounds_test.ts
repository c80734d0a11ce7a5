/**
 * Review reproduction for the daemon surface's handling of a provider's reply
 * (`daemon/_reply.ts` `aggregateReply`, used by `stream: false` in both dialects).
 *
 * The test FAILS while the bug exists.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { ChatBackend, ChatCompletionChunk } from "../../daemon/backend.ts";
import { createDaemonHandler } from "../../daemon/handler.ts";
import { VerdictLog } from "../../daemon/verdict_log.ts";

const MiB = 1024 * 1024;

// Attack: a provider is untrusted (anyone can register one in the verified tier); its reply is
// only authenticated as *its* reply. For a `stream: false` client the surface concatenates every
// content delta (and every tool-call argument fragment) into one string with no size limit and
// no overall deadline (the idle timeout is re-armed by every chunk). A provider that keeps
// streaming makes the daemon hold the whole reply in memory: up to V8's string limit (~512 Mi
// characters, 0.5–1 GB) per request before the concatenation itself throws; several concurrent
// requests take the user's machine down. The request body is bounded (4 MiB); the reply should
// be too, with a `provider_error` once it passes a limit.
//
// The double below yields one shared 1 MiB string per chunk, so the test itself costs little
// memory (V8 keeps the concatenation as a rope). It counts how much the daemon pulled before it
// stopped; a bounded daemon stops long before 128 MiB.
Deno.test("review: a stream:false reply is bounded; the daemon stops reading a provider's endless reply", async () => {
  const piece = "x".repeat(MiB);
  let produced = 0;
  let stoppedAt: number | undefined;
  const backend: ChatBackend = {
    listModels: () => Promise.resolve([]),
    chat: (_request, signal) =>
      Promise.resolve({
        served: {
          provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
          tier: "verified",
          verdict: "endorsed-key",
          gateway: "http://127.0.0.1:9201",
        },
        chunks: (async function* (): AsyncGenerator<ChatCompletionChunk> {
          try {
            // Safety stop far beyond any sane limit (and beyond V8's string limit).
            while (produced < 2048 && !signal.aborted) {
              produced++;
              yield {
                id: "x",
                object: "chat.completion.chunk",
                created: 0,
                model: "devnet/tiny-chat",
                choices: [{ index: 0, delta: { content: piece }, finish_reason: null }],
              } as ChatCompletionChunk;
            }
          } finally {
            stoppedAt ??= produced;
          }
        })(),
      }),
  };
  const handler = createDaemonHandler({
    backend,
    gateways: () => [],
    verdicts: new VerdictLog(),
    version: "0.1.0",
    port: 11435,
    log: () => {},
  });
  const response = await handler(
    new Request("http://127.0.0.1:11435/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "net/verified/devnet/tiny-chat",
        messages: [{ role: "user", content: "hi" }],
      }),
    }),
  );
  const body = await response.text();
  assert.ok(
    (stoppedAt ?? produced) <= 128,
    `the daemon buffered ${stoppedAt ?? produced} MiB of one provider reply before stopping ` +
      `(answer: ${response.status} ${body.slice(0, 160)})`,
  );
  assert.equal(response.status, 502, body.slice(0, 200));
});
