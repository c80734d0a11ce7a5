import assert from "node:assert/strict";
import { BinaryHttpError } from "../../../crypto/bhttp/errors.ts";
import {
  CHUNKED_REQUEST_MEDIA_TYPE,
  CHUNKED_RESPONSE_MEDIA_TYPE,
} from "../../../crypto/ohttp/chunked.ts";
import { AEAD_CHACHA20_POLY1305 } from "../../../crypto/hpke/suite.ts";
import { generateKeyPair } from "../../../crypto/hpke/key_pair.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  endorseKey,
  endorsementFromJson,
  endorsementToJson,
  verifyEndorsement,
} from "../../../crypto/endorsement.ts";
import {
  createGatewayKey,
  decodeKeyConfig,
  encodeKeyConfig,
  type GatewayKey,
} from "../../../crypto/ohttp/key_config.ts";
import { OpenError, SealError } from "../../../crypto/ohttp/errors.ts";
import {
  type HttpResponseInit,
  type OpenedHttpRequest,
  openHttpRequest,
  sealHttpRequest,
} from "../../../crypto/ohttp/sealed_exchange.ts";
import { collect, flipBit, rejectsWith } from "../_helpers.ts";

const text = new TextEncoder();

/** A provider on loopback (port 0) whose relay endpoint opens sealed requests and answers via `answer`. */
function startProvider(
  key: GatewayKey,
  answer: (request: OpenedHttpRequest) => HttpResponseInit | Promise<HttpResponseInit>,
): { url: string; server: Deno.HttpServer<Deno.NetAddr> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    if (
      request.method !== "POST" ||
      request.headers.get("content-type") !== CHUNKED_REQUEST_MEDIA_TYPE
    ) {
      return new Response("expected a sealed request", { status: 415 });
    }
    try {
      const opened = await openHttpRequest(key, request.body!);
      const sealed = opened.respond(await answer(opened));
      return new Response(sealed, { headers: { "content-type": opened.responseContentType } });
    } catch (error) {
      const code = error instanceof OpenError || error instanceof BinaryHttpError
        ? error.reason
        : "internal";
      return Response.json({ error: { code, message: String(error) } }, { status: 400 });
    }
  });
  return { url: `http://127.0.0.1:${server.addr.port}/v1/relay`, server };
}

/** A relay on loopback that forwards to `target` and lets `mangle` rewrite the sealed reply. */
function startRelay(
  target: string,
  mangle: (sealed: Uint8Array) => Uint8Array,
): { url: string; server: Deno.HttpServer<Deno.NetAddr> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const upstream = await fetch(target, {
      method: "POST",
      headers: { "content-type": request.headers.get("content-type")! },
      body: request.body,
    });
    const sealed = new Uint8Array(await upstream.arrayBuffer());
    return new Response(mangle(sealed).slice(), {
      headers: { "content-type": CHUNKED_RESPONSE_MEDIA_TYPE },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/v1/relay`, server };
}

async function post(url: string, body: ReadableStream<Uint8Array>): Promise<Response> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": CHUNKED_REQUEST_MEDIA_TYPE },
    body,
    // A hang guard for the whole exchange, not a timing assertion.
    signal: AbortSignal.timeout(30_000),
  });
  assert.equal(
    response.headers.get("content-type"),
    CHUNKED_RESPONSE_MEDIA_TYPE,
    `status ${response.status}`,
  );
  return response;
}

const CHAT = {
  model: "devnet/tiny-chat",
  messages: [{ role: "user", content: "hi" }],
  stream: true,
};

Deno.test("sealed exchange: a chat request and a streamed reply over real HTTP, one event at a time", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  let clientSawFirst!: () => void;
  const firstSeen = new Promise<void>((resolve) => (clientSawFirst = resolve));
  let seen: OpenedHttpRequest | undefined;
  const provider = startProvider(key, (request) => {
    seen = request;
    const events = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(text.encode('data: {"delta":"Hel"}\n\n'));
        // The second event is produced only after the client has read the first: the reply
        // must stream end to end (a buffering layer would deadlock here).
        await firstSeen;
        controller.enqueue(text.encode('data: {"delta":"lo"}\n\n'));
        controller.enqueue(text.encode("data: [DONE]\n\n"));
        controller.close();
      },
    });
    return {
      status: 200,
      headers: {
        "content-type": "text/event-stream",
        "transfer-encoding": "chunked",
        connection: "keep-alive",
      },
      body: events,
      trailers: () => [["x-usage", '{"prompt_tokens":3,"completion_tokens":2}']],
    };
  });
  try {
    const sealed = await sealHttpRequest(encodeKeyConfig(key.config), { body: CHAT });
    assert.equal(sealed.contentType, CHUNKED_REQUEST_MEDIA_TYPE);
    const reply = await sealed.openResponse((await post(provider.url, sealed.body)).body!);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get("content-type"), "text/event-stream");
    assert.equal(reply.headers.get("transfer-encoding"), null, "hop-by-hop fields are dropped");
    assert.equal(reply.headers.get("connection"), null);
    const reader = reply.body.getReader();
    assert.equal(
      new TextDecoder().decode((await reader.read()).value),
      'data: {"delta":"Hel"}\n\n',
    );
    clientSawFirst();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    assert.equal(rest, 'data: {"delta":"lo"}\n\ndata: [DONE]\n\n');
    assert.equal(
      (await reply.trailers).get("x-usage"),
      '{"prompt_tokens":3,"completion_tokens":2}',
    );

    assert.ok(seen);
    assert.equal(seen.method, "POST");
    assert.equal(seen.path, "/v1/chat/completions");
    assert.equal(seen.scheme, "https");
    assert.equal(seen.headers.get("content-type"), "application/json");
    assert.deepEqual(JSON.parse(seen.text()), CHAT);
    assert.equal(seen.keyId, 1);
  } finally {
    await provider.server.shutdown();
  }
});

Deno.test("sealed exchange: a relay that truncates or alters the reply makes the body error, never end", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 2 });
  const provider = startProvider(key, () => ({
    status: 200,
    headers: { "content-type": "text/event-stream" },
    body: ReadableStream.from(["data: 1\n\n", "data: 2\n\n"]).pipeThrough(new TextEncoderStream()),
  }));
  const mangles: [string, (sealed: Uint8Array) => Uint8Array, string][] = [
    ["final chunk dropped", (sealed) => sealed.subarray(0, sealed.length - 17), "truncated"],
    ["cut inside a chunk", (sealed) => sealed.subarray(0, sealed.length - 30), "truncated"],
    [
      "a bit flipped in the last data chunk",
      (sealed) => flipBit(sealed, (sealed.length - 20) * 8),
      "authentication",
    ],
  ];
  try {
    for (const [label, mangle, reason] of mangles) {
      const relay = startRelay(provider.url, mangle);
      try {
        const sealed = await sealHttpRequest(encodeKeyConfig(key.config), { body: CHAT });
        const reply = await sealed.openResponse((await post(relay.url, sealed.body)).body!);
        assert.equal(reply.status, 200, label);
        await rejectsWith(collect(reply.body), OpenError, reason, label);
        await rejectsWith(reply.trailers, OpenError, reason, `${label} (trailers)`);
      } finally {
        await relay.server.shutdown();
      }
    }
    // An untouched relay delivers the reply.
    const honest = startRelay(provider.url, (sealed) => sealed);
    try {
      const sealed = await sealHttpRequest(encodeKeyConfig(key.config), { body: CHAT }, {
        aead: AEAD_CHACHA20_POLY1305,
      });
      const reply = await sealed.openResponse((await post(honest.url, sealed.body)).body!);
      assert.equal(new TextDecoder().decode(await collect(reply.body)), "data: 1\n\ndata: 2\n\n");
    } finally {
      await honest.server.shutdown();
    }
  } finally {
    await provider.server.shutdown();
  }
});

Deno.test("sealed exchange: provider errors, bodies and limits", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 3 });
  const keyConfig = encodeKeyConfig(key.config);

  // A provider-side failure travels as a sealed status with a JSON error body.
  const sealed = await sealHttpRequest(keyConfig, { body: CHAT });
  const opened = await openHttpRequest(key, sealed.body);
  const reply = await sealed.openResponse(
    opened.respond({
      status: 503,
      headers: [["content-type", "application/json"]],
      body: '{"error":{"message":"busy"}}',
    }),
  );
  assert.equal(reply.status, 503);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(await collect(reply.body))), {
    error: { message: "busy" },
  });
  assert.throws(
    () => opened.respond({ status: 200 }),
    (e: unknown) => e instanceof SealError && e.reason === "already_used",
  );

  // Bodies: bytes and strings as they are, JSON with a content type unless one is given.
  const raw = await sealHttpRequest(keyConfig, {
    method: "PUT",
    path: "/x",
    body: Uint8Array.of(1, 2),
    headers: { "X-A": "b" },
  });
  const rawOpened = await openHttpRequest(key, raw.body);
  assert.deepEqual(rawOpened.body, Uint8Array.of(1, 2));
  assert.equal(rawOpened.method, "PUT");
  assert.equal(rawOpened.headers.get("content-type"), null);
  assert.equal(rawOpened.headers.get("x-a"), "b");
  const typed = await sealHttpRequest(keyConfig, {
    body: { a: 1 },
    headers: [["Content-Type", "application/vnd+json"]],
  });
  const typedOpened = await openHttpRequest(key, typed.body);
  assert.equal(typedOpened.headers.get("content-type"), "application/vnd+json");
  const empty = await openHttpRequest(
    key,
    (await sealHttpRequest(keyConfig, { method: "GET", path: "/v1/models" })).body,
  );
  assert.equal(empty.body.length, 0);

  await rejectsWith(sealHttpRequest(keyConfig, { body: { n: 1n } }), SealError, "invalid_input");
  await rejectsWith(sealHttpRequest(keyConfig, { body: () => 1 }), SealError, "invalid_input");
  await rejectsWith(
    sealHttpRequest(keyConfig.subarray(0, 5), { body: CHAT }),
    SealError,
    "invalid_key_config",
  );
  await rejectsWith(
    sealHttpRequest(keyConfig, { path: "/a b" }),
    BinaryHttpError,
    "invalid_control_data",
  );

  // A request above maxRequestLength is refused.
  const big = await sealHttpRequest(keyConfig, { body: "x".repeat(200_000) });
  await rejectsWith(
    openHttpRequest(key, big.body, { maxRequestLength: 100_000 }),
    BinaryHttpError,
    "too_large",
  );

  // A request sealed to another key never opens.
  const other = createGatewayKey(await generateKeyPair(), { keyId: 4 });
  const misdirected = await sealHttpRequest(encodeKeyConfig(other.config), { body: CHAT });
  await rejectsWith(openHttpRequest(key, misdirected.body), OpenError, "unknown_key");
});

Deno.test("sealed exchange: a failed reply whose trailers nobody reads raises no unhandled rejection", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 5 });
  const sealed = await sealHttpRequest(encodeKeyConfig(key.config), { body: CHAT });
  const request = await openHttpRequest(key, sealed.body);
  const bytes = await collect(request.respond({ status: 200, body: "partial" }));
  const cut = ReadableStream.from([bytes.subarray(0, bytes.length - 17)]);
  const reply = await sealed.openResponse(cut);
  await rejectsWith(collect(reply.body), OpenError, "truncated");
  // reply.trailers is deliberately left alone: the test runner fails on an unhandled rejection.
});

Deno.test("sealed exchange: the daemon seals to the key configuration a provider endorsed", async () => {
  const servingKey = privateKeyToAccount(generatePrivateKey());
  const key = createGatewayKey(await generateKeyPair(), { keyId: 6 });
  const now = new Date("2026-11-22T12:00:00Z");
  const endorsement = endorsementFromJson(
    JSON.parse(JSON.stringify(endorsementToJson(
      await endorseKey(servingKey, {
        keyConfig: encodeKeyConfig(key.config),
        expiresAt: Math.floor(now.getTime() / 1000) + 600,
      }),
    ))),
  );
  assert.equal(
    await verifyEndorsement(endorsement, { now, signer: servingKey.address }),
    servingKey.address.toLowerCase(),
  );
  assert.deepEqual(decodeKeyConfig(endorsement.keyConfig), key.config);
  const sealed = await sealHttpRequest(endorsement.keyConfig, { body: CHAT });
  const opened = await openHttpRequest(key, sealed.body);
  assert.deepEqual(JSON.parse(opened.text()), CHAT);
});
