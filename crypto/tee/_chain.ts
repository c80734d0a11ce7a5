/**
 * Certificate path validation to a pinned anchor (private). The anchor is trusted by identity
 * (it is one of the caller's roots), never because a chain presents it. Checks run in this
 * order so that nothing is read from a certificate before its signature is verified: names and
 * signatures up to the anchor, then CA constraints and critical extensions, then validity at
 * `now`.
 *
 * @module
 */

import { checkNow } from "../_time.ts";
import { equalBytes } from "../_bytes.ts";
import { verifySignedData } from "./_signature.ts";
import type { Certificate } from "./_x509.ts";
import { type AttestationCheck, AttestationError } from "./errors.ts";

/** Options of {@linkcode verifyChain}. */
export interface ChainOptions {
  /** The check reported when the chain is refused. */
  check: AttestationCheck;
  /** What the chain is, for messages ("the PCK certificate chain"). */
  label: string;
  /** The trust anchors; one must issue the top of the chain (or be its last element). */
  anchors: readonly Certificate[];
  /** The time at which every certificate must be valid. */
  now: Date;
  /**
   * Largest number of certificates below the anchor.
   *
   * @default {3}
   */
  maxDepth?: number;
}

/** A validated path. */
export interface ValidatedChain {
  /** The anchor that issued the top of the path. */
  readonly anchor: Certificate;
  /** The path, leaf first, without the anchor. */
  readonly path: readonly Certificate[];
  /** Earliest `notAfter` of the path and the anchor. */
  readonly notAfter: Date;
}

const KNOWN_CRITICAL = new Set(["2.5.29.15", "2.5.29.19"]);
const KEY_CERT_SIGN = 1 << 5;

/**
 * Validates `certs` (leaf first; the last one may be a copy of the anchor, which is then
 * dropped) up to one of `options.anchors`.
 *
 * @throws {AttestationError} `untrusted` (names, signatures, constraints), `stale` (validity)
 * or `malformed` (empty or too long), with `options.check`.
 */
export async function verifyChain(
  certs: readonly Certificate[],
  options: ChainOptions,
): Promise<ValidatedChain> {
  const now = checkNow(options.now, "verifyChain");
  const refuse = refuser(options);
  const { path, presented } = pathBelowAnchor(certs, options, refuse);
  // 1. Names and signatures, leaf to top, then the top against an anchor.
  const anchor = await verifySignatures(path, presented, options.anchors, refuse);
  // 2. CA constraints and critical extensions.
  checkConstraints(path, anchor, refuse);
  // 3. Validity at `now`.
  const notAfter = checkValidity([...path, anchor], now, options);
  return { anchor, path, notAfter };
}

/** Throws the `untrusted` refusal of this chain. */
type Refuse = (message: string) => never;

function refuser({ check, label }: ChainOptions): Refuse {
  return (message) => {
    throw new AttestationError(
      "untrusted",
      check,
      `Cannot verify attestation: ${label} ${message}`,
    );
  };
}

/**
 * The certificates below the anchor (a presented copy of an anchor at the top is dropped, and
 * returned as `presented`): at least one, at most `maxDepth`, none of them a root.
 */
function pathBelowAnchor(
  certs: readonly Certificate[],
  { check, label, anchors, maxDepth = 3 }: ChainOptions,
  refuse: Refuse,
): { path: Certificate[]; presented: Certificate | undefined } {
  if (anchors.length === 0) refuse("cannot be checked: no trust root is configured");
  let path = certs.slice();
  const last = path[path.length - 1];
  const presented = last ? anchors.find((root) => equalBytes(root.der, last.der)) : undefined;
  if (presented) path = path.slice(0, -1);
  if (path.length === 0) {
    throw new AttestationError(
      "malformed",
      check,
      `Cannot verify attestation: ${label} has no certificate below the trust root`,
    );
  }
  if (path.length > maxDepth) {
    throw new AttestationError(
      "malformed",
      check,
      `Cannot verify attestation: ${label} has ${path.length} certificates below the root, ` +
        `at most ${maxDepth} are accepted`,
    );
  }
  for (const cert of path) {
    if (anchors.some((root) => equalBytes(root.der, cert.der))) {
      refuse(`presents the trust root "${cert.subjectCn}" below another certificate`);
    }
  }
  return { path, presented };
}

/**
 * Checks every name and signature from the leaf up, then the top against the presented anchor
 * (or the first anchor that issued it); returns the anchor.
 */
async function verifySignatures(
  path: readonly Certificate[],
  presented: Certificate | undefined,
  anchors: readonly Certificate[],
  refuse: Refuse,
): Promise<Certificate> {
  // Names first (cheap); then every signature at once — WebCrypto verifies on a thread pool —
  // judged in order from the leaf, so the first bad link is the one reported.
  for (let i = 0; i + 1 < path.length; i++) {
    const child = path[i];
    const parent = path[i + 1];
    if (!equalBytes(child.issuer, parent.subject)) {
      refuse(
        `is broken: "${child.subjectCn}" is issued by "${child.issuerCn}", but the next ` +
          `certificate is "${parent.subjectCn}"`,
      );
    }
  }
  const top = path[path.length - 1];
  const issuers = presented
    ? [presented]
    : anchors.filter((candidate) => equalBytes(top.issuer, candidate.subject));
  const [links, tops] = await Promise.all([
    Promise.all(path.slice(0, -1).map((child, i) => signedBy(child, path[i + 1]))),
    Promise.all(
      issuers.map((issuer) =>
        equalBytes(top.issuer, issuer.subject) ? signedBy(top, issuer) : Promise.resolve(false)
      ),
    ),
  ]);
  links.forEach((ok, i) => {
    if (!ok) {
      refuse(
        `has a bad signature on "${path[i].subjectCn}" (not signed by "${path[i + 1].subjectCn}")`,
      );
    }
  });
  const anchor = issuers.find((_, i) => tops[i]);
  if (presented) {
    if (!anchor) refuse(`is not signed by the pinned root "${presented.subjectCn}"`);
    return presented;
  }
  if (anchor) return anchor;
  return refuse(
    `does not chain to a pinned root: "${top.subjectCn}" is issued by "${top.issuerCn}", ` +
      `which is none of the ${anchors.length} trusted root(s) ` +
      `(${anchors.map((root) => `"${root.subjectCn}"`).join(", ")})`,
  );
}

function signedBy(cert: Certificate, issuer: Certificate): Promise<boolean> {
  return verifySignedData(cert.signatureAlgorithm, issuer.publicKey, cert.tbs, cert.signature);
}

/**
 * Every issuer is a CA allowed to sign certificates, within its path length; no certificate has
 * an unknown critical extension.
 */
function checkConstraints(path: readonly Certificate[], anchor: Certificate, refuse: Refuse): void {
  const issuers = [...path.slice(1), anchor];
  issuers.forEach((issuer, index) => {
    const constraints = issuer.basicConstraints;
    if (!constraints?.ca) {
      refuse(`has "${issuer.subjectCn}" issuing certificates without being a CA`);
    }
    if (issuer.keyUsage !== null && (issuer.keyUsage & KEY_CERT_SIGN) === 0) {
      refuse(`has "${issuer.subjectCn}" issuing certificates without keyCertSign`);
    }
    // `index` CA certificates sit between this issuer and the leaf.
    if (
      constraints?.pathLength !== null && constraints !== null && index > constraints.pathLength
    ) {
      refuse(`exceeds the path length of "${issuer.subjectCn}" (${constraints.pathLength})`);
    }
  });
  for (const cert of [...path, anchor]) {
    for (const [oid, extension] of cert.extensions) {
      if (extension.critical && !KNOWN_CRITICAL.has(oid)) {
        refuse(`has "${cert.subjectCn}" with an unknown critical extension ${oid}`);
      }
    }
  }
}

/** Every certificate is valid at `now`; returns the earliest `notAfter`. */
function checkValidity(certs: readonly Certificate[], now: Date, options: ChainOptions): Date {
  let notAfter = certs[certs.length - 1].notAfter;
  for (const cert of certs) {
    if (now < cert.notBefore || now > cert.notAfter) {
      throw new AttestationError(
        "stale",
        options.check,
        `Cannot verify attestation: ${options.label} has "${cert.subjectCn}" valid from ` +
          `${cert.notBefore.toISOString()} to ${cert.notAfter.toISOString()}, now is ` +
          `${now.toISOString()}`,
      );
    }
    if (cert.notAfter < notAfter) notAfter = cert.notAfter;
  }
  return notAfter;
}
