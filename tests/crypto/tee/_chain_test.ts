import assert from "node:assert/strict";
import { verifyChain } from "../../../crypto/tee/_chain.ts";
import { type Certificate, parseCertificate } from "../../../crypto/tee/_x509.ts";
import { AttestationError } from "../../../crypto/tee/mod.ts";
import { refused } from "./_helpers.ts";
import { issueTestCertificate, type TestCertificate } from "./_synthetic.ts";

const now = new Date("2026-11-22T12:00:00Z");
const CA = 0x06; // keyCertSign | cRLSign
const parse = (cert: TestCertificate): Certificate =>
  parseCertificate(cert.der, { check: "pck_chain", label: "test" });

async function pki() {
  const root = await issueTestCertificate({ subject: "Root", ca: { pathLength: 1 }, keyUsage: CA });
  const ca = await issueTestCertificate({
    subject: "CA",
    issuer: { cn: "Root", keys: root.keys },
    ca: { pathLength: 0 },
    keyUsage: CA,
  });
  const leaf = await issueTestCertificate({ subject: "Leaf", issuer: { cn: "CA", keys: ca.keys } });
  return { root, ca, leaf };
}

function chain(certs: TestCertificate[], anchors: TestCertificate[], maxDepth?: number) {
  return verifyChain(certs.map(parse), {
    check: "pck_chain",
    label: "the chain",
    anchors: anchors.map(parse),
    now,
    maxDepth,
  });
}

Deno.test("a chain validates with or without the root copy at its end", async () => {
  const { root, ca, leaf } = await pki();
  const withRoot = await chain([leaf, ca, root], [root]);
  const without = await chain([leaf, ca], [root]);
  assert.equal(withRoot.path.length, 2);
  assert.deepEqual(without.anchor.der, root.der);
  assert.equal(without.notAfter.toISOString(), "2040-01-01T00:00:00.000Z");
});

Deno.test("a look-alike root with the pinned root's name is refused", async () => {
  const { root, ca, leaf } = await pki();
  const fake = await issueTestCertificate({ subject: "Root", ca: {}, keyUsage: CA });
  const fakeCa = await issueTestCertificate({
    subject: "CA",
    issuer: { cn: "Root", keys: fake.keys },
    ca: {},
    keyUsage: CA,
  });
  const fakeLeaf = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "CA", keys: fakeCa.keys },
  });
  await refused(
    chain([fakeLeaf, fakeCa, fake], [root]),
    "untrusted",
    "pck_chain",
    /does not chain/,
  );
  await refused(chain([fakeLeaf, fakeCa], [root]), "untrusted", "pck_chain", /does not chain/);
  // A genuine leaf under a forged CA certificate of the same name.
  await refused(chain([leaf, fakeCa, root], [root]), "untrusted", "pck_chain");
  await refused(chain([leaf, ca, root], []), "untrusted", "pck_chain", /no trust root/);
});

Deno.test("CA constraints: CA flag, keyCertSign, path length", async () => {
  const { root, ca } = await pki();
  const notCa = await issueTestCertificate({
    subject: "NotCA",
    issuer: { cn: "Root", keys: root.keys },
  });
  const under = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "NotCA", keys: notCa.keys },
  });
  await refused(chain([under, notCa], [root]), "untrusted", "pck_chain", /without being a CA/);

  const noSign = await issueTestCertificate({
    subject: "NoSign",
    issuer: { cn: "Root", keys: root.keys },
    ca: {},
    keyUsage: 0x80,
  });
  const signed = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "NoSign", keys: noSign.keys },
  });
  await refused(chain([signed, noSign], [root]), "untrusted", "pck_chain", /keyCertSign/);

  // CA has pathLength 0: another CA below it exceeds it.
  const sub = await issueTestCertificate({
    subject: "Sub",
    issuer: { cn: "CA", keys: ca.keys },
    ca: {},
    keyUsage: CA,
  });
  const deep = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "Sub", keys: sub.keys },
  });
  await refused(chain([deep, sub, ca], [root]), "untrusted", "pck_chain", /path length/);
  await assert.rejects(
    chain([deep, sub, ca], [root], 2),
    (e: unknown) =>
      e instanceof AttestationError && e.reason === "malformed" && /at most 2/.test(e.message),
  );
});

Deno.test("unknown critical extensions are refused, unknown non-critical ones are not", async () => {
  const { root, ca } = await pki();
  const critical = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "CA", keys: ca.keys },
    extraExtensions: [["1.2.3.4", true]],
  });
  await refused(
    chain([critical, ca], [root]),
    "untrusted",
    "pck_chain",
    /unknown critical extension 1\.2\.3\.4/,
  );
  const benign = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "CA", keys: ca.keys },
    extraExtensions: [["1.2.3.4", false]],
  });
  await chain([benign, ca], [root]);
});

Deno.test("signatures are judged before validity; the root copy may not sit in the middle", async () => {
  const { root, ca } = await pki();
  const other = await issueTestCertificate({ subject: "CA", ca: {}, keyUsage: CA });
  const expiredForged = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "CA", keys: other.keys },
    validity: { from: new Date("2001-01-01T00:00:00Z"), to: new Date("2002-01-01T00:00:00Z") },
  });
  await refused(chain([expiredForged, ca], [root]), "untrusted", "pck_chain", /bad signature/);
  const expired = await issueTestCertificate({
    subject: "Leaf",
    issuer: { cn: "CA", keys: ca.keys },
    validity: { from: new Date("2001-01-01T00:00:00Z"), to: new Date("2002-01-01T00:00:00Z") },
  });
  await refused(chain([expired, ca], [root]), "stale", "pck_chain", /"Leaf" valid from/);
  await refused(chain([ca, root, root], [root]), "untrusted", "pck_chain", /below another/);
  await assert.rejects(chain([root], [root]), /no certificate below the trust root/);
});

// With an Invalid Date every validity comparison (`now < notBefore || now > notAfter`) is false:
// an expired certificate would pass. The chain checker refuses the clock instead.
Deno.test("an Invalid Date is a TypeError, never a chain without validity checks", async () => {
  const { root, ca, leaf } = await pki();
  await assert.rejects(
    verifyChain([leaf, ca].map(parse), {
      check: "pck_chain",
      label: "the chain",
      anchors: [parse(root)],
      now: new Date(Number.NaN),
    }),
    /verifyChain: "now" must be a valid Date, found an Invalid Date/,
  );
});
