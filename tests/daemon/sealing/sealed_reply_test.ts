/**
 * `openSealedReply` against real sealed replies: the crypto API's server side
 * (`openHttpRequest(...).respond(...)`) produces them, exactly as a provider does.
 */

import assert from "node:assert/strict";
import {
  BinaryHttpError,
  createGatewayKey,
  encodeKeyConfig,
  generateKeyPair,
  type HttpResponseInit,
  OpenError,
  openHttpRequest,
  type SealedHttpRequest,
  sealHttpRequest,
} from "../../../crypto/mod.ts";
import { DaemonError, type DaemonErrorCode } from "../../../daemon/core/daemon_error.ts";
import { ProviderBusyError } from "../../../daemon/gateway/gateway_client.ts";
import { openSealedReply } from "../../../daemon/sealing/sealed_reply.ts";
import { encodeSse } from "../../../io/sse.ts";
import { Prng } from "../../crypto/_helpers.ts";

const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
const keyConfig = encodeKeyConfig(key.config);
const encoder = new TextEncoder();

/** A `chat.completion.chunk` carrying token `n`. */
function chunk(n: number) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1_800_000_000,
    model: "devnet/echo",
    choices: [{ index: 0, delta: { content: `t${n}` }, finish_reason: null }],
  };
}

/** An event stream body: each event is its own body chunk, so its own sealed chunk. */
function events(...items: (unknown | Uint8Array)[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(
    items.map((item) =>
      item instanceof Uint8Array
        ? item
        : encodeSse(typeof item === "string" ? item : JSON.stringify(item))
    ),
  );
}

const SSE = { "content-type": "text/event-stream" };

/** A sealed request and the provider's sealed reply to it, as the pieces it was sent in. */
interface Exchange {
  sealed: SealedHttpRequest;
  /**
   * The sealed reply as `respond()` produced it: the response nonce, then the head, then one
   * sealed chunk per body chunk, then the end of the content and the final chunk.
   */
  parts: Uint8Array[];
}

async function exchange(response: HttpResponseInit): Promise<Exchange> {
  const sealed = await sealHttpRequest(keyConfig, {
    body: { model: "devnet/echo", messages: [], stream: true },
  });
  const opened = await openHttpRequest(key, sealed.body);
  const parts: Uint8Array[] = [];
  for await (const part of opened.respond(response)) parts.push(part);
  return { sealed, parts };
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** What the daemon made of a reply: the chunks it delivered and where it failed, if it did. */
interface Outcome {
  chunks: unknown[];
  error?: DaemonError;
  failedAt?: "open" | "rest";
}

async function outcome(
  sealed: SealedHttpRequest,
  stream: ReadableStream<Uint8Array>,
  options: Parameters<typeof openSealedReply>[2] = {},
): Promise<Outcome> {
  const chunks: unknown[] = [];
  let reply;
  try {
    reply = await openSealedReply(sealed, stream, options);
  } catch (error) {
    assert.ok(error instanceof DaemonError, `expected DaemonError, got ${error}`);
    return { chunks, error, failedAt: "open" };
  }
  if (reply.first) chunks.push(reply.first);
  try {
    for await (const item of reply.rest) chunks.push(item);
  } catch (error) {
    assert.ok(error instanceof DaemonError, `expected DaemonError, got ${error}`);
    return { chunks, error, failedAt: "rest" };
  }
  return { chunks };
}

async function run(response: HttpResponseInit): Promise<Outcome> {
  const { sealed, parts } = await exchange(response);
  return await outcome(sealed, ReadableStream.from(parts));
}

function fails(
  result: Outcome,
  code: DaemonErrorCode,
  failedAt: "open" | "rest",
  message: RegExp | undefined,
  label: string,
): DaemonError {
  assert.ok(result.error, `${label}: expected ${code}, the reply was accepted`);
  assert.equal(result.error.code, code, `${label}: ${result.error.message}`);
  assert.equal(result.failedAt, failedAt, `${label}: failed at`);
  if (message) assert.match(result.error.shortMessage, message, label);
  return result.error;
}

// ---------------------------------------------------------------------------------------------
// A 200 event stream

Deno.test("sealed reply: a 200 event stream opens to its first chunk, then the rest", async () => {
  const result = await run({
    status: 200,
    headers: SSE,
    body: events(chunk(1), chunk(2), chunk(3), "[DONE]"),
  });
  assert.equal(result.error, undefined, result.error?.message);
  assert.deepEqual(result.chunks, [chunk(1), chunk(2), chunk(3)]);

  for (const type of ["text/event-stream; charset=utf-8", "Text/Event-Stream"]) {
    const typed = await run({
      status: 200,
      headers: { "content-type": type },
      body: events(chunk(1), "[DONE]"),
    });
    assert.deepEqual(typed.chunks, [chunk(1)], type);
    assert.equal(typed.error, undefined, type);
  }
});

Deno.test("sealed reply: it resolves at the first chunk while the provider is still generating", async () => {
  const sealed = await sealHttpRequest(keyConfig, { body: { model: "devnet/echo" } });
  const opened = await openHttpRequest(key, sealed.body);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let step = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      step++;
      if (step === 1) controller.enqueue(encodeSse(JSON.stringify(chunk(1))));
      else if (step === 2) {
        await held; // the provider is still generating token 2
        controller.enqueue(encodeSse(JSON.stringify(chunk(2))));
      } else {
        controller.enqueue(encodeSse("[DONE]"));
        controller.close();
      }
    },
  }, { highWaterMark: 0 });
  const stream = opened.respond({ status: 200, headers: SSE, body });
  // A liveness guard, not a timing assertion: a reply that waited for its whole body would
  // never resolve while token 2 is held back.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const reply = await Promise.race([
    openSealedReply(sealed, stream),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("openSealedReply waited for the rest")), 10_000);
    }),
  ]).finally(() => clearTimeout(timer));
  assert.deepEqual(reply.first, chunk(1));
  release();
  const rest = [];
  for await (const item of reply.rest) rest.push(item);
  assert.deepEqual(rest, [chunk(2)]);
});

Deno.test("sealed reply: [DONE] ends the chunks, but only the authenticated end ends the reply", async () => {
  // Events after [DONE] are never delivered, and they fail the reply: nothing may follow it.
  const after = await run({
    status: 200,
    headers: SSE,
    body: events(chunk(1), "[DONE]", chunk(2), "not json", { error: { message: "late" } }),
  });
  fails(after, "provider_error", "rest", /after \[DONE\]/, "events after [DONE]");
  assert.deepEqual(after.chunks, [chunk(1)]);

  // A relay that cuts the stream right after [DONE] (before the final sealed chunk) is caught.
  const { sealed, parts } = await exchange({
    status: 200,
    headers: SSE,
    body: events(chunk(1), chunk(2), "[DONE]"),
  });
  const cut = await outcome(sealed, ReadableStream.from(parts.slice(0, -1)));
  fails(cut, "stream_truncated", "rest", /ended before its final chunk/, "cut after [DONE]");
  assert.deepEqual(cut.chunks, [chunk(1), chunk(2)]);
});

Deno.test("sealed reply: a reply without [DONE] or without any chunk is a provider_error", async () => {
  const noDone = await run({ status: 200, headers: SSE, body: events(chunk(1), chunk(2)) });
  fails(noDone, "provider_error", "rest", /ended without \[DONE\]/, "no [DONE]");
  assert.deepEqual(noDone.chunks, [chunk(1), chunk(2)], "the chunks before were delivered");

  const empty: [string, ReadableStream<Uint8Array>, RegExp][] = [
    ["only [DONE]", events("[DONE]"), /ended without any chunk/],
    ["empty body", events(), /ended without \[DONE\]/],
  ];
  for (const [label, body, message] of empty) {
    fails(await run({ status: 200, headers: SSE, body }), "provider_error", "open", message, label);
  }
});

Deno.test("sealed reply: an error event, a non-JSON event or a non-chunk object fails the reply", async () => {
  const failure = { error: { message: "The provider failed mid-stream", type: "provider_error" } };
  const cases: [string, ReadableStream<Uint8Array>, "open" | "rest", RegExp][] = [
    [
      "error event mid-stream",
      events(chunk(1), failure, "[DONE]"),
      "rest",
      /failed mid-reply: The provider failed mid-stream$/,
    ],
    [
      "error event with event: error",
      events(chunk(1), encodeSse(JSON.stringify(failure), "error"), "[DONE]"),
      "rest",
      /failed mid-reply: The provider failed mid-stream$/,
    ],
    ["error event first", events(failure, "[DONE]"), "open", /failed mid-reply/],
    [
      "error without a message",
      events(chunk(1), { error: { code: 7 } }),
      "rest",
      /^The provider failed mid-reply$/,
    ],
    [
      "error message cut to 200",
      events(chunk(1), { error: { message: "x".repeat(500) } }),
      "rest",
      /: x{200}$/,
    ],
    ["not JSON", events(chunk(1), "{oops", "[DONE]"), "rest", /an event that is not JSON/],
    ["not JSON first", events("hello", "[DONE]"), "open", /not JSON/],
    [
      "a chat.completion object",
      events(chunk(1), { ...chunk(2), object: "chat.completion" }),
      "rest",
      /not a chat\.completion\.chunk/,
    ],
    ["null", events(chunk(1), "null"), "rest", /not a chat\.completion\.chunk/],
    ["a number", events(chunk(1), "42"), "rest", /not a chat\.completion\.chunk/],
    ["an array", events(chunk(1), "[1]"), "rest", /not a chat\.completion\.chunk/],
    ["a string", events(chunk(1), '"chunk"'), "rest", /not a chat\.completion\.chunk/],
    ["no object field", events({ choices: [] }), "open", /not a chat\.completion\.chunk/],
  ];
  for (const [label, body, failedAt, message] of cases) {
    const result = await run({ status: 200, headers: SSE, body });
    fails(result, "provider_error", failedAt, message, label);
    assert.equal(result.error!.status, 502, label);
    if (failedAt === "rest") assert.deepEqual(result.chunks, [chunk(1)], `${label}: chunks before`);
  }
});

Deno.test("sealed reply: a 200 that is not an event stream, or an event over the limit, is a provider_error", async () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ["no content type", {}, /answered no content type, expected text\/event-stream/],
    ["NDJSON", { "content-type": "application/x-ndjson" }, /application\/x-ndjson/],
  ];
  for (const [label, headers, message] of cases) {
    fails(
      await run({ status: 200, headers, body: events(chunk(1), "[DONE]") }),
      "provider_error",
      "open",
      message,
      label,
    );
  }
  const big = { ...chunk(2), padding: "x".repeat(4096) };
  const { sealed, parts } = await exchange({
    status: 200,
    headers: SSE,
    body: events(chunk(1), big, "[DONE]"),
  });
  const result = await outcome(sealed, ReadableStream.from(parts), { maxEventBytes: 1024 });
  fails(result, "provider_error", "rest", /exceeds 1024 bytes/, "event over maxEventBytes");
});

// ---------------------------------------------------------------------------------------------
// The provider's own error answers

Deno.test("sealed reply: provider statuses pass through from the allowlist; the rest become 502", async () => {
  const table: [number, number][] = [
    [400, 400],
    [404, 404],
    [413, 413],
    [422, 422],
    [429, 429],
    [401, 502],
    [403, 502],
    [407, 502],
    [408, 502],
    [500, 502],
    [502, 502],
    [599, 502],
  ];
  for (const [status, expected] of table) {
    const result = await run({
      status,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ error: { message: `refused with ${status}`, type: "x" } }),
    });
    const error = fails(
      result,
      "provider_error",
      "open",
      new RegExp(`^The provider answered ${status}: refused with ${status}$`),
      String(status),
    );
    assert.equal(error.status, expected, `provider status ${status}`);
  }
  const plain = await run({ status: 400, headers: { "content-type": "text/plain" }, body: "bad" });
  fails(plain, "provider_error", "open", /^The provider answered 400$/, "a body that is not JSON");
  const long = await run({
    status: 422,
    body: JSON.stringify({ error: { message: "y".repeat(300) } }),
  });
  fails(
    long,
    "provider_error",
    "open",
    /^The provider answered 422: y{200}$/,
    "a long message is cut",
  );
});

Deno.test("sealed reply: a sealed 503 is the provider being busy, with its Retry-After, not a failure", async () => {
  for (const [retryAfter, ms] of [["2", 2000], [null, 1000], ["999", 30_000]] as const) {
    const { sealed, parts } = await exchange({
      status: 503,
      headers: {
        "content-type": "application/json",
        ...(retryAfter === null ? {} : { "retry-after": retryAfter }),
      },
      body: JSON.stringify({ error: { message: "All 4 slots are busy", type: "overloaded" } }),
    });
    await assert.rejects(
      openSealedReply(sealed, ReadableStream.from(parts)),
      (error: unknown) => error instanceof ProviderBusyError && error.retryAfterMs === ms,
      `Retry-After ${retryAfter}`,
    );
  }
});

Deno.test("sealed reply: a read that fails because the request was aborted is that abort, not a truncated stream", async () => {
  const { sealed, parts } = await exchange({
    status: 200,
    headers: { "content-type": "text/event-stream" },
    body: events(chunk(1), chunk(2), "[DONE]"),
  });
  const controller = new AbortController();
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      // The nonce, the head and the first chunk, then the client leaves and the relay breaks.
      if (sent < 3) c.enqueue(parts[sent++]);
      else {
        controller.abort(new Error("the client went away"));
        c.error(new TypeError("connection closed"));
      }
    },
  });
  const reply = await openSealedReply(sealed, stream, { signal: controller.signal });
  await assert.rejects(
    (async () => {
      for await (const _ of reply.rest) { /* read */ }
    })(),
    (error: unknown) => error === controller.signal.reason,
  );
});

Deno.test("sealed reply: an error body over 64 KiB is a provider_error, not a truncated stream", async () => {
  const message = (length: number) => {
    const shell = JSON.stringify({ error: { message: "" } });
    return JSON.stringify({ error: { message: "z".repeat(length - shell.length) } });
  };
  const exactly = await run({ status: 429, body: message(64 * 1024) });
  const atLimit = fails(
    exactly,
    "provider_error",
    "open",
    /^The provider answered 429: z{200}$/,
    "64 KiB",
  );
  assert.equal(atLimit.status, 429);

  const over = await run({ status: 429, body: message(64 * 1024 + 1) });
  const error = fails(over, "provider_error", "open", /^The provider answered 429$/, "64 KiB + 1");
  assert.equal(error.status, 429);

  // Streamed in many sealed chunks, far over the limit.
  const endless = await run({
    status: 400,
    body: ReadableStream.from(Array.from({ length: 40 }, () => encoder.encode("w".repeat(4096)))),
  });
  fails(endless, "provider_error", "open", /^The provider answered 400$/, "160 KiB in chunks");
});

// ---------------------------------------------------------------------------------------------
// Broken sealing

Deno.test("sealed reply: a truncated sealed stream is stream_truncated, wherever it is cut", async () => {
  const body = () => events(chunk(1), chunk(2), "[DONE]");
  // Before the head: nothing can be opened.
  {
    const { sealed, parts } = await exchange({ status: 200, headers: SSE, body: body() });
    const result = await outcome(sealed, ReadableStream.from(parts.slice(0, 1)));
    const error = fails(result, "stream_truncated", "open", undefined, "nonce only");
    assert.ok(error.cause instanceof OpenError && error.cause.reason === "truncated");
  }
  // After the first chunk: the first is delivered, the rest fails.
  {
    const { sealed, parts } = await exchange({ status: 200, headers: SSE, body: body() });
    const result = await outcome(sealed, ReadableStream.from(parts.slice(0, 3)));
    fails(result, "stream_truncated", "rest", undefined, "after the first chunk");
    assert.deepEqual(result.chunks, [chunk(1)]);
  }
  // Seeded cut points anywhere in the bytes: never accepted, always stream_truncated.
  const prng = new Prng(0x5eed_0001);
  for (let i = 0; i < 24; i++) {
    const { sealed, parts } = await exchange({ status: 200, headers: SSE, body: body() });
    const bytes = concat(parts);
    const at = prng.int(0, bytes.length - 1);
    const result = await outcome(sealed, ReadableStream.from([bytes.subarray(0, at)]));
    assert.equal(result.error?.code, "stream_truncated", `cut at ${at} of ${bytes.length}`);
  }
});

Deno.test("sealed reply: a relay that fails while streaming is stream_truncated", async () => {
  const { sealed, parts } = await exchange({
    status: 200,
    headers: SSE,
    body: events(chunk(1), chunk(2), "[DONE]"),
  });
  let index = 0;
  const reset = new TypeError("connection reset");
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (index === 3) controller.error(reset);
      else controller.enqueue(parts[index++]);
    },
  });
  const result = await outcome(sealed, stream);
  const error = fails(result, "stream_truncated", "rest", undefined, "transport failure");
  assert.deepEqual(result.chunks, [chunk(1)]);
  assert.ok(
    error.cause === reset || (error.cause as Error)?.cause === reset,
    `cause: ${error.cause}`,
  );
});

Deno.test("sealed reply: a flipped bit is decryption_failed, and no bit flip is ever accepted", async () => {
  const body = () => events(chunk(1), chunk(2), "[DONE]");
  const flip = (parts: Uint8Array[], part: number, byte: number) => {
    const copy = parts.map((p) => p.slice());
    copy[part][byte < 0 ? copy[part].length + byte : byte] ^= 0x01;
    return ReadableStream.from(copy);
  };
  // parts: [0] response nonce, [1] head, [2] token 1, [3] token 2, [4] [DONE], ..., last: final.
  const cases: [string, number, number, "open" | "rest", unknown[]][] = [
    ["response nonce", 0, 0, "open", []],
    ["head", 1, -1, "open", []],
    ["first chunk", 2, -1, "open", []],
    ["second chunk", 3, -1, "rest", [chunk(1)]],
    ["final chunk", -1, -1, "rest", [chunk(1), chunk(2)]],
  ];
  for (const [label, part, byte, failedAt, delivered] of cases) {
    const { sealed, parts } = await exchange({ status: 200, headers: SSE, body: body() });
    const result = await outcome(sealed, flip(parts, part < 0 ? parts.length + part : part, byte));
    const error = fails(result, "decryption_failed", failedAt, /could not be opened/, label);
    assert.ok(error.cause instanceof OpenError || error.cause instanceof BinaryHttpError, label);
    assert.deepEqual(result.chunks, delivered, `${label}: delivered before`);
  }
  // Seeded positions anywhere (length fields included): refused, as broken or as truncated.
  const prng = new Prng(0x5eed_0002);
  for (let i = 0; i < 24; i++) {
    const { sealed, parts } = await exchange({ status: 200, headers: SSE, body: body() });
    const bytes = concat(parts);
    const at = prng.int(0, bytes.length - 1);
    bytes[at] ^= 1 << prng.int(0, 7);
    const result = await outcome(sealed, ReadableStream.from([bytes]));
    assert.ok(
      result.error?.code === "decryption_failed" || result.error?.code === "stream_truncated",
      `flip at ${at}: ${result.error?.code ?? "accepted"}`,
    );
  }
});
