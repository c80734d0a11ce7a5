import assert from "node:assert/strict";
import { keccak256 } from "viem";
import {
  parseSnpReport,
  parseTdxQuote,
  snpMeasurementId,
  tdxMeasurementId,
} from "../../../crypto/tee/mod.ts";
import { readVectorBytes, vectorTest } from "../../_vectors.ts";

vectorTest("the TDX measurement id is keccak256(MRTD ‖ RTMR0 ‖ RTMR1 ‖ RTMR2)", () => {
  const bytes = readVectorBytes("tee/tdx/phala-v4.quote");
  const quote = parseTdxQuote(bytes);
  // Independently: slice the registers from their absolute v4 offsets (tee.md) and hash with viem.
  const expected = keccak256(
    Uint8Array.from([
      ...bytes.subarray(184, 232),
      ...bytes.subarray(376, 424),
      ...bytes.subarray(424, 472),
      ...bytes.subarray(472, 520),
    ]),
  );
  assert.equal(tdxMeasurementId(quote.body), expected);
  // RTMR3 is not part of it.
  const changed = {
    mrTd: quote.body.mrTd,
    rtmrs: [...quote.body.rtmrs.slice(0, 3), new Uint8Array(48)],
  };
  assert.equal(tdxMeasurementId(changed), expected);
});

vectorTest("the SEV-SNP measurement id is keccak256(MEASUREMENT)", () => {
  const bytes = readVectorBytes("tee/snp/milan-debug.report");
  const report = parseSnpReport(bytes);
  assert.equal(snpMeasurementId(report.measurement), keccak256(bytes.subarray(0x90, 0xc0)));
});

Deno.test("measurement ids refuse wrong-sized registers", () => {
  assert.throws(() => snpMeasurementId(new Uint8Array(32)), RangeError);
  assert.throws(
    () =>
      tdxMeasurementId({
        mrTd: new Uint8Array(48),
        rtmrs: [new Uint8Array(48), new Uint8Array(47), new Uint8Array(48)],
      }),
    /RTMR1/,
  );
});
