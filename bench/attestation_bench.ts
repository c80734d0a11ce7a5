/**
 * Time per TEE verification, with ratios against `@phala/dcap-qvl` on the same quote in the
 * same run (`deno bench -A bench/attestation_bench.ts`).
 *
 * Our verifier memoizes parsed certificates and CRLs and successful signature checks by their
 * exact bytes (`crypto/tee/_memo.ts`). "Cold" runs empty those tables before every iteration
 * (outside the timed part): that is the fair comparison with dcap-qvl, which keeps nothing.
 * "Warm" runs verify a fresh quote of a platform already seen, as a daemon does on every
 * request after the first: the chain and collateral are known, the quote is new.
 *
 * Groups:
 *
 * - `tdx-real`: the Phala v4 vector with its collateral at 2025-07-04 (UpToDate), dcap-qvl as
 *   baseline; ours with collateral and crypto-only, cold.
 * - `tdx-fresh-quote`: synthetic quotes under a test root, a new quote every iteration;
 *   dcap-qvl (with the test root) as baseline; ours warm.
 * - `snp`: the Milan vector (a debug guest: the policy, checked last, refuses it after every
 *   signature passed). dcap-qvl has no SEV-SNP support: the baseline is the bare P-384 check
 *   of the same report (WebCrypto, key already imported).
 * - `gpu`: the real H100 report with its chain (crypto only), and synthetic GPU evidence with
 *   its OCSP answer, both cold. No reference library verifies NVIDIA evidence offline: the
 *   baseline is the bare P-384 check of the real report's signature (key already imported).
 * - `tee-tier-cold`: the whole TEE-tier verdict, cold — a synthetic TDX quote with collateral,
 *   one GPU with its OCSP answer, the binding and the endorsement (`verifyAttestation`) —
 *   against dcap-qvl verifying the same quote and collateral (CPU only). Goal: ≤ 50 ms.
 * - `tier`: `verifyAttestation` on fresh synthetic bundles (one GPU each) against
 *   `verifyTdxQuote` on the same quotes, warm: the cost of the GPU, nonce, binding,
 *   measurement and endorsement checks once the platform's chains are known.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { QuoteVerifier } from "@phala/dcap-qvl";
import {
  ApprovedMeasurements,
  AttestationError,
  NonceBook,
  parseGpuReport,
  parseSnpReport,
  type TdxBundle,
  tdxCollateralFromJson,
  tdxCollateralToJson,
  verifyAttestation,
  verifyGpuEvidence,
  verifySnpReport,
  verifyTdxQuote,
} from "../crypto/mod.ts";
import { clearMemos } from "../crypto/tee/_memo.ts";
import { readVectorBytes, readVectorText, vectorsAvailable } from "../tests/_vectors.ts";
import {
  buildTdxCollateral,
  buildTdxQuote,
  createTestIntelPki,
} from "../tests/crypto/tee/_synthetic.ts";
import { buildTdxBundle } from "../tests/crypto/tee/_synthetic_bundle.ts";
import {
  buildGpuCollateral,
  buildGpuEvidence,
  createTestNvidiaPki,
} from "../tests/crypto/tee/_synthetic_nvidia.ts";

const FRESH = 24; // iterations of the fresh-quote benchmarks (each needs its own quote)

if (!vectorsAvailable()) {
  console.log("SKIPPED: tdx-real and snp need ../shared/vectors (see tests/_vectors.ts)");
} else {
  const quote = readVectorBytes("tee/tdx/phala-v4.quote");
  const collateralJson = JSON.parse(readVectorText("tee/tdx/phala-v4.collateral.json"));
  const collateral = tdxCollateralFromJson(collateralJson);
  const at = new Date("2025-07-04T00:00:00Z");
  const qvl = QuoteVerifier.newProd();
  const quoteBuffer = Buffer.from(quote);
  const theirs = qvl.verify(quoteBuffer, collateralJson, at.getTime() / 1000);
  const ours = await verifyTdxQuote(quote, { now: at, collateral });
  if (theirs.status !== ours.tcb?.status) throw new Error("dcap-qvl and we disagree");

  Deno.bench({
    name: "dcap-qvl verify, with collateral",
    group: "tdx-real",
    baseline: true,
    fn: () => {
      qvl.verify(quoteBuffer, collateralJson, at.getTime() / 1000);
    },
  });
  Deno.bench({
    name: "verifyTdxQuote, with collateral, cold",
    group: "tdx-real",
    fn: async (b) => {
      clearMemos();
      b.start();
      await verifyTdxQuote(quote, { now: at, collateral });
      b.end();
    },
  });
  Deno.bench({
    name: "verifyTdxQuote, crypto only, cold",
    group: "tdx-real",
    fn: async (b) => {
      clearMemos();
      b.start();
      await verifyTdxQuote(quote, { now: at });
      b.end();
    },
  });

  const report = readVectorBytes("tee/snp/milan-debug.report");
  const vcek = readVectorBytes("tee/snp/milan-debug.vcek.der");
  const snpAt = new Date("2026-01-01T00:00:00Z");
  const parsed = parseSnpReport(report);
  // The VCEK's P-384 point: the 97 bytes after the SPKI's fixed prefix.
  const prefix = "3076301006072a8648ce3d020106052b81040022036200";
  const vcekHex = Buffer.from(vcek).toString("hex");
  const point = Buffer.from(
    vcekHex.slice(vcekHex.indexOf(prefix) + prefix.length).slice(0, 194),
    "hex",
  );
  // The bare check, with the same WebCrypto verifier the library uses (key already imported).
  const vcekKey = await crypto.subtle.importKey(
    "raw",
    point,
    { name: "ECDSA", namedCurve: "P-384" },
    false,
    ["verify"],
  );
  const bareSnp = () =>
    crypto.subtle.verify(
      { name: "ECDSA", hash: "SHA-384" },
      vcekKey,
      parsed.signature as Uint8Array<ArrayBuffer>,
      parsed.signedRegion as Uint8Array<ArrayBuffer>,
    );
  if (!await bareSnp()) throw new Error("SEV-SNP baseline does not verify");
  const snp = async () => {
    try {
      await verifySnpReport(report, { vcek, now: snpAt });
    } catch (error) {
      if (!(error instanceof AttestationError) || error.check !== "guest_policy") throw error;
    }
  };
  Deno.bench({
    name: "P-384 report signature only",
    group: "snp",
    baseline: true,
    fn: async () => {
      await bareSnp();
    },
  });
  Deno.bench({
    name: "verifySnpReport, cold",
    group: "snp",
    fn: async (b) => {
      clearMemos();
      b.start();
      await snp();
      b.end();
    },
  });
  Deno.bench({ name: "verifySnpReport, warm (same report)", group: "snp", fn: snp });

  if (tdxCollateralToJson(collateral).tcb_info !== collateralJson.tcb_info) {
    throw new Error("collateral does not round-trip");
  }

  // The real H100 report and chain; the baseline is its bare signature check.
  const hexBytes = (text: string) =>
    Uint8Array.from(text.trim().match(/../g) ?? [], (b) => parseInt(b, 16));
  const gpuEvidence = {
    report: hexBytes(readVectorText("tee/nvidia/hopperAttestationReport.txt")),
    certificateChain: readVectorText("tee/nvidia/hopper_cert_chain_case1.txt"),
  };
  const gpuNonce = hexBytes("931d8dd0add203ac3d8b4fbde75e115278eefcdceac5b87671a748f32364dfcb");
  const gpuAt = new Date("2026-06-01T00:00:00Z");
  const gpuReport = parseGpuReport(gpuEvidence.report);
  const leafPem = gpuEvidence.certificateChain.split("-----END CERTIFICATE-----")[0];
  const leafDer = Uint8Array.from(
    atob(leafPem.replace("-----BEGIN CERTIFICATE-----", "").replace(/\s/g, "")),
    (c) => c.charCodeAt(0),
  );
  const leafHex = Buffer.from(leafDer).toString("hex");
  const leafPoint = Buffer.from(
    leafHex.slice(leafHex.indexOf(prefix) + prefix.length).slice(0, 194),
    "hex",
  );
  const leafKey = await crypto.subtle.importKey(
    "raw",
    leafPoint,
    { name: "ECDSA", namedCurve: "P-384" },
    false,
    ["verify"],
  );
  const bareGpu = () =>
    crypto.subtle.verify(
      { name: "ECDSA", hash: "SHA-384" },
      leafKey,
      gpuReport.signature as Uint8Array<ArrayBuffer>,
      gpuReport.signedRegion as Uint8Array<ArrayBuffer>,
    );
  if (!await bareGpu()) throw new Error("GPU baseline does not verify");
  Deno.bench({
    name: "P-384 report signature only (real H100)",
    group: "gpu",
    baseline: true,
    fn: async () => {
      await bareGpu();
    },
  });
  Deno.bench({
    name: "verifyGpuEvidence, real H100, crypto only, cold",
    group: "gpu",
    fn: async (b) => {
      clearMemos();
      b.start();
      await verifyGpuEvidence(gpuEvidence, {
        nonce: gpuNonce,
        now: gpuAt,
        allowMissingCollateral: true,
      });
      b.end();
    },
  });
}

// Synthetic: one platform, a fresh quote per iteration.
const now = new Date("2026-11-22T12:00:00Z");
const pki = await createTestIntelPki({ now });
const gpuPki = await createTestNvidiaPki({ now });

// Synthetic GPU evidence with its OCSP answer, cold.
{
  const nonce = new Uint8Array(32).fill(7);
  const evidence = await buildGpuEvidence(gpuPki, { nonce });
  const collateral = await buildGpuCollateral(gpuPki, { now });
  Deno.bench({
    name: "verifyGpuEvidence, synthetic, with OCSP, cold",
    group: "gpu",
    fn: async (b) => {
      clearMemos();
      b.start();
      await verifyGpuEvidence(evidence, { nonce, now, roots: gpuPki.roots, collateral });
      b.end();
    },
  });
}

// The whole TEE-tier verdict, cold: CPU quote and collateral, one GPU and its OCSP answer,
// binding, measurements, endorsement; dcap-qvl verifying the same quote and collateral.
{
  const nonce = new Uint8Array(32).fill(3);
  const built = await buildTdxBundle({ nonce, now, pki, gpuPki });
  const bundle = built.bundle as TdxBundle;
  const quoteJson = tdxCollateralToJson(bundle.collateral!);
  const referenceQvl = QuoteVerifier.newWithRootCa(Buffer.from(pki.root.der));
  const quoteBuffer = Buffer.from(bundle.quote);
  const approvedIds = ApprovedMeasurements.fromList(built.approvedIds);
  const verdict = () => {
    const nonces = new NonceBook({ random: () => nonce.slice() });
    nonces.issue(now);
    return verifyAttestation(bundle, {
      nonce,
      nonces,
      now,
      roots: built.roots,
      approved: approvedIds,
    });
  };
  await verdict();
  Deno.bench({
    name: "dcap-qvl verify, same quote + collateral (CPU only)",
    group: "tee-tier-cold",
    baseline: true,
    fn: () => {
      referenceQvl.verify(quoteBuffer, quoteJson, now.getTime() / 1000);
    },
  });
  Deno.bench({
    name: "verifyTdxQuote, same quote + collateral, cold",
    group: "tee-tier-cold",
    fn: async (b) => {
      clearMemos();
      b.start();
      await verifyTdxQuote(bundle.quote, {
        now,
        roots: built.roots,
        collateral: bundle.collateral,
      });
      b.end();
    },
  });
  Deno.bench({
    name: "verifyAttestation: CPU + one GPU + binding, cold",
    group: "tee-tier-cold",
    fn: async (b) => {
      clearMemos();
      b.start();
      await verdict();
      b.end();
    },
  });
}
const collateral = await buildTdxCollateral(pki, { now });
const collateralJson = tdxCollateralToJson(collateral);
const testQvl = QuoteVerifier.newWithRootCa(Buffer.from(pki.root.der));
const quotes = await Promise.all(
  Array.from(
    { length: FRESH + 2 },
    (_, i) => buildTdxQuote(pki, { reportData: new Uint8Array(64).fill(i) }),
  ),
);
await verifyTdxQuote(quotes[FRESH + 1], { now, roots: pki.roots, collateral }); // warms the memo
let q1 = 0;
let q2 = 0;
Deno.bench({
  name: "dcap-qvl verify, fresh quote",
  group: "tdx-fresh-quote",
  baseline: true,
  n: FRESH,
  warmup: 0,
  fn: () => {
    testQvl.verify(Buffer.from(quotes[q1++ % FRESH]), collateralJson, now.getTime() / 1000);
  },
});
Deno.bench({
  name: "verifyTdxQuote, fresh quote, warm platform",
  group: "tdx-fresh-quote",
  n: FRESH,
  warmup: 0,
  fn: async () => {
    await verifyTdxQuote(quotes[q2++ % FRESH], { now, roots: pki.roots, collateral });
  },
});

// The tier's function on fresh bundles of the same platform.
// Two pools, so that neither benchmark finds the other's quotes in the memo.
const pool = (offset: number) =>
  Promise.all(
    Array.from({ length: FRESH + 1 }, async (_, i) => {
      const nonce = new Uint8Array(32).fill(offset + i);
      return { nonce, ...(await buildTdxBundle({ nonce, now, pki, gpuPki })) };
    }),
  );
const quotePool = await pool(1);
const bundlePool = await pool(101);
const approved = ApprovedMeasurements.fromList(bundlePool[0].approvedIds);
let t1 = 0;
let t2 = 0;
Deno.bench({
  name: "verifyTdxQuote of the bundle's quote",
  group: "tier",
  baseline: true,
  n: FRESH,
  warmup: 0,
  fn: async () => {
    const { bundle, roots } = quotePool[t1++ % FRESH];
    await verifyTdxQuote(bundle.quote, { now, roots, collateral: bundle.collateral });
  },
});
Deno.bench({
  name: "verifyAttestation of the bundle",
  group: "tier",
  n: FRESH,
  warmup: 0,
  fn: async () => {
    const { bundle, roots, nonce } = bundlePool[t2++ % FRESH];
    const nonces = new NonceBook({ random: () => nonce.slice() });
    nonces.issue(now);
    await verifyAttestation(bundle, { nonce, nonces, now, roots, approved });
  },
});
