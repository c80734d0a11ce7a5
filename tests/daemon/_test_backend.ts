/**
 * A TEST DOUBLE of the daemon's network layer, for the client-facing surface tests only.
 *
 * It implements the real {@linkcode ChatBackend} interface without any network: no gateway, no
 * sealing, no attestation. What it does is deterministic and countable, so the tests can check
 * every byte the surface produces:
 *
 * - the reply to a conversation is `Echo:` followed by the words of the last user message, one
 *   word per chunk (each chunk after the first starts with a space);
 * - usage is real counting: `prompt_tokens` = the number of whitespace-separated words in all
 *   messages' text, `completion_tokens` = the number of content chunks;
 * - when the request offers tools and the last user message mentions "weather", it answers
 *   with a `get_weather` tool call whose JSON arguments arrive in three fragments; when the
 *   last message is a tool result, it answers `The weather is <result>`;
 * - every request, and the abort signal it came with, is recorded;
 * - `devnet/tiny-chat` (verified) advertises `json_mode` and `structured_outputs`, the others
 *   nothing: a structured-output request for them is refused before it reaches the double;
 * - failures are scripted: refuse before the first chunk, fail after N chunks, stall, send raw
 *   chunks, claim another tier.
 *
 * The real backend (gateway resolution, sealing, attestation, failover) is tested against the
 * devnet in its own tests.
 *
 * @module
 */

import type {
  ChatBackend,
  ChatCompletionChunk,
  ChatReply,
  ChatRequest,
  NetworkModel,
  ServedBy,
} from "../../daemon/core/backend.ts";
import { DaemonError } from "../../daemon/core/daemon_error.ts";

/** The models the double offers by default. */
export const TEST_MODELS: readonly NetworkModel[] = [
  {
    tier: "verified",
    model: "devnet/tiny-chat",
    contextLength: 8192,
    providers: 2,
    cheapestPrice: { input: "150000", output: "600000" },
    capabilities: ["completion", "tools"],
    supports: ["tools", "json_mode", "structured_outputs"],
  },
  {
    tier: "tee",
    model: "devnet/tiny-chat",
    contextLength: 4096,
    providers: 1,
    cheapestPrice: { input: "300000", output: "900000" },
  },
  {
    tier: "verified",
    model: "acme/big-model",
    contextLength: 131072,
    providers: 1,
    cheapestPrice: null,
  },
];

/** Who the double says served a reply. */
export const TEST_SERVED: Omit<ServedBy, "tier"> = {
  provider: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
  verdict: "endorsed-key",
  gateway: "http://127.0.0.1:9201",
};

/** How the double behaves. */
export interface TestBackendOptions {
  /** The offered models. @default {TEST_MODELS} */
  models?: readonly NetworkModel[];
  /** Thrown by `listModels`. */
  listError?: unknown;
  /** Thrown by `chat` before any chunk. */
  failBefore?: unknown;
  /** Thrown by the chunk iteration after this many chunks. */
  failAfter?: { chunks: number; error: unknown };
  /** Milliseconds `chat` waits before answering (aborts with the signal). */
  firstChunkDelayMs?: number;
  /** After this many chunks, the stream stalls until aborted. */
  stallAfter?: number;
  /** Replaces the computed chunks with these raw values. */
  rawChunks?: readonly unknown[];
  /** Overrides `served` (e.g. another tier). */
  served?: Partial<ServedBy>;
}

/** What the double recorded about one request. */
export interface RecordedChat {
  /** The request as the surface built it. */
  readonly request: ChatRequest;
  /** The signal it came with. */
  readonly signal: AbortSignal;
  /** Whether the surface closed the chunk iterator (return() or completion). */
  closed: boolean;
}

function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w !== "");
}

function messageText(message: unknown): string {
  const content = (message as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part as { type?: string; text?: string }).type === "text" ? part.text : "")
      .join(" ");
  }
  return "";
}

function abortable(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Computes the deterministic chunks for a request (see the module documentation). */
export function scriptedChunks(request: ChatRequest): ChatCompletionChunk[] {
  const messages = request.body.messages;
  const promptTokens = messages.reduce<number>((n, m) => n + words(messageText(m)).length, 0);
  const base = {
    id: "chatcmpl-provider",
    object: "chat.completion.chunk" as const,
    created: 1_790_000_000,
    model: request.model,
  };
  const chunks: ChatCompletionChunk[] = [
    {
      ...base,
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
    },
  ];
  const last = messages[messages.length - 1] as { role?: string };
  const lastUser = [...messages].reverse().find((m) => (m as { role?: string }).role === "user");
  const tools = Array.isArray(request.body.tools) && request.body.tools.length > 0;
  let completion = 0;
  let finish = "stop";
  if (tools && last.role === "user" && /weather/i.test(messageText(lastUser))) {
    const fragments = ['{"city":', ' "Paris",', ' "unit": "celsius"}'];
    chunks.push({
      ...base,
      choices: [{
        index: 0,
        delta: {
          tool_calls: [{
            index: 0,
            id: "call_weather_1",
            type: "function",
            function: { name: "get_weather", arguments: "" },
          }],
        },
        finish_reason: null,
      }],
    });
    for (const fragment of fragments) {
      chunks.push({
        ...base,
        choices: [{
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { arguments: fragment } }] },
          finish_reason: null,
        }],
      });
    }
    completion = 1 + fragments.length;
    finish = "tool_calls";
  } else {
    const reply = last.role === "tool"
      ? ["The", "weather", "is", ...words(messageText(last))]
      : ["Echo:", ...words(messageText(lastUser ?? last))];
    reply.forEach((word, i) => {
      chunks.push({
        ...base,
        choices: [{
          index: 0,
          delta: { content: i === 0 ? word : ` ${word}` },
          finish_reason: null,
        }],
      });
    });
    completion = reply.length;
  }
  chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] });
  chunks.push({
    ...base,
    choices: [],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completion,
      total_tokens: promptTokens + completion,
    },
  });
  return chunks;
}

/** The test double. */
export class TestBackend implements ChatBackend {
  /** Every chat request received, in order. */
  readonly chats: RecordedChat[] = [];
  /** How many times the model list was asked for. */
  listCalls = 0;
  readonly #options: TestBackendOptions;

  /** Creates the double. */
  constructor(options: TestBackendOptions = {}) {
    this.#options = options;
  }

  /** The offered models, or the scripted `listError`. */
  listModels(_signal: AbortSignal): Promise<readonly NetworkModel[]> {
    this.listCalls++;
    if (this.#options.listError !== undefined) return Promise.reject(this.#options.listError);
    return Promise.resolve(this.#options.models ?? TEST_MODELS);
  }

  /** Answers with the scripted chunks. */
  async chat(request: ChatRequest, signal: AbortSignal): Promise<ChatReply> {
    const record: RecordedChat = { request: structuredClone(request), signal, closed: false };
    this.chats.push(record);
    const options = this.#options;
    if (options.firstChunkDelayMs) await abortable(options.firstChunkDelayMs, signal);
    if (options.failBefore !== undefined) throw options.failBefore;
    const models = options.models ?? TEST_MODELS;
    if (!models.some((m) => m.tier === request.tier && m.model === request.model)) {
      throw new DaemonError(
        "model_not_found",
        `The network offers no ${request.model} in tier ${request.tier}`,
      );
    }
    const chunks = options.rawChunks ?? scriptedChunks(request);
    async function* stream(): AsyncGenerator<ChatCompletionChunk> {
      try {
        for (const [i, chunk] of chunks.entries()) {
          if (options.failAfter && i === options.failAfter.chunks) throw options.failAfter.error;
          if (options.stallAfter !== undefined && i === options.stallAfter) {
            await abortable(3_600_000, signal);
          }
          if (signal.aborted) throw signal.reason;
          yield chunk as ChatCompletionChunk;
        }
        if (options.failAfter && chunks.length <= options.failAfter.chunks) {
          throw options.failAfter.error;
        }
      } finally {
        record.closed = true;
      }
    }
    return {
      served: { ...TEST_SERVED, tier: request.tier, ...options.served },
      chunks: stream(),
    };
  }
}
