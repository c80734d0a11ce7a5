/**
 * A strict DER reader for the structures on the TEE verification path (private):
 * certificates, CRLs, OCSP responses and the vendors' extensions. It reads tag–length–value
 * nodes in place (no copies, no object per byte), and refuses what DER forbids: indefinite or
 * non-minimal lengths, multi-byte tags, content that its children do not fill exactly,
 * non-minimal integers, booleans other than `00`/`FF`.
 *
 * It exists for speed: a daemon verifies a TEE provider's whole chain and collateral before
 * every request, and a general ASN.1 library spends tens of milliseconds on a CRL of a few
 * kilobytes. `asn1js`/`pkijs` remain the oracle: the tests compare what this reader extracts
 * from every vector certificate and CRL with what `pkijs` extracts.
 *
 * @module
 */

import { NetError } from "../../errors.ts";

/** Thrown for bytes that are not DER; callers wrap it in their own error. */
export class DerError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "DerError" as const;
}

/** One node: where its header, content and end are in `bytes`. */
export interface DerNode {
  /** The buffer the node is in. */
  readonly bytes: Uint8Array;
  /** The identifier octet (class, constructed bit and tag number). */
  readonly tag: number;
  /** Offset of the identifier octet. */
  readonly start: number;
  /** Offset of the content. */
  readonly contentStart: number;
  /** Offset after the content. */
  readonly end: number;
}

/** Identifier octets of the universal types the verifiers read. */
export const TAG = Object.freeze({
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  null: 0x05,
  oid: 0x06,
  enumerated: 0x0a,
  utf8String: 0x0c,
  printableString: 0x13,
  teletexString: 0x14,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  bmpString: 0x1e,
  sequence: 0x30,
  set: 0x31,
});

/** The tag of a context-specific `[n]` node, constructed or primitive. */
export function contextTag(n: number, constructed: boolean): number {
  return 0x80 | (constructed ? 0x20 : 0) | n;
}

/** Reads the node at `offset`, which must end at or before `limit`. */
export function readNode(bytes: Uint8Array, offset: number, limit = bytes.length): DerNode {
  if (offset + 2 > limit) throw new DerError(`a node at offset ${offset} is cut short`);
  const tag = bytes[offset];
  if ((tag & 0x1f) === 0x1f) throw new DerError(`multi-byte tag at offset ${offset}`);
  let length = bytes[offset + 1];
  let contentStart = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0) throw new DerError(`indefinite length at offset ${offset}`);
    if (count > 4 || contentStart + count > limit) {
      throw new DerError(`length of ${count} bytes at offset ${offset}`);
    }
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[contentStart + i];
    if (bytes[contentStart] === 0 || length < 0x80) {
      throw new DerError(`non-minimal length at offset ${offset}`);
    }
    contentStart += count;
  }
  const end = contentStart + length;
  if (end > limit) {
    throw new DerError(
      `a node at offset ${offset} claims ${length} bytes, ${limit - contentStart} left`,
    );
  }
  return { bytes, tag, start: offset, contentStart, end };
}

/** The single node that fills `bytes` exactly. */
export function readRoot(bytes: Uint8Array): DerNode {
  const node = readNode(bytes, 0);
  if (node.end !== bytes.length) {
    throw new DerError(`${bytes.length - node.end} bytes follow the DER object`);
  }
  return node;
}

/** The node's children: its content must be a whole number of nodes. */
export function children(node: DerNode): DerNode[] {
  if ((node.tag & 0x20) === 0) throw new DerError(`tag 0x${node.tag.toString(16)} is primitive`);
  const out: DerNode[] = [];
  let at = node.contentStart;
  while (at < node.end) {
    const child = readNode(node.bytes, at, node.end);
    out.push(child);
    at = child.end;
  }
  return out;
}

/** The node's children, checking its tag first. */
export function childrenOf(node: DerNode, tag: number, what: string): DerNode[] {
  expectTag(node, tag, what);
  return children(node);
}

/** The parts of a signed structure, `SEQUENCE { tbs, signatureAlgorithm, signatureValue, ... }`. */
export interface SignedNode {
  /** The signed part (its DER is what the signature covers). */
  readonly tbs: DerNode;
  /** The signed part's fields. */
  readonly fields: DerNode[];
  /** `signatureAlgorithm`. */
  readonly algorithm: DerNode;
  /** `signatureValue`. */
  readonly signature: DerNode;
  /** What follows the signature (e.g. an OCSP response's certificates). */
  readonly more: DerNode[];
}

/**
 * Reads a signed structure (a certificate, a CRL, a basic OCSP response): `node` and its signed
 * part must be SEQUENCEs; `what` and `tbsWhat` name them in errors.
 */
export function readSigned(node: DerNode, what: string, tbsWhat: string): SignedNode {
  const [tbs, algorithm, signature, ...more] = childrenOf(node, TAG.sequence, what);
  const fields = childrenOf(expectTag(tbs, TAG.sequence, tbsWhat), TAG.sequence, tbsWhat);
  return { tbs, fields, algorithm, signature, more };
}

/** Throws unless the node has the tag. */
export function expectTag(node: DerNode | undefined, tag: number, what: string): DerNode {
  if (!node) throw new DerError(`${what} is missing`);
  if (node.tag !== tag) {
    throw new DerError(
      `${what} has tag 0x${node.tag.toString(16)}, expected 0x${tag.toString(16)}`,
    );
  }
  return node;
}

/** The node's content (a view). */
export function content(node: DerNode): Uint8Array {
  return node.bytes.subarray(node.contentStart, node.end);
}

/** The node's header and content (a view). */
export function encoded(node: DerNode): Uint8Array {
  return node.bytes.subarray(node.start, node.end);
}

/** The dotted form of an OBJECT IDENTIFIER node. */
export function readOid(node: DerNode | undefined, what: string): string {
  const bytes = content(expectTag(node, TAG.oid, what));
  if (bytes.length === 0 || bytes[bytes.length - 1] & 0x80) throw new DerError(`${what} is cut`);
  const parts: number[] = [];
  let value = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (value === 0 && bytes[i] === 0x80) throw new DerError(`${what} is not minimal`);
    value = value * 128 + (bytes[i] & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 256) throw new DerError(`${what} is too large`);
    if ((bytes[i] & 0x80) === 0) {
      if (parts.length === 0) {
        parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80);
      } else parts.push(value);
      value = 0;
    }
  }
  return parts.join(".");
}

/** The bytes of an INTEGER (two's complement, minimal). */
export function readIntegerBytes(node: DerNode | undefined, what: string): Uint8Array {
  const bytes = content(expectTag(node, TAG.integer, what));
  if (bytes.length === 0) throw new DerError(`${what} is empty`);
  if (
    bytes.length > 1 &&
    ((bytes[0] === 0 && (bytes[1] & 0x80) === 0) || (bytes[0] === 0xff && (bytes[1] & 0x80)))
  ) {
    throw new DerError(`${what} is not minimally encoded`);
  }
  return bytes;
}

/** A small non-negative INTEGER. */
export function readSmallInteger(node: DerNode | undefined, what: string): number {
  const bytes = readIntegerBytes(node, what);
  if (bytes[0] & 0x80 || bytes.length > 6) throw new DerError(`${what} is out of range`);
  let value = 0;
  for (const byte of bytes) value = value * 256 + byte;
  return value;
}

/** A BOOLEAN (`00` or `FF`). */
export function readBoolean(node: DerNode | undefined, what: string): boolean {
  const bytes = content(expectTag(node, TAG.boolean, what));
  if (bytes.length !== 1 || (bytes[0] !== 0 && bytes[0] !== 0xff)) {
    throw new DerError(`${what} is not a DER boolean`);
  }
  return bytes[0] === 0xff;
}

/** A BIT STRING's unused-bit count and bits. */
export function readBitString(
  node: DerNode | undefined,
  what: string,
): { unusedBits: number; bits: Uint8Array } {
  const bytes = content(expectTag(node, TAG.bitString, what));
  if (bytes.length === 0 || bytes[0] > 7 || (bytes.length === 1 && bytes[0] !== 0)) {
    throw new DerError(`${what} is not a valid BIT STRING`);
  }
  return { unusedBits: bytes[0], bits: bytes.subarray(1) };
}

/** A BIT STRING that must be whole bytes (a key or a signature). */
export function readWholeBitString(node: DerNode | undefined, what: string): Uint8Array {
  const { unusedBits, bits } = readBitString(node, what);
  if (unusedBits !== 0) throw new DerError(`${what} has ${unusedBits} unused bits`);
  return bits;
}

const TIME_PATTERN = /^(\d{2}|\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\.\d*[1-9])?Z$/;

/**
 * A UTCTime or GeneralizedTime in its DER form: seconds and `Z`; a GeneralizedTime may carry
 * a fraction of a second without trailing zeros (X.690 §11.7; OCSP responders write one).
 */
export function readTime(node: DerNode | undefined, what: string): Date {
  if (!node || (node.tag !== TAG.utcTime && node.tag !== TAG.generalizedTime)) {
    throw new DerError(`${what} is not a time`);
  }
  const text = String.fromCharCode(...content(node));
  const match = TIME_PATTERN.exec(text);
  const utc = node.tag === TAG.utcTime;
  if (!match || match[1].length !== (utc ? 2 : 4) || (utc && match[7])) {
    throw new DerError(`${what} "${text}" is not DER`);
  }
  let year = Number(match[1]);
  if (utc) year += year < 50 ? 2000 : 1900;
  const [month, day, hour, minute, second] = match.slice(2, 7).map(Number);
  const milliseconds = match[7] ? Math.floor(Number(`0${match[7]}`) * 1000) : 0;
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second, milliseconds));
  if (
    date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || hour > 23 || minute > 59 ||
    second > 59
  ) {
    throw new DerError(`${what} "${text}" is not a valid date`);
  }
  return date;
}

/** The text of a directory string (UTF8, Printable, IA5, Teletex as Latin-1, BMP). */
export function readText(node: DerNode, what: string): string {
  const bytes = content(node);
  switch (node.tag) {
    case TAG.utf8String:
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    case TAG.printableString:
    case TAG.ia5String:
    case TAG.teletexString:
      return String.fromCharCode(...bytes);
    case TAG.bmpString: {
      if (bytes.length % 2) throw new DerError(`${what} is not a BMP string`);
      let out = "";
      for (let i = 0; i < bytes.length; i += 2) {
        out += String.fromCharCode(bytes[i] << 8 | bytes[i + 1]);
      }
      return out;
    }
    default:
      throw new DerError(`${what} has string tag 0x${node.tag.toString(16)}`);
  }
}
