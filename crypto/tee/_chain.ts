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
  const { check, label, anchors } = options;
  const now = checkNow(options.now, "verifyChain");
  const untrusted = (message: string): never => {
    throw new AttestationError(
      "untrusted",
      check,
      `Cannot verify attestation: ${label} ${message}`,
    );
  };
  if (anchors.length === 0) untrusted("cannot be checked: no trust root is configured");
  let path = certs.slice();
  let anchor: Certificate | undefined;
  const last = path[path.length - 1];
  if (last) anchor = anchors.find((root) => equalBytes(root.der, last.der));
  if (anchor) path = path.slice(0, -1);
  if (path.length === 0) {
    throw new AttestationError(
      "malformed",
      check,
      `Cannot verify attestation: ${label} has no certificate below the trust root`,
    );
  }
  const maxDepth = options.maxDepth ?? 3;
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
      untrusted(`presents the trust root "${cert.subjectCn}" below another certificate`);
    }
  }

  // 1. Names and signatures, leaf to top, then the top against an anchor.
  for (let i = 0; i + 1 < path.length; i++) {
    const child = path[i];
    const parent = path[i + 1];
    if (!equalBytes(child.issuer, parent.subject)) {
      untrusted(
        `is broken: "${child.subjectCn}" is issued by "${child.issuerCn}", but the next ` +
          `certificate is "${parent.subjectCn}"`,
      );
    }
    if (
      !await verifySignedData(
        child.signatureAlgorithm,
        parent.publicKey,
        child.tbs,
        child.signature,
      )
    ) {
      untrusted(
        `has a bad signature on "${child.subjectCn}" (not signed by "${parent.subjectCn}")`,
      );
    }
  }
  const top = path[path.length - 1];
  if (anchor) {
    if (
      !equalBytes(top.issuer, anchor.subject) ||
      !await verifySignedData(top.signatureAlgorithm, anchor.publicKey, top.tbs, top.signature)
    ) {
      untrusted(`is not signed by the pinned root "${anchor.subjectCn}"`);
    }
  } else {
    for (const candidate of anchors) {
      if (
        equalBytes(top.issuer, candidate.subject) &&
        await verifySignedData(top.signatureAlgorithm, candidate.publicKey, top.tbs, top.signature)
      ) {
        anchor = candidate;
        break;
      }
    }
    if (!anchor) {
      untrusted(
        `does not chain to a pinned root: "${top.subjectCn}" is issued by "${top.issuerCn}", ` +
          `which is none of the ${anchors.length} trusted root(s) ` +
          `(${anchors.map((root) => `"${root.subjectCn}"`).join(", ")})`,
      );
    }
  }
  const trustedAnchor = anchor as Certificate;

  // 2. CA constraints and critical extensions.
  const issuers = [...path.slice(1), trustedAnchor];
  issuers.forEach((issuer, index) => {
    const constraints = issuer.basicConstraints;
    if (!constraints?.ca) {
      untrusted(`has "${issuer.subjectCn}" issuing certificates without being a CA`);
    }
    if (issuer.keyUsage !== null && (issuer.keyUsage & KEY_CERT_SIGN) === 0) {
      untrusted(`has "${issuer.subjectCn}" issuing certificates without keyCertSign`);
    }
    // `index` CA certificates sit between this issuer and the leaf.
    if (
      constraints?.pathLength !== null && constraints !== null && index > constraints.pathLength
    ) {
      untrusted(`exceeds the path length of "${issuer.subjectCn}" (${constraints.pathLength})`);
    }
  });
  for (const cert of [...path, trustedAnchor]) {
    for (const [oid, extension] of cert.extensions) {
      if (extension.critical && !KNOWN_CRITICAL.has(oid)) {
        untrusted(`has "${cert.subjectCn}" with an unknown critical extension ${oid}`);
      }
    }
  }

  // 3. Validity at `now`.
  let notAfter = trustedAnchor.notAfter;
  for (const cert of [...path, trustedAnchor]) {
    if (now < cert.notBefore || now > cert.notAfter) {
      throw new AttestationError(
        "stale",
        check,
        `Cannot verify attestation: ${label} has "${cert.subjectCn}" valid from ` +
          `${cert.notBefore.toISOString()} to ${cert.notAfter.toISOString()}, now is ` +
          `${now.toISOString()}`,
      );
    }
    if (cert.notAfter < notAfter) notAfter = cert.notAfter;
  }
  return { anchor: trustedAnchor, path, notAfter };
}
