import assert from "node:assert/strict";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { endorseKey } from "../../../crypto/endorsement.ts";
import { FORMAT_VERIFIERS, formatVerifier } from "../../../crypto/tee/_format_verifiers.ts";
import {
  ApprovedMeasurements,
  type AttestationBundle,
  attestationBundleFromJson,
  attestationReportData,
  NonceBook,
  parseTdxQuote,
  type TdxBundle,
  tdxCollateralFromJson,
  tdxMeasurementId,
  verifyAttestation,
  type VerifyAttestationOptions,
} from "../../../crypto/tee/mod.ts";
import { readVectorBytes, readVectorText, vectorTest } from "../../_vectors.ts";
import { plusSeconds, refused } from "./_helpers.ts";
import {
  createTestAmdPki,
  createTestIntelPki,
  type TestAmdPki,
  type TestIntelPki,
} from "./_synthetic.ts";
import {
  buildSnpBundle,
  buildTdxBundle,
  type TdxBundleOptions,
  TEST_KEY_CONFIG,
} from "./_synthetic_bundle.ts";

const now = new Date("2026-11-22T12:00:00Z");
const nowSeconds = Math.floor(now.getTime() / 1000);

let intel: TestIntelPki | undefined;
let amd: TestAmdPki | undefined;

/** A daemon's view: a nonce book, the issued nonce, a provider's bundle, the options. */
async function tdx(overrides: Omit<Partial<TdxBundleOptions>, "now"> = {}, at = now) {
  const nonces = new NonceBook();
  const nonce = nonces.issue(at);
  const built = await buildTdxBundle({
    nonce,
    now: at,
    pki: intel ??= await createTestIntelPki({ now }),
    ...overrides,
  });
  const options: VerifyAttestationOptions = {
    nonce,
    nonces,
    now: at,
    roots: built.roots,
    approved: ApprovedMeasurements.fromList(built.approvedIds),
  };
  return { nonces, nonce, built, options };
}

Deno.test("success: a synthetic TDX v4 and v5 bundle yields the verdict", async () => {
  for (const version of [4, 5] as const) {
    const { built, options } = await tdx({ version });
    // Through JSON, as the daemon receives it.
    const bundle = attestationBundleFromJson(JSON.parse(JSON.stringify(built.json)));
    const verdict = await verifyAttestation(bundle, options);
    assert.equal(verdict.format, "tdx");
    assert.equal(verdict.measurementId, built.measurementId);
    assert.equal(verdict.tcbStatus, "UpToDate");
    assert.deepEqual(verdict.advisoryIds, []);
    assert.equal(verdict.servingKey, built.servingKey.address.toLowerCase());
    assert.deepEqual(verdict.keyConfig, TEST_KEY_CONFIG);
    assert.equal(verdict.endorsementExpiresAt.getTime(), (nowSeconds + 3600) * 1000);
    assert.equal(verdict.expiresAt.getTime(), (nowSeconds + 3600) * 1000);
  }
});

Deno.test("wrong nonce: a bundle answering another nonce is stale", async () => {
  const { built, options } = await tdx({ bundleNonce: new Uint8Array(32).fill(9) });
  await refused(
    verifyAttestation(built.bundle, options),
    "stale",
    "nonce",
    /not the one just issued/,
  );
  // A complete bundle for another nonce (its quote and endorsement bind that nonce) too.
  const other = await tdx();
  await refused(verifyAttestation(other.built.bundle, options), "stale", "nonce");
});

Deno.test("replayed nonce: the second use is stale, even after a failed first use", async () => {
  const { built, options } = await tdx();
  await verifyAttestation(built.bundle, options);
  await refused(verifyAttestation(built.bundle, options), "stale", "nonce_reused", /already used/);
  const failing = await tdx();
  const denied = {
    ...failing.options,
    approved: ApprovedMeasurements.fromList(["0x" + "00".repeat(32)]),
  };
  await refused(verifyAttestation(failing.built.bundle, denied), "untrusted", "measurement");
  await refused(verifyAttestation(failing.built.bundle, failing.options), "stale", "nonce_reused");
});

Deno.test("a nonce the daemon never issued, or issued too long ago, is stale", async () => {
  const { built, options } = await tdx();
  await refused(
    verifyAttestation(built.bundle, { ...options, nonces: new NonceBook() }),
    "stale",
    "nonce_unknown",
  );
  const late = await tdx();
  await refused(
    verifyAttestation(late.built.bundle, { ...late.options, now: plusSeconds(now, 61) }),
    "stale",
    "nonce_expired",
  );
  const inTime = await tdx();
  await verifyAttestation(inTime.built.bundle, { ...inTime.options, now: plusSeconds(now, 60) });
});

Deno.test("wrong serving key: report data binds another key", async () => {
  const { built, options } = await tdx();
  const impostor = privateKeyToAccount(generatePrivateKey());
  const endorsement = await endorseKey(impostor, {
    keyConfig: TEST_KEY_CONFIG,
    expiresAt: nowSeconds + 3600,
    nonce: options.nonce,
  });
  const bundle: TdxBundle = {
    ...built.bundle,
    servingPublicKey: Uint8Array.from(
      impostor.publicKey.slice(2).match(/../g)!.map((b) => parseInt(b, 16)),
    ),
    endorsement,
  };
  await refused(verifyAttestation(bundle, options), "binding", "report_data", /does not bind/);
});

Deno.test("a serving public key that is not a curve point is malformed", async () => {
  const bogus = new Uint8Array(65).fill(7);
  bogus[0] = 4;
  const nonces = new NonceBook();
  const nonce = nonces.issue(now);
  const built = await buildTdxBundle({
    nonce,
    now,
    pki: intel ??= await createTestIntelPki({ now }),
    reportData: attestationReportData(nonce, bogus, { gpuReports: [], models: [] }),
    gpus: 0,
  });
  await refused(
    verifyAttestation({ ...built.bundle, servingPublicKey: bogus }, {
      nonce,
      nonces,
      now,
      roots: built.roots,
      approved: ApprovedMeasurements.fromList(built.approvedIds),
    }),
    "malformed",
    "serving_key",
  );
});

Deno.test("measurement not approved, or nothing approved at all", async () => {
  const { built, options } = await tdx({ mrTd: new Uint8Array(48).fill(0x66) });
  const others = ApprovedMeasurements.fromList(["0x" + "01".repeat(32), "0x" + "02".repeat(32)]);
  await refused(
    verifyAttestation(built.bundle, { ...options, approved: others }),
    "untrusted",
    "measurement",
    /is not in the approved set \(2 approved\)/,
  );
  const empty = await tdx();
  await refused(
    verifyAttestation(empty.built.bundle, {
      ...empty.options,
      approved: ApprovedMeasurements.fromList([]),
    }),
    "untrusted",
    "approved_set",
    /no enclave measurement is approved/,
  );
});

Deno.test("debug TD and non-Intel QE vendor are refused by the quote checks", async () => {
  const debug = await tdx({ tdAttributes: (1n << 28n) | 1n });
  await refused(
    verifyAttestation(debug.built.bundle, debug.options),
    "untrusted",
    "td_policy",
    /debuggable/,
  );
  const vendor = await tdx({ qeVendorId: new Uint8Array(16).fill(0xee) });
  await refused(verifyAttestation(vendor.built.bundle, vendor.options), "untrusted", "qe_vendor");
});

Deno.test("HPKE key endorsed by another key, for another nonce, or expired", async () => {
  const stranger = privateKeyToAccount(generatePrivateKey());
  const signer = await tdx({ endorsementSigner: stranger });
  await refused(
    verifyAttestation(signer.built.bundle, signer.options),
    "binding",
    "endorsement_signer",
    new RegExp(`signed by ${stranger.address.toLowerCase()}`),
  );
  const nonce = await tdx({ endorsementNonce: new Uint8Array(32).fill(3) });
  await refused(
    verifyAttestation(nonce.built.bundle, nonce.options),
    "binding",
    "endorsement_nonce",
  );
  const unbound = await tdx({ endorsementNonce: null });
  await refused(
    verifyAttestation(unbound.built.bundle, unbound.options),
    "binding",
    "endorsement_nonce",
  );
  const expired = await tdx({ endorsementExpiresAt: nowSeconds });
  await refused(
    verifyAttestation(expired.built.bundle, expired.options),
    "stale",
    "endorsement_expired",
  );
  const long = await tdx({ endorsementExpiresAt: nowSeconds + 8 * 86400 });
  await refused(verifyAttestation(long.built.bundle, long.options), "untrusted", "endorsement");
  const allowed = await tdx({ endorsementExpiresAt: nowSeconds + 8 * 86400 });
  await verifyAttestation(allowed.built.bundle, {
    ...allowed.options,
    maxEndorsementLifetimeSeconds: 9 * 86400,
  });
});

Deno.test("a mock bundle is always refused as mock", async () => {
  const { options } = await tdx();
  await refused(verifyAttestation({ format: "mock" }, options), "mock", "format");
  await refused(
    verifyAttestation(attestationBundleFromJson({ format: "mock", quote: "0x00" }), options),
    "mock",
    "format",
  );
});

Deno.test("formats: one verifier per hardware format, mock and unknown formats refused", async () => {
  assert.deepEqual(Object.keys(FORMAT_VERIFIERS).sort(), ["sev-snp", "tdx"]);
  assert.ok(Object.isFrozen(FORMAT_VERIFIERS));
  assert.equal(formatVerifier("mock"), undefined);
  const { built, options } = await tdx();
  // A format without a verifier is refused before the nonce is consumed, whatever it carries,
  // including names an object inherits.
  for (const format of ["sgx", "TDX", "constructor", "__proto__", "toString", ""]) {
    assert.equal(formatVerifier(format), undefined, format);
    const bundle = { ...built.bundle, format } as unknown as AttestationBundle;
    await refused(
      verifyAttestation(bundle, options),
      "malformed",
      "format",
      new RegExp(`format ${JSON.stringify(format)} is not known \\(known: tdx, sev-snp`),
    );
  }
  assert.equal(options.nonces.consume(options.nonce, now), "ok");
});

Deno.test("the test root is trusted only when passed as roots", async () => {
  const { built, options } = await tdx();
  const { roots: _, ...pinned } = options;
  await refused(verifyAttestation(built.bundle, pinned), "untrusted", "pck_chain", /pinned root/);
});

Deno.test("collateral policy: required by default, TCB statuses by policy", async () => {
  const bare = await tdx({ collateral: false });
  await refused(
    verifyAttestation(bare.built.bundle, bare.options),
    "untrusted",
    "collateral",
    /no collateral/,
  );
  const allowed = await tdx({ collateral: false });
  const verdict = await verifyAttestation(allowed.built.bundle, {
    ...allowed.options,
    policy: { allowMissingCollateral: true },
  });
  assert.equal(verdict.tcbStatus, "unknown");
  assert.deepEqual(verdict.advisoryIds, []);

  const old = await tdx({
    collateral: { tcbStatus: "OutOfDate", advisoryIds: ["INTEL-SA-00960"] },
  });
  await refused(
    verifyAttestation(old.built.bundle, old.options),
    "untrusted",
    "tcb_status",
    /OutOfDate \(INTEL-SA-00960\), and the policy accepts only UpToDate, SWHardeningNeeded/,
  );
  const accepted = await tdx({
    collateral: { tcbStatus: "OutOfDate", advisoryIds: ["INTEL-SA-00960"] },
  });
  const lenient = await verifyAttestation(accepted.built.bundle, {
    ...accepted.options,
    policy: { acceptTcbStatuses: ["OutOfDate"] },
  });
  assert.equal(lenient.tcbStatus, "OutOfDate");
  assert.deepEqual(lenient.advisoryIds, ["INTEL-SA-00960"]);
  const hardening = await tdx({ collateral: { tcbStatus: "SWHardeningNeeded" } });
  assert.equal(
    (await verifyAttestation(hardening.built.bundle, hardening.options)).tcbStatus,
    "SWHardeningNeeded",
  );
  const config = await tdx({ collateral: { tcbStatus: "ConfigurationNeeded" } });
  await refused(verifyAttestation(config.built.bundle, config.options), "untrusted", "tcb_status");
  const revoked = await tdx({ collateral: { tcbStatus: "Revoked" } });
  await refused(
    verifyAttestation(revoked.built.bundle, {
      ...revoked.options,
      policy: { acceptTcbStatuses: ["OutOfDate", "ConfigurationNeeded"] },
    }),
    "untrusted",
    "tcb_status",
    /Revoked/,
  );
});

// Attack: a provider whose platform the latest TCB recovery marks OutOfDate fetches freshly
// signed collateral for an older TCB evaluation data number (Intel PCS keeps serving them),
// in which its platform is still UpToDate. Only a policy minimum refuses that.
Deno.test("collateral policy: a minimum TCB evaluation data number refuses older collateral", async () => {
  const cases: [string, { tcbInfo?: number; qeIdentity?: number }, string | null][] = [
    ["both at the minimum", { tcbInfo: 18, qeIdentity: 18 }, null],
    ["newer than the minimum", { tcbInfo: 19, qeIdentity: 20 }, null],
    ["older TCB info", { tcbInfo: 17, qeIdentity: 18 }, "17 (TCB info) and 18 (QE identity)"],
    ["older QE identity", { tcbInfo: 18, qeIdentity: 17 }, "18 (TCB info) and 17 (QE identity)"],
  ];
  for (const [label, evaluationDataNumbers, refusal] of cases) {
    const { built, options } = await tdx({ collateral: { evaluationDataNumbers } });
    const run = verifyAttestation(built.bundle, {
      ...options,
      policy: { minTcbEvaluationDataNumber: 18 },
    });
    if (refusal === null) {
      assert.equal((await run).tcbStatus, "UpToDate", label);
      continue;
    }
    const error = await refused(run, "stale", "collateral", /policy requires 18 or later/);
    assert.ok(error.message.includes(refusal), `${label}: ${error.message}`);
  }
  // Without a minimum (the default) every number is accepted.
  const old = await tdx({ collateral: { evaluationDataNumbers: { tcbInfo: 1, qeIdentity: 1 } } });
  assert.equal((await verifyAttestation(old.built.bundle, old.options)).tcbStatus, "UpToDate");
  // A minimum cannot be met without collateral, even where the policy allows crypto-only.
  const bare = await tdx({ collateral: false });
  await refused(
    verifyAttestation(bare.built.bundle, {
      ...bare.options,
      policy: { allowMissingCollateral: true, minTcbEvaluationDataNumber: 18 },
    }),
    "untrusted",
    "collateral",
    /requires TCB evaluation data number 18 or later/,
  );
});

Deno.test("stale collateral is refused as stale; the verdict expires with the collateral", async () => {
  const later = plusSeconds(now, 30 * 86400);
  const nonces = new NonceBook();
  const nonce = nonces.issue(later);
  const built = await buildTdxBundle({
    nonce,
    now,
    pki: intel ??= await createTestIntelPki({ now }),
  });
  const endorsement = await endorseKey(built.servingKey, {
    keyConfig: TEST_KEY_CONFIG,
    expiresAt: Math.floor(later.getTime() / 1000) + 600,
    nonce,
  });
  await refused(
    verifyAttestation({ ...built.bundle, endorsement }, {
      nonce,
      nonces,
      now: later,
      roots: built.roots,
      approved: ApprovedMeasurements.fromList(built.approvedIds),
    }),
    "stale",
    "collateral",
  );
  const soon = plusSeconds(now, 600);
  const short = await tdx({
    collateral: { windows: { tcbInfo: { from: plusSeconds(now, -60), to: soon } } },
  });
  const verdict = await verifyAttestation(short.built.bundle, short.options);
  assert.equal(verdict.expiresAt.getTime(), soon.getTime());
});

Deno.test("SEV-SNP: success, debug guest, unapproved measurement, minimum TCB", async () => {
  const pki = amd ??= await createTestAmdPki({ now });
  const run = async (overrides: Partial<Parameters<typeof buildSnpBundle>[0]> = {}) => {
    const nonces = new NonceBook();
    const nonce = nonces.issue(now);
    const built = await buildSnpBundle({ nonce, now, pki, ...overrides });
    const options: VerifyAttestationOptions = {
      nonce,
      nonces,
      now,
      roots: built.roots,
      approved: ApprovedMeasurements.fromList(built.approvedIds),
    };
    return { built, options };
  };
  const ok = await run();
  const verdict = await verifyAttestation(
    attestationBundleFromJson(JSON.parse(JSON.stringify(ok.built.json))),
    ok.options,
  );
  assert.equal(verdict.format, "sev-snp");
  assert.equal(verdict.tcbStatus, "unknown");
  assert.equal(verdict.measurementId, ok.built.measurementId);
  assert.equal(verdict.servingKey, ok.built.servingKey.address.toLowerCase());

  const debug = await run({ policy: 0x30000n | (1n << 19n) });
  await refused(verifyAttestation(debug.built.bundle, debug.options), "untrusted", "guest_policy");
  const unapproved = await run({ measurement: new Uint8Array(48).fill(1) });
  await refused(
    verifyAttestation(unapproved.built.bundle, {
      ...unapproved.options,
      approved: ApprovedMeasurements.fromList(["0x" + "ff".repeat(32)]),
    }),
    "untrusted",
    "measurement",
  );
  const minimum = await run();
  await refused(
    verifyAttestation(minimum.built.bundle, {
      ...minimum.options,
      policy: { snpMinimumTcb: { snp: 9 } },
    }),
    "untrusted",
    "tcb_status",
    /snp SPL is 8/,
  );
  const enough = await run();
  await verifyAttestation(enough.built.bundle, {
    ...enough.options,
    policy: { snpMinimumTcb: { snp: 8 } },
  });
  const foreign = await run();
  await refused(
    verifyAttestation(foreign.built.bundle, { ...foreign.options, roots: intel?.roots }),
    "untrusted",
    "vcek_chain",
  );
});

vectorTest(
  "a real quote with valid collateral passes every hardware check and stops at the binding",
  async () => {
    const quote = readVectorBytes("tee/tdx/phala-v4.quote");
    const collateral = tdxCollateralFromJson(
      JSON.parse(readVectorText("tee/tdx/phala-v4.collateral.json")),
    );
    const at = new Date("2025-07-04T00:00:00Z");
    const nonces = new NonceBook();
    const nonce = nonces.issue(at);
    const serving = privateKeyToAccount(generatePrivateKey());
    const endorsement = await endorseKey(serving, {
      keyConfig: TEST_KEY_CONFIG,
      expiresAt: Math.floor(at.getTime() / 1000) + 600,
      nonce,
    });
    const bundle: TdxBundle = {
      format: "tdx",
      nonce,
      servingPublicKey: Uint8Array.from(
        serving.publicKey.slice(2).match(/../g)!.map((b) => parseInt(b, 16)),
      ),
      quote,
      collateral,
      endorsement,
      gpus: [],
      gpuCollateral: null,
      models: [],
    };
    await refused(
      verifyAttestation(bundle, {
        nonce,
        nonces,
        now: at,
        approved: ApprovedMeasurements.fromList([tdxMeasurementId(parseTdxQuote(quote).body)]),
      }),
      "binding",
      "report_data",
    );
  },
);

Deno.test("programming errors in the options are TypeErrors", async () => {
  const { built, options } = await tdx();
  await assert.rejects(
    verifyAttestation(built.bundle, { ...options, now: new Date(NaN) }),
    TypeError,
  );
  await assert.rejects(
    verifyAttestation(built.bundle, { ...options, nonce: new Uint8Array(3) }),
    TypeError,
  );
  await assert.rejects(
    verifyAttestation(built.bundle, { ...options, nonces: {} as NonceBook }),
    TypeError,
  );
  await assert.rejects(
    verifyAttestation(built.bundle, {
      ...options,
      policy: { acceptTcbStatuses: ["Revoked" as "OutOfDate"] },
    }),
    TypeError,
  );
});

// The TEE tier's own option passes straight through: `maxEndorsementLifetimeSeconds: NaN`
// accepts an HPKE key endorsed for ten years, contrary to "no option disables a check".
Deno.test("verifyAttestation refuses a NaN endorsement lifetime cap", async () => {
  const { built, options, nonces, nonce } = await tdx({
    endorsementExpiresAt: nowSeconds + 10 * 365 * 86400,
  });
  for (const bad of [Number.NaN, Infinity, 0, -1, 1.5]) {
    await assert.rejects(
      verifyAttestation(built.bundle, { ...options, maxEndorsementLifetimeSeconds: bad }),
      (e: unknown) => e instanceof RangeError && /maxEndorsementLifetimeSeconds/.test(e.message),
      `a ten-year HPKE key endorsement was accepted with a cap of ${bad}`,
    );
  }
  // Refused before anything was consumed: the nonce is still good for a correct call.
  assert.equal(nonces.consume(nonce, now), "ok");
});
