import assert from "node:assert/strict";
import { sha512 } from "@noble/hashes/sha2.js";
import { attestationReportData } from "../../../crypto/tee/mod.ts";
import { REPORT_DATA_DOMAIN } from "../../../crypto/tee/report_data.ts";

Deno.test("report data is SHA-512(domain ‖ 0x00 ‖ nonce ‖ serving public key)", () => {
  const nonce = Uint8Array.from({ length: 32 }, (_, i) => i);
  const key = Uint8Array.from({ length: 65 }, (_, i) => (i === 0 ? 4 : 200 - i));
  // Built by hand, byte by byte, from docs/protocol.md §6.
  const preimage = [
    ...new TextEncoder().encode("net-consumer/tee-report-data/v1"),
    0,
    ...nonce,
    ...key,
  ];
  assert.equal(REPORT_DATA_DOMAIN.length, 31);
  assert.deepEqual(attestationReportData(nonce, key), sha512(Uint8Array.from(preimage)));
  const other = nonce.slice();
  other[31] ^= 1;
  assert.notDeepEqual(attestationReportData(other, key), attestationReportData(nonce, key));
});

Deno.test("report data refuses a wrong-sized nonce or a compressed key", () => {
  const key = new Uint8Array(65);
  key[0] = 4;
  assert.throws(() => attestationReportData(new Uint8Array(31), key), RangeError);
  assert.throws(() => attestationReportData(new Uint8Array(32), new Uint8Array(33)), RangeError);
  assert.throws(() => attestationReportData(new Uint8Array(32), new Uint8Array(65)), RangeError);
});
