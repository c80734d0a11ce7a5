/**
 * `openHttpRequestBytes` (the synchronous open of a sealed request held in memory, which the
 * devnet provider uses) against `openHttpRequest` (the streaming open) as the reference: for
 * seeded random requests, and for every bit flip, truncation and wrong key, both give the same
 * request or the same error (class, reason and message).
 *
 * @module
 */

import assert from "node:assert/strict";
import { AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305 } from "../../../crypto/hpke/suite.ts";
import { importKeyPair } from "../../../crypto/hpke/key_pair.ts";
import {
  createGatewayKey,
  encodeKeyConfig,
  type GatewayKey,
} from "../../../crypto/ohttp/key_config.ts";
import {
  createChunkedRequest,
  openChunkedRequestBytes,
  sealChunkedRequestBytes,
} from "../../../crypto/ohttp/chunked.ts";
import {
  openHttpRequest,
  openHttpRequestBytes,
  type OpenHttpRequestOptions,
  sealHttpRequest,
} from "../../../crypto/ohttp/sealed_exchange.ts";
import { cat, collect, flipBit, hex, Prng } from "../_helpers.ts";

type Outcome = { ok: string } | { error: string };

function describe(error: unknown): string {
  const e = error as Error & { reason?: string };
  return `${e?.name}/${e?.reason}: ${e?.message}`;
}

async function viaStream(
  key: GatewayKey,
  sealed: Uint8Array,
  options: OpenHttpRequestOptions,
): Promise<Outcome> {
  try {
    const opened = await openHttpRequest(key, ReadableStream.from([sealed.slice()]), options);
    return { ok: `${opened.method} ${opened.path} ${[...opened.headers]} ${hex(opened.body)}` };
  } catch (error) {
    return { error: describe(error) };
  }
}

async function viaBytes(
  key: GatewayKey,
  sealed: Uint8Array,
  options: OpenHttpRequestOptions,
): Promise<Outcome> {
  try {
    const opened = await openHttpRequestBytes(key, sealed.slice(), options);
    return { ok: `${opened.method} ${opened.path} ${[...opened.headers]} ${hex(opened.body)}` };
  } catch (error) {
    return { error: describe(error) };
  }
}

async function sealedRequest(key: GatewayKey, prng: Prng, aead: number): Promise<Uint8Array> {
  const sealed = await sealHttpRequest(encodeKeyConfig(key.config), {
    headers: [["date", "Tue, 24 Nov 2026 23:00:00 GMT"]],
    body: { model: "devnet/echo", n: prng.int(0, 1e6), pad: "x".repeat(prng.int(0, 9000)) },
  }, { aead, maxChunkLength: prng.pick([64, 256, 65536]) });
  return await collect(sealed.body);
}

Deno.test("open bytes: random sealed requests open as the streaming open does (seeded)", async () => {
  const prng = new Prng(0x0b7e5);
  for (let round = 0; round < 20; round++) {
    const key = createGatewayKey(await importKeyPair(prng.bytes(32)), { keyId: prng.int(0, 255) });
    const aead = round % 2 === 0 ? AEAD_AES_128_GCM : AEAD_CHACHA20_POLY1305;
    const sealed = await sealedRequest(key, prng, aead);
    const options = round % 3 === 0 ? { maxRequestLength: prng.int(100, 2000) } : {};
    const expected = await viaStream(key, sealed, options);
    assert.deepEqual(await viaBytes(key, sealed, options), expected, `round ${round}`);
  }
});

Deno.test("open bytes: every flip, cut and wrong key fails as the streaming open does", async () => {
  const prng = new Prng(42);
  const key = createGatewayKey(await importKeyPair(prng.bytes(32)), { keyId: 3 });
  const other = createGatewayKey(await importKeyPair(prng.bytes(32)), { keyId: 3 });
  const sealed = await sealedRequest(key, prng, AEAD_AES_128_GCM);
  const cases: [string, GatewayKey, Uint8Array][] = [["another key", other, sealed]];
  for (let bit = 0; bit < sealed.length * 8; bit += 7) {
    cases.push([`bit ${bit}`, key, flipBit(sealed, bit)]);
  }
  for (let length = 0; length < sealed.length; length += 3) {
    cases.push([`cut at ${length}`, key, sealed.subarray(0, length)]);
  }
  cases.push(["a byte more", key, Uint8Array.of(...sealed, 0)]);
  let refused = 0;
  for (const [label, gatewayKey, input] of cases) {
    const expected = await viaStream(gatewayKey, input, {});
    assert.deepEqual(await viaBytes(gatewayKey, input, {}), expected, label);
    if ("error" in expected) refused++;
  }
  assert.ok(
    refused >= cases.length - 2,
    `expected nearly every case refused, ${refused} of ${cases.length}`,
  );
});

Deno.test("seal bytes: a body sealed whole is byte for byte what sealRequest streams (seeded)", async () => {
  const prng = new Prng(0x5ea1);
  const key = createGatewayKey(await importKeyPair(prng.bytes(32)), { keyId: 9 });
  const keyConfig = encodeKeyConfig(key.config);
  for (let round = 0; round < 30; round++) {
    const aead = round % 2 === 0 ? AEAD_AES_128_GCM : AEAD_CHACHA20_POLY1305;
    const ephemeral = prng.bytes(32);
    const maxChunkLength = prng.pick([64, 100, 2100, 65536]);
    const options = { aead, maxChunkLength, random: () => ephemeral.slice() };
    const body = prng.bytes(prng.pick([0, 1, 47, 48, 49, prng.int(0, 9000)]));
    const streamed = await collect(
      (await createChunkedRequest(keyConfig, options)).sealRequest(body),
    );
    const exchange = await createChunkedRequest(keyConfig, options);
    const whole = await sealChunkedRequestBytes(exchange, body);
    assert.equal(hex(whole), hex(streamed), `round ${round}: ${body.length} bytes`);
    // One request per exchange, whichever way it was sealed.
    assert.throws(() => exchange.sealRequest(body), /already sealed one/);
    assert.throws(() => sealChunkedRequestBytes(exchange, body), /already sealed one/);
    // And it opens to the body.
    const opened = await openChunkedRequestBytes(key, whole);
    assert.equal(hex(cat(...opened.request)), hex(body), `round ${round}: opened`);
  }
});
