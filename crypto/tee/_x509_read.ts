/**
 * Reading X.509 certificates and CRLs (RFC 5280) with the strict DER reader (private): the
 * fields the TEE verifiers use, from the exact bytes (the `tbs` views are what the signatures
 * cover). Errors are plain {@linkcode DerError}s naming the field; `_x509.ts` wraps them.
 *
 * @module
 */

import { equalBytes, toHex } from "../_bytes.ts";
import {
  childrenOf,
  content,
  contextTag,
  DerError,
  type DerNode,
  encoded,
  expectTag,
  readBitString,
  readBoolean,
  readIntegerBytes,
  readOid,
  readRoot,
  readSigned,
  readSmallInteger,
  readText,
  readTime,
  readWholeBitString,
  TAG,
} from "./_der.ts";
import type { CurveName, HashName, PublicKey, SignatureAlgorithm } from "./_signature.ts";

/** One X.509 extension. */
export interface CertExtension {
  /** Whether it is marked critical. */
  readonly critical: boolean;
  /** The DER contents of `extnValue`. */
  readonly value: Uint8Array;
}

/** What {@linkcode readCertificate} reads. */
export interface CertificateFields {
  /** The DER bytes of `tbsCertificate`, which the signature covers. */
  readonly tbs: Uint8Array;
  /** Serial number, lower-case hex without leading zero bytes. */
  readonly serial: string;
  /** Raw DER of the subject name. */
  readonly subject: Uint8Array;
  /** Raw DER of the issuer name. */
  readonly issuer: Uint8Array;
  /** The subject's common name, or "". */
  readonly subjectCn: string;
  /** The issuer's common name, or "". */
  readonly issuerCn: string;
  /** Start of validity. */
  readonly notBefore: Date;
  /** End of validity (inclusive). */
  readonly notAfter: Date;
  /** How the issuer signed it. */
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** The signature value. */
  readonly signature: Uint8Array;
  /** The subject public key. */
  readonly publicKey: PublicKey;
  /** Extensions by OID. */
  readonly extensions: ReadonlyMap<string, CertExtension>;
  /** basicConstraints: `null` when absent. */
  readonly basicConstraints: { readonly ca: boolean; readonly pathLength: number | null } | null;
  /** keyUsage bits (bit 0 = digitalSignature … bit 5 = keyCertSign, bit 6 = cRLSign), or `null`. */
  readonly keyUsage: number | null;
}

/** What {@linkcode readCrl} reads. */
export interface CrlFields {
  /** DER bytes of `tbsCertList`, which the signature covers. */
  readonly tbs: Uint8Array;
  /** Raw DER of the issuer name. */
  readonly issuer: Uint8Array;
  /** The issuer's common name. */
  readonly issuerCn: string;
  /** Start of validity. */
  readonly thisUpdate: Date;
  /** End of validity (inclusive), or `null` when the CRL has none. */
  readonly nextUpdate: Date | null;
  /** Serial numbers of revoked certificates (hex, no leading zero bytes). */
  readonly revoked: ReadonlySet<string>;
  /** How it is signed. */
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** The signature value. */
  readonly signature: Uint8Array;
}

const OID_EC_PUBLIC_KEY = "1.2.840.10045.2.1";
const OID_RSA_ENCRYPTION = "1.2.840.113549.1.1.1";
const OID_RSASSA_PSS = "1.2.840.113549.1.1.10";
const OID_MGF1 = "1.2.840.113549.1.1.8";
const OID_CN = "2.5.4.3";
const OID_KEY_USAGE = "2.5.29.15";
const OID_BASIC_CONSTRAINTS = "2.5.29.19";
const CURVES: Record<string, CurveName> = {
  "1.2.840.10045.3.1.7": "P-256",
  "1.3.132.0.34": "P-384",
};
const ECDSA_HASHES: Record<string, HashName> = {
  "1.2.840.10045.4.3.2": "SHA-256",
  "1.2.840.10045.4.3.3": "SHA-384",
  "1.2.840.10045.4.3.4": "SHA-512",
};
const HASHES: Record<string, HashName> = {
  "2.16.840.1.101.3.4.2.1": "SHA-256",
  "2.16.840.1.101.3.4.2.2": "SHA-384",
  "2.16.840.1.101.3.4.2.3": "SHA-512",
};

/** Reads a certificate: `SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }`. */
export function readCertificate(der: Uint8Array): CertificateFields {
  const { tbs: tbsNode, fields, algorithm, signature, more } = readSigned(
    readRoot(der),
    "the certificate",
    "tbsCertificate",
  );
  if (more.length) throw new DerError("the certificate has extra fields");
  let at = 0;
  const version = fields[at]?.tag === contextTag(0, true)
    ? readSmallInteger(
      childrenOf(fields[at++], contextTag(0, true), "the version")[0],
      "the version",
    )
    : 0;
  if (version !== 2) throw new DerError(`version ${version + 1} is not X.509 v3`);
  const serial = serialHex(fields[at++], "the serial number");
  const innerAlgorithm = fields[at++];
  const issuer = expectTag(fields[at++], TAG.sequence, "the issuer");
  const [notBefore, notAfter, ...extraTimes] = childrenOf(
    fields[at++],
    TAG.sequence,
    "the validity",
  );
  if (extraTimes.length) throw new DerError("the validity has extra fields");
  const subject = expectTag(fields[at++], TAG.sequence, "the subject");
  const publicKey = readPublicKey(fields[at++]);
  while (
    fields[at] &&
    (fields[at].tag === contextTag(1, false) || fields[at].tag === contextTag(2, false))
  ) {
    at++; // issuerUniqueID, subjectUniqueID: not used
  }
  const extensions = fields[at] ? readExtensions(fields[at++]) : new Map<string, CertExtension>();
  if (at !== fields.length) throw new DerError("tbsCertificate has unknown trailing fields");
  const basic = extensions.get(OID_BASIC_CONSTRAINTS);
  const usage = extensions.get(OID_KEY_USAGE);
  return {
    tbs: encoded(tbsNode),
    serial,
    subject: encoded(subject),
    issuer: encoded(issuer),
    subjectCn: commonName(subject),
    issuerCn: commonName(issuer),
    notBefore: readTime(notBefore, "notBefore"),
    notAfter: readTime(notAfter, "notAfter"),
    signatureAlgorithm: sameAlgorithm(algorithm, innerAlgorithm),
    signature: readWholeBitString(signature, "the signature"),
    publicKey,
    extensions,
    basicConstraints: basic ? readBasicConstraints(basic.value) : null,
    keyUsage: usage ? readKeyUsage(usage.value) : null,
  };
}

/** Reads a CRL: `SEQUENCE { tbsCertList, signatureAlgorithm, signatureValue }`. */
export function readCrl(der: Uint8Array): CrlFields {
  const { tbs: tbsNode, fields, algorithm, signature, more } = readSigned(
    readRoot(der),
    "the CRL",
    "tbsCertList",
  );
  if (more.length) throw new DerError("the CRL has extra fields");
  let at = 0;
  if (fields[at]?.tag === TAG.integer) {
    if (readSmallInteger(fields[at++], "the CRL version") !== 1) {
      throw new DerError("the CRL version is not v2");
    }
  }
  const innerAlgorithm = fields[at++];
  const issuer = expectTag(fields[at++], TAG.sequence, "the issuer");
  const thisUpdate = readTime(fields[at++], "thisUpdate");
  const nextUpdate =
    fields[at] && (fields[at].tag === TAG.utcTime || fields[at].tag === TAG.generalizedTime)
      ? readTime(fields[at++], "nextUpdate")
      : null;
  const revoked = new Set<string>();
  if (fields[at]?.tag === TAG.sequence) {
    for (const entry of childrenOf(fields[at++], TAG.sequence, "the revoked certificates")) {
      const [serial, date, extensions, ...more] = childrenOf(
        entry,
        TAG.sequence,
        "a revoked entry",
      );
      if (more.length || (extensions && extensions.tag !== TAG.sequence)) {
        throw new DerError("a revoked entry has unknown fields");
      }
      readTime(date, "a revocation date");
      revoked.add(serialHex(serial, "a revoked serial"));
    }
  }
  if (fields[at]?.tag === contextTag(0, true)) {
    readExtensionList(childrenOf(fields[at++], contextTag(0, true), "the CRL extensions")[0]);
  }
  if (at !== fields.length) throw new DerError("tbsCertList has unknown trailing fields");
  return {
    tbs: encoded(tbsNode),
    issuer: encoded(issuer),
    issuerCn: commonName(issuer),
    thisUpdate,
    nextUpdate,
    revoked,
    signatureAlgorithm: sameAlgorithm(algorithm, innerAlgorithm),
    signature: readWholeBitString(signature, "the signature"),
  };
}

/** A serial number (INTEGER) as lower-case hex without leading zero bytes. */
export function serialHex(node: DerNode | undefined, what: string): string {
  const bytes = readIntegerBytes(node, what);
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  return toHex(bytes.subarray(start));
}

/** The common name of a Name (`SEQUENCE OF SET OF { type, value }`), or "". */
export function commonName(name: DerNode): string {
  for (const rdn of childrenOf(name, TAG.sequence, "a name")) {
    for (const attribute of childrenOf(rdn, TAG.set, "a name's RDN")) {
      const [type, value, ...more] = childrenOf(attribute, TAG.sequence, "a name attribute");
      if (!value || more.length) throw new DerError("a name attribute is not (type, value)");
      if (readOid(type, "a name attribute type") === OID_CN) {
        return readText(value, "the common name");
      }
    }
  }
  return "";
}

/** The outer and inner algorithm identifiers are the same bytes; returns what they name. */
function sameAlgorithm(outer: DerNode | undefined, inner: DerNode | undefined): SignatureAlgorithm {
  if (!outer || !inner || !equalBytes(encoded(outer), encoded(inner))) {
    throw new DerError("the inner and outer signature algorithms differ");
  }
  return readSignatureAlgorithm(outer);
}

/**
 * The signature algorithm an AlgorithmIdentifier names: ECDSA with SHA-256/384/512 (no
 * parameters), or RSASSA-PSS with MGF1 of the same hash and trailer 1.
 */
export function readSignatureAlgorithm(node: DerNode | undefined): SignatureAlgorithm {
  const [oidNode, params, ...more] = childrenOf(
    expectTag(node, TAG.sequence, "an algorithm"),
    TAG.sequence,
    "an algorithm",
  );
  if (more.length) throw new DerError("an algorithm identifier has extra fields");
  const oid = readOid(oidNode, "the signature algorithm");
  const ecdsa = ECDSA_HASHES[oid];
  if (ecdsa) {
    if (params) throw new DerError("ECDSA must have no parameters");
    return { kind: "ecdsa", hash: ecdsa };
  }
  if (oid !== OID_RSASSA_PSS) throw new DerError(`signature algorithm ${oid} is not supported`);
  let hash: HashName | undefined;
  let mgfHash: HashName | undefined;
  let saltLength = 20;
  let trailer = 1;
  for (
    const field of childrenOf(
      expectTag(params, TAG.sequence, "RSASSA-PSS parameters"),
      TAG.sequence,
      "RSASSA-PSS parameters",
    )
  ) {
    const [value] = childrenOf(field, field.tag, "an RSASSA-PSS parameter");
    if (field.tag === contextTag(0, true)) hash = hashOf(value);
    else if (field.tag === contextTag(1, true)) {
      const [mgf, mgfParams] = childrenOf(value, TAG.sequence, "the mask generation");
      if (readOid(mgf, "the mask generation") !== OID_MGF1) {
        throw new DerError("RSASSA-PSS mask is not MGF1");
      }
      mgfHash = hashOf(mgfParams);
    } else if (field.tag === contextTag(2, true)) {
      saltLength = readSmallInteger(value, "the salt length");
    } else if (field.tag === contextTag(3, true)) trailer = readSmallInteger(value, "the trailer");
    else throw new DerError("RSASSA-PSS parameters have an unknown field");
  }
  if (!hash) throw new DerError("RSASSA-PSS with SHA-1 is not supported");
  if (mgfHash !== hash) throw new DerError("RSASSA-PSS MGF1 hash differs from the hash");
  if (trailer !== 1) throw new DerError("RSASSA-PSS trailer field is not 1");
  return { kind: "rsa-pss", hash, saltLength };
}

function hashOf(node: DerNode | undefined): HashName {
  const [oid, params, ...more] = childrenOf(
    expectTag(node, TAG.sequence, "a hash algorithm"),
    TAG.sequence,
    "a hash algorithm",
  );
  if (more.length || (params && params.tag !== TAG.null)) {
    throw new DerError("a hash algorithm has parameters");
  }
  const id = readOid(oid, "a hash algorithm");
  const hash = HASHES[id];
  if (!hash) throw new DerError(`hash ${id} is not supported`);
  return hash;
}

function readPublicKey(node: DerNode | undefined): PublicKey {
  const spki = expectTag(node, TAG.sequence, "the public key info");
  const [algorithm, key, ...more] = childrenOf(spki, TAG.sequence, "the public key info");
  if (more.length) throw new DerError("the public key info has extra fields");
  const [oidNode, params] = childrenOf(
    expectTag(algorithm, TAG.sequence, "the key algorithm"),
    TAG.sequence,
    "the key algorithm",
  );
  const oid = readOid(oidNode, "the key algorithm");
  const bits = readWholeBitString(key, "the public key");
  if (oid === OID_EC_PUBLIC_KEY) {
    const curveOid = params?.tag === TAG.oid ? readOid(params, "the curve") : "";
    const curve = CURVES[curveOid];
    if (!curve) throw new DerError(`EC curve ${curveOid || "(none)"} is not supported`);
    const expected = curve === "P-256" ? 65 : 97;
    if (bits.length !== expected || bits[0] !== 4) {
      throw new DerError(
        `${curve} public key must be ${expected} uncompressed bytes, found ${bits.length}`,
      );
    }
    return { kind: "ec", curve, point: bits };
  }
  if (oid === OID_RSA_ENCRYPTION) {
    const [modulus] = childrenOf(readRoot(bits), TAG.sequence, "the RSA key");
    const bytes = readIntegerBytes(modulus, "the RSA modulus");
    let start = 0;
    while (start < bytes.length && bytes[start] === 0) start++;
    const length = (bytes.length - start) * 8 -
      (start < bytes.length ? Math.clz32(bytes[start]) - 24 : 0);
    return { kind: "rsa", spki: encoded(spki), bits: length };
  }
  throw new DerError(`public key algorithm ${oid} is not supported`);
}

function readExtensions(node: DerNode): Map<string, CertExtension> {
  const [list, ...more] = childrenOf(node, contextTag(3, true), "the extensions");
  if (more.length) throw new DerError("the extensions field has extra content");
  return readExtensionList(list);
}

function readExtensionList(list: DerNode | undefined): Map<string, CertExtension> {
  const out = new Map<string, CertExtension>();
  for (
    const extension of childrenOf(
      expectTag(list, TAG.sequence, "the extensions"),
      TAG.sequence,
      "the extensions",
    )
  ) {
    const parts = childrenOf(extension, TAG.sequence, "an extension");
    const id = readOid(parts[0], "an extension id");
    const critical = parts.length === 3
      ? readBoolean(parts[1], `extension ${id}'s critical flag`)
      : false;
    if (parts.length === 3 && !critical) {
      throw new DerError(`extension ${id} encodes the default critical=false`);
    }
    if (parts.length < 2 || parts.length > 3) {
      throw new DerError(`extension ${id} has ${parts.length} fields`);
    }
    const value = content(
      expectTag(parts[parts.length - 1], TAG.octetString, `extension ${id}'s value`),
    );
    if (out.has(id)) throw new DerError(`extension ${id} appears twice`);
    out.set(id, { critical, value });
  }
  return out;
}

function readKeyUsage(value: Uint8Array): number {
  const { bits } = readBitString(readRoot(value), "keyUsage");
  let out = 0;
  for (let bit = 0; bit < 16 && bit / 8 < bits.length; bit++) {
    if (bits[bit >> 3] & (0x80 >> (bit & 7))) out |= 1 << bit;
  }
  return out;
}

function readBasicConstraints(value: Uint8Array): { ca: boolean; pathLength: number | null } {
  const fields = childrenOf(readRoot(value), TAG.sequence, "basicConstraints");
  let at = 0;
  const ca = fields[at]?.tag === TAG.boolean ? readBoolean(fields[at++], "cA") : false;
  const pathLength = fields[at]?.tag === TAG.integer
    ? readSmallInteger(fields[at++], "pathLenConstraint")
    : null;
  if (at !== fields.length) throw new DerError("basicConstraints has unknown fields");
  return { ca, pathLength };
}
