/**
 * Vouchers signed with prepared nonces (`chain/voucher_nonces.ts`): every signature verifies with
 * noble's `secp256k1.verify` and recovers the consumer through viem's typed-data recovery, `s` is
 * low and `v` 27 or 28, no nonce is used twice, and an empty pool signs with RFC 6979 (the
 * very bytes viem's `signTypedData` gives).
 */

import assert from "node:assert/strict";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { type Hex, recoverTypedDataAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  VOUCHER_TYPES,
  voucherDigest,
  VoucherSigner,
  VoucherVerifier,
} from "../../chain/voucher.ts";
import { domain, provider, typedDomain } from "./_voucher_domain.ts";
import { PreparedNonces } from "../../chain/voucher_nonces.ts";

const N = secp256k1.Point.Fn.ORDER;

function randomDigest(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(32));
}

Deno.test("PreparedNonces: thousands of random digests verify with noble, low s, one nonce each", () => {
  const key = hexToBytes(generatePrivateKey().slice(2));
  const publicKey = secp256k1.getPublicKey(key, false);
  const pool = new PreparedNonces(key, { size: 16 });
  try {
    const rs = new Set<string>();
    const total = 2000;
    for (let i = 0; i < total; i++) {
      if (pool.ready === 0) pool.prepare();
      const digest = randomDigest();
      const recovered = pool.sign(digest);
      assert.ok(recovered, "a prepared nonce signs");
      assert.ok(recovered[0] === 0 || recovered[0] === 1, `recovery ${recovered[0]}`);
      const compact = recovered.subarray(1);
      const s = BigInt(`0x${bytesToHex(compact.subarray(32))}`);
      assert.ok(s > 0n && s <= N >> 1n, "s is low");
      assert.ok(secp256k1.verify(compact, digest, publicKey, { prehash: false, lowS: true }));
      if (i % 10 === 0) {
        // The recovery bit names the key, as ecrecover will read it.
        const signature = secp256k1.Signature.fromBytes(compact, "compact")
          .addRecoveryBit(recovered[0]);
        assert.deepEqual(signature.recoverPublicKey(digest).toBytes(false), publicKey);
      }
      rs.add(bytesToHex(compact.subarray(0, 32)));
    }
    // A nonce used twice would give the same r twice.
    assert.equal(rs.size, total);
    const { prepared, used } = pool.counts;
    assert.equal(used, total);
    assert.ok(prepared >= used, `${prepared} prepared, ${used} used`);
    assert.ok(prepared - used <= 16, "what was not used is still in the pool");
  } finally {
    pool.close();
  }
});

Deno.test("PreparedNonces: nonces are drawn from the random source, hedged with the key", () => {
  const key = hexToBytes(generatePrivateKey().slice(2));
  const other = hexToBytes(generatePrivateKey().slice(2));
  const fixed = (bytes: Uint8Array) => bytes.fill(7);
  const digest = randomDigest();
  const sign = (k: Uint8Array) => {
    const pool = new PreparedNonces(k, { size: 1, random: fixed });
    try {
      pool.prepare();
      return bytesToHex(pool.sign(digest)!.subarray(1, 33));
    } finally {
      pool.close();
    }
  };
  // Even a random source stuck on one value gives each key its own nonce (the key is mixed in).
  assert.notEqual(sign(key), sign(other));
  // With a working source, two pools of one key never share a nonce.
  const a = new PreparedNonces(key, { size: 1 });
  const b = new PreparedNonces(key, { size: 1 });
  try {
    a.prepare();
    b.prepare();
    assert.notEqual(bytesToHex(a.sign(digest)!), bytesToHex(b.sign(digest)!));
  } finally {
    a.close();
    b.close();
  }
});

Deno.test("VoucherSigner with prepared nonces: viem recovers the consumer, v 27 or 28, the verifier accepts", async () => {
  const key = generatePrivateKey();
  const signer = new VoucherSigner(key, domain, { preparedNonces: 8 });
  const verifier = new VoucherVerifier(domain);
  try {
    const pool = signer.nonces!;
    for (let i = 1; i <= 300; i++) {
      if (pool.ready === 0) pool.prepare();
      const before = pool.counts.used;
      const voucher = signer.sign({
        provider,
        cumulative: BigInt(i) * 1_000_003n,
        seq: BigInt(i),
      });
      assert.equal(pool.counts.used, before + 1, "each voucher takes one prepared nonce");
      const v = parseInt(voucher.signature.slice(130), 16);
      assert.ok(v === 27 || v === 28, `v ${v}`);
      assert.ok(BigInt(`0x${voucher.signature.slice(66, 130)}`) <= N >> 1n);
      verifier.verify(voucher);
      if (i % 30 === 0) {
        const address = await recoverTypedDataAddress({
          domain: typedDomain,
          types: VOUCHER_TYPES,
          primaryType: "Voucher",
          message: {
            consumer: voucher.consumer,
            provider: voucher.provider,
            cumulative: voucher.cumulative,
            seq: voucher.seq,
          },
          signature: voucher.signature,
        });
        assert.equal(address.toLowerCase(), signer.address);
      }
    }
  } finally {
    signer.close();
  }
});

Deno.test("VoucherSigner with an empty pool: signs with RFC 6979, as a wallet does, and refills", async () => {
  const key = generatePrivateKey();
  const wallet = privateKeyToAccount(key);
  const signer = new VoucherSigner(key, domain, { preparedNonces: 2 });
  try {
    const pool = signer.nonces!;
    assert.equal(pool.ready, 0);
    const voucher = signer.sign({ provider, cumulative: 77n, seq: 3n });
    assert.equal(pool.counts.used, 0, "no prepared nonce was there to use");
    const expected: Hex = await wallet.signTypedData({
      domain: typedDomain,
      types: VOUCHER_TYPES,
      primaryType: "Voucher",
      message: { consumer: signer.address, provider, cumulative: 77n, seq: 3n },
    });
    assert.equal(voucher.signature, expected.toLowerCase());
    assert.equal(voucherDigest(domain, voucher).length, 66);
    // The pool fills itself in the background, one nonce per turn.
    while (pool.ready < 2) await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(pool.counts.prepared, 2);
    const next = signer.sign({ provider, cumulative: 78n, seq: 4n });
    assert.equal(pool.counts.used, 1);
    new VoucherVerifier(domain).verify(next);
  } finally {
    signer.close();
  }
  // Closed: nothing is prepared any more, and signing still works (RFC 6979).
  const pool = signer.nonces!;
  assert.equal(pool.ready, 0);
  const after = signer.sign({ provider, cumulative: 79n, seq: 5n });
  new VoucherVerifier(domain).verify(after);
  assert.equal(pool.ready, 0);
});
