import assert from "node:assert/strict";
import {
  deriveResponseKeys,
  ONE_SHOT_LABELS,
  requestHeader,
  requestInfo,
  setupClient,
} from "../../../crypto/ohttp/_encapsulation.ts";
import { AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305 } from "../../../crypto/hpke/suite.ts";
import { generateKeyPair, importKeyPair } from "../../../crypto/hpke/key_pair.ts";
import {
  createGatewayKey,
  decodeKeyConfig,
  encodeKeyConfig,
  type GatewayKey,
} from "../../../crypto/ohttp/key_config.ts";
import { decapsulateRequest, encapsulateRequest } from "../../../crypto/ohttp/one_shot.ts";
import { OpenError, SealError } from "../../../crypto/ohttp/errors.ts";
import { readVectorJson, vectorTest } from "../../_vectors.ts";
import { cat, flipBit, hex, Prng, rejectsWith, unhex } from "../_helpers.ts";

interface Rfc9458Vector {
  server_secret_key: string;
  key_config: string;
  bhttp_request: string;
  client_ephemeral_secret_key: string;
  client_ephemeral_public_key: string;
  hpke_info: string;
  encapsulated_request: string;
  bhttp_response: string;
  exported_secret: string;
  response_nonce: string;
  salt: string;
  prk: string;
  aead_key: string;
  aead_nonce: string;
  encapsulated_response: string;
}

const vector = () => readVectorJson<{ rfc9458: Rfc9458Vector }>("ohttp.json").rfc9458;

async function vectorKey(v: Rfc9458Vector): Promise<GatewayKey> {
  return {
    config: decodeKeyConfig(unhex(v.key_config)),
    keyPair: await importKeyPair(unhex(v.server_secret_key)),
  };
}

vectorTest("ohttp: the RFC 9458 example is reproduced byte for byte, both directions", async () => {
  const v = vector();
  const client = await encapsulateRequest(unhex(v.key_config), unhex(v.bhttp_request), {
    random: () => unhex(v.client_ephemeral_secret_key),
  });
  assert.equal(hex(client.encapsulatedRequest), v.encapsulated_request);
  assert.equal(client.keyId, 1);
  assert.equal(client.suite.aead.id, AEAD_AES_128_GCM);

  const gateway = await decapsulateRequest(await vectorKey(v), unhex(v.encapsulated_request), {
    random: () => unhex(v.response_nonce),
  });
  assert.equal(hex(gateway.request), v.bhttp_request);
  const response = await gateway.sealResponse(unhex(v.bhttp_response));
  assert.equal(hex(response), v.encapsulated_response);
  assert.equal(hex(await client.openResponse(unhex(v.encapsulated_response))), v.bhttp_response);
});

vectorTest(
  "ohttp: the RFC 9458 intermediate values (info, enc, secret, salt, prk, key, nonce)",
  async () => {
    const v = vector();
    const setup = await setupClient(unhex(v.key_config), ONE_SHOT_LABELS, {
      random: () => unhex(v.client_ephemeral_secret_key),
    });
    assert.equal(
      hex(requestInfo(ONE_SHOT_LABELS.request, requestHeader(1, setup.suite.ids))),
      v.hpke_info,
    );
    assert.equal(hex(setup.enc), v.client_ephemeral_public_key);
    const keys = await deriveResponseKeys(
      setup.suite,
      setup.context,
      setup.enc,
      unhex(v.response_nonce),
      ONE_SHOT_LABELS.response,
    );
    assert.equal(hex(keys.secret), v.exported_secret);
    assert.equal(hex(keys.salt), v.salt);
    assert.equal(hex(keys.prk), v.prk);
    assert.equal(hex(keys.key), v.aead_key);
    assert.equal(hex(keys.nonce), v.aead_nonce);
  },
);

Deno.test("ohttp: random-size requests and responses round-trip with both AEADs (seeded)", async () => {
  const prng = new Prng(9458);
  const key = createGatewayKey(await generateKeyPair(), { keyId: prng.int(0, 255) });
  const keyConfig = encodeKeyConfig(key.config);
  for (let i = 0; i < 24; i++) {
    const aead = i % 2 === 0 ? AEAD_AES_128_GCM : AEAD_CHACHA20_POLY1305;
    const request = prng.bytes(
      prng.pick([0, 1, 15, 16, 17, prng.int(0, 4096), prng.int(0, 70000)]),
    );
    const response = prng.bytes(prng.pick([0, 1, prng.int(0, 4096), prng.int(0, 70000)]));
    const client = await encapsulateRequest(keyConfig, request, { aead });
    assert.equal(client.suite.aead.id, aead);
    const gateway = await decapsulateRequest(key, client.encapsulatedRequest);
    assert.deepEqual(gateway.request, request, `request ${i}`);
    assert.equal(gateway.suite, client.suite);
    assert.deepEqual(
      await client.openResponse(await gateway.sealResponse(response)),
      response,
      `response ${i}`,
    );
  }
});

Deno.test("ohttp: every bit flip in the request is refused with a typed error", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 5 });
  const client = await encapsulateRequest(
    encodeKeyConfig(key.config),
    new TextEncoder().encode("secret"),
  );
  const sealed = client.encapsulatedRequest;
  for (let bit = 0; bit < sealed.length * 8; bit++) {
    const byte = bit >> 3;
    const expected = byte === 0 ? ["unknown_key"] : byte < 7
      // 0x0001 -> 0x0003 turns AES-128-GCM into ChaCha20-Poly1305, which the key offers:
      // the suite is found, and authentication fails (the suite is bound into `info`).
      ? (bit === 49 ? ["authentication"] : ["unsupported_suite"])
      : byte < 39
      ? ["authentication", "malformed"]
      : ["authentication"];
    await rejectsWith(
      decapsulateRequest(key, flipBit(sealed, bit)),
      OpenError,
      expected,
      `bit ${bit}`,
    );
  }
});

Deno.test("ohttp: every bit flip in the response, and a response for another request, are refused", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 5 });
  const keyConfig = encodeKeyConfig(key.config);
  const client = await encapsulateRequest(keyConfig, Uint8Array.of(1, 2, 3));
  const gateway = await decapsulateRequest(key, client.encapsulatedRequest);
  const response = await gateway.sealResponse(new TextEncoder().encode("reply"));
  for (let bit = 0; bit < response.length * 8; bit++) {
    await rejectsWith(
      client.openResponse(flipBit(response, bit)),
      OpenError,
      "authentication",
      `bit ${bit}`,
    );
  }
  const otherClient = await encapsulateRequest(keyConfig, Uint8Array.of(1, 2, 3));
  await rejectsWith(
    otherClient.openResponse(response),
    OpenError,
    "authentication",
    "other exchange",
  );
  assert.deepEqual(await client.openResponse(response), new TextEncoder().encode("reply"));
});

Deno.test("ohttp: every truncation of request and response is refused", async () => {
  const key = createGatewayKey(await generateKeyPair(), { keyId: 5 });
  const client = await encapsulateRequest(
    encodeKeyConfig(key.config),
    new TextEncoder().encode("hello"),
  );
  const sealed = client.encapsulatedRequest;
  for (let length = 0; length < sealed.length; length++) {
    await rejectsWith(
      decapsulateRequest(key, sealed.subarray(0, length)),
      OpenError,
      ["truncated", "authentication"],
      `request cut to ${length}`,
    );
  }
  await rejectsWith(
    decapsulateRequest(key, cat(sealed, Uint8Array.of(0))),
    OpenError,
    "authentication",
    "extra byte",
  );
  const gateway = await decapsulateRequest(key, sealed);
  const response = await gateway.sealResponse(new TextEncoder().encode("world"));
  for (let length = 0; length < response.length; length++) {
    await rejectsWith(
      client.openResponse(response.subarray(0, length)),
      OpenError,
      ["truncated", "authentication"],
      `response cut to ${length}`,
    );
  }
});

Deno.test("ohttp: wrong key id, unsupported suites and garbage are typed errors", async () => {
  const prng = new Prng(1);
  const key = createGatewayKey(await generateKeyPair(), {
    keyId: 1,
    suites: [{ kdf: 1, aead: AEAD_AES_128_GCM }],
  });
  const other = createGatewayKey(await generateKeyPair(), { keyId: 2 });
  const sealed =
    (await encapsulateRequest(encodeKeyConfig(key.config), Uint8Array.of(1))).encapsulatedRequest;

  const wrongId = await rejectsWith(decapsulateRequest(other, sealed), OpenError, "unknown_key");
  assert.match(wrongId.shortMessage, /key id 1 is unknown \(the gateway holds 2\)/);
  // The right key among several is found.
  assert.deepEqual((await decapsulateRequest([other, key], sealed)).request, Uint8Array.of(1));
  // Same key id, different key: authentication fails.
  const impostor = createGatewayKey(await generateKeyPair(), { keyId: 1 });
  await rejectsWith(decapsulateRequest(impostor, sealed), OpenError, "authentication");

  const withAead = (aead: number) =>
    cat(sealed.subarray(0, 5), Uint8Array.of(aead >> 8, aead & 0xff), sealed.subarray(7));
  await rejectsWith(
    decapsulateRequest(key, withAead(AEAD_CHACHA20_POLY1305)),
    OpenError,
    "unsupported_suite",
  );
  await rejectsWith(decapsulateRequest(key, withAead(0x0002)), OpenError, "unsupported_suite");
  await rejectsWith(decapsulateRequest(key, withAead(0xffff)), OpenError, "unsupported_suite");
  for (let i = 0; i < 50; i++) {
    const garbage = prng.bytes(prng.int(0, 200));
    if (garbage.length > 0) garbage[0] = 1; // reach past the key id
    await rejectsWith(decapsulateRequest(key, garbage), OpenError, [
      "truncated",
      "unsupported_suite",
      "authentication",
      "malformed",
    ], `garbage ${i}`);
  }
  await rejectsWith(decapsulateRequest(key, "x" as unknown as Uint8Array), OpenError, "truncated");
});

Deno.test("ohttp: sealing refuses bad key configurations, unoffered AEADs and reuse", async () => {
  const key = createGatewayKey(await generateKeyPair(), {
    keyId: 1,
    suites: [{ kdf: 1, aead: AEAD_AES_128_GCM }],
  });
  const keyConfig = encodeKeyConfig(key.config);
  await rejectsWith(
    encapsulateRequest(keyConfig.subarray(0, 20), Uint8Array.of(1)),
    SealError,
    "invalid_key_config",
  );
  const unknownKem = keyConfig.slice();
  unknownKem[2] = 0x21;
  await rejectsWith(
    encapsulateRequest(unknownKem, Uint8Array.of(1)),
    SealError,
    "unsupported_suite",
  );
  await rejectsWith(
    encapsulateRequest(keyConfig, Uint8Array.of(1), { aead: AEAD_CHACHA20_POLY1305 }),
    SealError,
    "unsupported_suite",
  );
  await rejectsWith(
    encapsulateRequest(keyConfig, Uint8Array.of(1), { random: () => new Uint8Array(5) }),
    SealError,
    "crypto",
  );
  // ChaCha-only configuration: the default picks what is offered.
  const chacha = createGatewayKey(key.keyPair, {
    keyId: 2,
    suites: [{ kdf: 1, aead: AEAD_CHACHA20_POLY1305 }],
  });
  const client = await encapsulateRequest(chacha.config, Uint8Array.of(9));
  assert.equal(client.suite.aead.id, AEAD_CHACHA20_POLY1305);

  const gateway = await decapsulateRequest(chacha, client.encapsulatedRequest);
  await gateway.sealResponse(Uint8Array.of(1));
  await rejectsWith(gateway.sealResponse(Uint8Array.of(1)), SealError, "already_used");
});
