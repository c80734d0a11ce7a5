/**
 * The firmware id of an NVIDIA attestation certificate (private): the TCG DICE `TcbInfo`
 * extension (OID 2.23.133.5.4.1) of the GPU's attestation key certificate names the SHA-384
 * digest of the firmware that holds the key. NVIDIA encodes it as a SEQUENCE that contains a
 * `SEQUENCE { hashAlgorithm OID, digest OCTET STRING }`; the TCG's standard encoding puts
 * the same pair in a `[6] fwids` list. Both are read by walking the value for such pairs.
 *
 * @module
 */

import { childrenOf, content, type DerNode, readOid, readRoot, TAG } from "../_der.ts";
import type { Certificate } from "../_x509.ts";

/** OID of the TCG DICE `TcbInfo` extension. */
export const DICE_TCB_INFO_OID = "2.23.133.5.4.1";
const SHA384_OID = "2.16.840.1.101.3.4.2.2";

/** The outcome of reading a certificate's FWID. */
export type FwidReading =
  | { readonly ok: true; readonly fwid: Uint8Array }
  | { readonly ok: false; readonly problem: string };

/**
 * Reads the SHA-384 FWID from a certificate's DICE `TcbInfo` extension: exactly one is
 * expected.
 */
export function readFwid(cert: Certificate): FwidReading {
  const extension = cert.extensions.get(DICE_TCB_INFO_OID);
  if (!extension) {
    return { ok: false, problem: `has no FWID extension (${DICE_TCB_INFO_OID})` };
  }
  const found: Uint8Array[] = [];
  try {
    collect(readRoot(extension.value), found, 0);
  } catch (cause) {
    return {
      ok: false,
      problem: `has an FWID extension that is not DER (${(cause as Error).message})`,
    };
  }
  if (found.length !== 1) {
    return {
      ok: false,
      problem: `has ${found.length} SHA-384 FWIDs in its ${DICE_TCB_INFO_OID} extension, ` +
        "expected exactly 1",
    };
  }
  return { ok: true, fwid: found[0] };
}

/** Collects every `SEQUENCE { sha384 OID, OCTET STRING (48) }` below `node`. */
function collect(node: DerNode, out: Uint8Array[], depth: number): void {
  if (depth > 8 || (node.tag & 0x20) === 0) return;
  const children = childrenOf(node, node.tag, "the FWID extension");
  const [first, second] = children;
  if (
    node.tag === TAG.sequence && children.length === 2 && first.tag === TAG.oid &&
    readOid(first, "a hash algorithm") === SHA384_OID && second.tag === TAG.octetString
  ) {
    const digest = content(second);
    if (digest.length === 48) out.push(digest.slice());
    return;
  }
  for (const child of children) collect(child, out, depth + 1);
}
