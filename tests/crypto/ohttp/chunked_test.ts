import assert from "node:assert/strict";
import {
  CHUNKED_LABELS,
  chunkNonce,
  deriveResponseKeys,
  EMPTY,
  requestHeader,
  requestInfo,
  setupClient,
  setupGateway,
} from "../../../crypto/ohttp/_encapsulation.ts";
import { encodeVarint, readVarint } from "../../../crypto/_varint.ts";
import {
  createChunkedRequest,
  DEFAULT_MAX_CHUNK_LENGTH,
  openChunkedRequest,
} from "../../../crypto/ohttp/chunked.ts";
import { AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305, hpkeSuite } from "../../../crypto/hpke/suite.ts";
import { generateKeyPair, importKeyPair } from "../../../crypto/hpke/key_pair.ts";
import {
  createGatewayKey,
  decodeKeyConfig,
  encodeKeyConfig,
  type GatewayKey,
} from "../../../crypto/ohttp/key_config.ts";
import { OpenError, SealError } from "../../../crypto/ohttp/errors.ts";
import { readVectorJson, vectorTest } from "../../_vectors.ts";
import {
  cat,
  chunksOf,
  collect,
  endless,
  flipBit,
  hex,
  Prng,
  rejectsWith,
  streamCut,
  streamOfChunks,
  unhex,
} from "../_helpers.ts";

interface ChunkedVector {
  server_secret_key: string;
  key_config: string;
  bhttp_request: string;
  request_chunk_plaintext_lengths: number[];
  client_ephemeral_secret_key: string;
  client_ephemeral_public_key: string;
  hpke_info: string;
  encapsulated_request: string;
  bhttp_response: string;
  response_chunk_plaintext_lengths: number[];
  exported_secret: string;
  response_nonce: string;
  salt: string;
  prk: string;
  aead_key: string;
  aead_nonce: string;
  chunk_nonces: string[];
  encapsulated_response: string;
}

const vector = () => readVectorJson<{ chunked: ChunkedVector }>("ohttp.json").chunked;
const text = new TextEncoder();

/** Splits `bytes` into pieces of the given lengths (a zero length ends the list). */
function pieces(bytes: Uint8Array, lengths: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const length of lengths) {
    if (length === 0) continue;
    out.push(bytes.slice(at, at + length));
    at += length;
  }
  assert.equal(at, bytes.length, "the lengths cover the message");
  return out;
}

/** Parses a sealed chunked message into its prefix, its framed chunks, and its final chunk. */
function frames(
  sealed: Uint8Array,
  prefixLength: number,
): { prefix: Uint8Array; chunks: Uint8Array[]; final: Uint8Array } {
  const chunks: Uint8Array[] = [];
  let at = prefixLength;
  while (true) {
    const { value, next } = readVarint(sealed, at);
    assert.ok(value >= 0, "well-formed test input");
    if (value === 0) {
      return { prefix: sealed.slice(0, prefixLength), chunks, final: sealed.slice(at) };
    }
    chunks.push(sealed.slice(at, next + value));
    at = next + value;
  }
}

/** Reads a stream until it ends or errors; returns the chunks read and the error, if any. */
async function drain(
  stream: ReadableStream<Uint8Array>,
): Promise<{ chunks: Uint8Array[]; error: unknown }> {
  const chunks: Uint8Array[] = [];
  const reader = stream.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return { chunks, error: undefined };
      chunks.push(value);
    }
  } catch (error) {
    return { chunks, error };
  }
}

/** Asserts the stream errors with an OpenError and only ever yielded whole leading chunks of `expected`. */
async function refusedStream(
  stream: ReadableStream<Uint8Array>,
  expected: readonly Uint8Array[],
  reasons: readonly string[] | undefined,
  label: string,
): Promise<OpenError> {
  const { chunks, error } = await drain(stream);
  assert.ok(
    error instanceof OpenError,
    `${label}: expected OpenError, got ${error ?? "a normal end"}`,
  );
  if (reasons) {
    assert.ok(reasons.includes(error.reason), `${label}: reason ${error.reason}: ${error.message}`);
  }
  assert.ok(chunks.length <= expected.length, `${label}: more chunks than were sent`);
  chunks.forEach((chunk, i) =>
    assert.deepEqual(chunk, expected[i], `${label}: chunk ${i} is authentic`)
  );
  return error;
}

async function vectorKey(v: ChunkedVector): Promise<GatewayKey> {
  return {
    config: decodeKeyConfig(unhex(v.key_config)),
    keyPair: await importKeyPair(unhex(v.server_secret_key)),
  };
}

async function newKey(
  options: { keyId?: number; aeads?: number[] } = {},
): Promise<{ key: GatewayKey; keyConfig: Uint8Array }> {
  const key = createGatewayKey(await generateKeyPair(), {
    keyId: options.keyId ?? 1,
    suites: (options.aeads ?? [AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305]).map((aead) => ({
      kdf: 1,
      aead,
    })),
  });
  return { key, keyConfig: encodeKeyConfig(key.config) };
}

vectorTest(
  "chunked: the draft's example is reproduced byte for byte, both directions",
  async () => {
    const v = vector();
    const client = await createChunkedRequest(unhex(v.key_config), {
      random: () => unhex(v.client_ephemeral_secret_key),
    });
    const requestPieces = pieces(unhex(v.bhttp_request), v.request_chunk_plaintext_lengths);
    const sealedRequest = await collect(client.sealRequest(streamOfChunks(requestPieces)));
    assert.equal(hex(sealedRequest), v.encapsulated_request);

    const gateway = await openChunkedRequest(
      await vectorKey(v),
      streamCut(unhex(v.encapsulated_request), []),
      {
        random: () => unhex(v.response_nonce),
      },
    );
    assert.deepEqual(
      await chunksOf(gateway.request),
      requestPieces,
      "one plaintext chunk per sealed chunk",
    );
    const responsePieces = pieces(unhex(v.bhttp_response), v.response_chunk_plaintext_lengths);
    const sealedResponse = await collect(gateway.sealResponse(streamOfChunks(responsePieces)));
    assert.equal(hex(sealedResponse), v.encapsulated_response);

    const opened = await chunksOf(
      client.openResponse(streamCut(unhex(v.encapsulated_response), [])),
    );
    assert.deepEqual(opened, responsePieces);
  },
);

vectorTest(
  "chunked: the draft's intermediate values (info, enc, secret, salt, prk, key, nonces)",
  async () => {
    const v = vector();
    const setup = await setupClient(unhex(v.key_config), CHUNKED_LABELS, {
      random: () => unhex(v.client_ephemeral_secret_key),
    });
    assert.equal(
      hex(requestInfo(CHUNKED_LABELS.request, requestHeader(1, setup.suite.ids))),
      v.hpke_info,
    );
    assert.equal(hex(setup.enc), v.client_ephemeral_public_key);
    const keys = await deriveResponseKeys(
      setup.suite,
      setup.context,
      setup.enc,
      unhex(v.response_nonce),
      CHUNKED_LABELS.response,
    );
    assert.equal(hex(keys.secret), v.exported_secret);
    assert.equal(hex(keys.salt), v.salt);
    assert.equal(hex(keys.prk), v.prk);
    assert.equal(hex(keys.key), v.aead_key);
    assert.equal(hex(keys.nonce), v.aead_nonce);
    assert.deepEqual(v.chunk_nonces.map((_, i) => hex(chunkNonce(keys.nonce, i))), v.chunk_nonces);
    // The gateway derives the same keys from its side of the context.
    const key = await vectorKey(v);
    const request = unhex(v.encapsulated_request);
    const gateway = await setupGateway(
      key,
      setup.suite,
      request.subarray(0, 7),
      request.subarray(7, 39),
      CHUNKED_LABELS,
    );
    const gatewayKeys = await deriveResponseKeys(
      setup.suite,
      gateway.context,
      gateway.enc,
      unhex(v.response_nonce),
      CHUNKED_LABELS.response,
    );
    assert.equal(hex(gatewayKeys.key), v.aead_key);
  },
);

Deno.test("chunked: chunk nonces XOR the counter into the low bytes", () => {
  const base = unhex("00112233445566778899aabb");
  assert.equal(hex(chunkNonce(base, 0)), "00112233445566778899aabb");
  assert.equal(hex(chunkNonce(base, 1)), "00112233445566778899aaba");
  assert.equal(hex(chunkNonce(base, 0x1234)), "00112233445566778899b88f");
  assert.equal(hex(chunkNonce(base, 2 ** 40)), "00112233445567778899aabb");
});

Deno.test("chunked: each chunk is delivered as soon as it arrives, both directions", async () => {
  const { key, keyConfig } = await newKey();
  const client = await createChunkedRequest(keyConfig);
  // Client side writes chunks by hand; the gateway reads each before the next is written.
  const requestBody = new TransformStream<Uint8Array, Uint8Array>();
  const requestWriter = requestBody.writable.getWriter();
  const sealedRequest = client.sealRequest(requestBody.readable);
  const gatewayPromise = openChunkedRequest(key, sealedRequest);
  requestWriter.write(text.encode("first"));
  const gateway = await gatewayPromise;
  const requestReader = gateway.request.getReader();
  assert.deepEqual((await requestReader.read()).value, text.encode("first"));
  requestWriter.write(text.encode("second"));
  assert.deepEqual((await requestReader.read()).value, text.encode("second"));
  requestWriter.close();
  assert.equal((await requestReader.read()).done, true);

  const responseBody = new TransformStream<Uint8Array, Uint8Array>();
  const responseWriter = responseBody.writable.getWriter();
  const responseReader = client.openResponse(gateway.sealResponse(responseBody.readable))
    .getReader();
  for (const event of ["data: a\n\n", "data: b\n\n", "data: [DONE]\n\n"]) {
    responseWriter.write(text.encode(event));
    assert.deepEqual(
      (await responseReader.read()).value,
      text.encode(event),
      "no waiting for the next chunk",
    );
  }
  responseWriter.close();
  assert.equal((await responseReader.read()).done, true);
});

Deno.test("chunked: random bodies, chunkings and transport splits round-trip with both AEADs (seeded)", async () => {
  const prng = new Prng(0x0c4);
  const { key, keyConfig } = await newKey({ keyId: 200 });
  for (let round = 0; round < 30; round++) {
    const aead = round % 2 === 0 ? AEAD_AES_128_GCM : AEAD_CHACHA20_POLY1305;
    const maxChunkLength = prng.pick([DEFAULT_MAX_CHUNK_LENGTH, 64, 1000]);
    const client = await createChunkedRequest(keyConfig, { aead, maxChunkLength });
    const asBytes = prng.int(0, 2) === 0;
    const requestChunks = Array.from(
      { length: prng.int(0, 6) },
      () => prng.bytes(prng.pick([0, 1, prng.int(1, 300), prng.int(1, 70000)])),
    );
    const request = cat(...requestChunks);
    const sealedRequest = await collect(
      client.sealRequest(asBytes ? request : streamOfChunks(requestChunks)),
    );
    // The transport may split the sealed bytes anywhere.
    const gateway = await openChunkedRequest(
      key,
      streamCut(sealedRequest, prng.cuts(sealedRequest.length, 8)),
      { maxChunkLength },
    );
    assert.equal(gateway.suite.aead.id, aead);
    assert.deepEqual(await collect(gateway.request), request, `request ${round}`);

    const responseChunks = Array.from(
      { length: prng.int(0, 8) },
      () => prng.bytes(prng.pick([1, prng.int(1, 200), prng.int(1, 70000)])),
    );
    const response = cat(...responseChunks);
    const sealedResponse = await collect(
      gateway.sealResponse(prng.int(0, 1) === 0 ? response : streamOfChunks(responseChunks)),
    );
    const opened = await collect(
      client.openResponse(streamCut(sealedResponse, prng.cuts(sealedResponse.length, 8))),
    );
    assert.deepEqual(opened, response, `response ${round}`);
  }
});

Deno.test("chunked: large writes are split under maxChunkLength; bytes bodies end with a data-carrying final chunk", async () => {
  const { key, keyConfig } = await newKey();
  const client = await createChunkedRequest(keyConfig, { maxChunkLength: 100 });
  const body = new Prng(3).bytes(1000);
  const sealed = await collect(client.sealRequest(body));
  const { chunks, final } = frames(sealed, 39);
  // 1000 bytes at 84 per chunk (100 minus the tag): 11 full chunks, 76 bytes in the final one.
  assert.equal(chunks.length, 11);
  for (const chunk of chunks) assert.equal(chunk.length, 2 + 100, "each sealed chunk at the limit");
  assert.ok(final.length > 1 + 16, "the last piece travels in the final chunk");
  const gateway = await openChunkedRequest(key, streamCut(sealed, []), { maxChunkLength: 100 });
  assert.deepEqual(await collect(gateway.request), body);

  // A stream body ends with an empty final chunk; empty writes are skipped.
  const streamed = await createChunkedRequest(keyConfig);
  const sealedStream = await collect(
    streamed.sealRequest(streamOfChunks([new Uint8Array(0), Uint8Array.of(1), new Uint8Array(0)])),
  );
  const framed = frames(sealedStream, 39);
  assert.equal(framed.chunks.length, 1);
  assert.equal(framed.final.length, 1 + 16);
  // An empty bytes body is one empty final chunk.
  const empty = await createChunkedRequest(keyConfig);
  const sealedEmpty = await collect(empty.sealRequest(new Uint8Array(0)));
  assert.equal(sealedEmpty.length, 39 + 1 + 16);
});

// ---------------------------------------------------------------------------------------------
// Breaking attempts: each ends in a typed OpenError, never in plaintext or a normal end.

async function sealedExchange(chunks: Uint8Array[], responseChunks: Uint8Array[]) {
  const { key, keyConfig } = await newKey({ keyId: 9 });
  const client = await createChunkedRequest(keyConfig);
  const sealedRequest = await collect(client.sealRequest(streamOfChunks(chunks)));
  const gateway = await openChunkedRequest(key, streamCut(sealedRequest, []));
  await collect(gateway.request);
  const sealedResponse = await collect(gateway.sealResponse(streamOfChunks(responseChunks)));
  return { key, keyConfig, client, sealedRequest, sealedResponse };
}

const REQUEST = [text.encode("alpha"), text.encode("beta"), text.encode("gamma")];
const RESPONSE = [text.encode("one"), text.encode("two"), text.encode("three")];

/** Opens a sealed request fully; every failure (header or stream) must be an OpenError. */
async function openRequestAll(
  key: GatewayKey,
  sealed: Uint8Array,
  label: string,
  reasons?: readonly string[],
): Promise<OpenError> {
  let gateway;
  try {
    gateway = await openChunkedRequest(key, streamCut(sealed, []));
  } catch (error) {
    assert.ok(error instanceof OpenError, `${label}: ${error}`);
    if (reasons) {
      assert.ok(
        reasons.includes(error.reason),
        `${label}: reason ${error.reason}: ${error.message}`,
      );
    }
    return error;
  }
  return await refusedStream(gateway.request, REQUEST, reasons, label);
}

Deno.test("chunked: every bit flip in a sealed request is refused (header, enc, each chunk)", async () => {
  const exchange = await sealedExchange(REQUEST, RESPONSE);
  const { sealedRequest, key } = exchange;
  for (let bit = 0; bit < sealedRequest.length * 8; bit++) {
    await openRequestAll(key, flipBit(sealedRequest, bit), `bit ${bit}`);
  }
});

Deno.test("chunked: every bit flip in a sealed response is refused", async () => {
  const { key, keyConfig } = await newKey();
  for (const bit of Array.from({ length: 16 + 3 * 20 }, (_, i) => i * 8 + (i % 8))) {
    // A fresh exchange per attempt: a response stream can be opened once.
    const client = await createChunkedRequest(keyConfig);
    const gateway = await openChunkedRequest(key, client.sealRequest(Uint8Array.of(1)));
    await collect(gateway.request);
    const sealed = await collect(gateway.sealResponse(streamOfChunks(RESPONSE)));
    if (bit >= sealed.length * 8) break;
    await refusedStream(
      client.openResponse(streamCut(flipBit(sealed, bit), [])),
      RESPONSE,
      undefined,
      `bit ${bit}`,
    );
  }
});

Deno.test("chunked: reordered, dropped, duplicated and re-marked chunks are refused", async () => {
  const exchange = await sealedExchange(REQUEST, RESPONSE);
  const { key, sealedRequest } = exchange;
  const request = frames(sealedRequest, 39);
  const attempts: [string, Uint8Array, string[]][] = [
    [
      "chunks 1 and 2 swapped",
      cat(request.prefix, request.chunks[0], request.chunks[2], request.chunks[1], request.final),
      ["authentication"],
    ],
    ["chunk 1 dropped", cat(request.prefix, request.chunks[0], request.chunks[2], request.final), [
      "authentication",
    ]],
    [
      "chunk 0 repeated",
      cat(
        request.prefix,
        request.chunks[0],
        request.chunks[0],
        request.chunks[1],
        request.chunks[2],
        request.final,
      ),
      ["authentication"],
    ],
    ["final chunk dropped", cat(request.prefix, ...request.chunks), ["truncated"]],
    ["final chunk only", cat(request.prefix, request.final), ["authentication"]],
    // The last data chunk re-framed as final: its AAD was empty, not "final".
    [
      "last chunk marked final",
      cat(
        request.prefix,
        request.chunks[0],
        request.chunks[1],
        Uint8Array.of(0),
        request.chunks[2].subarray(1),
      ),
      ["authentication"],
    ],
    // The (empty) final chunk re-framed as a non-final chunk: refused as an empty chunk.
    [
      "final chunk marked non-final",
      cat(
        request.prefix,
        ...request.chunks,
        encodeVarint(request.final.length - 1),
        request.final.subarray(1),
      ),
      ["empty_chunk"],
    ],
    ["bytes after the final chunk", cat(sealedRequest, Uint8Array.of(0)), ["authentication"]],
  ];
  for (const [label, bytes, reasons] of attempts) await openRequestAll(key, bytes, label, reasons);

  // The same on the response side.
  const { client, sealedResponse } = exchange;
  const response = frames(sealedResponse, 16);
  const swapped = cat(
    response.prefix,
    response.chunks[1],
    response.chunks[0],
    response.chunks[2],
    response.final,
  );
  await refusedStream(
    client.openResponse(streamCut(swapped, [])),
    RESPONSE,
    ["authentication"],
    "response swapped",
  );

  // A final chunk that carries data, re-framed as non-final: its AAD was "final".
  const { key: dataKey, keyConfig } = await newKey();
  const withData = await collect(
    (await createChunkedRequest(keyConfig)).sealRequest(text.encode("all in one")),
  );
  const single = frames(withData, 39);
  assert.equal(single.chunks.length, 0);
  const remarked = cat(
    single.prefix,
    encodeVarint(single.final.length - 1),
    single.final.subarray(1),
  );
  const gateway = await openChunkedRequest(dataKey, streamCut(remarked, []));
  await refusedStream(
    gateway.request,
    [],
    ["authentication"],
    "data-carrying final marked non-final",
  );
});

Deno.test("chunked: chunks opened from one read are given up to a forged one, then refused", async () => {
  for (const cuts of [[], [16], [17]]) {
    const exchange = await sealedExchange(REQUEST, RESPONSE);
    const response = frames(exchange.sealedResponse, 16);
    const forged = flipBit(response.chunks[2], 8 * (response.chunks[2].length - 1));
    // With no cut, every chunk comes in one read: the first two open in place, the third fails.
    const sealed = cat(
      response.prefix,
      response.chunks[0],
      response.chunks[1],
      forged,
      response.final,
    );
    const { chunks, error } = await drain(exchange.client.openResponse(streamCut(sealed, cuts)));
    assert.ok(error instanceof OpenError, `cuts ${cuts}: expected OpenError, got ${error}`);
    assert.equal(error.reason, "authentication");
    assert.match(error.message, /chunk 2 failed authentication/);
    assert.deepEqual(chunks, RESPONSE.slice(0, 2), `cuts ${cuts}: the authentic chunks first`);
  }
});

Deno.test("chunked: a response without its final chunk, or re-marked, is refused", async () => {
  const cases: [string, (f: ReturnType<typeof frames>) => Uint8Array, string][] = [
    ["final chunk dropped", (f) => cat(f.prefix, ...f.chunks), "truncated"],
    [
      "last data chunk marked final",
      (f) => cat(f.prefix, f.chunks[0], f.chunks[1], Uint8Array.of(0), f.chunks[2].subarray(1)),
      "authentication",
    ],
    [
      "final chunk marked non-final",
      (f) => cat(f.prefix, ...f.chunks, encodeVarint(f.final.length - 1), f.final.subarray(1)),
      "empty_chunk",
    ],
    ["nonce only", (f) => f.prefix, "truncated"],
  ];
  for (const [label, mangle, reason] of cases) {
    const { client, sealedResponse } = await sealedExchange(REQUEST, RESPONSE);
    await refusedStream(
      client.openResponse(streamCut(mangle(frames(sealedResponse, 16)), [])),
      RESPONSE,
      [reason],
      label,
    );
  }
});

Deno.test("chunked: a request and a response truncated at every byte offset are refused", async () => {
  const exchange = await sealedExchange([text.encode("ab"), text.encode("c")], [
    text.encode("x"),
    text.encode("yz"),
  ]);
  const { key, sealedRequest } = exchange;
  for (let length = 0; length < sealedRequest.length; length++) {
    let gateway;
    try {
      gateway = await openChunkedRequest(key, streamCut(sealedRequest.subarray(0, length), []));
    } catch (error) {
      assert.ok(
        error instanceof OpenError && error.reason === "truncated",
        `cut at ${length}: ${error}`,
      );
      continue;
    }
    await refusedStream(gateway.request, [text.encode("ab"), text.encode("c")], [
      "truncated",
      "authentication",
    ], `request cut at ${length}`);
  }
  const { sealedResponse } = exchange;
  for (let length = 0; length < sealedResponse.length; length++) {
    const fresh = await sealedExchange([text.encode("ab"), text.encode("c")], [
      text.encode("x"),
      text.encode("yz"),
    ]);
    const cut = fresh.sealedResponse.subarray(0, length);
    await refusedStream(
      fresh.client.openResponse(streamCut(cut, [])),
      [text.encode("x"), text.encode("yz")],
      ["truncated", "authentication"],
      `response cut at ${length}`,
    );
  }
});

Deno.test("chunked: a properly sealed zero-length non-final chunk is refused", async () => {
  const { key, keyConfig } = await newKey();
  // Request: seal an empty chunk with the real HPKE context, frame it as non-final.
  const setup = await setupClient(keyConfig, CHUNKED_LABELS, {});
  const empty = new Uint8Array(await setup.context.seal(new Uint8Array(0), new Uint8Array(0)));
  const data = new Uint8Array(await setup.context.seal(Uint8Array.of(1), new Uint8Array(0)));
  const final = new Uint8Array(await setup.context.seal(new Uint8Array(0), text.encode("final")));
  const request = cat(
    setup.prefix,
    encodeVarint(empty.length),
    empty,
    encodeVarint(data.length),
    data,
    Uint8Array.of(0),
    final,
  );
  await openRequestAll(key, request, "empty request chunk", ["empty_chunk"]);

  // Response: the same with the response AEAD and a chosen nonce.
  const client = await createChunkedRequest(keyConfig, { random: () => new Prng(5).bytes(32) });
  const sealedRequest = await collect(client.sealRequest(Uint8Array.of(1)));
  const gatewaySetup = await setupClient(keyConfig, CHUNKED_LABELS, {
    random: () => new Prng(5).bytes(32),
  });
  const gateway = await setupGateway(
    key,
    gatewaySetup.suite,
    sealedRequest.subarray(0, 7),
    sealedRequest.subarray(7, 39),
    CHUNKED_LABELS,
  );
  const nonce = new Uint8Array(16).fill(7);
  const keys = await deriveResponseKeys(
    gateway.suite,
    gateway.context,
    gateway.enc,
    nonce,
    CHUNKED_LABELS.response,
  );
  const emptyResponse = await keys.seal(chunkNonce(keys.nonce, 0), EMPTY, EMPTY);
  const finalResponse = await keys.seal(chunkNonce(keys.nonce, 1), EMPTY, text.encode("final"));
  const response = cat(
    nonce,
    encodeVarint(emptyResponse.length),
    emptyResponse,
    Uint8Array.of(0),
    finalResponse,
  );
  await refusedStream(
    client.openResponse(streamCut(response, [])),
    [],
    ["empty_chunk"],
    "empty response chunk",
  );
});

Deno.test("chunked: a chunk above maxChunkLength is refused before it is buffered", async () => {
  const { key, keyConfig } = await newKey();
  const client = await createChunkedRequest(keyConfig);
  const prefix = (await collect(client.sealRequest(new Uint8Array(0)))).subarray(0, 39);

  // A length prefix announcing 1 GiB followed by endless bytes: refused at once.
  const huge = endless(cat(prefix, encodeVarint(2 ** 30)));
  const gateway = await openChunkedRequest(key, huge.stream);
  const error = await refusedStream(gateway.request, [], ["chunk_too_large"], "1 GiB chunk");
  assert.match(error.shortMessage, /1073741824 bytes, more than the 65536 bytes allowed/);
  assert.ok(huge.pulled() < 8 * 1024, `pulled ${huge.pulled()} bytes before refusing`);

  // Just above the limit.
  const above = endless(cat(prefix, encodeVarint(DEFAULT_MAX_CHUNK_LENGTH + 1)));
  await refusedStream((await openChunkedRequest(key, above.stream)).request, [], [
    "chunk_too_large",
  ], "limit + 1");

  // A final chunk that keeps growing.
  const growing = endless(cat(prefix, Uint8Array.of(0)));
  await refusedStream((await openChunkedRequest(key, growing.stream)).request, [], [
    "chunk_too_large",
  ], "endless final chunk");
  assert.ok(growing.pulled() < DEFAULT_MAX_CHUNK_LENGTH + 8 * 1024, `pulled ${growing.pulled()}`);

  // A sender with a larger limit than the receiver.
  const big = await createChunkedRequest(keyConfig, { maxChunkLength: 256 * 1024 });
  const sealed = big.sealRequest(streamOfChunks([new Uint8Array(100_000)]));
  await refusedStream(
    (await openChunkedRequest(key, sealed)).request,
    [],
    ["chunk_too_large"],
    "100 kB chunk",
  );

  // On the response side too.
  const small = await createChunkedRequest(keyConfig, { maxChunkLength: 64 });
  const smallGateway = await openChunkedRequest(key, small.sealRequest(Uint8Array.of(1)));
  await collect(smallGateway.request);
  const bigResponse = smallGateway.sealResponse(Uint8Array.of(1));
  const nonceAndHuge = endless(cat((await collect(bigResponse)).subarray(0, 16), encodeVarint(65)));
  await refusedStream(
    small.openResponse(nonceAndHuge.stream),
    [],
    ["chunk_too_large"],
    "response chunk above 64",
  );
});

Deno.test("chunked: wrong key id, unsupported suite and garbage are refused; the input is cancelled", async () => {
  const { key, keyConfig } = await newKey({ keyId: 3, aeads: [AEAD_AES_128_GCM] });
  const client = await createChunkedRequest(keyConfig);
  const sealed = await collect(client.sealRequest(text.encode("hi")));

  let cancelled: unknown;
  const tracked = (bytes: Uint8Array) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes);
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
  const other = (await newKey({ keyId: 4 })).key;
  const wrong = await rejectsWith(
    openChunkedRequest(other, tracked(sealed)),
    OpenError,
    "unknown_key",
  );
  assert.equal(cancelled, wrong, "the request stream is cancelled with the error");

  const chacha = sealed.slice();
  chacha[6] = 3;
  await rejectsWith(openChunkedRequest(key, tracked(chacha)), OpenError, "unsupported_suite");
  const badKem = sealed.slice();
  badKem[2] = 0x21;
  await rejectsWith(openChunkedRequest(key, tracked(badKem)), OpenError, "unsupported_suite");
  await rejectsWith(
    openChunkedRequest(key, streamCut(new Uint8Array(0), [])),
    OpenError,
    "truncated",
  );

  const prng = new Prng(77);
  for (let i = 0; i < 40; i++) {
    // A valid header and encapsulated key, then garbage.
    const garbage = cat(sealed.subarray(0, 39), prng.bytes(prng.int(0, 300)));
    await openRequestAll(key, garbage, `garbage ${i}`);
    // Garbage from the first byte.
    const raw = prng.bytes(prng.int(0, 100));
    await openRequestAll(key, raw, `raw garbage ${i}`);
    // Garbage as a response.
    const fresh = await createChunkedRequest(keyConfig);
    await refusedStream(
      fresh.openResponse(streamCut(prng.bytes(prng.int(0, 300)), [])),
      [],
      undefined,
      `response garbage ${i}`,
    );
  }
  const notBytes = ReadableStream.from(["text" as unknown as Uint8Array]);
  await rejectsWith(openChunkedRequest(key, notBytes), OpenError, "malformed");
  const fresh = await createChunkedRequest(keyConfig);
  await refusedStream(fresh.openResponse(ReadableStream.from([{} as Uint8Array])), [], [
    "malformed",
  ], "non-bytes response");
});

Deno.test("chunked: sealing and opening contexts are single use; limits are checked", async () => {
  const { key, keyConfig } = await newKey();
  const client = await createChunkedRequest(keyConfig);
  const sealed = client.sealRequest(Uint8Array.of(1));
  assert.throws(
    () => client.sealRequest(Uint8Array.of(2)),
    (e: unknown) => e instanceof SealError && e.reason === "already_used",
  );
  const gateway = await openChunkedRequest(key, sealed);
  await collect(gateway.request);
  const response = gateway.sealResponse(Uint8Array.of(3));
  assert.throws(
    () => gateway.sealResponse(Uint8Array.of(4)),
    (e: unknown) => e instanceof SealError && e.reason === "already_used",
  );
  assert.deepEqual(await collect(client.openResponse(response)), Uint8Array.of(3));
  assert.throws(
    () => client.openResponse(streamCut(new Uint8Array(0), [])),
    (e: unknown) => e instanceof OpenError && e.reason === "already_used",
  );

  for (const maxChunkLength of [0, 16, 63, 1.5, 2 ** 25]) {
    await rejectsWith(
      createChunkedRequest(keyConfig, { maxChunkLength }),
      SealError,
      "invalid_input",
      `${maxChunkLength}`,
    );
  }
  assert.throws(
    () => client.sealRequest("text" as unknown as Uint8Array),
    (e: unknown) => e instanceof SealError,
  );
  const typed = await createChunkedRequest(keyConfig);
  const { error } = await drain(
    typed.sealRequest(ReadableStream.from(["text" as unknown as Uint8Array])),
  );
  assert.ok(error instanceof SealError && error.reason === "invalid_input", `${error}`);
  assert.equal(hpkeSuite({ kem: 0x20, kdf: 1, aead: 1 }).aead.tagLength, 16);
});
