/**
 * An inference engine that forwards to any OpenAI-compatible server (vLLM, llama.cpp's
 * server, Ollama's `/v1`, ...). The provider then advertises that server's models as
 * `upstream/<model>`, the model name made safe for the ad format (`docs/protocol.md` §1).
 *
 * The OpenAI API does not say what a model does, so a model whose name contains `embed`
 * (`nomic-embed-text`, `text-embedding-3-small`, …) is advertised as an embedding model, its
 * vector length learned from one embeddings request when the models are listed (a model that
 * does not answer it is not advertised); embeddings requests for it are passed to the
 * upstream's `POST /v1/embeddings` (as floats, with usage counted by the dev tokenizer when the
 * upstream gives none). Every other model is a chat model with no capability advertised (the
 * upstream's tools or logprobs support is unknown).
 *
 * @module
 */

import { fetchJson, FetchJsonError, readBodyLimited } from "../io/fetch_json.ts";
import { parseSse } from "../io/sse.ts";
import { embeddingInputs } from "./dev_embed.ts";
import {
  type ChatBody,
  type ChatChunk,
  devTokens,
  type EmbedBody,
  type EmbeddingList,
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

/** Whether an upstream model name reads as an embedding model's. */
export function isEmbeddingModelName(name: string): boolean {
  return /embed/i.test(name);
}

/** Largest embeddings answer read from the upstream: 64 MiB. */
const MAX_EMBEDDINGS_BYTES = 64 << 20;

/** Forwards chat completions (and embeddings) to an OpenAI-compatible server. */
export class UpstreamEngine implements InferenceEngine {
  readonly #base: string;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  readonly #contextLength: number;
  readonly #timeoutMs: number;
  /** Our model id → the upstream's model name. */
  #names = new Map<string, string>();
  /** Our embedding model ids. */
  #embedding = new Set<string>();

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
    const models: EngineModel[] = [];
    const embedding = new Set<string>();
    for (const [id, name] of names) {
      if (!isEmbeddingModelName(name)) {
        models.push({ id, contextLength: this.#contextLength, kind: "chat" });
        continue;
      }
      const probe = await this.#embeddings({ model: name, input: "dimensions probe" })
        .catch(() => undefined);
      const length = probe?.data[0]?.embedding.length ?? 0;
      if (length < 1 || length > 65_536) continue; // not usable as an embedding model
      embedding.add(id);
      models.push({
        id,
        contextLength: this.#contextLength,
        kind: "embedding",
        embeddingDimensions: length,
      });
    }
    this.#names = names;
    this.#embedding = embedding;
    return models;
  }

  /** Passes an embeddings request to the upstream's `POST /v1/embeddings`. */
  async embed(body: EmbedBody, signal: AbortSignal): Promise<EmbeddingList> {
    if (this.#names.size === 0) await this.models();
    const name = this.#names.get(body.model);
    if (name === undefined || !this.#embedding.has(body.model)) {
      throw new EngineError(
        "unknown_model",
        `Cannot embed with model ${
          JSON.stringify(body.model)
        }: the upstream's embedding models are ${[...this.#embedding].join(", ") || "none"}`,
      );
    }
    const list = await this.#embeddings(
      { ...body, model: name, encoding_format: "float" },
      signal,
    );
    const tokens = list.usage?.prompt_tokens ??
      embeddingInputs(body.input).reduce((n, item) => n + item.tokens, 0);
    return {
      object: "list",
      data: list.data.map((d, index) => ({
        object: "embedding",
        index: d.index ?? index,
        embedding: d.embedding,
      })),
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: list.usage?.total_tokens ?? tokens },
    };
  }

  /** `POST /v1/embeddings` upstream, bounded in time and size; the answer's shape checked. */
  async #embeddings(
    body: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<{
    data: { index?: number; embedding: number[] }[];
    usage?: { prompt_tokens: number; total_tokens?: number };
  }> {
    const url = `${this.#base}/v1/embeddings`;
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: "POST",
        redirect: "manual",
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        headers: { "content-type": "application/json", ...this.#headers },
        body: JSON.stringify(body),
      });
    } catch (cause) {
      signal?.throwIfAborted();
      throw new EngineError("upstream", `Cannot reach the upstream at ${url}: ${cause}`, { cause });
    }
    const bytes = await readBodyLimited(response, { maxBytes: MAX_EMBEDDINGS_BYTES, url })
      .catch((cause) => {
        throw new EngineError("upstream", `Cannot read the upstream's embeddings: ${cause}`, {
          cause,
        });
      });
    const text = new TextDecoder().decode(bytes);
    if (!response.ok) {
      throw new EngineError(
        "upstream",
        `Cannot embed with the upstream: status ${response.status}, expected 200 ${
          text.slice(0, 200)
        }`.trim(),
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      throw new EngineError("upstream", "Cannot read the upstream's embeddings: not JSON", {
        cause,
      });
    }
    const data = (parsed as { data?: unknown })?.data;
    if (
      !Array.isArray(data) ||
      !data.every((d) =>
        Array.isArray(d?.embedding) &&
        d.embedding.every((x: unknown) => typeof x === "number" && Number.isFinite(x))
      )
    ) {
      throw new EngineError(
        "upstream",
        `Cannot read the upstream's embeddings: expected {"data": [{"embedding": [numbers]}]} from ${url}`,
      );
    }
    const usage = (parsed as { usage?: { prompt_tokens?: unknown; total_tokens?: unknown } })
      .usage;
    // Counts are billed: one that is not a whole number of tokens is not taken (the dev
    // tokenizer counts instead).
    const count = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
    return {
      data,
      ...(count(usage?.prompt_tokens)
        ? {
          usage: {
            prompt_tokens: usage.prompt_tokens,
            ...(count(usage.total_tokens) ? { total_tokens: usage.total_tokens } : {}),
          },
        }
        : {}),
    };
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
