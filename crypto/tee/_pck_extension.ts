/**
 * The Intel SGX extension of a PCK certificate (OID 1.2.840.113741.1.13.1), reduced to the
 * fields TCB evaluation needs (private). Layout: Intel "SGX PCK Certificate and Certificate
 * Revocation List Profile Specification", section 1.5.
 *
 * @module
 */

import {
  childrenOf,
  content,
  type DerNode,
  readOid,
  readRoot,
  readSmallInteger,
  TAG,
} from "./_der.ts";
import type { Certificate } from "./_x509.ts";
import { AttestationError } from "./errors.ts";
import type { PckPlatform } from "./tdx_verify.ts";

/** OID of the SGX extension. */
export const SGX_EXTENSION_OID = "1.2.840.113741.1.13.1";

class ExtensionFailure extends Error {}

function entries(node: DerNode | undefined, what: string): Map<string, DerNode> {
  if (!node || node.tag !== TAG.sequence) throw new ExtensionFailure(`${what} is not a SEQUENCE`);
  const out = new Map<string, DerNode>();
  for (const item of childrenOf(node, TAG.sequence, what)) {
    const pair = item.tag === TAG.sequence ? childrenOf(item, TAG.sequence, what) : [];
    if (pair.length !== 2) {
      throw new ExtensionFailure(`${what} has an entry that is not (OID, value)`);
    }
    if (pair[0].tag !== TAG.oid) throw new ExtensionFailure(`${what} has an entry without an OID`);
    const id = readOid(pair[0], `an entry of ${what}`);
    if (out.has(id)) throw new ExtensionFailure(`${what} has ${id} twice`);
    out.set(id, pair[1]);
  }
  return out;
}

function octets(map: Map<string, DerNode>, oid: string, name: string, length: number) {
  const value = map.get(oid);
  if (!value || value.tag !== TAG.octetString) throw new ExtensionFailure(`${name} is missing`);
  const bytes = content(value);
  if (bytes.length !== length) {
    throw new ExtensionFailure(`${name} must be ${length} bytes, found ${bytes.length}`);
  }
  return bytes;
}

function integer(map: Map<string, DerNode>, oid: string, name: string): number {
  const value = map.get(oid);
  if (!value || value.tag !== TAG.integer) throw new ExtensionFailure(`${name} is missing`);
  const number = readSmallInteger(value, name);
  if (number > 0xffff) throw new ExtensionFailure(`${name} is out of range (${number})`);
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
    const top = entries(readRoot(extension.value), "the SGX extension");
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
