/**
 * An inference engine that forwards to any OpenAI-compatible server (vLLM, llama.cpp's
 * server, Ollama's `/v1`, ...). The provider then advertises that server's models as
 * `upstream/<model>`, the model name made safe for the ad format (`docs/protocol.md` §1).
 *
 * @module
 */

import { fetchJson, FetchJsonError, readBodyLimited } from "../io/fetch_json.ts";
import { parseSse } from "../io/sse.ts";
import {
  type ChatBody,
  type ChatChunk,
  devTokens,
  EngineError,
  type EngineModel,
  type InferenceEngine,
  messageText,
} from "./engine.ts";

/** Options of {@linkcode UpstreamEngine}. */
export interface UpstreamEngineOptions {
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Sent as `Authorization: Bearer <apiKey>` when set. */
  apiKey?: string;
  /** Context length advertised for each model (the OpenAI API does not say). @default {8192} */
  contextLength?: number;
  /**
   * Time allowed for the model list and for the head of a reply, in ms. The reply's stream is
   * not timed: it runs for as long as the upstream generates (or until the request is aborted).
   *
   * @default {30000}
   */
  timeoutMs?: number;
}

/** Maker segment of the models an upstream engine advertises. */
export const UPSTREAM_MAKER = "upstream";

/** Turns an upstream model name into a valid model segment (`[A-Za-z0-9][A-Za-z0-9._-]{0,63}`). */
export function upstreamModelSegment(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (safe || "model").slice(0, 64);
}

/** Forwards chat completions to an OpenAI-compatible server. */
export class UpstreamEngine implements InferenceEngine {
  readonly #base: string;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  readonly #contextLength: number;
  readonly #timeoutMs: number;
  /** Our model id → the upstream's model name. */
  #names = new Map<string, string>();

  /** Creates the engine for the server at `baseUrl` (its `/v1/...` paths are used). */
  constructor(baseUrl: string, options: UpstreamEngineOptions = {}) {
    this.#base = baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
    this.#fetch = options.fetch ?? fetch;
    this.#headers = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
    this.#contextLength = options.contextLength ?? 8192;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Lists the upstream's models (`GET /v1/models`). */
  async models(): Promise<EngineModel[]> {
    let body: unknown;
    try {
      body = await fetchJson(`${this.#base}/v1/models`, {
        fetch: this.#fetch,
        headers: this.#headers,
        timeoutMs: this.#timeoutMs,
      });
    } catch (cause) {
      throw new EngineError(
        "upstream",
        `Cannot list the upstream's models: ${
          cause instanceof FetchJsonError ? cause.shortMessage : String(cause)
        }`,
        { cause },
      );
    }
    const data = (body as { data?: unknown })?.data;
    if (!Array.isArray(data)) {
      throw new EngineError(
        "upstream",
        `Cannot list the upstream's models: expected {"data": [...]} from ${this.#base}/v1/models`,
      );
    }
    const names = new Map<string, string>();
    for (const item of data) {
      const name = (item as { id?: unknown })?.id;
      if (typeof name !== "string" || name.length === 0) continue;
      const id = `${UPSTREAM_MAKER}/${upstreamModelSegment(name)}`;
      if (!names.has(id)) names.set(id, name);
    }
    this.#names = names;
    return [...names.keys()].map((id) => ({ id, contextLength: this.#contextLength }));
  }

  /** Streams the upstream's completion, with usage (computed by the dev tokenizer if absent). */
  async *complete(body: ChatBody, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    if (this.#names.size === 0) await this.models();
    const name = this.#names.get(body.model);
    if (name === undefined) {
      throw new EngineError(
        "unknown_model",
        `Cannot serve model ${JSON.stringify(body.model)}: the upstream offers ${
          [...this.#names.keys()].join(", ") || "no models"
        }`,
      );
    }
    // The timeout bounds the wait for the head only; the abort (the requester went away)
    // stops the upstream's request at any time, stream included.
    // (One controller, not `AbortSignal.any`, whose combined signal its sources hold only
    // weakly: an abort during a long stream must not be lost.)
    const head = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      head.abort();
    }, this.#timeoutMs);
    const onAbort = () => head.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    let response: Response;
    try {
      response = await this.#fetch(`${this.#base}/v1/chat/completions`, {
        method: "POST",
        signal: head.signal,
        headers: { "content-type": "application/json", ...this.#headers },
        body: JSON.stringify({
          ...body,
          model: name,
          stream: true,
          stream_options: { include_usage: true },
        }),
      });
    } catch (cause) {
      signal.removeEventListener("abort", onAbort);
      signal.throwIfAborted();
      throw new EngineError(
        "upstream",
        timedOut
          ? `Cannot complete with the upstream at ${this.#base}: no answer within ${this.#timeoutMs} ms`
          : `Cannot reach the upstream at ${this.#base}: ${cause}`,
        { cause },
      );
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok || !response.body) {
      signal.removeEventListener("abort", onAbort);
      const text = await readBodyLimited(response, { maxBytes: 4096 })
        .then((b) => new TextDecoder().decode(b).slice(0, 200))
        .catch(() => "");
      throw new EngineError(
        "upstream",
        `Cannot complete with the upstream: status ${response.status}, expected 200 ${text}`.trim(),
      );
    }
    let completionText = "";
    let sawUsage = false;
    let last: ChatChunk | undefined;
    // However the stream ends — its end, a failure, the run stopped early or aborted (the
    // requester went away) — the upstream's body is cancelled, which closes its connection.
    const upstream = response.body.getReader();
    const stop = () => upstream.cancel(signal.reason).catch(() => {});
    signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const event of parseSse(readerStream(upstream))) {
        if (event.data === "[DONE]") break;
        let chunk: ChatChunk;
        try {
          chunk = JSON.parse(event.data);
        } catch (cause) {
          throw new EngineError(
            "upstream",
            "Cannot read the upstream's stream: an event is not JSON",
            {
              cause,
            },
          );
        }
        chunk = { ...chunk, model: body.model };
        for (const choice of chunk.choices ?? []) completionText += choice.delta?.content ?? "";
        if (chunk.usage) sawUsage = true;
        last = chunk;
        yield chunk;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      signal.removeEventListener("abort", stop);
      await upstream.cancel().catch(() => {});
    }
    if (!sawUsage && last) {
      const prompt = body.messages.reduce(
        (sum, m) => sum + devTokens(`${m.role} ${messageText(m.content)}`).length,
        0,
      );
      const completion = devTokens(completionText).length;
      yield {
        id: last.id,
        object: "chat.completion.chunk",
        created: last.created,
        model: body.model,
        choices: [],
        usage: {
          prompt_tokens: prompt,
          completion_tokens: completion,
          total_tokens: prompt + completion,
        },
      };
    }
  }
}

/**
 * A stream over a reader this engine keeps, so it can cancel the upstream's body itself (an
 * abort through `fetch`'s signal can be lost mid-stream: the request follows it through a
 * weakly held dependent signal).
 */
function readerStream(reader: ReadableStreamDefaultReader<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const step = await reader.read();
      if (step.done) controller.close();
      else controller.enqueue(step.value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}
