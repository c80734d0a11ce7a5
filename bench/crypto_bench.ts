/**
 * What sealing costs, next to raw WebCrypto AES-128-GCM on the same data in the same run.
 *
 * Groups (each prints ratios against its baseline):
 * - `HPKE setup`: a sender and a recipient context (RFC 9180 base mode, X25519, AES-128-GCM)
 *   and one message sealed and opened — `@hpke/core` on WebCrypto (the baseline) against the
 *   synchronous path OHTTP runs on (`crypto/hpke/_base_mode.ts`: `node:crypto` X25519 and
 *   AEAD, `@noble/hashes` HKDF);
 * - `1 KiB` and `64 KiB`: one body sealed and opened — one-shot OHTTP and chunked OHTTP
 *   requests with their HPKE setup, and a chunked response on an exchange set up outside the
 *   timing (the per-body symmetric cost);
 * - `10,000 chunks`: a stream of 10,000 64-byte chunks sealed and opened chunk by chunk,
 *   raw, as chunked OHTTP, and as the full sealed exchange (Binary HTTP inside chunked OHTTP,
 *   as the provider and the daemon run it).
 *
 * Run: `deno bench -A bench/crypto_bench.ts` (or `deno task bench`).
 *
 * @module
 */

import {
  createChunkedRequest,
  createGatewayKey,
  decapsulateRequest,
  encapsulateRequest,
  encodeKeyConfig,
  generateKeyPair,
  hpkeSuite,
  openChunkedRequest,
  openHttpRequest,
  sealHttpRequest,
} from "../crypto/mod.ts";
import { setupBaseRecipient, setupBaseSender } from "../crypto/hpke/_base_mode.ts";
import { x25519PrivateKey } from "../crypto/hpke/_x25519.ts";

const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
const keyConfig = encodeKeyConfig(key.config);
const aesKey = await crypto.subtle.importKey(
  "raw",
  crypto.getRandomValues(new Uint8Array(16)),
  "AES-GCM",
  false,
  ["encrypt", "decrypt"],
);
const bodies = {
  "1 KiB": crypto.getRandomValues(new Uint8Array(1024)),
  "64 KiB": crypto.getRandomValues(new Uint8Array(64 * 1024)),
};
const CHUNKS = 10_000;
const CHUNK = crypto.getRandomValues(new Uint8Array(64));

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let total = 0;
  for await (const chunk of stream) total += chunk.length;
  return total;
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`benchmark self-check failed: ${what}`);
}

async function aesSealOpen(data: Uint8Array<ArrayBuffer>, counter: number): Promise<void> {
  const iv = new Uint8Array(12);
  new DataView(iv.buffer).setUint32(8, counter);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, aesKey, data);
  const opened = await crypto.subtle.decrypt({ name: "AES-GCM", iv }, aesKey, sealed);
  check(opened.byteLength === data.length, "AES round trip");
}

/** A client and gateway exchange with the request already opened. */
async function openExchange() {
  const client = await createChunkedRequest(keyConfig);
  const gateway = await openChunkedRequest(key, client.sealRequest(Uint8Array.of(1)));
  await drain(gateway.request);
  return { client, gateway };
}

function chunkStream(count: number, chunk: Uint8Array): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent++ === count) controller.close();
      else controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
}

{
  const hpke = hpkeSuite({ kem: 0x20, kdf: 1, aead: 1 });
  const recipient = await generateKeyPair();
  const recipientKey = {
    privateKey: x25519PrivateKey(recipient.exportPrivateKey()),
    publicKey: recipient.publicKey,
  };
  const info = new TextEncoder().encode("message/bhttp chunked request");
  const message = crypto.getRandomValues(new Uint8Array(256));
  const aad = new Uint8Array(0);
  const group = "HPKE setup";
  Deno.bench({
    name: `${group}: @hpke/core (WebCrypto) sender + recipient, one message`,
    group,
    baseline: true,
    async fn() {
      const sender = await hpke.cipherSuite.createSenderContext({
        recipientPublicKey: recipient.keys.publicKey,
        info,
      });
      const opener = await hpke.cipherSuite.createRecipientContext({
        recipientKey: recipient.keys,
        enc: sender.enc,
        info,
      });
      const sealed = await sender.seal(message.slice(), aad);
      check((await opener.open(sealed, aad)).byteLength === message.length, "@hpke/core");
    },
  });
  Deno.bench({
    name: `${group}: fast path (node:crypto, @noble/hashes) sender + recipient, one message`,
    group,
    async fn() {
      const ephemeral = crypto.getRandomValues(new Uint8Array(32));
      const sender = setupBaseSender(hpke.ids, recipient.publicKey, info, ephemeral);
      const opener = setupBaseRecipient(hpke.ids, recipientKey, sender.enc, info);
      const sealed = await sender.seal(message, aad); // 256 bytes: synchronous, no promise
      check((await opener.open(sealed, aad)).length === message.length, "fast path");
    },
  });
}

for (const [label, body] of Object.entries(bodies)) {
  Deno.bench({
    name: `${label}: WebCrypto AES-128-GCM seal+open`,
    group: label,
    baseline: true,
    async fn() {
      await aesSealOpen(body, 1);
    },
  });
  Deno.bench({
    name: `${label}: one-shot OHTTP request seal+open (HPKE setup included)`,
    group: label,
    async fn() {
      const client = await encapsulateRequest(keyConfig, body);
      const gateway = await decapsulateRequest(key, client.encapsulatedRequest);
      check(gateway.request.length === body.length, "one-shot round trip");
    },
  });
  Deno.bench({
    name: `${label}: chunked OHTTP request seal+open (HPKE setup included)`,
    group: label,
    async fn() {
      const client = await createChunkedRequest(keyConfig);
      const gateway = await openChunkedRequest(key, client.sealRequest(body));
      check(await drain(gateway.request) === body.length, "chunked round trip");
    },
  });
  Deno.bench({
    name: `${label}: chunked OHTTP response seal+open (exchange set up untimed)`,
    group: label,
    async fn(b) {
      const { client, gateway } = await openExchange();
      b.start();
      const opened = await drain(client.openResponse(gateway.sealResponse(body)));
      b.end();
      check(opened === body.length, "chunked response round trip");
    },
  });
}

const streamGroup = `${CHUNKS.toLocaleString("en")} chunks of ${CHUNK.length} B`;

Deno.bench({
  name: `${streamGroup}: WebCrypto AES-128-GCM seal+open per chunk`,
  group: streamGroup,
  baseline: true,
  n: 10,
  warmup: 2,
  async fn() {
    for (let i = 0; i < CHUNKS; i++) await aesSealOpen(CHUNK, i);
  },
});

Deno.bench({
  name: `${streamGroup}: chunked OHTTP response stream (exchange set up untimed)`,
  group: streamGroup,
  n: 10,
  warmup: 2,
  async fn(b) {
    const { client, gateway } = await openExchange();
    b.start();
    const opened = await drain(
      client.openResponse(gateway.sealResponse(chunkStream(CHUNKS, CHUNK))),
    );
    b.end();
    check(opened === CHUNKS * CHUNK.length, "stream round trip");
  },
});

Deno.bench({
  name: `${streamGroup}: sealed exchange (Binary HTTP in chunked OHTTP), setup untimed`,
  group: streamGroup,
  n: 10,
  warmup: 2,
  async fn(b) {
    const sealed = await sealHttpRequest(keyConfig, { body: { model: "devnet/tiny-chat" } });
    const request = await openHttpRequest(key, sealed.body);
    b.start();
    const reply = await sealed.openResponse(
      request.respond({
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: chunkStream(CHUNKS, CHUNK),
      }),
    );
    const opened = await drain(reply.body);
    b.end();
    check(opened === CHUNKS * CHUNK.length, "sealed exchange round trip");
  },
});

// Wire overhead, measured once: what chunking adds on top of the plaintext.
{
  const { client, gateway } = await openExchange();
  const wire = await drain(gateway.sealResponse(chunkStream(CHUNKS, CHUNK)));
  void client;
  const plain = CHUNKS * CHUNK.length;
  console.log(
    `chunked OHTTP wire size for ${streamGroup}: ${wire} bytes for ${plain} bytes of plaintext ` +
      `(+${((wire / plain - 1) * 100).toFixed(1)}%: 16-byte tag and 1-byte length per chunk, ` +
      "16-byte nonce, 17-byte final chunk)",
  );
}
