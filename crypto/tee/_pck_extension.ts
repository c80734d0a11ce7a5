/**
 * The Intel SGX extension of a PCK certificate (OID 1.2.840.113741.1.13.1), reduced to the
 * fields TCB evaluation needs (private). Layout: Intel "SGX PCK Certificate and Certificate
 * Revocation List Profile Specification", section 1.5.
 *
 * @module
 */

import * as asn1js from "asn1js";
import type { Certificate } from "./_x509.ts";
import { AttestationError } from "./errors.ts";
import type { PckPlatform } from "./tdx_verify.ts";

/** OID of the SGX extension. */
export const SGX_EXTENSION_OID = "1.2.840.113741.1.13.1";

class ExtensionFailure extends Error {}

function entries(node: asn1js.AsnType, what: string): Map<string, asn1js.AsnType> {
  if (!(node instanceof asn1js.Sequence)) throw new ExtensionFailure(`${what} is not a SEQUENCE`);
  const out = new Map<string, asn1js.AsnType>();
  for (const item of node.valueBlock.value) {
    if (!(item instanceof asn1js.Sequence) || item.valueBlock.value.length !== 2) {
      throw new ExtensionFailure(`${what} has an entry that is not (OID, value)`);
    }
    const [oid, value] = item.valueBlock.value;
    if (!(oid instanceof asn1js.ObjectIdentifier)) {
      throw new ExtensionFailure(`${what} has an entry without an OID`);
    }
    const id = oid.valueBlock.toString();
    if (out.has(id)) throw new ExtensionFailure(`${what} has ${id} twice`);
    out.set(id, value);
  }
  return out;
}

function octets(map: Map<string, asn1js.AsnType>, oid: string, name: string, length: number) {
  const value = map.get(oid);
  if (!(value instanceof asn1js.OctetString)) throw new ExtensionFailure(`${name} is missing`);
  const bytes = new Uint8Array(value.valueBlock.valueHexView);
  if (bytes.length !== length) {
    throw new ExtensionFailure(`${name} must be ${length} bytes, found ${bytes.length}`);
  }
  return bytes;
}

function integer(map: Map<string, asn1js.AsnType>, oid: string, name: string): number {
  const value = map.get(oid);
  if (!(value instanceof asn1js.Integer)) throw new ExtensionFailure(`${name} is missing`);
  const number = value.valueBlock.valueDec;
  if (!Number.isSafeInteger(number) || number < 0 || number > 0xffff) {
    throw new ExtensionFailure(`${name} is out of range (${number})`);
  }
  return number;
}

/**
 * Reads the SGX extension of a PCK leaf certificate.
 *
 * @throws {AttestationError} `malformed` with check `pck_chain`.
 */
export function readPckPlatform(cert: Certificate): PckPlatform {
  try {
    const extension = cert.extensions.get(SGX_EXTENSION_OID);
    if (!extension) throw new ExtensionFailure("the certificate has no SGX extension");
    const parsed = asn1js.fromBER(extension.value as Uint8Array<ArrayBuffer>);
    if (parsed.offset !== extension.value.length) {
      throw new ExtensionFailure("the SGX extension is not one DER object");
    }
    const top = entries(parsed.result, "the SGX extension");
    const tcbNode = top.get(`${SGX_EXTENSION_OID}.2`);
    if (!tcbNode) throw new ExtensionFailure("TCB is missing");
    const tcb = entries(tcbNode, "TCB");
    const sgxComponents: number[] = [];
    for (let i = 1; i <= 16; i++) {
      const svn = integer(tcb, `${SGX_EXTENSION_OID}.2.${i}`, `SGX TCB component ${i}`);
      if (svn > 0xff) throw new ExtensionFailure(`SGX TCB component ${i} is out of range (${svn})`);
      sgxComponents.push(svn);
    }
    return {
      fmspc: octets(top, `${SGX_EXTENSION_OID}.4`, "FMSPC", 6),
      pceId: octets(top, `${SGX_EXTENSION_OID}.3`, "PCE-ID", 2),
      sgxComponents,
      pceSvn: integer(tcb, `${SGX_EXTENSION_OID}.2.17`, "PCESVN"),
      cpuSvn: octets(tcb, `${SGX_EXTENSION_OID}.2.18`, "CPUSVN", 16),
    };
  } catch (cause) {
    throw new AttestationError(
      "malformed",
      "pck_chain",
      `Cannot verify attestation: the PCK certificate's SGX extension does not parse (${
        cause instanceof Error ? cause.message : String(cause)
      })`,
      { cause },
    );
  }
}
