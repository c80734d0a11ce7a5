/**
 * OCSP responses (RFC 6960), reduced to what the GPU revocation check needs (private):
 * a successful basic response, its responder, the exact bytes its signature covers, the
 * certificates it carries, and each single response's certificate id, status and validity.
 * Parsing is strict and memoized by the response's bytes, like certificates and CRLs.
 *
 * @module
 */

import {
  childrenOf,
  content,
  contextTag,
  DerError,
  type DerNode,
  encoded,
  expectTag,
  readOid,
  readRoot,
  readSigned,
  readTime,
  readWholeBitString,
  TAG,
} from "../_der.ts";
import { memoKey, memoTable } from "../_memo.ts";
import type { HashName, SignatureAlgorithm } from "../_signature.ts";
import { type Certificate, parseCertificate } from "../_x509.ts";
import { commonName, readSignatureAlgorithm, serialHex } from "../_x509_read.ts";
import { AttestationError } from "../errors.ts";

const OID_OCSP_BASIC = "1.3.6.1.5.5.7.48.1.1";
/** Hashes a certificate id may use. */
const CERT_ID_HASHES: Record<string, HashName | "SHA-1"> = {
  "1.3.14.3.2.26": "SHA-1",
  "2.16.840.1.101.3.4.2.1": "SHA-256",
  "2.16.840.1.101.3.4.2.2": "SHA-384",
  "2.16.840.1.101.3.4.2.3": "SHA-512",
};

/** One certificate's status in a response. */
export interface OcspSingleResponse {
  /** The hash of the certificate id. */
  readonly hash: HashName | "SHA-1";
  /** Hash of the issuer's distinguished name (DER). */
  readonly issuerNameHash: Uint8Array;
  /** Hash of the issuer's public key (the BIT STRING's contents). */
  readonly issuerKeyHash: Uint8Array;
  /** The certificate's serial (lower-case hex, no leading zero bytes). */
  readonly serial: string;
  /** `good`, `revoked` or `unknown`. */
  readonly status: "good" | "revoked" | "unknown";
  /** When it was revoked (revoked only). */
  readonly revokedAt: Date | null;
  /** Start of validity. */
  readonly thisUpdate: Date;
  /** End of validity (`null`: absent, which the verifier refuses). */
  readonly nextUpdate: Date | null;
}

/** A parsed basic OCSP response. */
export interface OcspResponse {
  /** The responder's name (DER), when it is identified by name. */
  readonly responderName: Uint8Array | null;
  /** The responder's common name, for messages ("" when identified by key). */
  readonly responderCn: string;
  /** SHA-1 of the responder's public key, when it is identified by key. */
  readonly responderKeyHash: Uint8Array | null;
  /** The DER of `tbsResponseData`, which the signature covers. */
  readonly tbs: Uint8Array;
  /** How it is signed. */
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** The signature (DER for ECDSA). */
  readonly signature: Uint8Array;
  /** The certificates the response carries (a delegated responder and its issuers). */
  readonly certs: readonly Certificate[];
  /** The single responses. */
  readonly responses: readonly OcspSingleResponse[];
}

const parsed = memoTable<OcspResponse>(64);

/**
 * Parses the DER of an `OCSPResponse`: it must be successful and basic.
 *
 * @throws {AttestationError} `malformed`, check `gpu_collateral`, naming `label`.
 */
export function parseOcspResponse(der: Uint8Array, label: string): OcspResponse {
  const id = memoKey("ocsp", der);
  const cached = parsed.get(id);
  if (cached) return cached;
  let response: OcspResponse;
  try {
    response = parseUncached(der.slice(), label);
  } catch (cause) {
    if (cause instanceof AttestationError) throw cause;
    throw new AttestationError(
      "malformed",
      "gpu_collateral",
      `Cannot verify attestation: ${label} is not a valid OCSP response (${
        cause instanceof Error ? cause.message : String(cause)
      })`,
      { cause },
    );
  }
  parsed.set(id, response);
  return response;
}

function parseUncached(der: Uint8Array, label: string): OcspResponse {
  const [status, bytes, ...more] = childrenOf(readRoot(der), TAG.sequence, "the response");
  const code = content(expectTag(status, TAG.enumerated, "the response status"));
  if (code.length !== 1 || code[0] !== 0) {
    throw new DerError(`its status is ${code[0]}, not successful (0)`);
  }
  if (!bytes || more.length) throw new DerError("it carries no response bytes");
  const [body] = childrenOf(bytes, contextTag(0, true), "the response bytes");
  const [type, octets] = childrenOf(body, TAG.sequence, "the response bytes");
  if (readOid(type, "the response type") !== OID_OCSP_BASIC) {
    throw new DerError("it is not a basic OCSP response");
  }
  const basic = readRoot(content(expectTag(octets, TAG.octetString, "the basic response")));
  const { tbs, fields, algorithm, signature, more: after } = readSigned(
    basic,
    "the basic response",
    "the response data",
  );
  const [certList, ...extra] = after;
  if (extra.length) throw new DerError("the basic response has extra fields");
  let at = 0;
  if (fields[at]?.tag === contextTag(0, true)) at++; // version: v1 is the only one
  const responder = fields[at++];
  readTime(fields[at++], "producedAt");
  const singles = childrenOf(fields[at++], TAG.sequence, "the responses").map(single);
  if (fields[at]?.tag === contextTag(1, true)) at++; // response extensions: none is used
  if (at !== fields.length) throw new DerError("the response data has unknown fields");
  const [responderValue] = childrenOf(responder, responder?.tag ?? 0, "the responder id");
  const byName = responder?.tag === contextTag(1, true);
  if (!byName && responder?.tag !== contextTag(2, true)) {
    throw new DerError("its responder id is neither a name nor a key hash");
  }
  const certs = certList
    ? childrenOf(
      childrenOf(certList, contextTag(0, true), "the certificates")[0],
      TAG.sequence,
      "the certificates",
    )
      .map((cert, i) =>
        parseCertificate(encoded(cert), {
          check: "gpu_collateral",
          label: `${label}'s certificate #${i + 1}`,
        })
      )
    : [];
  return {
    responderName: byName
      ? encoded(expectTag(responderValue, TAG.sequence, "the responder name"))
      : null,
    responderCn: byName ? commonName(responderValue) : "",
    responderKeyHash: byName
      ? null
      : content(expectTag(responderValue, TAG.octetString, "the key hash")),
    tbs: encoded(tbs),
    signatureAlgorithm: readSignatureAlgorithm(algorithm),
    signature: readWholeBitString(signature, "the signature"),
    certs,
    responses: singles,
  };
}

function single(node: DerNode): OcspSingleResponse {
  const fields = childrenOf(node, TAG.sequence, "a single response");
  const [certId, status, thisUpdate] = fields;
  const [hashAlgorithm, nameHash, keyHash, serial, ...more] = childrenOf(
    certId,
    TAG.sequence,
    "a certificate id",
  );
  if (more.length) throw new DerError("a certificate id has extra fields");
  const hashOid = readOid(
    childrenOf(hashAlgorithm, TAG.sequence, "a certificate id hash")[0],
    "a certificate id hash",
  );
  const hash = CERT_ID_HASHES[hashOid];
  if (!hash) throw new DerError(`certificate id hash ${hashOid} unknown`);
  let revokedAt: Date | null = null;
  let state: OcspSingleResponse["status"];
  if (status?.tag === contextTag(0, false) && status.end === status.contentStart) state = "good";
  else if (status?.tag === contextTag(2, false) && status.end === status.contentStart) {
    state = "unknown";
  } else if (status?.tag === contextTag(1, true)) {
    state = "revoked";
    revokedAt = readTime(children1(status), "the revocation time");
  } else throw new DerError("a certificate status is not good, revoked or unknown");
  let at = 3;
  let nextUpdate: Date | null = null;
  if (fields[at]?.tag === contextTag(0, true)) {
    nextUpdate = readTime(
      childrenOf(fields[at++], contextTag(0, true), "nextUpdate")[0],
      "nextUpdate",
    );
  }
  if (fields[at]?.tag === contextTag(1, true)) at++; // single extensions: none is used
  if (at !== fields.length) throw new DerError("a single response has unknown fields");
  return {
    hash,
    issuerNameHash: content(expectTag(nameHash, TAG.octetString, "the issuer name hash")),
    issuerKeyHash: content(expectTag(keyHash, TAG.octetString, "the issuer key hash")),
    serial: serialHex(serial, "a certificate id serial"),
    status: state,
    revokedAt,
    thisUpdate: readTime(thisUpdate, "thisUpdate"),
    nextUpdate,
  };
}

function children1(node: DerNode): DerNode | undefined {
  return childrenOf(node, node.tag, "the revoked info")[0];
}
