import assert from "node:assert/strict";
import { hashTypedData, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { VoucherError } from "../../chain/errors.ts";
import {
  parseVoucher,
  VOUCHER_TYPES,
  voucherDigest,
  VoucherSigner,
  voucherToJson,
  VoucherVerifier,
} from "../../chain/voucher.ts";
import { domain, provider, typedDomain } from "./_voucher_domain.ts";

Deno.test("VoucherSigner: the signature a wallet gives for the same typed data (viem oracle)", async () => {
  for (const key of [`0x${"01".repeat(32)}`, `0x${"fe".repeat(31)}01`] as Hex[]) {
    const signer = new VoucherSigner(key, domain);
    const wallet = privateKeyToAccount(key);
    assert.equal(signer.address, wallet.address.toLowerCase());
    for (
      const [cumulative, seq] of [[0n, 1n], [123_456_789n, 42n], [
        (1n << 256n) - 1n,
        (1n << 64n) - 1n,
      ]]
    ) {
      const message = { consumer: signer.address, provider, cumulative, seq };
      assert.equal(
        voucherDigest(domain, message),
        hashTypedData({
          domain: typedDomain,
          types: VOUCHER_TYPES,
          primaryType: "Voucher",
          message,
        }),
      );
      const signed = signer.sign({ provider, cumulative, seq });
      assert.equal(
        signed.signature,
        await wallet.signTypedData({
          domain: typedDomain,
          types: VOUCHER_TYPES,
          primaryType: "Voucher",
          message,
        }),
      );
    }
  }
});

Deno.test("VoucherSigner: refuses bad keys and out-of-range fields", () => {
  assert.throws(() => new VoucherSigner("0x1234" as Hex, domain), VoucherError);
  assert.throws(() => new VoucherSigner(`0x${"00".repeat(32)}`, domain), /not in \[1, n-1\]/);
  const signer = new VoucherSigner(`0x${"01".repeat(32)}`, domain);
  assert.throws(() => signer.sign({ provider, cumulative: -1n, seq: 1n }), /cumulative is -1/);
  assert.throws(() => signer.sign({ provider, cumulative: 1n, seq: 0n }), /seq is 0/);
  assert.throws(() => signer.sign({ provider, cumulative: 1n, seq: 1n << 64n }), /seq is/);
  assert.throws(
    () => new VoucherSigner(`0x${"01".repeat(32)}`, { chainId: 0, escrow: domain.escrow }),
    /positive chain id/,
  );
  assert.throws(
    () => new VoucherSigner(`0x${"01".repeat(32)}`, { chainId: 1n << 256n, escrow: domain.escrow }),
    /as a uint256: out of range/,
  );
  assert.throws(() => signer.sign({ provider, cumulative: 1n << 256n, seq: 1n }), /cumulative is/);
});

Deno.test("VoucherVerifier: another chain or Escrow, another key, a changed field: refused", () => {
  const signer = new VoucherSigner(`0x${"01".repeat(32)}`, domain);
  const signed = signer.sign({ provider, cumulative: 10n, seq: 1n });
  const verifier = new VoucherVerifier(domain);
  assert.equal(verifier.verify(signed), signed);
  const refuse = (v: VoucherVerifier, voucher: typeof signed) =>
    assert.throws(
      () => v.verify(voucher),
      (e) => e instanceof VoucherError && e.reason === "bad_signature",
    );
  refuse(new VoucherVerifier({ chainId: 1, escrow: domain.escrow }), signed);
  refuse(new VoucherVerifier({ chainId: domain.chainId, escrow: provider }), signed);
  for (const v of [verifier, new VoucherVerifier(domain)]) {
    refuse(v, { ...signed, cumulative: 11n });
    refuse(v, { ...signed, seq: 2n });
    refuse(v, { ...signed, provider: signer.address });
    refuse(v, { ...signed, consumer: provider });
    refuse(v, { ...signed, signature: `${signed.signature.slice(0, 130)}1d` as Hex });
  }
});

Deno.test("parseVoucher: the JSON form round-trips; anything else is malformed with what was found", () => {
  const signer = new VoucherSigner(`0x${"01".repeat(32)}`, domain);
  const signed = signer.sign({ provider, cumulative: 10n, seq: 1n });
  const json = voucherToJson(signed);
  assert.deepEqual(parseVoucher(JSON.stringify(json)), signed);
  assert.deepEqual(
    parseVoucher({ ...json, provider: provider.toUpperCase().replace("0X", "0x") }),
    signed,
  );
  const bad: [unknown, RegExp][] = [
    ["not json", /not JSON/],
    [JSON.stringify([json]), /expected a JSON object/],
    [{ ...json, extra: 1 }, /unknown field "extra"/],
    [{ ...json, cumulative: 10 }, /cumulative is "10"; expected a decimal string/],
    [{ ...json, cumulative: "010" }, /cumulative is "010"/],
    [{ ...json, seq: "0" }, /seq is 0/],
    [{ ...json, consumer: "0x12" }, /consumer is "0x12"; expected an address/],
    [{ ...json, signature: "0x00" }, /signature is "0x00"/],
    [" ".repeat(2000), /over 1024 bytes/],
  ];
  for (const [input, message] of bad) {
    assert.throws(
      () => parseVoucher(input),
      (e) => e instanceof VoucherError && e.reason === "malformed" && message.test(e.message),
      String(message),
    );
  }
});
