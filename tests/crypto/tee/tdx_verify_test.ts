import assert from "node:assert/strict";
import {
  AttestationError,
  parseTdxQuote,
  PINNED_ROOTS,
  verifyTdxQuote,
} from "../../../crypto/tee/mod.ts";
import { readVectorBytes, readVectorJson, vectorTest } from "../../_vectors.ts";
import { flipBit, type Manifest, plusSeconds, refused } from "./_helpers.ts";
import { buildTdxQuote, createTestIntelPki, type TestIntelPki } from "./_synthetic.ts";

const now = new Date("2026-11-22T12:00:00Z");

function cases() {
  return readVectorJson<Manifest>("tee/manifest.json").cases.filter((c) => c.kind === "tdx");
}

vectorTest(
  "every TDX vector verifies cryptographically at crypto_now, as the manifest says",
  async () => {
    for (const c of cases()) {
      let bytes = readVectorBytes(`tee/${c.file}`);
      if (c.tail === "nonzero") {
        await refused(
          verifyTdxQuote(bytes, { now: new Date(c.crypto_now) }),
          "malformed",
          "quote",
          /trailing data/,
        );
        bytes = bytes.subarray(0, c.declared_length); // "signatures ok" within the declared length
      }
      const run = verifyTdxQuote(bytes, { now: new Date(c.crypto_now) });
      if (/MRSERVICETD/.test(c.policy)) {
        // Every signature passed; the TD policy (checked last) refuses the service TD.
        await refused(run, "untrusted", "td_policy", /MRSERVICETD/);
      } else if (/SEPT_VE_DISABLE/.test(c.note ?? "")) {
        await refused(run, "untrusted", "td_policy", /SEPT_VE_DISABLE/);
      } else {
        const result = await run;
        assert.equal(result.tcb, null, `${c.file}: no collateral, no TCB status`);
        assert.equal(result.quote.header.version, c.version);
      }
    }
  },
);

vectorTest("a flipped bit in any signed or certified part of a real quote is refused", async () => {
  for (const file of ["tdx/phala-v4.quote", "tdx/google-v5-td15.quote"]) {
    const original = parseTdxQuote(readVectorBytes(`tee/${file}`));
    const bytes = original.raw.slice();
    const options = { now: new Date("2026-06-01T00:00:00Z") };
    await verifyTdxQuote(bytes, options); // the unmodified quote passes
    const offsetOf = (part: Uint8Array) => part.byteOffset - original.raw.byteOffset;
    const regions: [string, number, number, number][] = [
      // [name, start, length, stride]
      ["header and body (signed region)", 0, original.signedRegion.length, 37],
      ["quote signature", offsetOf(original.signature), 64, 13],
      ["attestation key", offsetOf(original.attestationKey), 64, 13],
      ["QE report", offsetOf(original.qeReport.raw), 384, 29],
      ["QE report signature", offsetOf(original.qeReportSignature), 64, 13],
      ["QE auth data", offsetOf(original.qeAuthData), original.qeAuthData.length, 7],
    ];
    for (const [name, start, length, stride] of regions) {
      for (let i = 0; i < length; i += stride) {
        const error = await verifyTdxQuote(flipBit(bytes, start + i, i % 8), options).then(
          () => null,
          (e) => e,
        );
        assert.ok(error instanceof AttestationError, `${file} ${name} +${i}: accepted`);
        assert.notEqual(error.reason, "stale", `${file} ${name} +${i}: ${error.message}`);
      }
    }
    // The PEM chain: one flip inside each certificate's base64 body.
    const pemStart = bytes.length - new TextEncoder().encode(original.pckChainPem).length -
      (bytes[bytes.length - 1] === 0 ? 1 : 0);
    const blocks = [...original.pckChainPem.matchAll(/-----BEGIN CERTIFICATE-----\n/g)];
    for (const block of blocks) {
      for (const delta of [40, 400]) {
        const at = pemStart + block.index! + block[0].length + delta;
        const flipped = bytes.slice();
        // Swap to another base64 letter so that the PEM still decodes, then also a raw flip.
        flipped[at] = flipped[at] === 0x41 ? 0x42 : 0x41;
        for (const candidate of [flipped, flipBit(bytes, at, 0)]) {
          const error = await verifyTdxQuote(candidate, options).then(() => null, (e) => e);
          assert.ok(error instanceof AttestationError, `${file} PEM @${at}: accepted`);
          assert.equal(error.check, "pck_chain", error.message);
        }
      }
    }
  }
});

vectorTest("the PCK chain's validity window is enforced to the second", async () => {
  const bytes = readVectorBytes("tee/tdx/phala-v4.quote");
  const from = "2025-02-06T23:25:51Z"; // PCK leaf notBefore (latest in the chain)
  const to = "2032-02-06T23:25:51Z"; // PCK leaf notAfter (earliest in the chain)
  await verifyTdxQuote(bytes, { now: new Date(from) });
  await verifyTdxQuote(bytes, { now: new Date(to) });
  await refused(
    verifyTdxQuote(bytes, { now: plusSeconds(from, -1) }),
    "stale",
    "pck_chain",
    /SGX PCK Certificate/,
  );
  await refused(verifyTdxQuote(bytes, { now: plusSeconds(to, 1) }), "stale", "pck_chain");
});

vectorTest("real quotes do not verify under another root", async () => {
  const pki = await createTestIntelPki({ now });
  const bytes = readVectorBytes("tee/tdx/phala-v4.quote");
  await refused(
    verifyTdxQuote(bytes, { now: new Date("2026-06-01T00:00:00Z"), roots: pki.roots }),
    "untrusted",
    "pck_chain",
    /does not chain to a pinned root/,
  );
});

// --- Synthetic quotes: every refusal of the quote-level checks ------------------------------

let shared: TestIntelPki | undefined;
async function pki(): Promise<TestIntelPki> {
  return shared ??= await createTestIntelPki({ now });
}
const reportData = new Uint8Array(64).fill(0xab);

Deno.test("a synthetic quote verifies under its test root and not under the pinned root", async () => {
  const test = await pki();
  for (const version of [4, 5] as const) {
    const quote = await buildTdxQuote(test, { reportData, version });
    const result = await verifyTdxQuote(quote, { now, roots: test.roots });
    assert.deepEqual(result.quote.body.reportData, reportData);
    assert.equal(result.tcb, null);
    assert.deepEqual(result.platform.fmspc, test.platform.fmspc);
    await refused(verifyTdxQuote(quote, { now }), "untrusted", "pck_chain");
    await refused(verifyTdxQuote(quote, { now, roots: PINNED_ROOTS }), "untrusted", "pck_chain");
  }
});

Deno.test("quote-level checks refuse each broken synthetic quote with its own check", async () => {
  const test = await pki();
  const roots = test.roots;
  const table: [string, Parameters<typeof buildTdxQuote>[1], string, RegExp][] = [
    [
      "non-Intel QE vendor",
      { reportData, qeVendorId: new Uint8Array(16).fill(1) },
      "qe_vendor",
      /vendor id/,
    ],
    ["debug TD", { reportData, tdAttributes: (1n << 28n) | 1n }, "td_policy", /debuggable/],
    [
      "reserved TD attribute",
      { reportData, tdAttributes: (1n << 28n) | (1n << 5n) },
      "td_policy",
      /reserved/,
    ],
    [
      "migratable TD",
      { reportData, tdAttributes: (1n << 28n) | (1n << 29n) },
      "td_policy",
      /reserved/,
    ],
    ["no SEPT_VE_DISABLE", { reportData, tdAttributes: 0n }, "td_policy", /SEPT_VE_DISABLE/],
    [
      "SEAMATTRIBUTES",
      { reportData, seamAttributes: Uint8Array.of(1, 0, 0, 0, 0, 0, 0, 0) },
      "td_policy",
      /SEAMATTRIBUTES/,
    ],
    [
      "MRSIGNERSEAM",
      { reportData, mrSignerSeam: new Uint8Array(48).fill(9) },
      "td_policy",
      /MRSIGNERSEAM/,
    ],
    [
      "MRSERVICETD",
      { reportData, version: 5, mrServiceTd: new Uint8Array(48).fill(3) },
      "td_policy",
      /MRSERVICETD/,
    ],
    // Host-chosen values the measurement id does not cover (MRCONFIGID is where a host would
    // put a configuration the TD reads; MROWNER an owner identity it trusts).
    ...(["mrConfigId", "mrOwner", "mrOwnerConfig"] as const).map((field) =>
      [
        field,
        { reportData, hostValues: { [field]: new Uint8Array(48).fill(0x5a) } },
        "td_policy",
        new RegExp(`${field.toUpperCase()} is 5a5a.*expected zero`),
      ] as [string, Parameters<typeof buildTdxQuote>[1], string, RegExp]
    ),
    [
      "MRCONFIGID, one bit",
      {
        reportData,
        hostValues: { mrConfigId: Uint8Array.from({ length: 48 }, (_, i) => i === 47 ? 1 : 0) },
      },
      "td_policy",
      /MRCONFIGID/,
    ],
    [
      "foreign QE",
      { reportData, qeMrSigner: new Uint8Array(32).fill(7) },
      "qe_identity",
      /MRSIGNER/,
    ],
    ["debug QE", { reportData, qeAttributes0: 0x13 }, "qe_identity", /debug/],
    // Another Intel enclave (the SGX QE is ISVPRODID 1) signed by the same MRSIGNER.
    [
      "QE ISVPRODID 1",
      { reportData, qeIsvProdId: 1 },
      "qe_identity",
      /the QE ISVPRODID is 1, expected 2/,
    ],
    [
      "QE ISVPRODID 0x0102",
      { reportData, qeIsvProdId: 0x0102 },
      "qe_identity",
      /the QE ISVPRODID is 258, expected 2/,
    ],
  ];
  for (const [label, options, check, message] of table) {
    const quote = await buildTdxQuote(test, options);
    await refused(verifyTdxQuote(quote, { now, roots }), "untrusted", check as never, message)
      .catch((e) => {
        throw new Error(`${label}: ${e.message}`);
      });
  }
  // A permitted combination (PKS, KL, PERFMON) passes.
  const allowed = await buildTdxQuote(test, {
    reportData,
    tdAttributes: (1n << 28n) | (1n << 30n) | (1n << 31n) | (1n << 63n),
  });
  await verifyTdxQuote(allowed, { now, roots });
});

Deno.test("a quote signed by another attestation key than the QE certified is refused", async () => {
  const test = await pki();
  const quote = parseTdxQuote(await buildTdxQuote(test, { reportData }));
  const other = parseTdxQuote(await buildTdxQuote(test, { reportData }));
  // Graft the other quote's signature: the attestation key and QE report stay consistent.
  const bytes = quote.raw.slice();
  bytes.set(other.signature, quote.signature.byteOffset - quote.raw.byteOffset);
  await refused(verifyTdxQuote(bytes, { now, roots: test.roots }), "untrusted", "quote_signature");
  // Graft the other attestation key: the QE report no longer binds it.
  const swapped = quote.raw.slice();
  swapped.set(other.attestationKey, quote.attestationKey.byteOffset - quote.raw.byteOffset);
  await refused(verifyTdxQuote(swapped, { now, roots: test.roots }), "untrusted", "qe_report_data");
});

Deno.test("a chain that is not a CA path is refused", async () => {
  const test = await pki();
  // Present leaf → root directly: the leaf's issuer is not the root.
  const [leaf, , root] = test.pckChainPem.split(/(?<=-----END CERTIFICATE-----\n)/);
  const broken: TestIntelPki = { ...test, pckChainPem: leaf + root };
  const quote = await buildTdxQuote(broken, { reportData });
  await refused(
    verifyTdxQuote(quote, { now, roots: test.roots }),
    "untrusted",
    "pck_chain",
    /not signed by the pinned root/,
  );
  // Garbage instead of PEM.
  const garbage: TestIntelPki = { ...test, pckChainPem: "not a certificate" };
  await refused(
    verifyTdxQuote(await buildTdxQuote(garbage, { reportData }), { now, roots: test.roots }),
    "malformed",
    "pck_chain",
  );
});
