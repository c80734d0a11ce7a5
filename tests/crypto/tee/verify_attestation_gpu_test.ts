import assert from "node:assert/strict";
import { sha256 } from "@noble/hashes/sha2.js";
import {
  ApprovedMeasurements,
  attestationBundleFromJson,
  NonceBook,
  type TdxBundle,
  teeEvidenceDigest,
  verifyAttestation,
  type VerifyAttestationOptions,
} from "../../../crypto/tee/mod.ts";
import { hex, plusSeconds, refused } from "./_helpers.ts";
import { createTestIntelPki, type TestIntelPki } from "./_synthetic.ts";
import { buildSnpBundle, buildTdxBundle, type TdxBundleOptions } from "./_synthetic_bundle.ts";
import { createTestNvidiaPki, testGpuMeasurements } from "./_synthetic_nvidia.ts";

const now = new Date("2026-11-22T12:00:00Z");
const intel: TestIntelPki = await createTestIntelPki({ now });
const models = [
  { id: "devnet/echo", weightsDigest: new Uint8Array(32).fill(0xe1) },
  { id: "meta/llama-3.1-8b", weightsDigest: new Uint8Array(32).fill(0x11) },
];

/** A daemon's view of one attestation: its nonce book, the bundle, the options. */
async function attest(overrides: Omit<Partial<TdxBundleOptions>, "now"> = {}) {
  const nonces = new NonceBook();
  const nonce = nonces.issue(now);
  const built = await buildTdxBundle({ nonce, now, pki: intel, models, ...overrides });
  const options: VerifyAttestationOptions = {
    nonce,
    nonces,
    now,
    roots: built.roots,
    approved: ApprovedMeasurements.fromList(built.approvedIds),
  };
  return { nonce, built, options };
}

Deno.test("CPU, GPU and binding verify: the verdict names the GPUs, the models and the digests", async () => {
  const { built, options } = await attest({ gpus: 2 });
  const bundle = attestationBundleFromJson(JSON.parse(JSON.stringify(built.json)));
  const verdict = await verifyAttestation(bundle, options);
  assert.equal(verdict.gpus.length, 2);
  assert.deepEqual(verdict.gpus.map((gpu) => gpu.measurementId), built.gpuMeasurementIds);
  assert.ok(verdict.gpus.every((gpu) => gpu.revocation === "checked"));
  assert.equal(verdict.gpus[0].driverVersion, "550.90.07");
  assert.deepEqual(verdict.models, models);
  const tdx = built.bundle as TdxBundle;
  assert.equal(verdict.digests.quote, `0x${hex(sha256(tdx.quote))}`);
  assert.deepEqual(verdict.digests.gpus, tdx.gpus.map((gpu) => `0x${hex(sha256(gpu.report))}`));
  assert.equal(
    verdict.digests.evidence,
    `0x${hex(teeEvidenceDigest({ gpuReports: tdx.gpus.map((g) => g.report), models }))}`,
  );
  // SEV-SNP enclaves carry GPUs the same way.
  const nonces = new NonceBook();
  const nonce = nonces.issue(now);
  const snp = await buildSnpBundle({ nonce, now, models });
  const snpVerdict = await verifyAttestation(snp.bundle, {
    nonce,
    nonces,
    now,
    roots: snp.roots,
    approved: ApprovedMeasurements.fromList(snp.approvedIds),
  });
  assert.equal(snpVerdict.gpus.length, 1);
});

Deno.test("a bundle without GPU evidence is refused unless the policy allows CPU-only enclaves", async () => {
  const { built, options } = await attest({ gpus: 0 });
  await refused(verifyAttestation(built.bundle, options), "untrusted", "gpu_required", /no GPU/);
  const allowed = await attest({ gpus: 0 });
  const verdict = await verifyAttestation(allowed.built.bundle, {
    ...allowed.options,
    policy: { requireGpu: false },
  });
  assert.deepEqual(verdict.gpus, []);
});

Deno.test("a GPU report the enclave did not bind is refused: dropped, added, replaced, reordered", async () => {
  const extra = ((await attest()).built.bundle as TdxBundle).gpus[0];
  type Gpus = TdxBundle["gpus"];
  const edits: [string, (gpus: Gpus) => Gpus][] = [
    ["dropped", (gpus) => [gpus[0]]],
    ["added", (gpus) => [...gpus, extra]],
    ["replaced", (gpus) => [gpus[0], extra]],
    ["reordered", (gpus) => [gpus[1], gpus[0]]],
  ];
  for (const [what, edit] of edits) {
    const { built, options } = await attest({ gpus: 2 });
    const bundle = built.bundle as TdxBundle;
    const error = await refused(
      verifyAttestation({ ...bundle, gpus: edit(bundle.gpus) }, options),
      "binding",
      "report_data",
      /GPU report/,
    );
    assert.ok(error, what);
  }
  const { built, options } = await attest({ gpus: 2 });
  await verifyAttestation(built.bundle, options); // unedited, the same bundle passes
});

Deno.test("models the enclave did not bind are refused: another digest, one more, one less", async () => {
  const variants = [
    [{ ...models[0], weightsDigest: new Uint8Array(32).fill(0xee) }, models[1]],
    [...models, { id: "zz/extra", weightsDigest: new Uint8Array(32) }],
    [models[0]],
  ];
  for (const list of variants) {
    const { built, options } = await attest();
    await refused(
      verifyAttestation({ ...(built.bundle as TdxBundle), models: list }, options),
      "binding",
      "report_data",
      /model/,
    );
  }
});

Deno.test("a GPU that signed another nonce is refused as stale", async () => {
  const { nonce, built, options } = await attest({ gpuNonce: undefined });
  await verifyAttestation(built.bundle, options);
  // The GPU signed the daemon's nonce itself instead of the nonce derived for this key.
  const raw = await attest({ gpuNonce: nonce });
  await refused(verifyAttestation(raw.built.bundle, raw.options), "stale", "gpu_nonce");
});

Deno.test("a GPU whose measurements are not approved is refused; the enclave's id alone is not enough", async () => {
  const { built, options } = await attest({
    gpuReport: { measurements: testGpuMeasurements().map((m, i) => i === 3 ? m.fill(0x33) : m) },
  });
  await refused(
    verifyAttestation(built.bundle, {
      ...options,
      approved: ApprovedMeasurements.fromList([built.measurementId]),
    }),
    "untrusted",
    "gpu_measurement",
    /GPU #0's measurement id/,
  );
});

Deno.test("GPU revocation: collateral required by default, a revoked device refused", async () => {
  const missing = await attest({ gpuCollateral: false });
  await refused(
    verifyAttestation(missing.built.bundle, missing.options),
    "untrusted",
    "gpu_collateral",
  );
  const allowed = await attest({ gpuCollateral: false });
  const verdict = await verifyAttestation(allowed.built.bundle, {
    ...allowed.options,
    policy: { allowMissingGpuCollateral: true },
  });
  assert.equal(verdict.gpus[0].revocation, "unchecked");
  const gpuPki = await createTestNvidiaPki({ now });
  const revoked = await attest({
    gpuPki,
    gpuCollateral: { status: { [gpuPki.device.serial]: "revoked" } },
  });
  await refused(
    verifyAttestation(revoked.built.bundle, revoked.options),
    "untrusted",
    "gpu_revocation",
  );
});

Deno.test("the verdict expires with the earliest GPU answer", async () => {
  const window = { from: plusSeconds(now, -60), to: plusSeconds(now, 600) };
  const { built, options } = await attest({ gpuCollateral: { window } });
  const verdict = await verifyAttestation(built.bundle, options);
  assert.equal(verdict.expiresAt.getTime(), window.to.getTime());
});

Deno.test("GPU evidence under a root the daemon does not trust is refused", async () => {
  const { built, options } = await attest();
  await refused(
    verifyAttestation(built.bundle, { ...options, roots: intel.roots }),
    "untrusted",
    "gpu_chain",
    /GPU #0's certificate chain cannot be checked: no trust root/,
  );
});

Deno.test("the second GPU's failure is reported as that GPU's", async () => {
  const { built, options } = await attest({ gpus: 2 });
  const bundle = built.bundle as TdxBundle;
  const otherChain = (await createTestNvidiaPki({ now })).chainPem;
  // GPU #1 presents another PKI's chain. The report data still binds the reports, so the
  // binding passes and GPU #1's own check decides.
  await refused(
    verifyAttestation(
      { ...bundle, gpus: [bundle.gpus[0], { ...bundle.gpus[1], certificateChain: otherChain }] },
      options,
    ),
    "untrusted",
    "gpu_chain",
    /GPU #1's certificate chain/,
  );
});
