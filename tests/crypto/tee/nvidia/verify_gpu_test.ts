import assert from "node:assert/strict";
import {
  ApprovedMeasurements,
  AttestationError,
  gpuMeasurementId,
  parseGpuReport,
  PINNED_ROOTS,
  verifyGpuEvidence,
  type VerifyGpuEvidenceOptions,
} from "../../../../crypto/tee/mod.ts";
import { readVectorText, vectorTest } from "../../../_vectors.ts";
import { flipBit, plusSeconds, refused } from "../_helpers.ts";
import { buildGpuCollateral, buildGpuReport, createTestNvidiaPki } from "../_synthetic_nvidia.ts";
import { readHexVector, REAL_REPORTS } from "./_real.ts";

const at = new Date("2026-06-01T00:00:00Z");
const fromHex = (text: string) => Uint8Array.from(text.match(/../g)!, (b) => parseInt(b, 16));

function real(index: 0 | 1, overrides: Partial<VerifyGpuEvidenceOptions> = {}) {
  const vector = REAL_REPORTS[index];
  const evidence = {
    report: readHexVector(vector.report),
    certificateChain: readVectorText(vector.chain),
  };
  const options: VerifyGpuEvidenceOptions = {
    nonce: fromHex(vector.nonce),
    now: at,
    allowMissingCollateral: true,
    ...overrides,
  };
  return { evidence, options };
}

vectorTest("both real H100 reports verify to the pinned NVIDIA root", async () => {
  for (const index of [0, 1] as const) {
    const { evidence, options } = real(index);
    const verified = await verifyGpuEvidence(evidence, options);
    assert.equal(verified.driverVersion, REAL_REPORTS[index].driver);
    assert.equal(verified.vbiosVersion, REAL_REPORTS[index].vbios);
    assert.equal(verified.fwid, REAL_REPORTS[index].fwid);
    assert.equal(verified.signer, "GH100 A01 GSP FMC LF");
    assert.equal(verified.revocation, "unchecked");
    assert.equal(verified.measurementId, gpuMeasurementId(parseGpuReport(evidence.report)));
    // With its id approved, the approved-set check passes too.
    const approved = ApprovedMeasurements.fromList([verified.measurementId]);
    await verifyGpuEvidence(evidence, { ...options, approved });
  }
});

vectorTest("without revocation collateral a real report is refused by default", async () => {
  const { evidence, options } = real(0, { allowMissingCollateral: undefined });
  await refused(verifyGpuEvidence(evidence, options), "untrusted", "gpu_collateral", /collateral/);
});

vectorTest("the three bad chains are refused, each with its own reason", async () => {
  const { evidence, options } = real(0);
  const chain = (file: string) => ({ ...evidence, certificateChain: readVectorText(file) });
  // Case 2: the root alone.
  await refused(
    verifyGpuEvidence(chain("tee/nvidia/hopper_cert_chain_case2.txt"), options),
    "malformed",
    "gpu_chain",
    /no certificate below the trust root/,
  );
  // Case 3: the provisioner CA is missing, so the BROM certificate's issuer is not next.
  await refused(
    verifyGpuEvidence(chain("tee/nvidia/hopper_cert_chain_case3.txt"), options),
    "untrusted",
    "gpu_chain",
    /broken: "GH100 A01 GSP BROM" is issued by "NVIDIA GH100 Provisioner ICA 1"/,
  );
  // Case 4: the chain starts at the device certificate, which names no FWID.
  await refused(
    verifyGpuEvidence(chain("tee/nvidia/hopper_cert_chain_case4.txt"), options),
    "untrusted",
    "gpu_fwid",
    /"GH100 A01 GSP BROM" has no FWID extension/,
  );
  // A chain of the other GPU: its FMC key did not sign this report.
  await refused(
    verifyGpuEvidence(chain(REAL_REPORTS[1].chain), options),
    "untrusted",
    "gpu_report_signature",
  );
});

vectorTest(
  "a flipped bit in any byte of the signed report or its signature is refused",
  async () => {
    const { evidence, options } = real(0);
    const length = parseGpuReport(evidence.report).raw.length;
    // Checked in batches: WebCrypto verifies on a thread pool, so a batch uses every core.
    for (let first = 0; first < length; first += 32) {
      const batch = Array.from({ length: Math.min(32, length - first) }, (_, k) => first + k);
      const errors = await Promise.all(
        batch.map((i) =>
          verifyGpuEvidence({ ...evidence, report: flipBit(evidence.report, i, i % 8) }, options)
            .then(() => null, (e) => e)
        ),
      );
      errors.forEach((error, k) => {
        assert.ok(error instanceof AttestationError, `byte ${batch[k]}: accepted`);
        assert.ok(
          ["gpu_report", "gpu_report_signature"].includes(error.check),
          `byte ${batch[k]}: ${error.check} ${error.message}`,
        );
      });
    }
  },
);

vectorTest("a flipped bit inside a certificate of the chain is refused", async () => {
  const { evidence, options } = real(1);
  const pem = evidence.certificateChain;
  const blocks = [...pem.matchAll(/-----BEGIN CERTIFICATE-----\n/g)];
  for (const block of blocks) {
    for (const delta of [30, 200, 500]) {
      const at = block.index! + block[0].length + delta;
      const flipped = pem.slice(0, at) + (pem[at] === "A" ? "B" : "A") + pem.slice(at + 1);
      const error = await verifyGpuEvidence({ ...evidence, certificateChain: flipped }, options)
        .then(() => null, (e) => e);
      assert.ok(error instanceof AttestationError, `block at ${block.index} +${delta}: accepted`);
    }
  }
});

vectorTest("a report answering another nonce is refused as stale", async () => {
  const { evidence, options } = real(0, { nonce: new Uint8Array(32).fill(1) });
  await refused(
    verifyGpuEvidence(evidence, options),
    "stale",
    "gpu_nonce",
    /answers nonce 931d8dd0/,
  );
});

vectorTest("a GPU whose measurements are not approved is refused", async () => {
  const { evidence, options } = real(0);
  const other = gpuMeasurementId(parseGpuReport(readHexVector(REAL_REPORTS[1].report)));
  const error = await refused(
    verifyGpuEvidence(evidence, { ...options, approved: ApprovedMeasurements.fromList([other]) }),
    "untrusted",
    "gpu_measurement",
    /driver 550\.90\.07, VBIOS 96\.00\.9f\.00\.01\) is not in the approved set \(1 approved\)/,
  );
  assert.match(error.hints.join("\n"), /Full GPU measurement id: 0x3cdd/);
});

vectorTest("the real chains are refused under roots without NVIDIA's", async () => {
  const { evidence, options } = real(0, { roots: { intel: PINNED_ROOTS.intel, amd: [] } });
  await refused(verifyGpuEvidence(evidence, options), "untrusted", "gpu_chain", /no trust root/);
});

// ---------------------------------------------------------------------------------------------
// Synthetic evidence: what the real vectors cannot show.

const now = new Date("2026-11-22T12:00:00Z");
const pki = await createTestNvidiaPki({ now });
const nonce = new Uint8Array(32).fill(9);

async function synthetic(overrides: Partial<Parameters<typeof buildGpuReport>[1]> = {}) {
  return {
    report: await buildGpuReport(pki, { nonce, ...overrides }),
    certificateChain: pki.chainPem,
  };
}

Deno.test("synthetic GPU evidence with fresh OCSP answers verifies under its test root", async () => {
  const collateral = await buildGpuCollateral(pki, { now });
  const verified = await verifyGpuEvidence(await synthetic(), {
    nonce,
    now,
    roots: pki.roots,
    collateral,
  });
  assert.equal(verified.revocation, "checked");
  assert.equal(verified.validUntil.getTime(), now.getTime() + 7 * 86_400_000);
  // The same evidence is refused under the pinned roots: the test root is not NVIDIA's.
  await refused(
    verifyGpuEvidence(await synthetic(), { nonce, now, collateral }),
    "untrusted",
    "gpu_chain",
    /does not chain to a pinned root/,
  );
});

Deno.test("a report whose FWID differs from its certificate's is refused", async () => {
  const evidence = await synthetic({ fwid: new Uint8Array(48).fill(0xee) });
  await refused(
    verifyGpuEvidence(evidence, { nonce, now, roots: pki.roots, allowMissingCollateral: true }),
    "untrusted",
    "gpu_fwid",
    /report names FWID eeeeeeee/,
  );
});

Deno.test("a report signed by a key other than the certified one is refused", async () => {
  const evidence = await synthetic({ signingKey: pki.device.keys.privateKey });
  await refused(
    verifyGpuEvidence(evidence, { nonce, now, roots: pki.roots, allowMissingCollateral: true }),
    "untrusted",
    "gpu_report_signature",
  );
});

Deno.test("an expired attestation key certificate is refused as stale, after its signatures", async () => {
  const evidence = await synthetic();
  const options = { nonce, roots: pki.roots, allowMissingCollateral: true };
  await verifyGpuEvidence(evidence, { ...options, now: pki.leaf.notAfter });
  await refused(
    verifyGpuEvidence(evidence, { ...options, now: plusSeconds(pki.leaf.notAfter, 1) }),
    "stale",
    "gpu_chain",
  );
  await refused(
    verifyGpuEvidence(evidence, { ...options, now: plusSeconds(pki.leaf.notBefore, -1) }),
    "stale",
    "gpu_chain",
  );
});

Deno.test("bad options are programming errors, raised before anything is read", async () => {
  const evidence = await synthetic();
  await assert.rejects(
    verifyGpuEvidence(evidence, { nonce: new Uint8Array(31), now, roots: pki.roots }),
    TypeError,
  );
  await assert.rejects(
    verifyGpuEvidence(evidence, { nonce, now: new Date(NaN), roots: pki.roots }),
    TypeError,
  );
});
