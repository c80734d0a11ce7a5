import assert from "node:assert/strict";
import { parseGpuReport, QuoteParseError } from "../../../../crypto/tee/mod.ts";
import { readVectorText, vectorTest } from "../../../_vectors.ts";
import { readHexVector, REAL_REPORTS } from "./_real.ts";
import { hex } from "../_helpers.ts";
import { sourceClaims } from "./_claims.ts";

vectorTest("both real H100 reports parse into the facts of the provenance", () => {
  for (const vector of REAL_REPORTS) {
    const bytes = readHexVector(vector.report);
    const report = parseGpuReport(bytes);
    assert.equal(hex(report.nonce), vector.nonce, vector.report);
    assert.equal(report.spdmVersion, 0x11);
    assert.equal(report.opaque.driverVersion, vector.driver);
    assert.equal(report.opaque.vbiosVersion, vector.vbios);
    assert.equal(hex(report.opaque.fwid), vector.fwid);
    assert.equal(report.blocks.length, 64);
    assert.deepEqual(
      report.blocks.map((b) => b.index),
      Array.from({ length: 64 }, (_, i) => i + 1),
    );
    assert.ok(report.blocks.every((b) => b.value.length === 48 && b.valueType === 1));
    assert.equal(report.opaque.measurementCounts.length, 64);
    assert.equal(report.signature.length, 96);
    assert.equal(report.signedRegion.length + 96, report.raw.length);
  }
  // The CoCo capture carries one zero byte after its signature: stripped.
  const coco = readHexVector(REAL_REPORTS[1].report);
  assert.equal(parseGpuReport(coco).raw.length, coco.length - 1);
});

vectorTest("the claims of the real report are reproduced byte for byte", () => {
  const report = parseGpuReport(readHexVector(REAL_REPORTS[0].report));
  const expected = readVectorText("tee/nvidia/hopperAttestationReport-claims.txt");
  assert.equal(
    sourceClaims(report, { arch: "Hopper", uuid: "1111-2222-33333-444444-555555" }),
    expected,
  );
});

vectorTest("a non-zero byte after the signature is refused as trailing data", () => {
  const bytes = readHexVector(REAL_REPORTS[1].report);
  const tail = bytes.slice();
  tail[tail.length - 1] = 1;
  assert.throws(
    () => parseGpuReport(tail),
    (e) => e instanceof QuoteParseError && /trailing/.test(e.message),
  );
  const longer = new Uint8Array(bytes.length + 3);
  longer.set(bytes);
  assert.equal(parseGpuReport(longer).raw.length, bytes.length - 1); // zeros only: stripped
});

vectorTest("every truncation of a real report is a QuoteParseError, never another error", () => {
  const bytes = readHexVector(REAL_REPORTS[0].report);
  for (let length = 0; length < bytes.length; length += length < 200 ? 1 : 7) {
    assert.throws(
      () => parseGpuReport(bytes.subarray(0, length)),
      QuoteParseError,
      `length ${length}`,
    );
  }
});

vectorTest("structural fields that are wrong are refused with what was found", () => {
  const bytes = readHexVector(REAL_REPORTS[0].report);
  const cases: [string, number, number, RegExp][] = [
    ["request version", 0, 0x12, /request's SPDM version is 0x12, expected 0x11/],
    ["request code", 1, 0xe1, /request code/],
    ["no signature asked", 2, 0x00, /signature/],
    ["not all measurements", 3, 0x01, /param2/],
    ["response version", 37, 0x10, /response's SPDM version/],
    ["response code", 38, 0x61, /response code/],
    ["block count", 41, 63, /measurement record follow/],
    ["first block specification", 46, 0x02, /DMTF layout/],
    ["first block index", 45, 0, /reserved index/],
  ];
  for (const [what, offset, value, message] of cases) {
    const changed = bytes.slice();
    changed[offset] = value;
    assert.throws(
      () => parseGpuReport(changed),
      (e) => e instanceof QuoteParseError && message.test(e.message),
      what,
    );
  }
});

vectorTest("random corruption never escapes the parser as anything but QuoteParseError", () => {
  const bytes = readHexVector(REAL_REPORTS[0].report);
  let seed = 0x2545f491;
  const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (let round = 0; round < 2000; round++) {
    const changed = bytes.slice();
    for (let k = 0; k < 1 + Math.floor(random() * 4); k++) {
      // The structure lives in the first 45 bytes, the block headers and the opaque data.
      const at = random() < 0.5 ? Math.floor(random() * 48) : Math.floor(random() * bytes.length);
      changed[at] = Math.floor(random() * 256);
    }
    try {
      parseGpuReport(changed);
    } catch (error) {
      assert.ok(error instanceof QuoteParseError, `round ${round}: ${error}`);
    }
  }
});
