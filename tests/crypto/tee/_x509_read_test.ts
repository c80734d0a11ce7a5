import assert from "node:assert/strict";
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { DerError, readNode, readRoot, readTime } from "../../../crypto/tee/_der.ts";
import { readCertificate, readCrl } from "../../../crypto/tee/_x509_read.ts";
import { parseTdxQuote, PINNED_ROOTS } from "../../../crypto/tee/mod.ts";
import {
  readVectorBytes,
  readVectorJson,
  readVectorText,
  VECTORS_DIR,
  vectorTest,
} from "../../_vectors.ts";
import { hex } from "./_helpers.ts";
import { buildTdxCollateral, createTestAmdPki, createTestIntelPki } from "./_synthetic.ts";
import { buildGpuCrl, createTestNvidiaPki } from "./_synthetic_nvidia.ts";

function derOf(pem: string): Uint8Array[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)].map(
    (match) => Uint8Array.from(atob(match[1].replace(/\s/g, "")), (c) => c.charCodeAt(0)),
  );
}

function unhex(text: string): Uint8Array {
  return Uint8Array.from(text.replace(/^0x/, "").match(/../g) ?? [], (b) => parseInt(b, 16));
}

function stripped(bytes: ArrayBuffer | Uint8Array): string {
  const view = new Uint8Array(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
  let start = 0;
  while (start < view.length - 1 && view[start] === 0) start++;
  return hex(view.subarray(start));
}

function cn(name: pkijs.RelativeDistinguishedNames): string {
  const entry = name.typesAndValues.find((value) => value.type === "2.5.4.3");
  return entry ? String((entry.value as { valueBlock: { value: unknown } }).valueBlock.value) : "";
}

/** Compares what our reader takes from a certificate with what pkijs takes. */
function sameAsPkijs(der: Uint8Array, what: string): void {
  const ours = readCertificate(der);
  const theirs = new pkijs.Certificate({ schema: asn1js.fromBER(der.slice().buffer).result });
  assert.equal(ours.serial, stripped(theirs.serialNumber.valueBlock.valueHexView), what);
  assert.deepEqual(ours.subject, new Uint8Array(theirs.subject.valueBeforeDecode), what);
  assert.deepEqual(ours.issuer, new Uint8Array(theirs.issuer.valueBeforeDecode), what);
  assert.equal(ours.subjectCn, cn(theirs.subject), what);
  assert.equal(ours.issuerCn, cn(theirs.issuer), what);
  assert.equal(ours.notBefore.getTime(), theirs.notBefore.value.getTime(), what);
  assert.equal(ours.notAfter.getTime(), theirs.notAfter.value.getTime(), what);
  assert.deepEqual(ours.tbs, new Uint8Array(theirs.tbsView), what);
  assert.deepEqual(
    ours.signature,
    new Uint8Array(theirs.signatureValue.valueBlock.valueHexView),
    what,
  );
  const key = theirs.subjectPublicKeyInfo;
  if (ours.publicKey.kind === "ec") {
    assert.deepEqual(
      ours.publicKey.point,
      new Uint8Array(key.subjectPublicKey.valueBlock.valueHexView),
    );
  } else {
    assert.deepEqual(ours.publicKey.spki, new Uint8Array(key.toSchema().toBER()), what);
  }
  const extensions = theirs.extensions ?? [];
  assert.deepEqual([...ours.extensions.keys()], extensions.map((e) => e.extnID), what);
  for (const extension of extensions) {
    const mine = ours.extensions.get(extension.extnID)!;
    assert.equal(mine.critical, extension.critical === true, `${what} ${extension.extnID}`);
    assert.deepEqual(mine.value, new Uint8Array(extension.extnValue.valueBlock.valueHexView));
  }
}

/** Compares what our reader takes from a CRL with what pkijs takes. */
function crlSameAsPkijs(der: Uint8Array, what: string): void {
  const ours = readCrl(der);
  const theirs = new pkijs.CertificateRevocationList({
    schema: asn1js.fromBER(der.slice().buffer).result,
  });
  assert.deepEqual(ours.tbs, new Uint8Array(theirs.tbsView), what);
  assert.deepEqual(ours.issuer, new Uint8Array(theirs.issuer.valueBeforeDecode), what);
  assert.equal(ours.issuerCn, cn(theirs.issuer), what);
  assert.equal(ours.thisUpdate.getTime(), theirs.thisUpdate.value.getTime(), what);
  assert.equal(ours.nextUpdate?.getTime(), theirs.nextUpdate?.value.getTime(), what);
  assert.deepEqual(
    [...ours.revoked].sort(),
    (theirs.revokedCertificates ?? []).map((entry) =>
      stripped(entry.userCertificate.valueBlock.valueHexView)
    ).sort(),
    what,
  );
  assert.deepEqual(
    ours.signature,
    new Uint8Array(theirs.signatureValue.valueBlock.valueHexView),
    what,
  );
}

vectorTest("every vector certificate and CRL reads as pkijs reads it", () => {
  let certificates = 0;
  let crls = 0;
  const certificate = (der: Uint8Array, what: string) => {
    sameAsPkijs(der, what);
    certificates++;
  };
  const roots = [
    ...PINNED_ROOTS.intel,
    ...PINNED_ROOTS.nvidia!,
    ...PINNED_ROOTS.amd.flatMap((p) => [p.ark, p.ask]),
  ];
  for (const root of roots) {
    derOf(root as string).forEach((der) => certificate(der, "a pinned root"));
  }
  for (
    const file of Deno.readDirSync(`${VECTORS_DIR}/tee/tdx`)
  ) {
    if (file.name.endsWith(".quote")) {
      const bytes = readVectorBytes(`tee/tdx/${file.name}`);
      const declared = file.name.includes("garbage") ? 4935 : bytes.length;
      derOf(parseTdxQuote(bytes.subarray(0, declared)).pckChainPem)
        .forEach((der, i) => certificate(der, `${file.name} #${i}`));
    } else {
      const json = readVectorJson<Record<string, string>>(`tee/tdx/${file.name}`);
      for (
        const chain of ["pck_crl_issuer_chain", "tcb_info_issuer_chain", "qe_identity_issuer_chain"]
      ) {
        derOf(json[chain]).forEach((der, i) => certificate(der, `${file.name} ${chain} #${i}`));
      }
      for (const field of ["root_ca_crl", "pck_crl"]) {
        crlSameAsPkijs(unhex(json[field]), `${file.name} ${field}`);
        crls++;
      }
    }
  }
  certificate(readVectorBytes("tee/snp/milan-debug.vcek.der"), "the Milan VCEK");
  for (const product of ["milan", "genoa", "turin"]) {
    derOf(readVectorText(`tee/snp/ask-ark-${product}.pem`)).forEach((der) =>
      certificate(der, product)
    );
  }
  for (
    const file of Deno.readDirSync(
      new URL("../../../../shared/vectors/tee/nvidia/", import.meta.url),
    )
  ) {
    const text = readVectorText(`tee/nvidia/${file.name}`);
    derOf(text).forEach((der, i) => certificate(der, `${file.name} #${i}`));
  }
  assert.ok(certificates > 60, `${certificates} certificates`);
  assert.ok(crls >= 6, `${crls} CRLs`);
});

Deno.test("synthetic certificates and CRLs of every test PKI read as pkijs reads them", async () => {
  const now = new Date("2026-11-22T12:00:00Z");
  const intel = await createTestIntelPki({ now });
  for (const cert of [intel.root, intel.pckCa, intel.pckLeaf, intel.tcbSigning]) {
    sameAsPkijs(cert.der, "intel");
  }
  const collateral = await buildTdxCollateral(intel, { now, revokePck: ["0102aa", "7f"] });
  crlSameAsPkijs(collateral.pckCrl, "the synthetic PCK CRL");
  crlSameAsPkijs(collateral.rootCaCrl, "the synthetic root CRL");
  const amd = await createTestAmdPki({ now });
  for (const cert of [amd.ark, amd.ask, amd.vcek]) sameAsPkijs(cert.der, "amd");
  const nvidia = await createTestNvidiaPki({ now });
  for (
    const cert of [
      nvidia.root,
      nvidia.identity,
      nvidia.provisioner,
      nvidia.device,
      nvidia.leaf,
      nvidia.responder,
    ]
  ) {
    sameAsPkijs(cert.der, "nvidia");
  }
  crlSameAsPkijs(
    await buildGpuCrl(nvidia.provisioner, "Test NVIDIA GH100 Provisioner ICA 1", {
      now,
      revoked: [nvidia.device.serial],
    }),
    "the synthetic GPU CRL",
  );
});

Deno.test("the DER reader refuses what DER forbids", () => {
  const cases: [string, number[]][] = [
    ["an indefinite length", [0x30, 0x80, 0x00, 0x00]],
    ["a non-minimal long length", [0x04, 0x81, 0x01, 0xaa]],
    ["a length with a leading zero", [0x04, 0x82, 0x00, 0x81, ...Array(0x81).fill(0)]],
    ["a multi-byte tag", [0x1f, 0x81, 0x01, 0x00]],
    ["content past the end", [0x04, 0x05, 0x01]],
    ["trailing bytes", [0x05, 0x00, 0x00]],
    ["a cut header", [0x30]],
  ];
  for (const [what, bytes] of cases) {
    assert.throws(() => readRoot(Uint8Array.from(bytes)), DerError, what);
  }
  // A child that overruns its parent, with the parent's length shorter than the data.
  assert.throws(
    () => readCertificate(Uint8Array.from([0x30, 0x03, 0x30, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00])),
    DerError,
  );
  assert.equal(readNode(Uint8Array.of(0x04, 0x81, 0x80, ...Array(0x80).fill(0)), 0).end, 131);
});

Deno.test("times are read only in their DER forms", () => {
  const time = (tag: number, text: string) => {
    const bytes = Uint8Array.of(tag, text.length, ...new TextEncoder().encode(text));
    return readTime(readRoot(bytes), "a time");
  };
  assert.equal(time(0x17, "491231235959Z").toISOString(), "2049-12-31T23:59:59.000Z");
  assert.equal(time(0x17, "500101000000Z").toISOString(), "1950-01-01T00:00:00.000Z");
  assert.equal(time(0x18, "99991231235959Z").toISOString(), "9999-12-31T23:59:59.000Z");
  assert.equal(time(0x18, "20261127003756.059Z").toISOString(), "2026-11-27T00:37:56.059Z");
  for (
    const [tag, text] of [
      [0x17, "4912312359Z"],
      [0x17, "491231235959+0100"],
      [0x18, "20250231000000Z"],
      [0x18, "20250101000000.50Z"],
      [0x18, "20250101000000.Z"],
      [0x17, "250101000000.5Z"],
      [0x18, "250101000000Z"],
    ] as const
  ) {
    assert.throws(() => time(tag, text), DerError, text);
  }
});
