import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { recoverMessageAddress } from "viem";
import {
  ReceiptError,
  type ReceiptFields,
  receiptFromJson,
  receiptMessage,
  receiptSigner,
  receiptToJson,
  signReceipt,
} from "../../crypto/receipt.ts";

const fill = (byte: number) => new Uint8Array(32).fill(byte);
const fields: ReceiptFields = {
  nonce: fill(1),
  requestDigest: fill(2),
  replyDigest: fill(3),
  status: 200,
  model: "devnet/echo",
  weightsDigest: fill(4),
  evidence: { quote: fill(5), gpus: [fill(6), fill(7)], bound: fill(8) },
  usage: { promptTokens: 0x01020304, completionTokens: 9 },
};

Deno.test("the signed message is the bytes docs/protocol.md §8 gives", () => {
  const bytes = [
    ...new TextEncoder().encode("net-consumer/receipt/v1"),
    0,
    ...fill(1),
    ...fill(2),
    ...fill(3),
    0,
    200,
    11,
    ...new TextEncoder().encode("devnet/echo"),
    ...fill(4),
    ...fill(5),
    2,
    ...fill(6),
    ...fill(7),
    ...fill(8),
    1,
    2,
    3,
    4,
    0,
    0,
    0,
    9,
  ];
  assert.deepEqual(receiptMessage(fields), Uint8Array.from(bytes));
});

Deno.test("a signed receipt recovers to its key, through JSON too", async () => {
  const key = privateKeyToAccount(generatePrivateKey());
  const receipt = await signReceipt(key, fields);
  assert.equal(await receiptSigner(receipt), key.address.toLowerCase());
  // An EIP-191 personal message, as any wallet library recovers it.
  assert.equal(
    await recoverMessageAddress({
      message: { raw: receiptMessage(fields) },
      signature: receipt.signature,
    }),
    key.address,
  );
  const json = JSON.parse(JSON.stringify(receiptToJson(receipt)));
  assert.equal(json.version, 1);
  assert.equal(json.evidence.gpus.length, 2);
  assert.deepEqual(receiptFromJson(json), receipt);
});

Deno.test("any changed field recovers to another key", async () => {
  const key = privateKeyToAccount(generatePrivateKey());
  const receipt = await signReceipt(key, fields);
  const changed: Partial<ReceiptFields>[] = [
    { nonce: fill(0x11) },
    { requestDigest: fill(0x12) },
    { replyDigest: fill(0x13) },
    { status: 500 },
    { model: "devnet/other" },
    { weightsDigest: fill(0x14) },
    { evidence: { ...fields.evidence, gpus: [fill(6)] } },
    { evidence: { ...fields.evidence, quote: fill(0x15) } },
    { evidence: { ...fields.evidence, bound: fill(0x16) } },
    { usage: { promptTokens: 1, completionTokens: 9 } },
    { usage: { promptTokens: 0x01020304, completionTokens: 10 } },
  ];
  for (const change of changed) {
    const other = await receiptSigner({ ...receipt, ...change }).catch(() => null);
    assert.notEqual(other, key.address.toLowerCase(), JSON.stringify(Object.keys(change)));
  }
});

Deno.test("malformed receipts are refused, naming the field", async () => {
  const key = privateKeyToAccount(generatePrivateKey());
  const json = receiptToJson(await signReceipt(key, fields));
  const bad: [string, unknown, RegExp][] = [
    ["not an object", [json], /must be an object/],
    ["version", { ...json, version: 2 }, /version must be 1/],
    ["extra field", { ...json, extra: true }, /unknown field "extra"/],
    ["short nonce", { ...json, nonce: "0x00" }, /nonce must be 0x and 32 bytes/],
    ["gpus not a list", { ...json, evidence: { ...json.evidence, gpus: "0x" } }, /gpus/],
    ["usage fraction", { ...json, usage: { ...json.usage, prompt_tokens: 1.5 } }, /prompt_tokens/],
    ["negative usage", { ...json, usage: { ...json.usage, completion_tokens: -1 } }, /completion/],
    ["status", { ...json, status: 42 }, /status must be 100 to 599/],
    ["model with space", { ...json, model: "a b" }, /model id/],
    ["signature", { ...json, signature: "0x1234" }, /signature must be 0x and 65 bytes/],
  ];
  for (const [what, value, message] of bad) {
    assert.throws(
      () => receiptFromJson(value),
      (e) => e instanceof ReceiptError && e.reason === "malformed" && message.test(e.message),
      what,
    );
  }
  const garbage = { ...json, signature: `0x${"00".repeat(65)}` };
  await assert.rejects(
    receiptSigner(receiptFromJson(garbage)),
    (e) => e instanceof ReceiptError && e.reason === "bad_signature",
  );
});
