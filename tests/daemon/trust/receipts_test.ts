import assert from "node:assert/strict";
import { AttestationError } from "../../../crypto/tee/mod.ts";
import type { AttestationCheck, AttestationFailure } from "../../../crypto/tee/mod.ts";
import { attestationCode, RECEIPT_ID, ReceiptLog } from "../../../daemon/trust/mod.ts";
import { DAEMON_ERROR_STATUS, TRUST_REFUSAL_CODES } from "../../../daemon/core/mod.ts";

Deno.test("every refused attestation maps to the client code of its reason", () => {
  const cases: [AttestationFailure, AttestationCheck, string][] = [
    ["mock", "format", "attestation_mock"],
    ["stale", "nonce_reused", "attestation_stale"],
    ["stale", "gpu_nonce", "attestation_stale"],
    ["stale", "gpu_collateral", "attestation_stale"],
    ["untrusted", "measurement", "measurement_not_approved"],
    ["untrusted", "gpu_measurement", "gpu_measurement_not_approved"],
    ["untrusted", "gpu_required", "gpu_not_attested"],
    ["untrusted", "gpu_chain", "gpu_attestation_failed"],
    ["untrusted", "gpu_fwid", "gpu_attestation_failed"],
    ["untrusted", "gpu_report_signature", "gpu_attestation_failed"],
    ["untrusted", "gpu_revocation", "gpu_attestation_failed"],
    ["untrusted", "gpu_collateral", "gpu_attestation_failed"],
    ["malformed", "gpu_report", "gpu_attestation_failed"],
    ["binding", "report_data", "attestation_binding_failed"],
    ["binding", "endorsement_signer", "key_not_vouched"],
    ["binding", "endorsement", "key_not_vouched"],
    ["malformed", "endorsement", "attestation_failed"],
    ["untrusted", "pck_chain", "attestation_failed"],
    ["untrusted", "td_policy", "attestation_failed"],
  ];
  for (const [reason, check, code] of cases) {
    const mapped = attestationCode(new AttestationError(reason, check, "x"));
    assert.equal(mapped, code, `${reason}/${check}`);
    assert.ok(TRUST_REFUSAL_CODES.has(mapped), `${mapped} is a refusal of trust`);
    assert.equal(DAEMON_ERROR_STATUS[mapped], 403);
  }
});

Deno.test("the receipt log keeps the latest records by id, and makes ids of its own", () => {
  let counter = 0;
  const log = new ReceiptLog({ capacity: 2, random: (n) => new Uint8Array(n).fill(counter++) });
  const ids = [log.newId(), log.newId(), log.newId()];
  assert.ok(ids.every((id) => RECEIPT_ID.test(id)));
  assert.equal(new Set(ids).size, 3);
  assert.throws(() => new ReceiptLog({ capacity: 0 }), RangeError);
  assert.equal(log.get(ids[0]), undefined);
  assert.equal(log.size, 0);
});
