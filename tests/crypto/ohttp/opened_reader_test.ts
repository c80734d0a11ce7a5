/**
 * The opened reply read without a stream (`openedBodyReader`, what the daemon reads events
 * with): the same bytes as the body stream whatever the chunking and the transport's cuts —
 * one event per sealed chunk, or many chunks in one read (then given joined, as TCP gives a
 * plaintext reply) — and the same refusals.
 *
 * @module
 */

import assert from "node:assert/strict";
import { generateKeyPair } from "../../../crypto/hpke/key_pair.ts";
import { createGatewayKey, encodeKeyConfig } from "../../../crypto/ohttp/key_config.ts";
import { OpenError } from "../../../crypto/ohttp/errors.ts";
import { type BodyReader, openedBodyReader } from "../../../crypto/ohttp/opened_body_reader.ts";
import {
  type OpenedHttpResponse,
  openHttpRequest,
  sealHttpRequest,
} from "../../../crypto/ohttp/sealed_exchange.ts";
import { unitRandom } from "../../_random.ts";
import { cat, chunksOf, rejectsWith, streamCut } from "../_helpers.ts";

const text = new TextEncoder();
const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
const keyConfig = encodeKeyConfig(key.config);

/** `n` events of a chat stream, each its own piece of the provider's body. */
function events(n: number): Uint8Array[] {
  return Array.from(
    { length: n },
    (_, i) => text.encode(`data: {"choices":[{"delta":{"content":" word${i}"}}]}\n\n`),
  );
}

/**
 * A sealed exchange whose reply carries `pieces` (one sealed chunk each): the request's
 * `openResponse` and the reply's sealed pieces as the provider's stream gave them.
 */
async function exchange(pieces: readonly Uint8Array[]) {
  const sealed = await sealHttpRequest(keyConfig, { body: { stream: true } });
  const opened = await openHttpRequest(key, sealed.body);
  const reply = opened.respond({
    status: 200,
    headers: { "content-type": "text/event-stream" },
    body: ReadableStream.from(pieces.map((piece) => piece.slice())),
  });
  return { sealed, parts: await chunksOf(reply) };
}

/** Reads `reader` to its end: the pieces it gave. */
async function drain(reader: BodyReader): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (let step = await reader.read(); !step.done; step = await reader.read()) {
    out.push(step.value);
  }
  return out;
}

Deno.test("opened reader: one event per sealed chunk, read one chunk at a time, gives one piece per event", async () => {
  const plain = events(12);
  const { sealed, parts } = await exchange(plain);
  const reply = await sealed.openResponse(ReadableStream.from(parts));
  const reader = openedBodyReader(reply);
  assert.ok(reader, "a reply opened by openResponse has a reader");
  const pieces = await drain(reader);
  assert.deepEqual(pieces, plain);
  assert.equal((await reply.trailers).get("x-none"), null);
});

Deno.test("opened reader: many sealed chunks in one read are given as one piece; any cut gives the same bytes (seeded)", async () => {
  const plain = events(40);
  {
    const { sealed, parts } = await exchange(plain);
    const reply = await sealed.openResponse(ReadableStream.from([cat(...parts)]));
    const pieces = await drain(openedBodyReader(reply)!);
    assert.equal(pieces.length, 1, "every chunk of the one read, joined");
    assert.deepEqual(pieces[0], cat(...plain));
  }
  const random = unitRandom(0x21c);
  for (let round = 0; round < 20; round++) {
    const { sealed, parts } = await exchange(plain);
    const whole = cat(...parts);
    const cuts = Array.from(
      { length: 1 + Math.floor(random() * 30) },
      () => Math.floor(random() * whole.length),
    ).sort((a, b) => a - b);
    const reply = await sealed.openResponse(streamCut(whole, cuts));
    // The reader and the stream give the same bytes (each its own exchange: one open each).
    assert.deepEqual(cat(...await drain(openedBodyReader(reply)!)), cat(...plain), `cuts ${cuts}`);
    const again = await exchange(plain);
    const streamed = await again.sealed.openResponse(streamCut(cat(...again.parts), cuts));
    assert.deepEqual(cat(...await chunksOf(streamed.body)), cat(...plain));
  }
});

Deno.test("opened reader: a forged chunk among many in one read: what opened before it is given, then refused", async () => {
  const plain = events(10);
  const { sealed, parts } = await exchange(plain);
  // The third sealed piece from the end is an event's chunk: flip its tag's last byte.
  const forged = parts.map((part) => part.slice());
  const target = forged[forged.length - 3];
  target[target.length - 1] ^= 1;
  const reply = await sealed.openResponse(ReadableStream.from([cat(...forged)]));
  const reader = openedBodyReader(reply)!;
  const first = await reader.read();
  assert.equal(first.done, false);
  const given = first.value!;
  assert.ok(given.length > 0 && given.length < cat(...plain).length, "some content, not all");
  assert.deepEqual(given, cat(...plain).subarray(0, given.length));
  await rejectsWith(reader.read(), OpenError, "authentication");
  await rejectsWith(reader.read(), OpenError, "authentication", "and stays refused");
  await rejectsWith(reply.trailers, OpenError, "authentication");
});

Deno.test("opened reader: a reply cut before its final chunk never ends", async () => {
  const { sealed, parts } = await exchange(events(5));
  const reply = await sealed.openResponse(ReadableStream.from([cat(...parts.slice(0, -1))]));
  const reader = openedBodyReader(reply)!;
  const first = await reader.read();
  assert.equal(first.done, false, "the content that came is given");
  await rejectsWith(reader.read(), OpenError, "truncated");
});

Deno.test("opened reader: the content is read once, by the reader or the stream; a reply opened elsewhere has none", async () => {
  {
    const { sealed, parts } = await exchange(events(2));
    const reply = await sealed.openResponse(ReadableStream.from(parts));
    openedBodyReader(reply);
    assert.throws(() => reply.body, TypeError);
    assert.throws(() => openedBodyReader(reply), TypeError);
  }
  {
    const { sealed, parts } = await exchange(events(2));
    const reply = await sealed.openResponse(ReadableStream.from(parts));
    assert.ok(reply.body instanceof ReadableStream);
    assert.equal(reply.body, reply.body, "the same stream each time");
    assert.throws(() => openedBodyReader(reply), TypeError);
  }
  const foreign: OpenedHttpResponse = {
    status: 200,
    headers: new Headers(),
    informational: [],
    body: ReadableStream.from([text.encode("x")]),
    trailers: Promise.resolve(new Headers()),
  };
  assert.equal(openedBodyReader(foreign), undefined);
});
