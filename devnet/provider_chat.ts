/**
 * What the devnet provider does with an opened sealed request (`docs/protocol.md` §7): check
 * that it is a chat completion it serves, take one of its slots, run the engine, and seal the
 * reply — one `chat.completion` object (its head at once, a space every 10 s while the engine
 * generates), or server-sent events, sealed as soon as they are produced. A sealed
 * `POST /v1/embeddings` goes to `provider_embed.ts`.
 * {@linkcode ProviderLoad} counts the slots in use, the observed throughput and the usage
 * served, for the ad and for settlement.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import type { OpenedHttpRequest } from "../crypto/mod.ts";
import { usageCost } from "../chain/cost.ts";
import { encodeSse } from "../io/sse.ts";
import { answerEmbeddings, EMBEDDINGS_PATH } from "./provider_embed.ts";
import type { PaymentHold, PaymentRefusal } from "./provider_payments.ts";
import {
  type ChatBody,
  type ChatChunk,
  devTokens,
  EngineError,
  type InferenceEngine,
  messageText,
  type TokenLogprob,
} from "./engine.ts";

/** Prices of one model: smallest token unit per 1M tokens. */
export interface ModelPrices {
  /** Input tokens. */
  input: bigint;
  /** Output tokens. */
  output: bigint;
}

/** Usage served since the last {@linkcode ProviderLoad.takeUsage}. */
export interface ServedUsage {
  /** Tokens (prompt + completion). */
  tokens: bigint;
  /** What those tokens cost at the advertised prices (smallest unit). */
  amount: bigint;
}

/** A provider's slots, observed throughput and served usage. */
export class ProviderLoad {
  /** Concurrent requests served; more are refused. */
  readonly maxConcurrency: number;
  #inFlight = 0;
  #tokensPerSec = 0;
  #usage: ServedUsage = { tokens: 0n, amount: 0n };

  /** Creates the counters for `maxConcurrency` slots. */
  constructor(maxConcurrency: number) {
    this.maxConcurrency = maxConcurrency;
  }

  /** Slots free now. */
  get available(): number {
    return Math.max(0, this.maxConcurrency - this.#inFlight);
  }

  /** Slots taken now (requests being opened or answered). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Decode throughput, a moving average over served requests. */
  get tokensPerSec(): number {
    return this.#tokensPerSec;
  }

  /**
   * Takes a slot before the request is even read (a busy provider answers `503` at once, without
   * opening anything), or `undefined` when every slot is busy. The slot is priced once the
   * request says which model it asks for ({@linkcode Slot.serve}).
   */
  reserve(): Slot | undefined {
    if (this.#inFlight >= this.maxConcurrency) return undefined;
    this.#inFlight++;
    let released = false;
    const release = () => {
      if (!released) this.#inFlight--;
      released = true;
    };
    return {
      release,
      serve: (prices, hold) =>
        new ServedRequest(prices, {
          release,
          bill: (usage) => this.restoreUsage(usage),
          hold,
          observe: (rate) => {
            this.#tokensPerSec = this.#tokensPerSec === 0
              ? rate
              : 0.8 * this.#tokensPerSec + 0.2 * rate;
          },
        }),
    };
  }

  /** Takes a slot for one request at `prices`, or `undefined` when every slot is busy. */
  admit(prices: ModelPrices): ServedRequest | undefined {
    return this.reserve()?.serve(prices);
  }

  /** Adds usage (served now, or given back because its settlement failed). */
  restoreUsage(usage: ServedUsage): void {
    this.#usage = {
      tokens: this.#usage.tokens + usage.tokens,
      amount: this.#usage.amount + usage.amount,
    };
  }

  /** Returns the usage served since the last call, and resets it. */
  takeUsage(): ServedUsage {
    const usage = this.#usage;
    this.#usage = { tokens: 0n, amount: 0n };
    return usage;
  }
}

/** A slot taken for a request that is not priced yet. */
export interface Slot {
  /** Gives the slot back (the request was refused before it was served); idempotent. */
  release(): void;
  /**
   * Prices the request: from now on the slot is held by the returned {@linkcode ServedRequest}.
   * With a payment hold, the request's bill is charged to it.
   */
  serve(prices: ModelPrices, hold?: PaymentHold): ServedRequest;
}

/** What a served request reports to its provider's counters. */
export interface LoadReport {
  /** Its slot is free again. */
  release(): void;
  /** It was served: add its usage. */
  bill(usage: ServedUsage): void;
  /** The decode throughput it saw. */
  observe(tokensPerSec: number): void;
  /** The consumer's payment hold: charged the bill (0 when nothing was billed). */
  hold?: PaymentHold;
}

/** One admitted request: its slot, and what it is billed. Releasing and billing happen once. */
export class ServedRequest {
  readonly #prices: ModelPrices;
  readonly #load: LoadReport;
  readonly #started = performance.now();
  #generated = 0;
  #billed = false;
  #released = false;

  /** Created by {@linkcode ProviderLoad.admit}. */
  constructor(prices: ModelPrices, load: LoadReport) {
    this.#prices = prices;
    this.#load = load;
  }

  /**
   * Counts a chunk: its content and tool-call deltas, and the engine's exact usage when it
   * carries it.
   */
  account(chunk: ChatChunk): void {
    for (const choice of chunk.choices) {
      if (choice.delta.content || choice.delta.tool_calls?.length) this.#generated++;
    }
    if (!chunk.usage) return;
    const { prompt_tokens: prompt, completion_tokens: completion } = chunk.usage;
    this.#bill(prompt, completion);
    const seconds = (performance.now() - this.#started) / 1000;
    if (seconds > 0 && completion > 0) this.#load.observe(completion / seconds);
  }

  /**
   * Bills a stream that ended before the engine's usage chunk (the client stopped it, the
   * engine failed) for what was generated: the prompt counted by the dev tokenizer, one token
   * per content delta.
   */
  billPartial(body: ChatBody): void {
    const prompt = body.messages.reduce(
      (n, m) => n + devTokens(`${m.role} ${messageText(m.content)}`).length,
      0,
    );
    this.#bill(prompt, this.#generated);
  }

  /** Bills an embeddings request: its input tokens, at the input price. */
  billInput(tokens: number): void {
    this.#bill(tokens, 0);
  }

  /** Gives the slot back; a request held for payment and never billed is charged nothing. */
  release(): void {
    if (!this.#released) this.#load.release();
    this.#released = true;
    if (!this.#billed) this.#load.hold?.charge(0n, { promptTokens: 0, completionTokens: 0 });
  }

  #bill(prompt: number, completion: number): void {
    if (this.#billed) return;
    this.#billed = true;
    const amount = usageCost(this.#prices, { promptTokens: prompt, completionTokens: completion });
    // Paid by voucher: never more than the worst case the voucher covered.
    const hold = this.#load.hold;
    const charged = hold && amount > hold.worst ? hold.worst : amount;
    this.#load.bill({ tokens: BigInt(prompt + completion), amount: charged });
    hold?.charge(charged, { promptTokens: prompt, completionTokens: completion });
  }
}

/** What answering a chat needs from the provider. */
export interface ChatContext {
  /** The inference engine. */
  engine: InferenceEngine;
  /** The price of every model served. */
  prices: ReadonlyMap<string, ModelPrices>;
  /** The slots and counters. */
  load: ProviderLoad;
  /** Where failures are reported. */
  log: (message: string) => void;
  /** The slot taken for this request ({@linkcode ProviderLoad.reserve}). @default {one is taken now} */
  slot?: Slot;
  /**
   * Aborts when the requester goes away: the engine (and an upstream engine's request) stops
   * at once and the slot is freed; only what was produced is billed.
   */
  signal?: AbortSignal;
  /** How often a whole reply sends a space while it waits for the engine. @default {10000} */
  keepAliveMs?: number;
  /**
   * Decides whether the request is paid for (`provider_payments.ts`), once its model is known
   * and before the engine starts; a refusal is a sealed 402. @default {every request is served}
   */
  admit?: (request: PaidRequest) => Promise<PaymentHold | PaymentRefusal>;
}

/** What the payment check of a request needs. */
export interface PaidRequest {
  /** `chat` or `embeddings`. */
  readonly kind: "chat" | "embeddings";
  /** The model asked for (served here). */
  readonly model: string;
  /** The request body, parsed. */
  readonly body: { max_tokens?: number | null; max_completion_tokens?: number | null };
  /** The length of the request body, in bytes. */
  readonly bytes: number;
}

/**
 * Runs the payment check of `context` (when there is one): the hold, or the sealed 402 refusal.
 */
export async function admitPayment(
  context: ChatContext,
  request: PaidRequest,
  sealedError: SealedError,
): Promise<PaymentHold | undefined | ReadableStream<Uint8Array>> {
  if (!context.admit) return undefined;
  const verdict = await context.admit(request);
  if (verdict.ok) return verdict;
  return sealedError(
    verdict.code === "account_unavailable" ? 503 : 402,
    verdict.code,
    verdict.message,
  );
}

/** Seals an error answer: the status and the OpenAI error body. */
export type SealedError = (
  status: number,
  type: string,
  message: string,
) => ReadableStream<Uint8Array>;

/** The sealed error answers of an opened exchange. */
export function sealedErrors(opened: OpenedHttpRequest): SealedError {
  return (status, type, message) =>
    opened.respond({
      status,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ error: { message, type, param: null, code: type } }),
    });
}

/** The chat request of an opened exchange, or its sealed refusal. */
function readChat(
  opened: OpenedHttpRequest,
  prices: ReadonlyMap<string, ModelPrices>,
  sealedError: SealedError,
): { body: ChatBody; prices: ModelPrices } | ReadableStream<Uint8Array> {
  if (opened.path !== "/v1/chat/completions") {
    return sealedError(404, "not_found", `No route for ${opened.path}`);
  }
  if (opened.method !== "POST") {
    return sealedError(405, "method_not_allowed", "Use POST /v1/chat/completions");
  }
  let body: ChatBody;
  try {
    body = JSON.parse(opened.text());
    if (typeof body !== "object" || body === null || typeof body.model !== "string") {
      throw new Error("not a chat request");
    }
  } catch {
    return sealedError(400, "invalid_request_error", "The body is not a chat-completions request");
  }
  const price = prices.get(body.model);
  if (!price) {
    return sealedError(
      404,
      "model_not_found",
      `Model ${JSON.stringify(body.model)} is not served here`,
    );
  }
  return { body, prices: price };
}

/**
 * Runs the opened request and returns the sealed reply stream. It waits for the engine's
 * first chunk, so that a refusal (unknown model, bad request) becomes a sealed error status.
 * A sealed `POST /v1/embeddings` is answered by {@linkcode answerEmbeddings}.
 */
export async function answerChat(
  opened: OpenedHttpRequest,
  context: ChatContext,
): Promise<ReadableStream<Uint8Array>> {
  if (opened.path === EMBEDDINGS_PATH) return await answerEmbeddings(opened, context);
  const sealedError = sealedErrors(opened);
  const slot = context.slot ?? context.load.reserve();
  const chat = readChat(opened, context.prices, sealedError);
  if (chat instanceof ReadableStream) {
    slot?.release();
    return chat;
  }
  if (!slot) {
    return sealedError(503, "overloaded", `All ${context.load.maxConcurrency} slots are busy`);
  }
  const paid = await admitPayment(context, {
    kind: "chat",
    model: chat.body.model,
    body: chat.body,
    bytes: opened.body.length,
  }, sealedError);
  if (paid instanceof ReadableStream) {
    slot.release();
    return paid;
  }
  const served = slot.serve(chat.prices, paid);
  const abort = new AbortController();
  const { signal } = context;
  const onGone = () => abort.abort(signal?.reason ?? new Error("the requester went away"));
  if (signal?.aborted) onGone();
  else signal?.addEventListener("abort", onGone, { once: true });
  // Whatever ends the run (its end, a failure, the requester leaving) frees the slot once.
  const free = () => {
    signal?.removeEventListener("abort", onGone);
    served.release();
  };
  abort.signal.addEventListener("abort", () => {
    served.billPartial(chat.body);
    free();
  }, { once: true });
  const chunks = context.engine.complete(chat.body, abort.signal)[Symbol.asyncIterator]();
  let first: IteratorResult<ChatChunk>;
  try {
    first = await chunks.next();
  } catch (error) {
    free();
    return engineFailure(error, sealedError);
  }
  const run: EngineRun = { body: chat.body, first, chunks, served, abort, free };
  if (chat.body.stream !== true) {
    const keepAliveMs = context.keepAliveMs ?? WHOLE_KEEPALIVE_MS;
    return wholeReply(opened, run, { log: context.log, keepAliveMs });
  }
  return opened.respond({
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-store" },
    body: eventStream(run, context.log),
  });
}

/** An engine run under way: its request, first result, the rest, its slot and its abort. */
interface EngineRun {
  body: ChatBody;
  first: IteratorResult<ChatChunk>;
  chunks: AsyncIterator<ChatChunk>;
  served: ServedRequest;
  abort: AbortController;
  /** Frees the slot (once) and stops listening for the requester leaving. */
  free: () => void;
}

/**
 * How often a whole reply shows the requester it is alive while the engine generates: one
 * space, which JSON allows before the object (the requester's idle timeout starts again).
 */
export const WHOLE_KEEPALIVE_MS = 10_000;

const SPACE = new TextEncoder().encode(" ");

/**
 * The whole reply (`stream: false`): the head (200, `application/json`) at once — the engine
 * has produced its first chunk, so the requester knows it started — then one `chat.completion`
 * object when the engine is done, with a space every `keepAliveMs` before it. A failure after
 * the head is an `{"error": …}` object instead.
 */
function wholeReply(
  opened: OpenedHttpRequest,
  run: EngineRun,
  options: { log: (message: string) => void; keepAliveMs: number },
): ReadableStream<Uint8Array> {
  let timer: ReturnType<typeof setInterval> | undefined;
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (bytes: Uint8Array) => open && controller.enqueue(bytes);
      timer = setInterval(() => send(SPACE), options.keepAliveMs);
      completion(run).then((object) => send(encoder.encode(JSON.stringify(object))), (error) => {
        if (run.abort.signal.aborted) return; // the requester went away: nobody reads it
        run.served.billPartial(run.body);
        options.log(`whole reply failed: ${error}`);
        send(encoder.encode(JSON.stringify({
          error: { message: "The provider failed mid-reply", type: "provider_error" },
        })));
      }).finally(() => {
        clearInterval(timer);
        run.free();
        if (open) controller.close();
        open = false;
      });
    },
    cancel(reason) {
      open = false;
      clearInterval(timer);
      run.abort.abort(reason ?? new Error("the requester went away"));
    },
  });
  return opened.respond({
    status: 200,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
    body,
  });
}

/** The engine's run gathered into one `chat.completion` object. */
async function completion(run: EngineRun): Promise<Record<string, unknown>> {
  const parts: string[] = [];
  const calls: { id: string; type: "function"; function: { name: string; arguments: string } }[] =
    [];
  let last: ChatChunk | undefined;
  let finish: string | null = null;
  let logprobs: TokenLogprob[] | undefined;
  for (let r = run.first; !r.done; r = await run.chunks.next()) {
    last = r.value;
    run.served.account(r.value);
    for (const choice of r.value.choices) {
      parts.push(choice.delta.content ?? "");
      if (choice.logprobs?.content) (logprobs ??= []).push(...choice.logprobs.content);
      for (const delta of choice.delta.tool_calls ?? []) {
        const call = calls[delta.index] ??= {
          id: "",
          type: "function",
          function: { name: "", arguments: "" },
        };
        call.id ||= delta.id ?? "";
        call.function.name += delta.function?.name ?? "";
        call.function.arguments += delta.function?.arguments ?? "";
      }
      finish = choice.finish_reason ?? finish;
    }
  }
  const content = parts.join("");
  return {
    id: last?.id,
    object: "chat.completion",
    created: last?.created,
    model: run.body.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: calls.length > 0 && content === "" ? null : content,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      },
      ...(logprobs ? { logprobs: { content: logprobs, refusal: null } } : {}),
      finish_reason: finish,
    }],
    usage: last?.usage,
  };
}

/** Most bytes of events sealed together in one chunk. */
const MAX_BATCH_BYTES = 16 * 1024;
const encoder = new TextEncoder();
const READY = Symbol("ready");

/** Resolves once the microtasks queued now have run: what the engine has ready by then is ready. */
function readyNow(): Promise<typeof READY> {
  return new Promise((resolve) => setImmediate(() => resolve(READY)));
}

/**
 * The reply's server-sent events, produced as the engine produces them (no read-ahead), each
 * batch sealed as one chunk: one event per chunk while the engine is slower than the reader (a
 * real model, or `--token-delay-ms`), and every event the engine has ready at once together when
 * it is faster (up to 16 KiB) — fewer seals here, fewer opens at the requester.
 */
function eventStream(run: EngineRun, log: (message: string) => void): ReadableStream<Uint8Array> {
  const { served, chunks } = run;
  let finished = false;
  const render = (r: IteratorResult<ChatChunk>): string => {
    if (r.done) {
      finished = true;
      return "data: [DONE]\n\n";
    }
    served.account(r.value);
    // JSON text has no line breaks: one `data:` line is the whole event.
    return `data: ${JSON.stringify(r.value)}\n\n`;
  };
  const end = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    controller.close();
    run.free();
  };
  // The first result (already read, to answer a refusal with its status) opens the first
  // batch: what the engine has ready with it is sealed together with it.
  let pending: Promise<IteratorResult<ChatChunk>> | undefined = Promise.resolve(run.first);
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      try {
        let batch = render(await (pending ?? chunks.next()));
        pending = undefined;
        // One tick for the whole batch: what is ready before it fires is sealed together.
        const tick = readyNow();
        while (!finished && batch.length < MAX_BATCH_BYTES) {
          const step = chunks.next();
          const ready = await Promise.race([step, tick]);
          if (ready === READY) {
            pending = step;
            step.catch(() => {}); // awaited by the next pull, or dropped with the stream
            break;
          }
          batch += render(ready);
        }
        controller.enqueue(encoder.encode(batch));
        if (finished) end(controller);
      } catch (error) {
        if (run.abort.signal.aborted) {
          // The requester went away: the abort billed what was produced and freed the slot.
          controller.error(run.abort.signal.reason);
          return;
        }
        served.billPartial(run.body);
        run.free();
        log(`stream failed: ${error}`);
        controller.enqueue(encodeSse(JSON.stringify({
          error: { message: "The provider failed mid-stream", type: "provider_error" },
        })));
        controller.close();
      }
    },
    cancel: async (reason) => {
      run.abort.abort(reason ?? new Error("the requester went away"));
      await chunks.return?.(undefined);
    },
  }, { highWaterMark: 0 });
}

/** The sealed answer to an engine's failure: its reason's status, or a generic 500. */
export function engineFailure(
  error: unknown,
  sealedError: SealedError,
): ReadableStream<Uint8Array> {
  if (error instanceof EngineError) {
    const status = error.reason === "unknown_model"
      ? 404
      : error.reason === "invalid_request"
      ? 400
      : 502;
    return sealedError(status, error.reason, error.shortMessage);
  }
  return sealedError(500, "internal_error", "The provider failed to answer");
}
