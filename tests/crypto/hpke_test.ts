import assert from "node:assert/strict";
import {
  AEAD_AES_128_GCM,
  AEAD_CHACHA20_POLY1305,
  AEAD_EXPORT_ONLY,
  HpkeError,
  hpkeSuite,
  KDF_HKDF_SHA256,
  KEM_X25519_HKDF_SHA256,
} from "../../crypto/hpke/suite.ts";
import { deriveKeyPair, generateKeyPair, importKeyPair } from "../../crypto/hpke/key_pair.ts";
import { readVectorJson, vectorTest } from "../_vectors.ts";
import { hex, Prng, unhex } from "./_helpers.ts";

interface HpkeVector {
  mode: number;
  kem_id: number;
  kdf_id: number;
  aead_id: number;
  info: string;
  ikmE: string;
  pkEm: string;
  skEm: string;
  ikmR: string;
  pkRm: string;
  skRm: string;
  ikmS?: string;
  pkSm?: string;
  skSm?: string;
  psk?: string;
  psk_id?: string;
  enc: string;
  encryptions: { pt: string; aad: string; nonce: string; ct: string; seq: number }[];
  exports: { exporter_context: string; L: number; exported_value: string }[];
}

const MODES = ["base", "psk", "auth", "auth_psk"];

vectorTest(
  "hpke: every RFC 9180 X25519 vector is reproduced (keys, enc, ciphertexts, exports)",
  async (t) => {
    const { vectors } = readVectorJson<{ vectors: HpkeVector[] }>("hpke.json");
    assert.ok(vectors.length >= 12, `expected the 12 X25519 vectors, found ${vectors.length}`);
    for (const v of vectors) {
      const suite = hpkeSuite({ kem: v.kem_id, kdf: v.kdf_id, aead: v.aead_id });
      await t.step(`${MODES[v.mode]} / ${suite.aead.name}`, async () => {
        // Key derivation and import reproduce the vector's keys.
        const recipient = await deriveKeyPair(unhex(v.ikmR));
        assert.equal(hex(recipient.publicKey), v.pkRm);
        assert.equal(hex(recipient.exportPrivateKey()), v.skRm);
        assert.equal(hex((await importKeyPair(unhex(v.skRm))).publicKey), v.pkRm);
        const ephemeral = await deriveKeyPair(unhex(v.ikmE));
        assert.equal(hex(ephemeral.publicKey), v.pkEm);
        assert.equal(hex(ephemeral.exportPrivateKey()), v.skEm);
        const sender = v.ikmS ? await deriveKeyPair(unhex(v.ikmS)) : undefined;
        if (sender) assert.equal(hex(sender.publicKey), v.pkSm);

        const psk = v.psk ? { id: unhex(v.psk_id!), key: unhex(v.psk) } : undefined;
        const info = unhex(v.info);
        const senderContext = await suite.cipherSuite.createSenderContext({
          recipientPublicKey: recipient.keys.publicKey,
          info,
          ekm: ephemeral.keys,
          psk,
          senderKey: sender?.keys,
        });
        assert.equal(hex(new Uint8Array(senderContext.enc)), v.enc);
        const recipientContext = await suite.cipherSuite.createRecipientContext({
          recipientKey: recipient.keys,
          enc: unhex(v.enc),
          info,
          psk,
          senderPublicKey: sender?.keys.publicKey,
        });

        // Seal every sequence number up to the last one listed; compare the listed ones.
        const listed = new Map(v.encryptions.map((e) => [e.seq, e]));
        const last = Math.max(-1, ...listed.keys());
        for (let seq = 0; seq <= last; seq++) {
          const entry = listed.get(seq);
          const pt = entry ? unhex(entry.pt) : Uint8Array.of(seq & 0xff);
          const aad = entry ? unhex(entry.aad) : new Uint8Array(0);
          const ct = new Uint8Array(await senderContext.seal(pt, aad));
          if (entry) assert.equal(hex(ct), entry.ct, `ciphertext at seq ${seq}`);
          assert.deepEqual(new Uint8Array(await recipientContext.open(ct, aad)), pt);
        }
        if (v.aead_id !== AEAD_EXPORT_ONLY) {
          assert.ok(last >= 0, "an AEAD vector lists encryptions");
        }

        for (const e of v.exports) {
          const context = unhex(e.exporter_context);
          assert.equal(
            hex(new Uint8Array(await senderContext.export(context, e.L))),
            e.exported_value,
          );
          assert.equal(
            hex(new Uint8Array(await recipientContext.export(context, e.L))),
            e.exported_value,
          );
        }
      });
    }
  },
);

Deno.test("hpke: suites are looked up by ids; unsupported ids are a typed error", () => {
  const suite = hpkeSuite({
    kem: KEM_X25519_HKDF_SHA256,
    kdf: KDF_HKDF_SHA256,
    aead: AEAD_AES_128_GCM,
  });
  assert.equal(suite.name, "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM");
  assert.deepEqual(
    [
      suite.kem.publicKeyLength,
      suite.kem.encLength,
      suite.aead.keyLength,
      suite.aead.nonceLength,
      suite.aead.tagLength,
    ],
    [32, 32, 16, 12, 16],
  );
  assert.equal(hpkeSuite({ kem: 0x20, kdf: 1, aead: 1 }), suite, "one instance per suite");
  const chacha = hpkeSuite({ kem: 0x20, kdf: 1, aead: AEAD_CHACHA20_POLY1305 });
  assert.equal(chacha.aead.name, "ChaCha20-Poly1305");
  assert.equal(chacha.aead.keyLength, 32);
  assert.equal(hpkeSuite({ kem: 0x20, kdf: 1, aead: AEAD_EXPORT_ONLY }).aead.canSeal, false);

  const unsupported: [number, number, number, RegExp][] = [
    [0x0010, 1, 1, /KEM 0x0010 not supported/], // P-256: not in this network
    [0x0020, 0x0002, 1, /KDF 0x0002 not supported/],
    [0x0020, 1, 0x0002, /AEAD 0x0002 not supported/], // AES-256-GCM
    [0x0021, 0x0003, 0x0004, /KEM 0x0021, KDF 0x0003, AEAD 0x0004 not supported/],
  ];
  for (const [kem, kdf, aead, message] of unsupported) {
    assert.throws(
      () => hpkeSuite({ kem, kdf, aead }),
      (error: unknown) =>
        error instanceof HpkeError && error.reason === "unsupported_suite" &&
        message.test(error.shortMessage),
    );
  }
});

Deno.test("hpke: key pairs are generated, exported and imported again", async () => {
  const keyPair = await generateKeyPair();
  assert.equal(keyPair.kemId, KEM_X25519_HKDF_SHA256);
  assert.equal(keyPair.publicKey.length, 32);
  const secret = keyPair.exportPrivateKey();
  assert.equal(secret.length, 32);
  secret.fill(0);
  assert.notDeepEqual(keyPair.exportPrivateKey(), secret, "export returns a copy");
  const again = await importKeyPair(keyPair.exportPrivateKey());
  assert.deepEqual(again.publicKey, keyPair.publicKey);

  const other = await generateKeyPair();
  assert.notDeepEqual(other.publicKey, keyPair.publicKey, "fresh randomness per key");

  // An injected random source makes generation reproducible.
  const seeded = () => new Prng(7).bytes(32);
  const a = await generateKeyPair({ random: (n) => seeded().subarray(0, n) });
  const b = await generateKeyPair({ random: (n) => seeded().subarray(0, n) });
  assert.deepEqual(a.publicKey, b.publicKey);
  assert.deepEqual(a.exportPrivateKey(), seeded());
});

Deno.test("hpke: logging a key pair does not show its private key", async () => {
  const keyPair = await generateKeyPair();
  const shown = Deno.inspect(keyPair, { depth: 10, showHidden: true });
  const secret = keyPair.exportPrivateKey();
  const asList = Array.from(secret).slice(0, 8).join(", ");
  assert.ok(!shown.includes(hex(secret)), shown);
  assert.ok(!shown.includes(asList), shown);
  assert.ok(!JSON.stringify(keyPair).includes(hex(secret)));
});

Deno.test("hpke: bad keys and a bad random source are typed errors", async () => {
  for (const length of [0, 31, 33, 64]) {
    await assert.rejects(
      importKeyPair(new Uint8Array(length)),
      (error: unknown) =>
        error instanceof HpkeError && error.reason === "invalid_key" &&
        error.shortMessage.includes(`found ${length} byte`),
    );
  }
  await assert.rejects(
    importKeyPair("00".repeat(32) as unknown as Uint8Array),
    (error: unknown) => error instanceof HpkeError && error.reason === "invalid_key",
  );
  await assert.rejects(
    deriveKeyPair(new Uint8Array(16)),
    (error: unknown) => error instanceof HpkeError && error.reason === "invalid_key",
  );
  await assert.rejects(
    importKeyPair(new Uint8Array(32), { kem: 0x0010 }),
    (error: unknown) => error instanceof HpkeError && error.reason === "unsupported_suite",
  );
  await assert.rejects(
    generateKeyPair({ random: () => new Uint8Array(31) }),
    (error: unknown) =>
      error instanceof HpkeError && error.reason === "invalid_key" &&
      /returned 31 bytes, expected 32 bytes/.test(error.shortMessage),
  );
});
