/**
 * The part of a chat that every dialect shares ({@linkcode serveReply}): starting the backend's
 * reply (with a first-byte timeout, and a check that it was served in the tier asked for), the
 * headers naming who served it, the streamed body a dialect's text pieces become, and a client's
 * cancel, noted once and never reported as an error. Reading the reply is
 * `reply_events.ts`; buffering it, `reply_buffer.ts`.
 *
 * @module
 */

import { setImmediate } from "node:timers";
import {
  type ChatReply,
  type ChatRequest,
  ClientGone,
  clientGone,
  DaemonError,
  payerOf,
  requestController,
  type ServedBy,
  type Tier,
  withTimeout,
} from "../core/mod.ts";
import type { SurfaceContext } from "./context.ts";
import { type CapabilityFields, checkCapabilities } from "./models.ts";
import { type ReplyEvent, replyEvents } from "./reply_events.ts";

/** The events of a reply, as `reply_events.ts` reads them. */
export type ReplyEvents = AsyncGenerator<ReplyEvent, void, undefined>;

/** What the log says of a request its client cancelled: `what` was cancelled `when`. */
export interface CancelNote {
  /** The request's controller (aborted with `ClientGone` when the client goes away). */
  readonly controller: AbortController;
  /** The request, e.g. `chat "net/verified/devnet/echo"`. */
  readonly what: string;
  /** When: before its reply started, or during it. */
  when: string;
}

/** How a dialect answers a reply: whole, or as a stream of text pieces. */
export interface ReplyAnswer {
  /** The whole answer (`stream: false`), from every event of the reply. */
  whole(events: ReplyEvents, reply: ChatReply): Promise<Response>;
  /** The streamed answer: its headers, and the body's text pieces. */
  stream(
    events: ReplyEvents,
    reply: ChatReply,
    cancel: CancelNote,
  ): { headers: Headers; pieces: AsyncGenerator<string, void, undefined> };
}

/**
 * Serves a chat-shaped call in a dialect: opens the backend's reply ({@linkcode openReply}),
 * reads its events and answers them whole or streamed, as `answer` shapes them. A client that
 * goes away at any point aborts the request; that is noted once and answered `499`, never
 * reported as an error.
 *
 * @throws {DaemonError} (or any error, rendered as 500) when the reply fails before it starts;
 * for a stream, later failures are the dialect's to send in-stream.
 */
export async function serveReply(
  context: SurfaceContext,
  served: {
    call: { request: ChatRequest; requestedModel: string; stream: boolean };
    request: Request;
    what: string;
    /**
     * Where the dialect lists each model's capabilities, and the fields of its request that
     * need one: a request that needs a capability its model's providers do not advertise is
     * refused before anything is sent ({@linkcode checkCapabilities}).
     */
    capabilities: { listing: string; fields: CapabilityFields };
  },
  answer: ReplyAnswer,
): Promise<Response> {
  const { call } = served;
  await checkCapabilities(context, { ...call, ...served.capabilities }, served.request);
  const { controller, release } = requestController(served.request);
  const cancel: CancelNote = {
    controller,
    what: served.what,
    when: "before its reply started (queued or waiting for a provider)",
  };
  try {
    // Paid under the API key the request presented (`core/payment.ts`).
    const request = { ...call.request, payer: payerOf(served.request) };
    const reply = await openReply(context, { ...call, request, controller });
    cancel.when = "during its reply";
    const events = replyEvents(context, { reply, controller });
    if (!call.stream) {
      const whole = await answer.whole(events, reply);
      release();
      return whole;
    }
    const { headers, pieces } = answer.stream(events, reply, cancel);
    const onCancel = () => noteCancel(context, cancel);
    return new Response(textStream(pieces, { controller, onDone: release, onCancel }), {
      headers,
    });
  } catch (error) {
    release();
    // The client is gone: nobody reads an answer. One line in the log, not an error.
    if (endedByCancel(context, cancel)) return new Response(null, { status: 499 });
    throw error;
  }
}

/**
 * Asks the backend for a reply and waits for its first chunk, at most the first-byte timeout.
 * The reply must be served in the tier that was asked for: a TEE request is never answered by
 * a verified-tier provider (fail closed, whatever the backend does).
 *
 * @throws {DaemonError} the backend's refusal (`model_not_found` reworded to name
 * `requestedModel`), `timeout`, or an internal error for a reply whose `served` is malformed
 * or in the wrong tier.
 */
export async function openReply(
  context: SurfaceContext,
  call: { request: ChatRequest; requestedModel: string; controller: AbortController },
): Promise<ChatReply> {
  const { request, requestedModel, controller } = call;
  const pending = context.backend.chat(request, controller.signal);
  let reply: ChatReply;
  try {
    reply = await withTimeout(pending, {
      ms: context.firstByteTimeoutMs,
      controller,
      what: "no reply from the network",
    });
  } catch (error) {
    // A reply that arrives after we gave up is closed at once.
    pending.then((late) => closeChunks(late), () => {});
    if (error instanceof DaemonError && error.code === "model_not_found") {
      // One wording in both dialects, naming the id the client sent (Ollama's own text).
      throw new DaemonError("model_not_found", `model '${requestedModel}' not found`, {
        param: "model",
        cause: error,
      });
    }
    throw error;
  }
  const served = reply?.served;
  if (
    !served || !isText(served.provider) || !isText(served.verdict) ||
    !isText(served.gateway) || served.tier !== request.tier
  ) {
    controller.abort();
    closeChunks(reply);
    throw new Error(
      `backend contract broken: a ${request.tier}-tier reply says it was served by ${
        JSON.stringify(served)?.slice(0, 300)
      }`,
    );
  }
  return reply;
}

function isText(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}

function closeChunks(reply: ChatReply | undefined): void {
  try {
    const iterator = reply?.chunks?.[Symbol.asyncIterator]?.();
    iterator?.return?.()?.catch?.(() => {});
  } catch {
    // Nothing more to release.
  }
}

/** Printable ASCII only (`…` as `...`), at most 200 characters: safe as an HTTP header value. */
function headerValue(value: string): string {
  // An abbreviation (`0x07c5…`) reads `0x07c5...`; anything else outside ASCII becomes `?`.
  const clean = value.replaceAll("…", "...").replace(/[^\x20-\x7e]/g, "?").trim();
  return clean.length <= 200 ? clean : clean.slice(0, 200);
}

/** The response headers naming who served a reply (`docs/daemon.md`). */
export function servedHeaders(served: ServedBy): Record<string, string> {
  return {
    "x-net-provider": headerValue(served.provider),
    "x-net-tier": headerValue(served.tier satisfies Tier),
    "x-net-verdict": headerValue(served.verdict),
    "x-net-gateway": headerValue(served.gateway),
    ...(served.receipt ? { "x-net-receipt": headerValue(served.receipt) } : {}),
  };
}

/** The headers of an OpenAI-dialect JSON answer, naming who served it when it was served. */
export function jsonHeaders(served: ServedBy | null): Headers {
  const headers = new Headers({
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
  if (served) { for (const [k, v] of Object.entries(servedHeaders(served))) headers.set(k, v); }
  return headers;
}

/** The headers of an OpenAI-dialect event stream, naming who served it. */
export function eventStreamHeaders(served: ServedBy): Headers {
  const headers = jsonHeaders(served);
  headers.set("content-type", "text/event-stream; charset=utf-8");
  headers.set("cache-control", "no-cache, no-store");
  return headers;
}

const noted = new WeakSet<AbortController>();

/**
 * Notes, once per request, that its client went away: one line, no stack. A cancel is not a
 * refusal; the slot and the sockets it held are released by the abort itself.
 */
export function noteCancel(
  context: SurfaceContext,
  call: { controller: AbortController; what: string; when: string },
): void {
  if (noted.has(call.controller)) return;
  noted.add(call.controller);
  context.note(`daemon: ${call.what} cancelled by the client ${call.when}`);
}

/**
 * If the request was cancelled by its client, notes it (once) and returns `true`: the caller
 * then ends quietly instead of reporting an error.
 */
export function endedByCancel(
  context: SurfaceContext,
  call: { controller: AbortController; what: string; when: string },
): boolean {
  if (!clientGone(call.controller)) return false;
  noteCancel(context, call);
  return true;
}

/**
 * Most UTF-16 code units of text written to the client at once: above the 16 KiB a provider
 * seals together, so that the events of one of its chunks (re-rendered, a little longer) go
 * out in one write rather than one large and one small.
 */
const MAX_WRITE_LENGTH = 64 * 1024;
const READY = Symbol("ready");

/** Resolves once the microtasks queued now have run: the pieces ready by then are ready. */
function readyNow(): Promise<typeof READY> {
  return new Promise((resolve) => setImmediate(() => resolve(READY)));
}

/**
 * A streamed response body from a generator of text pieces. The pieces ready together (the
 * events of one sealed chunk, which a provider fills with every token it has ready) go out in
 * one write; a piece that has to be waited for goes out alone, as soon as it comes. Cancelling
 * the body (the client went away) aborts the request (with `ClientGone`), notes the cancel and
 * closes the generator.
 */
export function textStream(
  pieces: AsyncGenerator<string, void, undefined>,
  options: { controller: AbortController; onDone: () => void; onCancel?: () => void },
): ReadableStream<Uint8Array> {
  const { controller, onDone } = options;
  const encoder = new TextEncoder();
  let done = false;
  let pending: Promise<IteratorResult<string, void>> | undefined;
  const finish = () => {
    if (!done) {
      done = true;
      onDone();
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(stream) {
      try {
        const step = await (pending ?? pieces.next());
        pending = undefined;
        if (step.done) {
          stream.close();
          finish();
          return;
        }
        let text = step.value;
        let ended = false;
        // One tick for the whole batch: what is ready before it fires goes out together.
        const tick = readyNow();
        while (text.length < MAX_WRITE_LENGTH) {
          const next = pieces.next();
          const ready = await Promise.race([next, tick]);
          if (ready === READY) {
            pending = next;
            next.catch(() => {}); // awaited by the next pull, or dropped with the stream
            break;
          }
          if (ready.done) {
            ended = true;
            break;
          }
          text += ready.value;
        }
        stream.enqueue(encoder.encode(text));
        if (ended) {
          stream.close();
          finish();
        }
      } catch (error) {
        stream.error(error);
        finish();
      }
    },
    async cancel() {
      if (!controller.signal.aborted) controller.abort(new ClientGone());
      options.onCancel?.();
      finish();
      await pieces.return(undefined).catch(() => {});
    },
  }, { highWaterMark: 0 });
}
