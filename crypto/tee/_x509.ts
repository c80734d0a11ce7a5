/**
 * X.509 certificates and CRLs, reduced to what the TEE verifiers need (private). Parsing is
 * strict: one DER object with no trailing bytes, the inner and outer signature algorithms
 * equal, and only ECDSA (P-256, P-384) and RSASSA-PSS.
 *
 * @module
 */

import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { equalBytes, fromHex, toHex } from "../_bytes.ts";
import { memoKey, memoTable } from "./_memo.ts";
import type { CurveName, HashName, PublicKey, SignatureAlgorithm } from "./_signature.ts";
import { type AttestationCheck, AttestationError } from "./errors.ts";

/** Where a certificate comes from, for error messages. */
export interface CertContext {
  /** The check that fails when the certificate is malformed. */
  check: AttestationCheck;
  /** What the certificate is, e.g. "the PCK certificate chain". */
  label: string;
}

/** One X.509 extension. */
export interface CertExtension {
  /** Whether it is marked critical. */
  readonly critical: boolean;
  /** The DER contents of `extnValue`. */
  readonly value: Uint8Array;
}

/** A parsed certificate. */
export interface Certificate {
  /** The certificate's DER bytes. */
  readonly der: Uint8Array;
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

/** A parsed certificate revocation list. */
export interface RevocationList {
  /** DER bytes of `tbsCertList`, which the signature covers. */
  readonly tbs: Uint8Array;
  /** Raw DER of the issuer name. */
  readonly issuer: Uint8Array;
  /** The issuer's common name. */
  readonly issuerCn: string;
  /** Start of validity. */
  readonly thisUpdate: Date;
  /** End of validity (inclusive). */
  readonly nextUpdate: Date;
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

class ParseFailure extends Error {}

/** Parsed certificates and CRLs by their DER (parsing is pure; see `_memo.ts`). */
const parsedCertificates = memoTable<Certificate>(256);
const parsedCrls = memoTable<RevocationList>(32);

function fail(what: string): never {
  throw new ParseFailure(what);
}

/** Decodes exactly one DER object (no trailing bytes) or throws a plain `Error`. */
export function decodeDer(der: Uint8Array): asn1js.AsnType {
  const parsed = asn1js.fromBER(der as Uint8Array<ArrayBuffer>);
  if (parsed.offset === -1) fail(`not DER (${parsed.result.error || "decoding failed"})`);
  if (parsed.offset !== der.length) {
    fail(`${der.length - parsed.offset} bytes follow the DER object`);
  }
  // The decoder tolerates lengths that disagree with the content it reads (a constructed
  // element shorter than its children, indefinite lengths): re-encoding must give the input.
  if (!equalBytes(new Uint8Array(parsed.result.toBER(false)), der)) {
    fail("it is not in DER (an element's length or encoding is not canonical)");
  }
  return parsed.result;
}

/** The common name of a distinguished name, or "". */
export function commonName(name: pkijs.RelativeDistinguishedNames): string {
  for (const entry of name.typesAndValues) {
    if (entry.type === OID_CN) {
      const value = (entry.value as { valueBlock?: { value?: unknown } }).valueBlock?.value;
      return typeof value === "string" ? value : "";
    }
  }
  return "";
}

/** The DER of a decoded distinguished name, as it was encoded. */
export function rawName(name: pkijs.RelativeDistinguishedNames): Uint8Array {
  const raw = name.valueBeforeDecode;
  if (!raw || raw.byteLength === 0) fail("a name has no encoding");
  return new Uint8Array(raw);
}

function signatureAlgorithmOf(
  outer: pkijs.AlgorithmIdentifier,
  inner: pkijs.AlgorithmIdentifier,
): SignatureAlgorithm {
  const outerDer = new Uint8Array(outer.toSchema().toBER());
  const innerDer = new Uint8Array(inner.toSchema().toBER());
  if (!equalBytes(outerDer, innerDer)) fail("the inner and outer signature algorithms differ");
  return readSignatureAlgorithm(outer);
}

/**
 * The signature algorithm an algorithm identifier names: ECDSA with SHA-256/384/512, or
 * RSASSA-PSS with MGF1 of the same hash.
 *
 * @throws {Error} naming the unsupported algorithm (callers wrap it in their own error).
 */
export function readSignatureAlgorithm(outer: pkijs.AlgorithmIdentifier): SignatureAlgorithm {
  const ecdsa = ECDSA_HASHES[outer.algorithmId];
  if (ecdsa) return { kind: "ecdsa", hash: ecdsa };
  if (outer.algorithmId === OID_RSASSA_PSS) {
    if (!outer.algorithmParams) fail("RSASSA-PSS without parameters");
    const params = new pkijs.RSASSAPSSParams({ schema: outer.algorithmParams });
    const hash = HASHES[params.hashAlgorithm.algorithmId];
    if (!hash) fail(`RSASSA-PSS hash ${params.hashAlgorithm.algorithmId} is not supported`);
    if (params.maskGenAlgorithm.algorithmId !== OID_MGF1) fail("RSASSA-PSS mask is not MGF1");
    const mgfHash = new pkijs.AlgorithmIdentifier({
      schema: params.maskGenAlgorithm.algorithmParams,
    });
    if (HASHES[mgfHash.algorithmId] !== hash) fail("RSASSA-PSS MGF1 hash differs from the hash");
    if (params.trailerField !== 1) fail("RSASSA-PSS trailer field is not 1");
    return { kind: "rsa-pss", hash, saltLength: params.saltLength };
  }
  return fail(`signature algorithm ${outer.algorithmId} is not supported`);
}

function publicKeyOf(info: pkijs.PublicKeyInfo): PublicKey {
  const algorithm = info.algorithm.algorithmId;
  const keyBits = bitStringBytes(info.subjectPublicKey, "the public key");
  if (algorithm === OID_EC_PUBLIC_KEY) {
    const params = info.algorithm.algorithmParams;
    const curveOid = params instanceof asn1js.ObjectIdentifier ? params.valueBlock.toString() : "";
    const curve = CURVES[curveOid];
    if (!curve) fail(`EC curve ${curveOid || "(none)"} is not supported`);
    const expected = curve === "P-256" ? 65 : 97;
    if (keyBits.length !== expected || keyBits[0] !== 4) {
      fail(`${curve} public key must be ${expected} uncompressed bytes, found ${keyBits.length}`);
    }
    return { kind: "ec", curve, point: keyBits };
  }
  if (algorithm === OID_RSA_ENCRYPTION) {
    const parsed = info.parsedKey;
    if (!(parsed instanceof pkijs.RSAPublicKey)) fail("RSA public key does not parse");
    const modulus = new Uint8Array(parsed.modulus.valueBlock.valueHexView);
    let start = 0;
    while (start < modulus.length && modulus[start] === 0) start++;
    const bits = (modulus.length - start) * 8 -
      (start < modulus.length ? Math.clz32(modulus[start]) - 24 : 0);
    return { kind: "rsa", spki: new Uint8Array(info.toSchema().toBER()), bits };
  }
  return fail(`public key algorithm ${algorithm} is not supported`);
}

/** The bytes of a BIT STRING that must be whole bytes (a key or a signature). */
export function bitStringBytes(bits: asn1js.BitString, what: string): Uint8Array {
  if (bits.valueBlock.unusedBits !== 0) {
    fail(`${what} has ${bits.valueBlock.unusedBits} unused bits, expected whole bytes`);
  }
  return new Uint8Array(bits.valueBlock.valueHexView);
}

/** A serial number as lower-case hex without leading zero bytes. */
export function serialHex(value: asn1js.Integer): string {
  const bytes = new Uint8Array(value.valueBlock.valueHexView);
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  return toHex(bytes.subarray(start));
}

function readKeyUsage(value: Uint8Array): number {
  const parsed = decodeDer(value);
  if (!(parsed instanceof asn1js.BitString)) fail("keyUsage is not a BIT STRING");
  const bits = new Uint8Array(parsed.valueBlock.valueHexView);
  let out = 0;
  for (let bit = 0; bit < 16 && bit / 8 < bits.length; bit++) {
    if (bits[bit >> 3] & (0x80 >> (bit & 7))) out |= 1 << bit;
  }
  return out;
}

function readBasicConstraints(
  value: Uint8Array,
): { ca: boolean; pathLength: number | null } {
  const parsed = new pkijs.BasicConstraints({ schema: decodeDer(value) });
  const length = parsed.pathLenConstraint;
  const pathLength = length === undefined
    ? null
    : typeof length === "number"
    ? length
    : length.valueBlock.valueDec;
  return { ca: parsed.cA === true, pathLength };
}

/**
 * Parses one DER certificate.
 *
 * @throws {AttestationError} `malformed` naming `context.label`.
 */
export function parseCertificate(der: Uint8Array, context: CertContext): Certificate {
  const id = memoKey("certificate", der);
  const cached = parsedCertificates.get(id);
  if (cached) return cached;
  const parsed = parseCertificateUncached(der.slice(), context);
  parsedCertificates.set(id, parsed);
  return parsed;
}

function parseCertificateUncached(der: Uint8Array, context: CertContext): Certificate {
  try {
    const cert = new pkijs.Certificate({ schema: decodeDer(der) });
    const extensions = new Map<string, CertExtension>();
    for (const extension of cert.extensions ?? []) {
      if (extensions.has(extension.extnID)) fail(`extension ${extension.extnID} appears twice`);
      extensions.set(extension.extnID, {
        critical: extension.critical === true,
        value: new Uint8Array(extension.extnValue.valueBlock.valueHexView),
      });
    }
    const basic = extensions.get(OID_BASIC_CONSTRAINTS);
    const usage = extensions.get(OID_KEY_USAGE);
    if (cert.version !== 2) fail(`version ${cert.version + 1} is not X.509 v3`);
    return {
      der,
      tbs: new Uint8Array(cert.tbsView),
      serial: serialHex(cert.serialNumber),
      subject: rawName(cert.subject),
      issuer: rawName(cert.issuer),
      subjectCn: commonName(cert.subject),
      issuerCn: commonName(cert.issuer),
      notBefore: cert.notBefore.value,
      notAfter: cert.notAfter.value,
      signatureAlgorithm: signatureAlgorithmOf(cert.signatureAlgorithm, cert.signature),
      signature: bitStringBytes(cert.signatureValue, "the signature"),
      publicKey: publicKeyOf(cert.subjectPublicKeyInfo),
      extensions,
      basicConstraints: basic ? readBasicConstraints(basic.value) : null,
      keyUsage: usage ? readKeyUsage(usage.value) : null,
    };
  } catch (cause) {
    throw new AttestationError(
      "malformed",
      context.check,
      `Cannot verify attestation: ${context.label} holds a certificate that does not parse (${
        cause instanceof Error ? cause.message : String(cause)
      })`,
      { cause },
    );
  }
}

const PEM_BLOCK =
  /-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]+?)\r?\n?-----END CERTIFICATE-----/y;

/**
 * Parses a PEM chain: certificate blocks separated by whitespace, nothing else. The order is
 * kept (leaf first).
 *
 * @throws {AttestationError} `malformed` naming `context.label`.
 */
export function parsePemChain(text: string, context: CertContext): Certificate[] {
  const certs: Certificate[] = [];
  let at = 0;
  const skipSpace = () => {
    while (at < text.length && /\s/.test(text[at])) at++;
  };
  skipSpace();
  while (at < text.length) {
    PEM_BLOCK.lastIndex = at;
    const match = PEM_BLOCK.exec(text);
    if (!match) {
      throw new AttestationError(
        "malformed",
        context.check,
        `Cannot verify attestation: ${context.label} is not a PEM certificate chain (unexpected ` +
          `text at character ${at}: ${JSON.stringify(text.slice(at, at + 20))})`,
      );
    }
    const base64 = match[1].replace(/[\r\n]/g, "");
    let der: Uint8Array;
    try {
      der = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    } catch (cause) {
      throw new AttestationError(
        "malformed",
        context.check,
        `Cannot verify attestation: ${context.label} has a PEM block that is not base64`,
        { cause },
      );
    }
    certs.push(parseCertificate(der, context));
    at = PEM_BLOCK.lastIndex;
    skipSpace();
  }
  if (certs.length === 0) {
    throw new AttestationError(
      "malformed",
      context.check,
      `Cannot verify attestation: ${context.label} holds no certificate`,
    );
  }
  return certs;
}

/**
 * Parses a DER CRL. A CRL without `nextUpdate` is refused (freshness cannot be judged).
 *
 * @throws {AttestationError} `malformed` naming `context.label`.
 */
export function parseRevocationList(der: Uint8Array, context: CertContext): RevocationList {
  const id = memoKey("crl", der);
  const cached = parsedCrls.get(id);
  if (cached) return cached;
  const parsed = parseRevocationListUncached(der, context);
  parsedCrls.set(id, parsed);
  return parsed;
}

function parseRevocationListUncached(der: Uint8Array, context: CertContext): RevocationList {
  try {
    const crl = new pkijs.CertificateRevocationList({ schema: decodeDer(der) });
    if (!crl.nextUpdate) fail("it has no nextUpdate");
    const revoked = new Set<string>();
    for (const entry of crl.revokedCertificates ?? []) {
      revoked.add(serialHex(entry.userCertificate));
    }
    return {
      tbs: new Uint8Array(crl.tbsView),
      issuer: rawName(crl.issuer),
      issuerCn: commonName(crl.issuer),
      thisUpdate: crl.thisUpdate.value,
      nextUpdate: crl.nextUpdate.value,
      revoked,
      signatureAlgorithm: signatureAlgorithmOf(crl.signatureAlgorithm, crl.signature),
      signature: bitStringBytes(crl.signatureValue, "the signature"),
    };
  } catch (cause) {
    throw new AttestationError(
      "malformed",
      context.check,
      `Cannot verify attestation: ${context.label} is not a valid CRL (${
        cause instanceof Error ? cause.message : String(cause)
      })`,
      { cause },
    );
  }
}

/** Parses the DER of a certificate given as PEM or DER bytes (for roots given by callers). */
export function certificateFromPemOrDer(
  input: Uint8Array | string,
  context: CertContext,
): Certificate {
  if (typeof input === "string") {
    const chain = parsePemChain(input, context);
    if (chain.length !== 1) {
      throw new AttestationError(
        "malformed",
        context.check,
        `Cannot verify attestation: ${context.label} must be one certificate, found ${chain.length}`,
      );
    }
    return chain[0];
  }
  return parseCertificate(input, context);
}

/** Decodes hex (with or without `0x`) or throws `malformed` naming the field. */
export function hexField(text: unknown, context: CertContext): Uint8Array {
  const bytes = typeof text === "string" ? fromHex(text) : null;
  if (!bytes || bytes.length === 0) {
    throw new AttestationError(
      "malformed",
      context.check,
      `Cannot verify attestation: ${context.label} must be non-empty hex`,
    );
  }
  return bytes;
}
