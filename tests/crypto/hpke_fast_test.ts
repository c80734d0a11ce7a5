/**
 * The synchronous HPKE base mode Oblivious HTTP runs on (`crypto/hpke/_base_mode.ts`: X25519
 * and the AEADs on `node:crypto`, HKDF on `@noble/hashes`), held to the RFC 9180 vectors and,
 * for seeded random inputs, to `@hpke/core` as an independent oracle: the same `enc`, the same
 * ciphertexts and exports, and each opens what the other sealed.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { RecipientContext, SenderContext } from "@hpke/core";
import { x25519 } from "@noble/curves/ed25519.js";
import {
  type HpkeRecipientContext,
  type HpkeSenderContext,
  setupBaseRecipient,
  setupBaseSender,
} from "../../crypto/hpke/_base_mode.ts";
import { aeadKey } from "../../crypto/hpke/_aead.ts";
import { x25519PrivateKey } from "../../crypto/hpke/_x25519.ts";
import { hkdfExpand, hkdfExtract } from "../../crypto/hpke/_labeled_kdf.ts";
import { hkdfSync } from "node:crypto";
import { generateKeyPair, type HpkeKeyPair, importKeyPair } from "../../crypto/hpke/key_pair.ts";
import {
  AEAD_AES_128_GCM,
  AEAD_CHACHA20_POLY1305,
  AEAD_EXPORT_ONLY,
  hpkeSuite,
  KDF_HKDF_SHA256,
  KEM_X25519_HKDF_SHA256,
  type SuiteIds,
} from "../../crypto/hpke/suite.ts";
import { createGatewayKey, encodeKeyConfig } from "../../crypto/ohttp/key_config.ts";
import { decapsulateRequest, encapsulateRequest } from "../../crypto/ohttp/one_shot.ts";
import { readVectorJson, vectorTest } from "../_vectors.ts";
import { hex, Prng, unhex } from "./_helpers.ts";

interface BaseVector {
  mode: number;
  kem_id: number;
  kdf_id: number;
  aead_id: number;
  info: string;
  skEm: string;
  pkRm: string;
  skRm: string;
  enc: string;
  encryptions: { pt: string; aad: string; ct: string; seq: number }[];
  exports: { exporter_context: string; L: number; exported_value: string }[];
}

const ids = (aead: number): SuiteIds => ({
  kem: KEM_X25519_HKDF_SHA256,
  kdf: KDF_HKDF_SHA256,
  aead,
});

/** The fast path's recipient key made of a serialized private key. */
function recipientKey(secret: Uint8Array) {
  return { privateKey: x25519PrivateKey(secret), publicKey: x25519.getPublicKey(secret) };
}

vectorTest("hpke fast path: every RFC 9180 X25519 base-mode vector is reproduced", async () => {
  const { vectors } = readVectorJson<{ vectors: BaseVector[] }>("hpke.json");
  const base = vectors.filter((v) => v.mode === 0);
  assert.equal(base.length, 3, `expected 3 base-mode X25519 vectors, found ${base.length}`);
  for (const v of base) {
    const suite = ids(v.aead_id);
    const info = unhex(v.info);
    const sender = setupBaseSender(suite, unhex(v.pkRm), info, unhex(v.skEm));
    assert.equal(hex(sender.enc), v.enc, `enc of ${hpkeSuite(suite).name}`);
    const recipient = setupBaseRecipient(suite, recipientKey(unhex(v.skRm)), unhex(v.enc), info);
    const listed = new Map(v.encryptions.map((e) => [e.seq, e]));
    const last = Math.max(-1, ...listed.keys());
    for (let seq = 0; seq <= last; seq++) {
      const entry = listed.get(seq);
      const pt = entry ? unhex(entry.pt) : Uint8Array.of(seq & 0xff);
      const aad = entry ? unhex(entry.aad) : new Uint8Array(0);
      const ct = await sender.seal(pt, aad);
      if (entry) assert.equal(hex(ct), entry.ct, `ciphertext at seq ${seq}`);
      assert.deepEqual(await recipient.open(ct, aad), pt, `opened at seq ${seq}`);
    }
    if (v.aead_id === AEAD_EXPORT_ONLY) {
      assert.throws(() => sender.seal(new Uint8Array(1), new Uint8Array(0)), RangeError);
      assert.throws(() => recipient.open(new Uint8Array(17), new Uint8Array(0)), RangeError);
    }
    for (const e of v.exports) {
      const context = unhex(e.exporter_context);
      assert.equal(hex(sender.export(context, e.L)), e.exported_value);
      assert.equal(hex(recipient.export(context, e.L)), e.exported_value);
    }
  }
});

/** One exchange set up on both implementations from the same ephemeral key bytes. */
async function pairs(
  aead: number,
  recipient: HpkeKeyPair,
  ephemeral: Uint8Array,
  info: Uint8Array,
) {
  const suite = hpkeSuite(ids(aead));
  const fastSender = setupBaseSender(suite.ids, recipient.publicKey, info, ephemeral);
  const oracleSender = await suite.cipherSuite.createSenderContext({
    recipientPublicKey: recipient.keys.publicKey,
    info,
    ekm: (await importKeyPair(ephemeral)).keys,
  });
  const enc = new Uint8Array(oracleSender.enc);
  const fastRecipient = setupBaseRecipient(
    suite.ids,
    recipientKey(recipient.exportPrivateKey()),
    enc,
    info,
  );
  const oracleRecipient = await suite.cipherSuite.createRecipientContext({
    recipientKey: recipient.keys,
    enc: enc.slice(),
    info,
  });
  return { enc, fastSender, oracleSender, fastRecipient, oracleRecipient };
}

async function crossCheck(
  prng: Prng,
  fast: { sender: HpkeSenderContext; recipient: HpkeRecipientContext },
  oracle: { sender: SenderContext; recipient: RecipientContext },
  label: string,
): Promise<void> {
  for (let seq = 0; seq < prng.int(1, 6); seq++) {
    // Both sides of the AEAD's synchronous limit (2 KiB): node:crypto below, WebCrypto above.
    const pt = prng.bytes(
      prng.pick([prng.int(0, 300), prng.int(2000, 2100), prng.int(2100, 9000)]),
    );
    const aad = prng.bytes(prng.int(0, 20));
    const mine = await fast.sender.seal(pt, aad);
    const theirs = new Uint8Array(await oracle.sender.seal(pt.slice(), aad.slice()));
    assert.equal(hex(mine), hex(theirs), `${label}: ciphertext ${seq}`);
    // Each opens the other's: the oracle the fast one's, the fast one the oracle's.
    assert.deepEqual(new Uint8Array(await oracle.recipient.open(mine.slice(), aad.slice())), pt);
    assert.deepEqual(await fast.recipient.open(theirs, aad), pt, `${label}: opened ${seq}`);
  }
  const context = prng.bytes(prng.int(0, 40));
  const length = prng.int(1, 80);
  const exported = hex(new Uint8Array(await oracle.sender.export(context.slice(), length)));
  assert.equal(hex(fast.sender.export(context, length)), exported, `${label}: export`);
  assert.equal(hex(fast.recipient.export(context, length)), exported, `${label}: export`);
}

Deno.test("hpke fast path: random inputs agree with @hpke/core, both ways (seeded)", async () => {
  const prng = new Prng(0x9180);
  for (let round = 0; round < 24; round++) {
    const aead = round % 2 === 0 ? AEAD_AES_128_GCM : AEAD_CHACHA20_POLY1305;
    const recipient = await importKeyPair(prng.bytes(32));
    const ephemeral = prng.bytes(32);
    const info = prng.bytes(prng.int(0, 64));
    const p = await pairs(aead, recipient, ephemeral, info);
    assert.equal(hex(p.fastSender.enc), hex(p.enc), `round ${round}: enc`);
    await crossCheck(
      prng,
      { sender: p.fastSender, recipient: p.fastRecipient },
      { sender: p.oracleSender, recipient: p.oracleRecipient },
      `round ${round} (${hpkeSuite(ids(aead)).aead.name})`,
    );
  }
});

Deno.test("hpke fast path: forged input is refused and does not advance the sequence", async () => {
  const recipient = await generateKeyPair();
  const info = new TextEncoder().encode("forgery");
  for (const aead of [AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305]) {
    const sender = setupBaseSender(ids(aead), recipient.publicKey, info, new Prng(aead).bytes(32));
    const opener = setupBaseRecipient(
      ids(aead),
      recipientKey(recipient.exportPrivateKey()),
      sender.enc,
      info,
    );
    const aad = Uint8Array.of(1, 2);
    const first = await sender.seal(Uint8Array.of(7, 7, 7), aad);
    const second = await sender.seal(Uint8Array.of(8), aad);
    for (let bit = 0; bit < first.length * 8; bit += 5) {
      const forged = first.slice();
      forged[bit >> 3] ^= 1 << (bit & 7);
      assert.throws(() => opener.open(forged, aad), `bit ${bit} flipped`);
    }
    assert.throws(() => opener.open(first, Uint8Array.of(1)), "another AAD");
    assert.throws(() => opener.open(second, aad), "out of order");
    assert.throws(() => opener.open(first.subarray(0, 15), aad), "shorter than the tag");
    // Every refusal left the sequence where it was: the messages still open, in order.
    assert.deepEqual(await opener.open(first, aad), Uint8Array.of(7, 7, 7));
    assert.deepEqual(await opener.open(second, aad), Uint8Array.of(8));
  }
});

Deno.test("hpke fast path: large messages open in order, a forged one leaves the sequence", async () => {
  const recipient = await generateKeyPair();
  const info = new Uint8Array(0);
  const prng = new Prng(77);
  const sender = setupBaseSender(ids(AEAD_AES_128_GCM), recipient.publicKey, info, prng.bytes(32));
  const opener = setupBaseRecipient(
    ids(AEAD_AES_128_GCM),
    recipientKey(recipient.exportPrivateKey()),
    sender.enc,
    info,
  );
  const aad = new Uint8Array(0);
  const plain = [prng.bytes(5000), prng.bytes(10), prng.bytes(3000), prng.bytes(100)];
  const sealed = await Promise.all(plain.map((pt) => sender.seal(pt, aad)));
  assert.ok(sealed[0] instanceof Uint8Array && sealed[0].length === 5016);
  const forged = flip(sealed[0]);
  // Started together: the forged large one fails, and the rest wait for it, then open in order
  // with the sequence where the forgery left it.
  const results = await Promise.allSettled([
    opener.open(forged, aad),
    opener.open(sealed[0], aad),
    opener.open(sealed[1], aad),
    opener.open(sealed[2], aad),
    opener.open(sealed[3], aad),
  ]);
  assert.equal(results[0].status, "rejected");
  assert.deepEqual(
    results.slice(1).map((r) => r.status === "fulfilled" ? hex(r.value) : "rejected"),
    plain.map(hex),
  );
});

function flip(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  out[100] ^= 1;
  return out;
}

Deno.test("hpke fast path: HKDF-SHA256 gives what node:crypto's hkdfSync gives, every length", () => {
  const prng = new Prng(0x5869);
  for (const saltLength of [0, 16, 32, 48, 64, 65, 100]) {
    const salt = prng.bytes(saltLength);
    const ikm = prng.bytes(1 + (saltLength % 50));
    const info = prng.bytes(saltLength % 40);
    const prk = hkdfExtract(salt, ikm);
    for (const length of [0, 1, 12, 16, 31, 32, 33, 64, 65, 100, 255 * 32]) {
      const expected = new Uint8Array(hkdfSync("sha256", ikm, salt, info, length));
      assert.deepEqual(hkdfExpand(prk, info, length), expected, `salt ${saltLength}, L ${length}`);
    }
  }
  assert.throws(() => hkdfExpand(new Uint8Array(32), new Uint8Array(0), 255 * 32 + 1), RangeError);
});

Deno.test("hpke fast path: bad keys and small-order points are refused", async () => {
  const recipient = await generateKeyPair();
  const good = new Uint8Array(32).fill(1);
  assert.throws(
    () => setupBaseSender(ids(1), new Uint8Array(31), new Uint8Array(0), good),
    RangeError,
  );
  assert.throws(
    () => setupBaseSender(ids(1), recipient.publicKey, new Uint8Array(0), good.subarray(1)),
    RangeError,
  );
  // u = 0 and u = 1 have small order: the shared secret is all zero.
  for (const point of [new Uint8Array(32), Uint8Array.of(1, ...new Uint8Array(31))]) {
    // Twice: the second time the recipient's key comes from the imported keys kept.
    for (const time of ["first", "again"]) {
      assert.throws(
        () => setupBaseSender(ids(1), point, new Uint8Array(0), good),
        `sender (${time}), ${hex(point)}`,
      );
    }
    assert.throws(
      () =>
        setupBaseRecipient(
          ids(1),
          recipientKey(recipient.exportPrivateKey()),
          point,
          new Uint8Array(0),
        ),
      `recipient, ${hex(point)}`,
    );
  }
  assert.throws(
    () =>
      setupBaseSender({ kem: 0x10, kdf: 1, aead: 1 }, recipient.publicKey, new Uint8Array(0), good),
    RangeError,
  );
});

Deno.test("hpke fast path: OHTTP requests encapsulate as an @hpke/core oracle does, and open its", async () => {
  const prng = new Prng(0x9458);
  for (let round = 0; round < 8; round++) {
    const aead = round % 2 === 0 ? AEAD_AES_128_GCM : AEAD_CHACHA20_POLY1305;
    const keyId = prng.int(0, 255);
    const keyPair = await importKeyPair(prng.bytes(32));
    const key = createGatewayKey(keyPair, {
      keyId,
      suites: [{ kdf: KDF_HKDF_SHA256, aead }],
    });
    const request = prng.bytes(prng.int(0, 500));
    const ephemeral = prng.bytes(32);
    const mine = await encapsulateRequest(encodeKeyConfig(key.config), request, {
      random: () => ephemeral.slice(),
    });
    // The oracle: hdr ‖ enc ‖ Seal(request) with @hpke/core (RFC 9458 §4.3).
    const suite = hpkeSuite(ids(aead));
    const header = Uint8Array.of(keyId, 0, 0x20, 0, 1, 0, aead);
    const info = new Uint8Array([
      ...new TextEncoder().encode("message/bhttp request"),
      0,
      ...header,
    ]);
    const sender = await suite.cipherSuite.createSenderContext({
      recipientPublicKey: keyPair.keys.publicKey,
      info,
      ekm: (await importKeyPair(ephemeral)).keys,
    });
    const sealed = new Uint8Array(await sender.seal(request.slice(), new Uint8Array(0)));
    const theirs = new Uint8Array([...header, ...new Uint8Array(sender.enc), ...sealed]);
    assert.equal(hex(mine.encapsulatedRequest), hex(theirs), `round ${round}: encapsulation`);
    // Each opens the other's.
    assert.deepEqual((await decapsulateRequest(key, theirs)).request, request);
    const opener = await suite.cipherSuite.createRecipientContext({
      recipientKey: keyPair.keys,
      enc: mine.encapsulatedRequest.slice(7, 39),
      info,
    });
    assert.deepEqual(
      new Uint8Array(await opener.open(mine.encapsulatedRequest.slice(39), new Uint8Array(0))),
      request,
    );
  }
});

Deno.test("hpke fast path: each opened plaintext owns its memory, and a forged tag is refused (seeded)", () => {
  const random = new Prng(0x21c);
  for (const aeadId of [AEAD_AES_128_GCM, AEAD_CHACHA20_POLY1305]) {
    const key = aeadKey(aeadId, random.bytes(aeadId === AEAD_AES_128_GCM ? 16 : 32));
    const opened: Uint8Array[] = [];
    const plaintexts: Uint8Array[] = [];
    for (let i = 0; i < 40; i++) {
      const nonce = random.bytes(12);
      const aad = random.bytes(i % 3);
      const plaintext = random.bytes(random.int(1, 300));
      const sealed = key.seal(nonce, plaintext, aad) as Uint8Array;
      const open = key.open(nonce, sealed, aad) as Uint8Array;
      assert.deepEqual(open, plaintext);
      // Its own memory, all of it: never a view into a pool another plaintext shares.
      assert.equal(open.byteOffset, 0);
      assert.equal(open.buffer.byteLength, open.length);
      const forged = sealed.slice();
      forged[forged.length - 1] ^= 1;
      assert.throws(() => key.open(nonce, forged, aad));
      opened.push(open);
      plaintexts.push(plaintext);
    }
    assert.equal(new Set(opened.map((o) => o.buffer)).size, opened.length, "no shared memory");
    opened[0].fill(0xff);
    for (let i = 1; i < opened.length; i++) assert.deepEqual(opened[i], plaintexts[i]);
  }
});
