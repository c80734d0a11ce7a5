/**
 * What the daemon's client-facing surface costs per reply, measured at the handler (no
 * socket, no network): a 256-token reply served as OpenAI SSE, as OpenAI `chat.completion`,
 * as Ollama NDJSON and as one Ollama object, against a baseline that re-serves the same
 * chunks as SSE with nothing else (no validation, no translation, no timeouts). The backend
 * is a fixed in-memory reply, so only the surface is measured.
 *
 * Run: `deno bench -A bench/daemon_api_bench.ts` (or `deno task bench`).
 */

import type {
  ChatBackend,
  ChatCompletionChunk,
  ChatReply,
  NetworkModel,
} from "../daemon/core/backend.ts";
import { createDaemonHandler } from "../daemon/service/handler.ts";
import { VerdictLog } from "../daemon/trust/verdict_log.ts";

const TOKENS = 256;
const base = {
  id: "chatcmpl-provider",
  object: "chat.completion.chunk" as const,
  created: 1_790_000_000,
  model: "devnet/tiny-chat",
};
const CHUNKS: ChatCompletionChunk[] = [
  {
    ...base,
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
  },
  ...Array.from({ length: TOKENS }, (_, i): ChatCompletionChunk => ({
    ...base,
    choices: [{ index: 0, delta: { content: ` word${i}` }, finish_reason: null }],
  })),
  { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  {
    ...base,
    choices: [],
    usage: { prompt_tokens: 12, completion_tokens: TOKENS, total_tokens: TOKENS + 12 },
  },
];

async function* replay(): AsyncGenerator<ChatCompletionChunk> {
  for (const chunk of CHUNKS) yield chunk;
}

const MODELS: NetworkModel[] = [{
  tier: "verified",
  model: "devnet/tiny-chat",
  contextLength: 8192,
  providers: 1,
  cheapestPrice: null,
}];

const backend: ChatBackend = {
  listModels: () => Promise.resolve(MODELS),
  chat: (): Promise<ChatReply> =>
    Promise.resolve({
      served: {
        provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
        tier: "verified",
        verdict: "endorsed-key",
        gateway: "http://127.0.0.1:9201",
      },
      chunks: replay(),
    }),
};

const handler = createDaemonHandler({
  backend,
  gateways: () => [],
  verdicts: new VerdictLog(),
  version: "0.1.0",
  port: 11435,
});

function request(path: string, stream: boolean): Request {
  const messages = [{ role: "user", content: "tell me a long story" }];
  return new Request(`http://127.0.0.1:11435${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "net/verified/devnet/tiny-chat", stream, messages }),
  });
}

async function drain(response: Response): Promise<void> {
  if (response.status !== 200) throw new Error(`status ${response.status}`);
  await response.arrayBuffer();
}

Deno.bench({
  name: "baseline: re-serve the chunks as SSE, nothing else",
  group: "256-token reply",
  baseline: true,
  async fn() {
    const encoder = new TextEncoder();
    const chunks = replay();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const step = await chunks.next();
        if (step.done) {
          controller.enqueue(encoder.encode("data: [DONE]\n\n"));
          controller.close();
        } else {
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(step.value)}\n\n`));
        }
      },
    });
    await drain(new Response(body));
  },
});

Deno.bench({
  name: "openai: POST /v1/chat/completions stream:true (SSE)",
  group: "256-token reply",
  async fn() {
    await drain(await handler(request("/v1/chat/completions", true)));
  },
});

Deno.bench({
  name: "openai: POST /v1/chat/completions stream:false",
  group: "256-token reply",
  async fn() {
    await drain(await handler(request("/v1/chat/completions", false)));
  },
});

Deno.bench({
  name: "ollama: POST /api/chat (NDJSON)",
  group: "256-token reply",
  async fn() {
    await drain(await handler(request("/api/chat", true)));
  },
});

Deno.bench({
  name: "ollama: POST /api/chat stream:false",
  group: "256-token reply",
  async fn() {
    await drain(await handler(request("/api/chat", false)));
  },
});

Deno.bench({
  name: "baseline: GET /api/version",
  group: "small endpoints",
  baseline: true,
  async fn() {
    await drain(await handler(new Request("http://127.0.0.1:11435/api/version")));
  },
});

Deno.bench({
  name: "GET /api/tags (one model, digest computed)",
  group: "small endpoints",
  async fn() {
    await drain(await handler(new Request("http://127.0.0.1:11435/api/tags")));
  },
});

Deno.bench({
  name: "refused: foreign Host (DNS rebinding)",
  group: "small endpoints",
  async fn() {
    const response = await handler(
      new Request("http://127.0.0.1:11435/api/chat", { headers: { host: "evil.example:11435" } }),
    );
    if (response.status !== 403) throw new Error(`status ${response.status}`);
    await response.arrayBuffer();
  },
});
