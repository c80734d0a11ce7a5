/**
 * The sealed exchange with prepared HPKE setups (`crypto/ohttp/setup_pool.ts`) and sealed whole
 * (`sealHttpRequestBytes`): a pooled setup seals one request only and then is gone, setups are
 * prepared per key configuration (and options), expire, and are bounded; what is sealed whole
 * opens as what is streamed does; and the caller's decode limits bound the reply's head.
 */

import assert from "node:assert/strict";
import { BinaryHttpError } from "../../../crypto/bhttp/errors.ts";
import { generateKeyPair } from "../../../crypto/hpke/key_pair.ts";
import { AEAD_CHACHA20_POLY1305 } from "../../../crypto/hpke/suite.ts";
import { createGatewayKey, encodeKeyConfig } from "../../../crypto/ohttp/key_config.ts";
import { SealError } from "../../../crypto/ohttp/errors.ts";
import {
  openHttpRequest,
  openHttpRequestBytes,
  sealHttpRequest,
  sealHttpRequestBytes,
} from "../../../crypto/ohttp/sealed_exchange.ts";
import { SetupPool } from "../../../crypto/ohttp/setup_pool.ts";
import { collect, rejectsWith } from "../_helpers.ts";

const CHAT = { model: "devnet/echo", messages: [{ role: "user", content: "hi" }], stream: true };

/** Resolves once the timers queued now have run (the pool prepares on a timer). */
const prepared = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("setup pool: the next request to a key takes a setup prepared meanwhile, once", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  const keyConfig = encodeKeyConfig(key.config);
  const pool = new SetupPool({ perKey: 2 });
  assert.equal(pool.prepared, 0);
  const first = await sealHttpRequestBytes(keyConfig, { body: CHAT }, { pool });
  await prepared();
  assert.equal(pool.prepared, 2, "two setups prepared for the key");
  const second = await sealHttpRequestBytes(keyConfig, { body: CHAT }, { pool });
  assert.equal(pool.prepared, 1, "the second request took one");
  await prepared();
  assert.equal(pool.prepared, 2, "and the pool topped up");
  // Each request has its own setup: different encapsulated keys, each opens on its own.
  assert.notDeepEqual(first.bytes.subarray(7, 39), second.bytes.subarray(7, 39));
  for (const sealed of [first, second]) {
    const opened = await openHttpRequestBytes(key, sealed.bytes);
    assert.deepEqual(JSON.parse(opened.text()), CHAT);
    const reply = await sealed.openResponse(
      opened.respond({ status: 200, headers: { "content-type": "text/plain" }, body: "ok" }),
    );
    assert.equal(new TextDecoder().decode(await collect(reply.body)), "ok");
  }
});

Deno.test("setup pool: setups are per key configuration and options, expire and are bounded", async () => {
  const keys = await Promise.all(
    [1, 2, 3].map(async (keyId) => createGatewayKey(await generateKeyPair(), { keyId })),
  );
  const configs = keys.map((key) => encodeKeyConfig(key.config));
  let now = 0;
  const pool = new SetupPool({ perKey: 2, capacity: 4, maxAgeMs: 1000, now: () => now });
  await sealHttpRequestBytes(configs[0], { body: CHAT }, { pool });
  await prepared();
  // Another AEAD is another pool: the setups of the default one are not taken for it.
  await sealHttpRequestBytes(configs[0], { body: CHAT }, { pool, aead: AEAD_CHACHA20_POLY1305 });
  assert.equal(pool.prepared, 2);
  await prepared();
  assert.equal(pool.prepared, 4);
  // A third key: the capacity holds, the least recently used key's setups go first.
  await sealHttpRequestBytes(configs[1], { body: CHAT }, { pool });
  await prepared();
  assert.equal(pool.prepared, 4);
  // Too old: dropped when taken, a fresh setup is made instead (and the pool tops up).
  now = 5000;
  const sealed = await sealHttpRequestBytes(configs[1], { body: CHAT }, { pool });
  assert.equal(pool.prepared, 2, "the expired setups of that key were dropped");
  const opened = await openHttpRequestBytes(keys[1], sealed.bytes);
  assert.deepEqual(JSON.parse(opened.text()), CHAT);
  await prepared();
  assert.throws(() => new SetupPool({ perKey: 0 }), RangeError);
  assert.throws(() => new SetupPool({ capacity: 1.5 }), /capacity must be a positive integer/);
});

Deno.test("setup pool: a decoded key configuration cannot be pooled", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  await rejectsWith(
    sealHttpRequestBytes(key.config, { body: CHAT }, { pool: new SetupPool() }),
    SealError,
    "invalid_input",
    "a decoded configuration",
  );
});

Deno.test("sealed whole: the bytes open as the streamed request does", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  const keyConfig = encodeKeyConfig(key.config);
  const request = {
    path: "/v1/embeddings",
    headers: [["date", "x"]] as [string, string][],
    body: CHAT,
  };
  const whole = await sealHttpRequestBytes(keyConfig, request);
  const streamed = await sealHttpRequest(keyConfig, request);
  const a = await openHttpRequestBytes(key, whole.bytes);
  const b = await openHttpRequest(key, streamed.body);
  for (const field of ["method", "scheme", "authority", "path"] as const) {
    assert.equal(a[field], b[field], field);
  }
  assert.deepEqual([...a.headers], [...b.headers]);
  assert.deepEqual(a.body, b.body);
  assert.equal(whole.contentType, streamed.contentType);
  assert.equal(whole.keyId, 1);
});

Deno.test("sealed exchange: the caller's decode limits bound the reply's head", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  const keyConfig = encodeKeyConfig(key.config);
  const head = { status: 200, headers: { "x-long": "v".repeat(300) }, body: "ok" };
  for (const seal of [sealHttpRequest, sealHttpRequestBytes]) {
    // Within the limits: opened.
    const roomy = await seal(keyConfig, { body: CHAT }, { maxFieldLength: 512 });
    const body = "body" in roomy ? roomy.body : roomy.bytes;
    const opened = body instanceof Uint8Array
      ? await openHttpRequestBytes(key, body)
      : await openHttpRequest(key, body);
    const reply = await roomy.openResponse(opened.respond(head));
    assert.equal(reply.headers.get("x-long")?.length, 300);
    await collect(reply.body);
    // Over them: refused, whatever the defaults would allow.
    const tight = await seal(keyConfig, { body: CHAT }, { maxFieldLength: 100 });
    const tightBody = "body" in tight ? tight.body : tight.bytes;
    const tightOpened = tightBody instanceof Uint8Array
      ? await openHttpRequestBytes(key, tightBody)
      : await openHttpRequest(key, tightBody);
    await rejectsWith(
      tight.openResponse(tightOpened.respond(head)),
      BinaryHttpError,
      "too_large",
      `${seal.name}: a 300-byte field over a 100-byte limit`,
    );
  }
});
