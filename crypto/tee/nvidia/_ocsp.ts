/**
 * OCSP responses (RFC 6960), reduced to what the GPU revocation check needs (private):
 * a successful basic response, its responder, the exact bytes its signature covers, the
 * certificates it carries, and each single response's certificate id, status and validity.
 * Parsing is strict and memoized by the response's bytes, like certificates and CRLs.
 *
 * @module
 */

import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { memoKey, memoTable } from "../_memo.ts";
import type { HashName, SignatureAlgorithm } from "../_signature.ts";
import {
  bitStringBytes,
  type Certificate,
  commonName,
  decodeDer,
  parseCertificate,
  rawName,
  readSignatureAlgorithm,
  serialHex,
} from "../_x509.ts";
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
  const outer = new pkijs.OCSPResponse({ schema: decodeDer(der) });
  const status = outer.responseStatus.valueBlock.valueDec;
  if (status !== 0) throw new Error(`its status is ${status}, not successful (0)`);
  if (!outer.responseBytes || outer.responseBytes.responseType !== OID_OCSP_BASIC) {
    throw new Error("it is not a basic OCSP response");
  }
  const basic = new pkijs.BasicOCSPResponse({
    schema: decodeDer(new Uint8Array(outer.responseBytes.response.valueBlock.valueHexView)),
  });
  const data = basic.tbsResponseData;
  const responder = data.responderID as unknown;
  const byName = responder instanceof pkijs.RelativeDistinguishedNames;
  const keyHash = !byName && responder instanceof asn1js.OctetString
    ? new Uint8Array(responder.valueBlock.valueHexView)
    : null;
  if (!byName && !keyHash) throw new Error("its responder id is neither a name nor a key hash");
  const certs = (basic.certs ?? []).map((cert, i) =>
    parseCertificate(new Uint8Array(cert.toSchema().toBER(false)), {
      check: "gpu_collateral",
      label: `${label}'s certificate #${i + 1}`,
    })
  );
  return {
    responderName: byName ? rawName(responder) : null,
    responderCn: byName ? commonName(responder) : "",
    responderKeyHash: keyHash,
    tbs: new Uint8Array(data.tbsView),
    signatureAlgorithm: readSignatureAlgorithm(basic.signatureAlgorithm),
    signature: bitStringBytes(basic.signature, "the signature"),
    certs,
    responses: data.responses.map(single),
  };
}

function single(response: pkijs.SingleResponse): OcspSingleResponse {
  const hash = CERT_ID_HASHES[response.certID.hashAlgorithm.algorithmId];
  if (!hash) {
    throw new Error(`certificate id hash ${response.certID.hashAlgorithm.algorithmId} unknown`);
  }
  const status = response.certStatus as { idBlock: { tagClass: number; tagNumber: number } };
  const tag = status.idBlock.tagClass === 3 ? status.idBlock.tagNumber : -1;
  if (tag < 0 || tag > 2) throw new Error("a certificate status is not good, revoked or unknown");
  let revokedAt: Date | null = null;
  if (tag === 1) {
    const time = (status as unknown as { valueBlock: { value: asn1js.AsnType[] } }).valueBlock
      .value[0];
    revokedAt = time instanceof asn1js.GeneralizedTime ? time.toDate() : null;
  }
  return {
    hash,
    issuerNameHash: new Uint8Array(response.certID.issuerNameHash.valueBlock.valueHexView),
    issuerKeyHash: new Uint8Array(response.certID.issuerKeyHash.valueBlock.valueHexView),
    serial: serialHex(response.certID.serialNumber),
    status: tag === 0 ? "good" : tag === 1 ? "revoked" : "unknown",
    revokedAt,
    thisUpdate: response.thisUpdate,
    nextUpdate: response.nextUpdate ?? null,
  };
}
