import assert from "node:assert/strict";
import { sha256 } from "@noble/hashes/sha2.js";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type Receipt, ReceiptError, signReceipt } from "../../../crypto/receipt.ts";
import {
  ApprovedMeasurements,
  checkReceipt,
  NonceBook,
  type ReceiptRecord,
  receiptRecordFromJson,
  receiptRecordToJson,
  type TdxBundle,
  verifyAttestation,
  verifyReceiptRecord,
} from "../../../crypto/tee/mod.ts";
import { refused } from "./_helpers.ts";
import { buildTdxBundle } from "./_synthetic_bundle.ts";

const now = new Date("2026-11-22T12:00:00Z");
const model = { id: "devnet/echo", weightsDigest: new Uint8Array(32).fill(0xe1) };
const request = new TextEncoder().encode('{"model":"devnet/echo"}');
const reply = new TextEncoder().encode('{"object":"chat.completion"}');

/** A verified attestation and a receipt its serving key signs for one reply. */
async function setting() {
  const nonces = new NonceBook();
  const nonce = nonces.issue(now);
  const built = await buildTdxBundle({ nonce, now, models: [model] });
  const verdict = await verifyAttestation(built.bundle, {
    nonce,
    nonces,
    now,
    roots: built.roots,
    approved: ApprovedMeasurements.fromList(built.approvedIds),
  });
  const hex = (text: string) =>
    Uint8Array.from(text.slice(2).match(/../g)!, (b) => parseInt(b, 16));
  const fields = {
    nonce,
    requestDigest: sha256(request),
    replyDigest: sha256(reply),
    status: 200,
    model: model.id,
    weightsDigest: model.weightsDigest,
    evidence: {
      quote: hex(verdict.digests.quote),
      gpus: verdict.digests.gpus.map(hex),
      bound: hex(verdict.digests.evidence),
    },
    usage: { promptTokens: 5, completionTokens: 7 },
  };
  const receipt = await signReceipt(built.servingKey, fields);
  const expected = {
    nonce,
    requestDigest: sha256(request),
    replyDigest: sha256(reply),
    status: 200,
    model: model.id,
    verdict,
  };
  const record: ReceiptRecord = {
    provider: `0x${"ab".repeat(20)}`,
    verifiedAt: now,
    measurements: [...built.approvedIds],
    attestation: built.bundle,
    receipt,
  };
  return { built, verdict, fields, receipt, expected, record };
}

const mismatch = (pattern: RegExp) => (e: unknown) =>
  e instanceof ReceiptError && e.reason === "mismatch" && pattern.test(e.message);

Deno.test("a receipt that names this request, reply, model and evidence is accepted", async () => {
  const { receipt, expected, built } = await setting();
  assert.equal(await checkReceipt(receipt, expected), built.servingKey.address.toLowerCase());
});

Deno.test("a receipt is refused for each field that differs from what the daemon saw", async () => {
  const { receipt, expected, fields, built } = await setting();
  const resign = (change: Partial<typeof fields>) =>
    signReceipt(built.servingKey, { ...fields, ...change });
  const cases: [string, Promise<Receipt>, RegExp][] = [
    ["another key", signReceipt(privateKeyToAccount(generatePrivateKey()), fields), /signed by/],
    ["another nonce", resign({ nonce: new Uint8Array(32) }), /nonce/],
    ["another request", resign({ requestDigest: new Uint8Array(32) }), /request digest/],
    ["another reply", resign({ replyDigest: new Uint8Array(32) }), /reply digest/],
    ["another status", resign({ status: 500 }), /status 500/],
    ["another model", resign({ model: "devnet/embed" }), /model devnet\/embed/],
    ["other weights", resign({ weightsDigest: new Uint8Array(32) }), /weights/],
    [
      "another quote",
      resign({ evidence: { ...fields.evidence, quote: new Uint8Array(32) } }),
      /evidence digests/,
    ],
    ["a GPU left out", resign({ evidence: { ...fields.evidence, gpus: [] } }), /evidence/],
  ];
  for (const [what, signed, pattern] of cases) {
    await assert.rejects(checkReceipt(await signed, expected), mismatch(pattern), what);
  }
  // A model the attestation does not name, even with matching request and reply.
  const unattested = await resign({ model: "other/model" });
  await assert.rejects(
    checkReceipt(unattested, { ...expected, model: "other/model" }),
    mismatch(/not among the attested models/),
  );
  await checkReceipt(receipt, expected);
});

Deno.test("a saved record re-verifies offline, through JSON, down to the test roots", async () => {
  const { record, built, verdict } = await setting();
  const json = JSON.parse(JSON.stringify(receiptRecordToJson(record)));
  const parsed = receiptRecordFromJson(json);
  const again = await verifyReceiptRecord(parsed, { roots: built.roots });
  assert.equal(again.signer, built.servingKey.address.toLowerCase());
  assert.equal(again.verdict.measurementId, verdict.measurementId);
  assert.deepEqual(again.verdict.digests, verdict.digests);
  // Under the pinned roots (no test root trusted) it is refused.
  await refused(verifyReceiptRecord(parsed), "untrusted");
});

Deno.test("an offline record is refused when its parts do not belong together", async () => {
  const { record, built, fields } = await setting();
  const other = await setting();
  const options = { roots: built.roots };
  // Another attestation than the receipt's.
  await assert.rejects(
    verifyReceiptRecord({ ...record, attestation: other.record.attestation }, options),
    mismatch(/nonces differ/),
  );
  // A receipt signed by another key than the attested one.
  const stranger = await signReceipt(privateKeyToAccount(generatePrivateKey()), fields);
  await assert.rejects(
    verifyReceiptRecord({ ...record, receipt: stranger }, options),
    mismatch(/signed by/),
  );
  // Evidence that is not the bundle's.
  const wrong = await signReceipt(built.servingKey, {
    ...fields,
    evidence: { ...fields.evidence, bound: new Uint8Array(32) },
  });
  await assert.rejects(
    verifyReceiptRecord({ ...record, receipt: wrong }, options),
    mismatch(/evidence/),
  );
  // A bundle changed after the fact no longer verifies.
  const bundle = record.attestation as TdxBundle;
  const tampered = { ...bundle, models: [{ ...model, weightsDigest: new Uint8Array(32) }] };
  await refused(verifyReceiptRecord({ ...record, attestation: tampered }, options), "binding");
  // Approval is judged by the record's ids unless the caller gives its own set.
  await refused(
    verifyReceiptRecord(record, {
      ...options,
      approved: ApprovedMeasurements.fromList([`0x${"00".repeat(32)}`]),
    }),
    "untrusted",
    "measurement",
  );
});

Deno.test("malformed records are refused", async () => {
  const { record } = await setting();
  const json = receiptRecordToJson(record);
  for (
    const [what, value] of [
      ["extra field", { ...json, note: "x" }],
      ["bad time", { ...json, verified_at: "yesterday" }],
      ["bad provider", { ...json, provider: "0x12" }],
      ["bad ids", { ...json, measurements: ["0x12"] }],
    ] as const
  ) {
    assert.throws(
      () => receiptRecordFromJson(value),
      (e) => e instanceof ReceiptError && e.reason === "malformed",
      what,
    );
  }
});
