/**
 * X.509 certificates and CRLs, reduced to what the TEE verifiers need (private). Parsing is
 * strict (`_x509_read.ts` over the DER reader of `_der.ts`): one DER object with no trailing
 * bytes, canonical lengths, the inner and outer signature algorithms equal, and only ECDSA
 * (P-256, P-384) and RSASSA-PSS. Parsed certificates and CRLs are memoized by their bytes.
 *
 * @module
 */

import { fromHex } from "../_bytes.ts";
import { memoKey, memoTable } from "./_memo.ts";
import { type CertificateFields, type CrlFields, readCertificate, readCrl } from "./_x509_read.ts";
import { type AttestationCheck, AttestationError } from "./errors.ts";

export type { CertExtension } from "./_x509_read.ts";

/** Where a certificate comes from, for error messages. */
export interface CertContext {
  /** The check that fails when the certificate is malformed. */
  check: AttestationCheck;
  /** What the certificate is, e.g. "the PCK certificate chain". */
  label: string;
}

/** A parsed certificate: its DER bytes and the fields `_x509_read.ts` reads. */
export interface Certificate extends CertificateFields {
  /** The certificate's DER bytes. */
  readonly der: Uint8Array;
}

/** A parsed certificate revocation list (one with a `nextUpdate`). */
export interface RevocationList extends CrlFields {
  /** End of validity (inclusive). */
  readonly nextUpdate: Date;
}

/** Parsed certificates and CRLs by their DER (parsing is pure; see `_memo.ts`). */
const parsedCertificates = memoTable<Certificate>(256);
const parsedCrls = memoTable<RevocationList>(32);

function reason(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
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
  const copy = der.slice();
  let parsed: Certificate;
  try {
    parsed = { der: copy, ...readCertificate(copy) };
  } catch (cause) {
    throw new AttestationError(
      "malformed",
      context.check,
      `Cannot verify attestation: ${context.label} holds a certificate that does not parse (${
        reason(cause)
      })`,
      { cause },
    );
  }
  parsedCertificates.set(id, parsed);
  return parsed;
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
  let parsed: RevocationList;
  try {
    const fields = readCrl(der.slice());
    if (!fields.nextUpdate) throw new Error("it has no nextUpdate");
    parsed = { ...fields, nextUpdate: fields.nextUpdate };
  } catch (cause) {
    throw new AttestationError(
      "malformed",
      context.check,
      `Cannot verify attestation: ${context.label} is not a valid CRL (${reason(cause)})`,
      { cause },
    );
  }
  parsedCrls.set(id, parsed);
  return parsed;
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
