import assert from "node:assert/strict";
import {
  AttestationError,
  type GpuCollateral,
  gpuCollateralFromJson,
  gpuCollateralToJson,
  verifyGpuEvidence,
} from "../../../../crypto/tee/mod.ts";
import { plusSeconds, refused } from "../_helpers.ts";
import {
  buildGpuCollateral,
  buildGpuCrl,
  buildGpuEvidence,
  buildGpuOcsp,
  createTestNvidiaPki,
  requiredSubjects,
} from "../_synthetic_nvidia.ts";

const now = new Date("2026-11-22T12:00:00Z");
const pki = await createTestNvidiaPki({ now });
const nonce = new Uint8Array(32).fill(4);
const evidence = await buildGpuEvidence(pki, { nonce });
const verify = (collateral: GpuCollateral, at = now) =>
  verifyGpuEvidence(evidence, { nonce, now: at, roots: pki.roots, collateral });

Deno.test("the JSON form round-trips and refuses what it does not know", async () => {
  const collateral = await buildGpuCollateral(pki, { now });
  const json = gpuCollateralToJson(collateral);
  assert.ok(json.ocsp[0].startsWith("0x"));
  assert.deepEqual(gpuCollateralFromJson(JSON.parse(JSON.stringify(json))), collateral);
  const bad: [unknown, RegExp][] = [
    [null, /must be an object/],
    [[], /must be an object/],
    [{ ocsp: [], crls: [], extra: 1 }, /unknown field "extra"/],
    [{ ocsp: "0x00", crls: [] }, /"ocsp" must be an array/],
    [{ ocsp: ["zz"], crls: [] }, /"ocsp" item 0 must be non-empty hex/],
    [{ ocsp: [], crls: [""] }, /"crls" item 0/],
    [{ ocsp: Array(33).fill("0x00"), crls: [] }, /33 items, at most 32/],
  ];
  for (const [value, message] of bad) {
    assert.throws(
      () => gpuCollateralFromJson(value),
      (e) =>
        e instanceof AttestationError && e.check === "gpu_collateral" && message.test(e.message),
      JSON.stringify(value)?.slice(0, 40),
    );
  }
});

Deno.test("answers are valid exactly within their window", async () => {
  const window = { from: new Date(now.getTime() - 60_000), to: new Date(now.getTime() + 60_000) };
  const collateral = { ocsp: [await buildGpuOcsp(pki, { now, window })], crls: [] };
  await verify(collateral, window.from);
  await verify(collateral, window.to);
  await refused(
    verify(collateral, plusSeconds(window.to, 1)),
    "stale",
    "gpu_collateral",
    /valid from/,
  );
  await refused(verify(collateral, plusSeconds(window.from, -1)), "stale", "gpu_collateral");
});

Deno.test("a revoked or unknown certificate is refused", async () => {
  for (const status of ["revoked", "unknown"] as const) {
    for (const { cert } of requiredSubjects(pki)) {
      const ocsp = await buildGpuOcsp(pki, { now, status: { [cert.serial]: status } });
      await refused(
        verify({ ocsp: [ocsp], crls: [] }),
        "untrusted",
        "gpu_revocation",
        new RegExp(`serial ${cert.serial}\\) is ${status}`),
      );
    }
  }
  // An answer for the attestation key certificate itself is not required, but counts.
  const leafRevoked = await buildGpuOcsp(pki, {
    now,
    subjects: [...requiredSubjects(pki), { cert: pki.leaf, issuer: pki.device }],
    status: { [pki.leaf.serial]: "revoked" },
  });
  await refused(verify({ ocsp: [leafRevoked], crls: [] }), "untrusted", "gpu_revocation");
});

Deno.test("a certificate without an answer is refused", async () => {
  const [device, provisioner] = requiredSubjects(pki);
  const partial = await buildGpuOcsp(pki, { now, subjects: [device, provisioner] });
  await refused(
    verify({ ocsp: [partial], crls: [] }),
    "untrusted",
    "gpu_collateral",
    /no OCSP answer or CRL for "Test NVIDIA GH100 Identity"/,
  );
  await refused(verify({ ocsp: [], crls: [] }), "untrusted", "gpu_collateral", /no OCSP answer/);
});

Deno.test("OCSP answers must be signed by the issuer or an NVIDIA-rooted responder", async () => {
  // The issuer may answer for its own certificates.
  const byIssuer = await Promise.all(
    requiredSubjects(pki).map(({ cert, issuer }) =>
      buildGpuOcsp(pki, { now, subjects: [{ cert, issuer }], signer: issuer })
    ),
  );
  await verify({ ocsp: byIssuer, crls: [] });
  // A certificate of the chain that is neither the issuer nor a responder may not.
  const byLeaf = await buildGpuOcsp(pki, { now, signer: pki.leaf });
  await refused(verify({ ocsp: [byLeaf], crls: [] }), "untrusted", "gpu_collateral", /responder/);
  // A responder of another PKI (same names, other keys) does not chain to the root.
  const other = await createTestNvidiaPki({ now });
  const foreign = await buildGpuOcsp(other, { now, subjects: requiredSubjects(pki) });
  await refused(verify({ ocsp: [foreign], crls: [] }), "untrusted", "gpu_collateral");
});

Deno.test("a flipped bit in a signed OCSP answer is refused", async () => {
  const ocsp = await buildGpuOcsp(pki, { now });
  await verify({ ocsp: [ocsp], crls: [] });
  let refusedCount = 0;
  for (let i = 0; i < ocsp.length; i++) {
    const flipped = ocsp.slice();
    flipped[i] ^= 1 << (i % 8);
    const error = await verify({ ocsp: [flipped], crls: [] }).then(() => null, (e) => e);
    assert.ok(error instanceof AttestationError, `byte ${i}: accepted`);
    refusedCount++;
  }
  assert.equal(refusedCount, ocsp.length);
});

Deno.test("an OCSP answer without nextUpdate is refused: its freshness cannot be judged", async () => {
  const ocsp = await buildGpuOcsp(pki, { now, noNextUpdate: true });
  await refused(verify({ ocsp: [ocsp], crls: [] }), "malformed", "gpu_collateral", /nextUpdate/);
});

Deno.test("CRLs of the issuers answer too; a revoking or forged CRL is refused", async () => {
  const crls = await Promise.all([
    buildGpuCrl(pki.provisioner, "Test NVIDIA GH100 Provisioner ICA 1", { now }),
    buildGpuCrl(pki.identity, "Test NVIDIA GH100 Identity", { now }),
    buildGpuCrl(pki.root, "Test NVIDIA Device Identity CA", { now }),
  ]);
  const verified = await verify({ ocsp: [], crls });
  assert.equal(verified.revocation, "checked");
  const revoking = await buildGpuCrl(pki.provisioner, "Test NVIDIA GH100 Provisioner ICA 1", {
    now,
    revoked: [pki.device.serial],
  });
  await refused(
    verify({ ocsp: [], crls: [revoking, crls[1], crls[2]] }),
    "untrusted",
    "gpu_revocation",
    /"Test GH100 A01 GSP BROM" .* is revoked/,
  );
  // A CRL in the provisioner's name signed by another key.
  const forged = await buildGpuCrl(pki.device, "Test NVIDIA GH100 Provisioner ICA 1", { now });
  await refused(
    verify({ ocsp: [], crls: [forged, crls[1], crls[2]] }),
    "untrusted",
    "gpu_collateral",
    /bad signature/,
  );
  const old = await buildGpuCrl(pki.provisioner, "Test NVIDIA GH100 Provisioner ICA 1", {
    now,
    window: { from: new Date(now.getTime() - 20_000), to: new Date(now.getTime() - 10_000) },
  });
  await refused(verify({ ocsp: [], crls: [old, crls[1], crls[2]] }), "stale", "gpu_collateral");
});

Deno.test("collateral that is not OCSP or a CRL is refused as malformed", async () => {
  await refused(
    verify({ ocsp: [Uint8Array.of(0x30, 0x03, 0x0a, 0x01, 0x01)], crls: [] }),
    "malformed",
    "gpu_collateral",
    /not a valid OCSP response/,
  );
  await refused(
    verify({ ocsp: [], crls: [Uint8Array.of(0x30, 0x00)] }),
    "malformed",
    "gpu_collateral",
  );
});
