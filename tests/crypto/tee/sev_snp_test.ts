import assert from "node:assert/strict";
import {
  AttestationError,
  parseSnpReport,
  QuoteParseError,
  snpMeasurementId,
  verifySnpReport,
} from "../../../crypto/tee/mod.ts";
import { readVectorBytes, readVectorJson, vectorTest } from "../../_vectors.ts";
import { flipBit, hex, type Manifest, plusSeconds, refused } from "./_helpers.ts";
import { buildSnpReport, createTestAmdPki, type TestAmdPki } from "./_synthetic.ts";

const now = new Date("2026-11-22T12:00:00Z");

function snpCase() {
  const c = readVectorJson<Manifest>("tee/manifest.json").cases.find((c) => c.kind === "sev-snp")!;
  return { c, report: readVectorBytes(`tee/${c.file}`), vcek: readVectorBytes(`tee/${c.vcek}`) };
}

vectorTest("the SEV-SNP vector parses to the documented facts", () => {
  const { c, report } = snpCase();
  const parsed = parseSnpReport(report);
  assert.equal(parsed.version, 2);
  assert.equal(parsed.signatureAlgorithm, 1);
  assert.ok(hex(parsed.reportData).startsWith(c.report_data_prefix!));
  assert.equal(parsed.policy & (1n << 19n), 1n << 19n, "DEBUG is set in this vector");
  assert.equal(parsed.signature.length, 96);
  assert.equal(snpMeasurementId(parsed.measurement).length, 66);
});

vectorTest(
  "the SEV-SNP vector's chain and signature verify; its debug policy is refused",
  async () => {
    const { c, report, vcek } = snpCase();
    // At crypto_now the chain (pinned Milan ARK → ASK → VCEK) and the report signature pass;
    // the guest policy, checked last, refuses the debuggable guest.
    await refused(
      verifySnpReport(report, { vcek, now: new Date(c.crypto_now) }),
      "untrusted",
      "guest_policy",
      /DEBUG/,
    );
    // At 2030-01-01 the chain is outside its validity.
    await refused(
      verifySnpReport(report, { vcek, now: new Date("2030-01-01T00:00:00Z") }),
      "stale",
      "vcek_chain",
    );
  },
);

vectorTest("the VCEK's validity window is enforced to the second", async () => {
  const { report, vcek } = snpCase();
  const from = "2022-09-24T00:55:28Z";
  const to = "2029-09-24T00:55:28Z";
  for (const at of [new Date(from), new Date(to)]) {
    await refused(verifySnpReport(report, { vcek, now: at }), "untrusted", "guest_policy");
  }
  for (const at of [plusSeconds(from, -1), plusSeconds(to, 1)]) {
    await refused(verifySnpReport(report, { vcek, now: at }), "stale", "vcek_chain", /SEV-VCEK/);
  }
});

vectorTest("a flipped bit in the SEV-SNP report or VCEK is refused", async () => {
  const { report, vcek } = snpCase();
  const options = { now: new Date("2026-01-01T00:00:00Z") };
  for (let at = 0; at < 0x2a0 + 144; at += 23) {
    const error = await verifySnpReport(flipBit(report, at, at % 8), { ...options, vcek }).then(
      () => null,
      (e) => e,
    );
    assert.ok(error instanceof AttestationError, `report byte ${at}: accepted`);
    // Only a flip that clears the DEBUG bit could get past the policy; it breaks the signature.
    assert.notEqual(error.check, "guest_policy", `report byte ${at}: ${error.message}`);
  }
  for (let at = 4; at < vcek.length; at += 97) {
    const error = await verifySnpReport(report, { ...options, vcek: flipBit(vcek, at) }).then(
      () => null,
      (e) => e,
    );
    assert.ok(error instanceof AttestationError, `VCEK byte ${at}: accepted`);
    assert.notEqual(error.check, "guest_policy", `VCEK byte ${at}: ${error.message}`);
  }
});

// --- Synthetic reports under a test ARK -----------------------------------------------------

let shared: TestAmdPki | undefined;
async function pki(): Promise<TestAmdPki> {
  return shared ??= await createTestAmdPki({ now });
}
const reportData = new Uint8Array(64).fill(0x77);

Deno.test("a synthetic SEV-SNP report verifies under its test ARK and not under the pinned ARKs", async () => {
  const test = await pki();
  const report = await buildSnpReport(test, { reportData });
  const result = await verifySnpReport(report, { vcek: test.vcek.der, now, roots: test.roots });
  assert.equal(result.product, "Milan");
  assert.deepEqual(result.report.reportData, reportData);
  assert.deepEqual(result.tcb, { bootloader: 3, tee: 0, snp: 8, microcode: 115, fmc: null });
  await refused(verifySnpReport(report, { vcek: test.vcek.der, now }), "untrusted", "vcek_chain");
});

Deno.test("SEV-SNP checks refuse each broken synthetic report with its own check", async () => {
  const test = await pki();
  const roots = test.roots;
  const table: [string, Parameters<typeof buildSnpReport>[1], string, RegExp][] = [
    ["debug guest", { reportData, policy: 0x30000n | (1n << 19n) }, "guest_policy", /DEBUG/],
    ["reserved bit 17 clear", { reportData, policy: 0x10000n }, "guest_policy", /bit 17/],
    [
      "reported TCB above the VCEK's",
      {
        reportData,
        reportedTcb: Uint8Array.of(3, 0, 0, 0, 0, 0, 9, 115),
      },
      "vcek_tcb",
      /snp SPL 9/,
    ],
    ["another chip", { reportData, chipId: new Uint8Array(64).fill(2) }, "vcek_tcb", /CHIP_ID/],
  ];
  for (const [label, options, check, message] of table) {
    const report = await buildSnpReport(test, options);
    await refused(
      verifySnpReport(report, { vcek: test.vcek.der, now, roots }),
      "untrusted",
      check as never,
      message,
    ).catch((e) => {
      throw new Error(`${label}: ${e.message}`);
    });
  }
  // A report signed by a VCEK of another (test) ARK.
  const other = await createTestAmdPki({ now });
  const foreign = await buildSnpReport(other, { reportData });
  await refused(
    verifySnpReport(foreign, { vcek: other.vcek.der, now, roots }),
    "untrusted",
    "vcek_chain",
  );
  // The right report with another VCEK of the same ARK name but another key.
  const good = await buildSnpReport(test, { reportData });
  await refused(
    verifySnpReport(good, { vcek: other.vcek.der, now, roots }),
    "untrusted",
    "vcek_chain",
  );
  // Signature algorithm other than 1.
  const algo = good.slice();
  new DataView(algo.buffer).setUint32(0x34, 2, true);
  await refused(
    verifySnpReport(algo, { vcek: test.vcek.der, now, roots }),
    "untrusted",
    "report_signature",
  );
  // Garbage VCEK.
  await refused(
    verifySnpReport(good, { vcek: new Uint8Array(100), now, roots }),
    "malformed",
    "vcek_chain",
  );
});

Deno.test("fuzz: SEV-SNP parsing throws only QuoteParseError", () => {
  for (let i = 0; i < 300; i++) {
    const length = i % 3 === 0 ? 1184 : Math.floor(Math.random() * 2400);
    const bytes = crypto.getRandomValues(new Uint8Array(length));
    try {
      parseSnpReport(bytes);
    } catch (error) {
      assert.ok(error instanceof QuoteParseError, String(error));
    }
  }
  assert.throws(() => parseSnpReport(new Uint8Array(1183)), QuoteParseError);
  assert.throws(() => parseSnpReport(new Uint8Array(1184)), /version 0/);
});
