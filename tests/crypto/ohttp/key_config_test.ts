import assert from "node:assert/strict";
import {
  AEAD_AES_128_GCM,
  AEAD_CHACHA20_POLY1305,
  AEAD_EXPORT_ONLY,
  KDF_HKDF_SHA256,
  KEM_X25519_HKDF_SHA256,
} from "../../../crypto/hpke/suite.ts";
import { generateKeyPair, importKeyPair } from "../../../crypto/hpke/key_pair.ts";
import {
  createGatewayKey,
  decodeKeyConfig,
  decodeKeyConfigList,
  DEFAULT_SUITES,
  encodeKeyConfig,
  encodeKeyConfigList,
  type KeyConfig,
  KeyConfigError,
  type KeyConfigFailure,
  validateGatewayKey,
} from "../../../crypto/ohttp/key_config.ts";
import { readVectorJson, vectorTest } from "../../_vectors.ts";
import { bytesOf, cat, hex, Prng, randomKeyConfig, unhex } from "../_helpers.ts";

const publicKey = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
const config: KeyConfig = {
  keyId: 7,
  kemId: KEM_X25519_HKDF_SHA256,
  publicKey,
  suites: [
    { kdf: KDF_HKDF_SHA256, aead: AEAD_AES_128_GCM },
    { kdf: KDF_HKDF_SHA256, aead: AEAD_CHACHA20_POLY1305 },
  ],
};
const encoded = bytesOf(7, 0x00, 0x20, publicKey, 0x00, 0x08, 0, 1, 0, 1, 0, 1, 0, 3);

function refuses(bytes: Uint8Array, reason: KeyConfigFailure, label: string): KeyConfigError {
  let caught: unknown;
  try {
    decodeKeyConfig(bytes);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof KeyConfigError, `${label}: expected KeyConfigError, got ${caught}`);
  assert.equal(caught.reason, reason, `${label}: ${caught.message}`);
  return caught;
}

Deno.test("key config: encodes to the RFC 9458 §3 layout and decodes back", () => {
  assert.deepEqual(encodeKeyConfig(config), encoded);
  assert.deepEqual(decodeKeyConfig(encoded), config);
});

vectorTest(
  "key config: the RFC 9458 and chunked examples decode and re-encode byte for byte",
  async () => {
    const vectors = readVectorJson<
      Record<string, { key_config: string; server_secret_key: string }>
    >(
      "ohttp.json",
    );
    for (const name of ["rfc9458", "chunked"]) {
      const bytes = unhex(vectors[name].key_config);
      const decoded = decodeKeyConfig(bytes);
      assert.equal(decoded.keyId, 1);
      assert.equal(decoded.kemId, KEM_X25519_HKDF_SHA256);
      assert.deepEqual(decoded.suites, [
        { kdf: KDF_HKDF_SHA256, aead: AEAD_AES_128_GCM },
        { kdf: KDF_HKDF_SHA256, aead: AEAD_CHACHA20_POLY1305 },
      ]);
      const keyPair = await importKeyPair(unhex(vectors[name].server_secret_key));
      assert.equal(
        hex(decoded.publicKey),
        hex(keyPair.publicKey),
        "public key matches the secret key",
      );
      assert.equal(hex(encodeKeyConfig(decoded)), vectors[name].key_config);
      const key = createGatewayKey(keyPair, { keyId: 1 });
      assert.equal(hex(encodeKeyConfig(key.config)), vectors[name].key_config);
    }
  },
);

Deno.test("key config: the application/ohttp-keys list round-trips with 2-byte lengths", () => {
  const second: KeyConfig = {
    ...config,
    keyId: 8,
    suites: [{ kdf: 1, aead: AEAD_CHACHA20_POLY1305 }],
  };
  const list = encodeKeyConfigList([config, second]);
  assert.deepEqual(list.subarray(0, 2), Uint8Array.of(0, encoded.length));
  assert.deepEqual(list.subarray(2, 2 + encoded.length), encoded);
  assert.deepEqual(decodeKeyConfigList(list), [config, second]);
  assert.throws(() => encodeKeyConfigList([]), KeyConfigError);
});

Deno.test("key config: every truncation and every trailing byte is refused", () => {
  for (let length = 0; length < encoded.length; length++) {
    refuses(encoded.subarray(0, length), "malformed", `truncated to ${length}`);
  }
  refuses(cat(encoded, Uint8Array.of(0)), "malformed", "one trailing byte");
  const error = refuses(cat(encoded, encoded), "malformed", "two configs glued");
  assert.match(error.shortMessage, /follow the 45-byte configuration/);
});

Deno.test("key config: a corpus of malformed and unsupported configurations is refused", () => {
  const suites = (...ids: number[]) =>
    bytesOf(0, ids.length * 2, ...ids.flatMap((id) => [id >> 8, id & 0xff]));
  const head = bytesOf(7, 0x00, 0x20, publicKey);
  const cases: [string, Uint8Array, KeyConfigFailure][] = [
    ["P-256 KEM", bytesOf(7, 0x00, 0x10, new Uint8Array(65), suites(1, 1)), "unsupported_kem"],
    ["unknown KEM", bytesOf(7, 0xff, 0xff, publicKey, suites(1, 1)), "unsupported_kem"],
    ["no suites", cat(head, suites()), "malformed"],
    ["suites length not a multiple of 4", cat(head, bytesOf(0, 6, 0, 1, 0, 1, 0, 3)), "malformed"],
    ["suites length past the end", cat(head, bytesOf(0, 8, 0, 1, 0, 1)), "malformed"],
    ["unknown KDF", cat(head, suites(2, 1)), "unsupported_suite"],
    ["unknown AEAD", cat(head, suites(1, 2)), "unsupported_suite"],
    ["export-only AEAD", cat(head, suites(1, AEAD_EXPORT_ONLY)), "unsupported_suite"],
    ["one good, one unknown suite", cat(head, suites(1, 1, 1, 0x77)), "unsupported_suite"],
    ["duplicate suite", cat(head, suites(1, 1, 1, 1)), "malformed"],
    ["short public key", bytesOf(7, 0x00, 0x20, new Uint8Array(31), suites(1, 1)), "malformed"],
    ["garbage", Uint8Array.from({ length: 40 }, (_, i) => (i * 37) & 0xff), "unsupported_kem"],
  ];
  for (const [label, bytes, reason] of cases) refuses(bytes, reason, label);
  assert.throws(() => decodeKeyConfig("01" as unknown as Uint8Array), KeyConfigError);
});

Deno.test("key config: lists are strictly validated entry by entry", () => {
  const entry = (bytes: Uint8Array) => cat(bytesOf(bytes.length >> 8, bytes.length & 0xff), bytes);
  const cases: [string, Uint8Array][] = [
    ["empty list", new Uint8Array(0)],
    ["one-byte length", Uint8Array.of(0)],
    ["length past the end", cat(bytesOf(0, encoded.length + 1), encoded)],
    ["length shorter than the config", cat(bytesOf(0, encoded.length - 1), encoded)],
    [
      "length longer than the config",
      cat(bytesOf(0, encoded.length + 1), encoded, Uint8Array.of(0)),
    ],
    ["second entry cut", cat(entry(encoded), entry(encoded).subarray(0, 10))],
    [
      "second entry unsupported",
      cat(entry(encoded), entry(cat(encoded.subarray(0, 35), bytesOf(0, 4, 0, 1, 0, 9)))),
    ],
  ];
  for (const [label, bytes] of cases) {
    assert.throws(
      () => decodeKeyConfigList(bytes),
      (error: unknown) => error instanceof KeyConfigError,
      label,
    );
  }
  assert.throws(
    () => decodeKeyConfigList(cat(entry(encoded), entry(encoded).subarray(0, 10))),
    (error: unknown) => error instanceof KeyConfigError && /entry 1/.test(error.shortMessage),
  );
});

Deno.test("key config: encoding refuses invalid fields", () => {
  const bad: [string, KeyConfig, KeyConfigFailure][] = [
    ["key id 256", { ...config, keyId: 256 }, "malformed"],
    ["negative key id", { ...config, keyId: -1 }, "malformed"],
    ["short public key", { ...config, publicKey: new Uint8Array(31) }, "malformed"],
    ["no suites", { ...config, suites: [] }, "malformed"],
    ["unknown KEM", { ...config, kemId: 0x0010 }, "unsupported_kem"],
    ["unknown AEAD", { ...config, suites: [{ kdf: 1, aead: 9 }] }, "unsupported_suite"],
  ];
  for (const [label, value, reason] of bad) {
    assert.throws(
      () => encodeKeyConfig(value),
      (error: unknown) => error instanceof KeyConfigError && error.reason === reason,
      label,
    );
  }
});

Deno.test("key config: a gateway key pairs a key pair with its configuration", async () => {
  const keyPair = await generateKeyPair();
  const key = createGatewayKey(keyPair, { keyId: 3 });
  assert.deepEqual(key.config.publicKey, keyPair.publicKey);
  assert.deepEqual(key.config.suites, DEFAULT_SUITES);
  validateGatewayKey(key);
  const other = await generateKeyPair();
  assert.throws(
    () => validateGatewayKey({ config: key.config, keyPair: other }),
    (error: unknown) =>
      error instanceof KeyConfigError && /does not match/.test(error.shortMessage),
  );
  assert.throws(() => createGatewayKey(keyPair, { keyId: 300 }), KeyConfigError);
  const chachaOnly = createGatewayKey(keyPair, {
    keyId: 4,
    suites: [{ kdf: 1, aead: AEAD_CHACHA20_POLY1305 }],
  });
  assert.deepEqual(decodeKeyConfig(encodeKeyConfig(chachaOnly.config)), chachaOnly.config);
});

// Seeded property-style round trips: a failure names its seed and case, so it reproduces.
const ROUND_TRIP_SEED = 0x6b65_7901;

Deno.test("key config: seeded random valid configurations encode → decode → equal", () => {
  const prng = new Prng(ROUND_TRIP_SEED);
  for (let i = 0; i < 300; i++) {
    const label = `seed ${ROUND_TRIP_SEED.toString(16)}, case ${i}`;
    const config = randomKeyConfig(prng);
    const bytes = encodeKeyConfig(config);
    assert.equal(bytes.length, 1 + 2 + 32 + 2 + 4 * config.suites.length, label);
    const decoded = decodeKeyConfig(bytes);
    assert.deepEqual(decoded, config, label);
    assert.deepEqual(encodeKeyConfig(decoded), bytes, `${label}: re-encodes byte for byte`);
  }
});

Deno.test("key config: seeded random lists encode → decode → equal, and every cut is caught", () => {
  const prng = new Prng(ROUND_TRIP_SEED + 1);
  for (let i = 0; i < 100; i++) {
    const label = `seed ${(ROUND_TRIP_SEED + 1).toString(16)}, case ${i}`;
    const configs = Array.from({ length: prng.int(1, 8) }, () => randomKeyConfig(prng));
    const list = encodeKeyConfigList(configs);
    assert.deepEqual(decodeKeyConfigList(list), configs, label);
    // The list is each configuration behind its 2-byte length.
    const expected = cat(
      ...configs.map((c) => {
        const bytes = encodeKeyConfig(c);
        return cat(bytesOf(bytes.length >> 8, bytes.length & 0xff), bytes);
      }),
    );
    assert.deepEqual(list, expected, label);
    // A cut at an entry boundary is a shorter valid list; anywhere else it is refused.
    const boundaries = new Map<number, number>();
    let at = 0;
    configs.forEach((c, k) => boundaries.set(at += 2 + encodeKeyConfig(c).length, k + 1));
    for (let cut = 1; cut < list.length; cut++) {
      const entries = boundaries.get(cut);
      if (entries !== undefined) {
        assert.deepEqual(
          decodeKeyConfigList(list.subarray(0, cut)),
          configs.slice(0, entries),
          `${label}: cut after entry ${entries}`,
        );
        continue;
      }
      assert.throws(
        () => decodeKeyConfigList(list.subarray(0, cut)),
        (error: unknown) => error instanceof KeyConfigError && error.reason === "malformed",
        `${label}: cut at ${cut} of ${list.length}`,
      );
    }
  }
});
