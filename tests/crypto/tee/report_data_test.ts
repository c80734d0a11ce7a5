import assert from "node:assert/strict";
import { sha256, sha512 } from "@noble/hashes/sha2.js";
import { attestationReportData, gpuNonce, teeEvidenceDigest } from "../../../crypto/tee/mod.ts";

const encode = (text: string) => [...new TextEncoder().encode(text)];
const nonce = Uint8Array.from({ length: 32 }, (_, i) => i);
const key = Uint8Array.from({ length: 65 }, (_, i) => (i === 0 ? 4 : 200 - i));
const reports = [Uint8Array.of(1, 2, 3), Uint8Array.of(4, 5)];
const models = [
  { id: "maker/a", weightsDigest: new Uint8Array(32).fill(0xa1) },
  { id: "maker/b", weightsDigest: new Uint8Array(32).fill(0xb2) },
];

Deno.test("the evidence digest and report data are the bytes docs/protocol.md §6 gives", () => {
  // Built by hand, byte by byte.
  const evidence = sha256(Uint8Array.from([
    ...encode("net-consumer/tee-evidence/v1"),
    0,
    2,
    ...sha256(reports[0]),
    ...sha256(reports[1]),
    0,
    2,
    7,
    ...encode("maker/a"),
    ...models[0].weightsDigest,
    7,
    ...encode("maker/b"),
    ...models[1].weightsDigest,
  ]));
  assert.deepEqual(teeEvidenceDigest({ gpuReports: reports, models }), evidence);
  const preimage = [...encode("net-consumer/tee-report-data/v2"), 0, ...nonce, ...key, ...evidence];
  assert.deepEqual(
    attestationReportData(nonce, key, { gpuReports: reports, models }),
    sha512(Uint8Array.from(preimage)),
  );
  assert.deepEqual(
    gpuNonce(nonce, key),
    sha256(Uint8Array.from([...encode("net-consumer/tee-gpu-nonce/v1"), 0, ...nonce, ...key])),
  );
});

Deno.test("every bound part changes the report data: nonce, key, each GPU, GPU order, models", () => {
  const base = attestationReportData(nonce, key, { gpuReports: reports, models });
  const other = nonce.slice();
  other[31] ^= 1;
  const otherKey = key.slice();
  otherKey[64] ^= 1;
  const variants = [
    attestationReportData(other, key, { gpuReports: reports, models }),
    attestationReportData(nonce, otherKey, { gpuReports: reports, models }),
    attestationReportData(nonce, key, { gpuReports: [reports[0]], models }),
    attestationReportData(nonce, key, { gpuReports: [reports[1], reports[0]], models }),
    attestationReportData(nonce, key, { gpuReports: [Uint8Array.of(1, 2, 4), reports[1]], models }),
    attestationReportData(nonce, key, { gpuReports: reports, models: [models[0]] }),
    attestationReportData(nonce, key, {
      gpuReports: reports,
      models: [models[0], { ...models[1], weightsDigest: new Uint8Array(32) }],
    }),
    attestationReportData(nonce, key, { gpuReports: reports, models: [] }),
  ];
  for (const [i, variant] of variants.entries()) assert.notDeepEqual(variant, base, `variant ${i}`);
});

Deno.test("report data refuses a wrong-sized nonce or key and a model list that cannot be bound", () => {
  const none = { gpuReports: [], models: [] };
  assert.throws(() => attestationReportData(new Uint8Array(31), key, none), RangeError);
  assert.throws(() => attestationReportData(nonce, new Uint8Array(33), none), RangeError);
  assert.throws(() => attestationReportData(nonce, new Uint8Array(65), none), RangeError);
  assert.throws(() => gpuNonce(nonce, new Uint8Array(65)), RangeError);
  const bad: [string, typeof models][] = [
    ["unsorted", [models[1], models[0]]],
    ["duplicate", [models[0], models[0]]],
    ["empty id", [{ id: "", weightsDigest: new Uint8Array(32) }]],
    ["space in id", [{ id: "a b", weightsDigest: new Uint8Array(32) }]],
    ["short digest", [{ id: "a/b", weightsDigest: new Uint8Array(31) }]],
  ];
  for (const [what, list] of bad) {
    assert.throws(
      () => attestationReportData(nonce, key, { gpuReports: [], models: list }),
      RangeError,
      what,
    );
  }
  assert.throws(
    () => teeEvidenceDigest({ gpuReports: Array(17).fill(Uint8Array.of(1)), models: [] }),
    /at most 16 GPUs/,
  );
});
