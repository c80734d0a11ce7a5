import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { QuoteVerifier } from "@phala/dcap-qvl";
import { verifyTdxCollateral } from "../../../crypto/tee/collateral.ts";
import {
  AttestationError,
  type TdxCollateral,
  tdxCollateralFromJson,
  tdxCollateralToJson,
  verifyTdxQuote,
} from "../../../crypto/tee/mod.ts";
import { readVectorBytes, readVectorJson, readVectorText, vectorTest } from "../../_vectors.ts";
import { type Manifest, plusSeconds, refused } from "./_helpers.ts";
import {
  buildTdxCollateral,
  buildTdxQuote,
  createTestIntelPki,
  type TestIntelPki,
  type TestPkiValidity,
  type Window,
} from "./_synthetic.ts";

const REAL_NOW = new Date("2026-11-22T12:00:00Z");

function collateralCases() {
  return readVectorJson<Manifest>("tee/manifest.json").cases.filter((c) => c.collateral);
}

function vectorCollateral(file: string): TdxCollateral {
  return tdxCollateralFromJson(JSON.parse(readVectorText(`tee/${file}`)));
}

/** Runs @phala/dcap-qvl: the status, or "no matching TCB level", or its error message. */
function oracle(quote: Uint8Array, collateral: TdxCollateral, now: Date, rootDer?: Uint8Array) {
  const verifier = rootDer
    ? QuoteVerifier.newWithRootCa(Buffer.from(rootDer))
    : QuoteVerifier.newProd();
  try {
    const report = verifier.verify(quote, tdxCollateralToJson(collateral), now.getTime() / 1000);
    return { status: report.status as string, advisoryIds: report.advisory_ids as string[] };
  } catch (error) {
    const message = (error as Error).message;
    return {
      status: /No matching TCB level/.test(message) ? "NotSupported" : message,
      advisoryIds: [],
    };
  }
}

/** Runs our verifier: the status, or "NotSupported"/"Revoked" when it refuses on the TCB. */
async function ours(
  quote: Uint8Array,
  collateral: TdxCollateral,
  now: Date,
  roots?: TestIntelPki["roots"],
) {
  try {
    const result = await verifyTdxQuote(quote, { now, collateral, ...(roots ? { roots } : {}) });
    return { status: result.tcb!.status as string, advisoryIds: [...result.tcb!.advisoryIds] };
  } catch (error) {
    if (error instanceof AttestationError && error.check === "tcb_status") {
      return {
        status: /no matching TCB level/.test(error.message)
          ? "NotSupported"
          : /Revoked/.test(error.message)
          ? "Revoked"
          : error.message,
        advisoryIds: [],
      };
    }
    throw error;
  }
}

vectorTest("each vector's collateral gives the manifest's TCB status and advisories", async () => {
  for (const c of collateralCases()) {
    const quote = readVectorBytes(`tee/${c.file}`);
    const collateral = vectorCollateral(c.collateral!);
    const at = new Date(c.collateral_now!);
    if (c.tcb_status === "no matching TCB level") {
      await refused(
        verifyTdxQuote(quote, { now: at, collateral }),
        "untrusted",
        "tcb_status",
        /no matching TCB level/,
      );
      continue;
    }
    const result = await verifyTdxQuote(quote, { now: at, collateral });
    assert.equal(result.tcb?.status, c.tcb_status, c.file);
    // Both real collateral sets of mid-2025 reflect TCB recovery 17.
    assert.deepEqual(result.evaluationDataNumbers, { tcbInfo: 17, qeIdentity: 17 }, c.file);
    assert.deepEqual([...result.tcb!.advisoryIds].sort(), [...c.advisory_ids!].sort(), c.file);
    assert.ok(result.validUntil > at);
  }
});

vectorTest(
  "at the real current date (2026-11-22) every vector's collateral is refused as expired",
  async () => {
    for (const c of collateralCases()) {
      const error = await refused(
        verifyTdxQuote(readVectorBytes(`tee/${c.file}`), {
          now: REAL_NOW,
          collateral: vectorCollateral(c.collateral!),
        }),
        "stale",
        "collateral",
      );
      assert.match(error.message, /now is 2026-11-22T12:00:00\.000Z/);
    }
  },
);

vectorTest("the collateral's validity windows are enforced to the second", async () => {
  // [file, collateral, latest start (item), earliest end (item)], read off the collateral with
  // openssl and the JSON texts.
  const windows: [string, string, string, string, string, string][] = [
    [
      "tdx/phala-v4.quote",
      "tdx/phala-v4.collateral.json",
      "2025-06-19T10:32:27Z",
      "QE identity",
      "2025-07-19T10:00:35Z",
      "PCK CRL",
    ],
    [
      "tdx/gcp-cos113-v4-padded.quote",
      "tdx/gcp-cos113-v4-padded.collateral.json",
      "2025-06-19T10:00:35Z",
      "PCK CRL",
      "2025-07-04T09:40:18Z",
      "QE identity",
    ],
  ];
  for (const [file, collateralFile, from, fromItem, to, toItem] of windows) {
    const quote = readVectorBytes(`tee/${file}`);
    const collateral = vectorCollateral(collateralFile);
    await verifyTdxQuote(quote, { now: new Date(from), collateral });
    await verifyTdxQuote(quote, { now: new Date(to), collateral });
    await refused(
      verifyTdxQuote(quote, { now: plusSeconds(from, -1), collateral }),
      "stale",
      "collateral",
      new RegExp(fromItem),
    );
    await refused(
      verifyTdxQuote(quote, { now: plusSeconds(to, 1), collateral }),
      "stale",
      "collateral",
      new RegExp(toItem),
    );
  }
});

vectorTest("collateral for another platform is refused (FMSPC)", async () => {
  const quote = readVectorBytes("tee/tdx/gcp-cos113-v4-padded.quote");
  await refused(
    verifyTdxQuote(quote, {
      now: new Date("2025-07-04T00:00:00Z"),
      collateral: vectorCollateral("tdx/phala-v4.collateral.json"),
    }),
    "untrusted",
    "collateral",
    /FMSPC b0c06f000000/,
  );
});

vectorTest("tampered collateral is refused: raw bytes, signatures, CRLs, chains", async () => {
  const quote = readVectorBytes("tee/tdx/phala-v4.quote");
  const now = new Date("2025-07-04T00:00:00Z");
  const good = vectorCollateral("tdx/phala-v4.collateral.json");
  const flip = (bytes: Uint8Array, at: number) => {
    const copy = bytes.slice();
    copy[at] ^= 1;
    return copy;
  };
  const variants: [string, TdxCollateral][] = [
    ["TCB info re-serialized", {
      ...good,
      tcbInfo: JSON.stringify(JSON.parse(good.tcbInfo), null, 1),
    }],
    ["TCB info status edited", {
      ...good,
      tcbInfo: good.tcbInfo.replace('"OutOfDate"', '"UpToDate"'),
    }],
    ["QE identity edited", {
      ...good,
      qeIdentity: good.qeIdentity.replace('"isvsvn":4', '"isvsvn":1'),
    }],
    ["TCB info signature", { ...good, tcbInfoSignature: flip(good.tcbInfoSignature, 10) }],
    ["QE identity signature", { ...good, qeIdentitySignature: flip(good.qeIdentitySignature, 40) }],
    ["PCK CRL", { ...good, pckCrl: flip(good.pckCrl, good.pckCrl.length - 20) }],
    ["root CA CRL", { ...good, rootCaCrl: flip(good.rootCaCrl, good.rootCaCrl.length - 20) }],
    ["PCK CRL body", { ...good, pckCrl: flip(good.pckCrl, 200) }],
    ["TCB issuer chain", {
      ...good,
      tcbInfoIssuerChain: good.tcbInfoIssuerChain.replace("MIIC", "MIID"),
    }],
    ["TCB chain without root", {
      ...good,
      tcbInfoIssuerChain: good.qeIdentityIssuerChain.split(/(?<=-----END CERTIFICATE-----)/)[1],
    }],
    ["QE identity signed as TCB info", {
      ...good,
      qeIdentity: good.tcbInfo,
      qeIdentitySignature: good.tcbInfoSignature,
    }],
  ];
  for (const [label, collateral] of variants) {
    const error = await verifyTdxQuote(quote, { now, collateral }).then(() => null, (e) => e);
    assert.ok(error instanceof AttestationError, `${label}: accepted`);
    assert.ok(["untrusted", "malformed"].includes(error.reason), `${label}: ${error.message}`);
  }
  // The vector's own collateral still passes (the table above changed only copies).
  await verifyTdxQuote(quote, { now, collateral: good });
});

vectorTest(
  "differential: @phala/dcap-qvl gives the same TCB status for the vectors with collateral",
  async () => {
    for (const c of collateralCases()) {
      const quote = readVectorBytes(`tee/${c.file}`);
      const collateral = vectorCollateral(c.collateral!);
      const at = new Date(c.collateral_now!);
      const theirs = oracle(quote, collateral, at);
      const mine = await ours(quote, collateral, at);
      assert.equal(mine.status, theirs.status, c.file);
      assert.deepEqual(mine.advisoryIds.sort(), theirs.advisoryIds.sort(), c.file);
      // Both refuse the same collateral at the real current date.
      assert.match(oracle(quote, collateral, REAL_NOW).status, /expired|Expired/);
    }
  },
);

// --- Synthetic collateral -------------------------------------------------------------------

const now = new Date("2026-11-22T12:00:00Z");
const reportData = new Uint8Array(64).fill(0x5c);
let shared: { pki: TestIntelPki; quote: Uint8Array } | undefined;
async function fixture() {
  if (!shared) {
    const pki = await createTestIntelPki({ now });
    shared = { pki, quote: await buildTdxQuote(pki, { reportData }) };
  }
  return shared;
}

Deno.test("synthetic collateral verifies, and every item's window is enforced to the second", async () => {
  const { pki, quote } = await fixture();
  const collateral = await buildTdxCollateral(pki, { now });
  const ok = await verifyTdxQuote(quote, { now, roots: pki.roots, collateral });
  assert.equal(ok.tcb?.status, "UpToDate");

  const narrow: Window = { from: plusSeconds(now, -3600), to: plusSeconds(now, 3600) };
  for (
    const [item, label] of [
      ["tcbInfo", "TCB info"],
      ["qeIdentity", "QE identity"],
      ["pckCrl", "PCK CRL"],
      ["rootCrl", "root CA CRL"],
    ] as const
  ) {
    const built = await buildTdxCollateral(pki, { now, windows: { [item]: narrow } });
    for (const at of [narrow.from, narrow.to]) {
      await verifyTdxQuote(quote, { now: at, roots: pki.roots, collateral: built });
    }
    for (const at of [plusSeconds(narrow.from, -1), plusSeconds(narrow.to, 1)]) {
      await refused(
        verifyTdxQuote(quote, { now: at, roots: pki.roots, collateral: built }),
        "stale",
        "collateral",
        new RegExp(`collateral ${label} is valid from`),
      );
    }
  }
});

Deno.test("every certificate's window is enforced to the second", async () => {
  const narrow: Window = { from: plusSeconds(now, -1800), to: plusSeconds(now, 1800) };
  const table: [keyof TestPkiValidity, string, string][] = [
    ["pckLeaf", "Test SGX PCK Certificate", "pck_chain"],
    ["pckCa", "Test SGX PCK Platform CA", "pck_chain"],
    ["root", "Test SGX Root CA", "pck_chain"],
    ["tcbSigning", "Test SGX TCB Signing", "collateral"],
  ];
  for (const [which, cn, check] of table) {
    const pki = await createTestIntelPki({ now, validity: { [which]: narrow } });
    const quote = await buildTdxQuote(pki, { reportData });
    const collateral = await buildTdxCollateral(pki, { now });
    for (const at of [narrow.from, narrow.to]) {
      await verifyTdxQuote(quote, { now: at, roots: pki.roots, collateral });
    }
    for (const at of [plusSeconds(narrow.from, -1), plusSeconds(narrow.to, 1)]) {
      await refused(
        verifyTdxQuote(quote, { now: at, roots: pki.roots, collateral }),
        "stale",
        check as "pck_chain",
        new RegExp(`"${cn}" valid from`),
      );
    }
  }
});

Deno.test("revoked certificates are refused", async () => {
  const { pki, quote } = await fixture();
  const cases: [string, Parameters<typeof buildTdxCollateral>[1]][] = [
    ["PCK leaf", { now, revokePck: ["0abc", pki.pckLeaf.serial] }],
    ["PCK CA", { now, revokeRoot: [pki.pckCa.serial] }],
    ["TCB signing", { now, revokeRoot: [pki.tcbSigning.serial] }],
  ];
  for (const [label, options] of cases) {
    const collateral = await buildTdxCollateral(pki, options);
    await refused(
      verifyTdxQuote(quote, { now, roots: pki.roots, collateral }),
      "untrusted",
      "revocation",
      /revoked/,
    ).catch((e) => {
      throw new Error(`${label}: ${e.message}`);
    });
  }
  // Other serials revoked: still fine.
  const unrelated = await buildTdxCollateral(pki, {
    now,
    revokePck: ["0abc"],
    revokeRoot: ["0def"],
  });
  await verifyTdxQuote(quote, { now, roots: pki.roots, collateral: unrelated });
});

Deno.test("the TCB info is verified over its exact raw bytes", async () => {
  const { pki, quote } = await fixture();
  const respaced = await buildTdxCollateral(pki, {
    now,
    tamperTcbInfo: (text) => JSON.stringify(JSON.parse(text), null, 2),
  });
  await refused(
    verifyTdxQuote(quote, { now, roots: pki.roots, collateral: respaced }),
    "untrusted",
    "collateral",
    /raw bytes/,
  );
});

Deno.test("collateral signed under another root is refused", async () => {
  const { pki, quote } = await fixture();
  const other = await createTestIntelPki({ now });
  const foreign = await buildTdxCollateral(other, { now });
  const error = await verifyTdxQuote(quote, { now, roots: pki.roots, collateral: foreign }).then(
    () => null,
    (e) => e,
  );
  assert.ok(error instanceof AttestationError && error.reason === "untrusted", String(error));
});

Deno.test("TCB statuses map through, Revoked and unsupported levels are refused", async () => {
  const { pki, quote } = await fixture();
  for (
    const status of [
      "UpToDate",
      "SWHardeningNeeded",
      "ConfigurationNeeded",
      "ConfigurationAndSWHardeningNeeded",
      "OutOfDate",
      "OutOfDateConfigurationNeeded",
    ]
  ) {
    const collateral = await buildTdxCollateral(pki, {
      now,
      tcbStatus: status,
      advisoryIds: ["INTEL-SA-0001"],
    });
    const result = await verifyTdxQuote(quote, { now, roots: pki.roots, collateral });
    assert.equal(result.tcb?.status, status);
    assert.deepEqual(result.tcb?.advisoryIds, ["INTEL-SA-0001"]);
  }
  const revoked = await buildTdxCollateral(pki, { now, tcbStatus: "Revoked" });
  await refused(
    verifyTdxQuote(quote, { now, roots: pki.roots, collateral: revoked }),
    "untrusted",
    "tcb_status",
    /Revoked/,
  );
  const above = await buildTdxCollateral(pki, {
    now,
    tdxComponents: Uint8Array.of(3, 1, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
  });
  await refused(
    verifyTdxQuote(quote, { now, roots: pki.roots, collateral: above }),
    "untrusted",
    "tcb_status",
    /no matching TCB level/,
  );
  // The QE identity's level folds in: an out-of-date QE makes an up-to-date platform OutOfDate.
  const oldQe = await buildTdxCollateral(pki, { now, qeTcbStatus: "OutOfDate" });
  assert.equal(
    (await verifyTdxQuote(quote, { now, roots: pki.roots, collateral: oldQe })).tcb?.status,
    "OutOfDate",
  );
  const qeTooOld = await buildTdxCollateral(pki, { now, qeIsvSvn: 9 });
  await refused(
    verifyTdxQuote(quote, { now, roots: pki.roots, collateral: qeTooOld }),
    "untrusted",
    "tcb_status",
  );
  const unknownStatus = await buildTdxCollateral(pki, { now, tcbStatus: "Fine" });
  await refused(
    verifyTdxQuote(quote, { now, roots: pki.roots, collateral: unknownStatus }),
    "malformed",
    "collateral",
  );
});

Deno.test("differential: @phala/dcap-qvl agrees on synthetic collateral statuses", async () => {
  const { pki, quote } = await fixture();
  for (const status of ["UpToDate", "OutOfDate", "ConfigurationNeeded", "SWHardeningNeeded"]) {
    const collateral = await buildTdxCollateral(pki, {
      now,
      tcbStatus: status,
      advisoryIds: ["INTEL-SA-0002"],
    });
    const theirs = oracle(quote, collateral, now, pki.root.der);
    const mine = await ours(quote, collateral, now, pki.roots);
    assert.deepEqual(mine, theirs, status);
  }
  const revoked = await buildTdxCollateral(pki, { now, tcbStatus: "Revoked" });
  assert.match(oracle(quote, revoked, now, pki.root.der).status, /Revoked/);
  assert.equal((await ours(quote, revoked, now, pki.roots)).status, "Revoked");
});

Deno.test("collateral JSON is parsed strictly and round-trips", async () => {
  const { pki } = await fixture();
  const collateral = await buildTdxCollateral(pki, { now });
  const json = tdxCollateralToJson(collateral);
  assert.deepEqual(tdxCollateralFromJson(JSON.parse(JSON.stringify(json))), collateral);
  const withPrefix = { ...json, pck_crl: "0x" + json.pck_crl };
  assert.deepEqual(tdxCollateralFromJson(withPrefix).pckCrl, collateral.pckCrl);
  const bad: [string, unknown][] = [
    ["array", [json]],
    ["unknown field", { ...json, extra: "x" }],
    ["missing field", { ...json, tcb_info: undefined }],
    ["non-hex CRL", { ...json, pck_crl: "zz" }],
    ["short signature", { ...json, tcb_info_signature: "00".repeat(63) }],
    ["number", { ...json, qe_identity: 5 }],
  ];
  for (const [label, value] of bad) {
    assert.throws(
      () => tdxCollateralFromJson(value),
      (error: unknown) =>
        error instanceof AttestationError && error.reason === "malformed" &&
        error.check === "collateral",
      label,
    );
  }
});

// Every validity window of the collateral is `now < from || now > to`: with an Invalid Date both
// are false and stale collateral would pass. The exported verifier refuses the clock itself.
Deno.test("verifyTdxCollateral refuses an Invalid Date before reading anything", async () => {
  const { pki } = await fixture();
  const collateral = await buildTdxCollateral(pki, { now });
  await assert.rejects(
    verifyTdxCollateral(collateral, {
      now: new Date(Number.NaN),
      anchors: [],
      pckChain: undefined as never,
    }),
    /verifyTdxCollateral: "now" must be a valid Date/,
  );
  await assert.rejects(
    verifyTdxQuote((await fixture()).quote, {
      now: new Date(Number.NaN),
      roots: pki.roots,
      collateral,
    }),
    TypeError,
  );
});
