/**
 * A bounds-checked parser for Intel TDX DCAP quotes, versions 4 and 5 (TD 1.0 and TD 1.5
 * bodies), with ECDSA P-256 attestation keys and a PCK certificate chain as certification data
 * (Intel "TDX DCAP Quoting Library API", appendix A.3/A.4). All integers are little-endian.
 *
 * The parser checks structure only: every length, the version, the TEE and key types, the body
 * type and size, and the certification data types. Whether anything is *trusted* is the job of
 * {@linkcode verifyTdxQuote}.
 *
 * Real quotes often arrive in a larger zero-padded buffer: a tail of zero bytes after the
 * declared end is stripped; any non-zero byte there is refused.
 *
 * @example
 * ```ts ignore
 * import { parseTdxQuote } from "@net/consumer/tee";
 *
 * const quote = parseTdxQuote(await Deno.readFile("quote.bin"));
 * console.log(quote.header.version, quote.body.mrTd);
 * ```
 *
 * @module
 */

import { hexConstant, isAllZero } from "../_bytes.ts";
import { ByteReader } from "./_byte_reader.ts";
import { QuoteParseError } from "./errors.ts";

/** TEE type of a TDX quote in the header. */
export const TEE_TYPE_TDX = 0x81;
/** Attestation key type of an ECDSA P-256 key. */
export const ATTESTATION_KEY_TYPE_ECDSA_P256 = 2;
/** QE vendor id of Intel's quoting enclave. */
export const INTEL_QE_VENDOR_ID: Uint8Array = hexConstant("939a7233f79c4ca9940a0db3957f0607");
/** Certification data type: QE report certification data. */
export const CERT_DATA_QE_REPORT = 6;
/** Certification data type: PCK leaf, intermediate and root certificates as PEM. */
export const CERT_DATA_PCK_CHAIN = 5;

const HEADER_LENGTH = 48;
const TD10_BODY_LENGTH = 584;
const TD15_BODY_LENGTH = 648;
const QE_REPORT_LENGTH = 384;

/** The 48-byte quote header. */
export interface TdxQuoteHeader {
  /** Quote version: 4 or 5. */
  readonly version: 4 | 5;
  /** Attestation key type (2 = ECDSA P-256). */
  readonly attestationKeyType: number;
  /** TEE type (0x81 = TDX). */
  readonly teeType: number;
  /** Bytes 8..12 (QE SVN and PCE SVN in some layouts; not signed by anything else). */
  readonly reserved: Uint8Array;
  /** 16-byte id of the quoting enclave's vendor. */
  readonly qeVendorId: Uint8Array;
  /** 20 bytes of user data (the first 16 are the platform's QE id). */
  readonly userData: Uint8Array;
}

/** A TD report body (TD 1.0, or TD 1.5 with its two extra fields). */
export interface TdReportBody {
  /** 2 = TD 1.0 (584 bytes), 3 = TD 1.5 (648 bytes). Version 4 quotes always carry 2. */
  readonly bodyType: 2 | 3;
  /** TEE_TCB_SVN, 16 bytes. */
  readonly teeTcbSvn: Uint8Array;
  /** Measurement of the TDX module, 48 bytes. */
  readonly mrSeam: Uint8Array;
  /** Signer of the TDX module (zero for Intel's), 48 bytes. */
  readonly mrSignerSeam: Uint8Array;
  /** SEAM attributes, 8 bytes (must be zero). */
  readonly seamAttributes: Uint8Array;
  /** TD attributes, 8 bytes (bit 0 = DEBUG, bit 28 = SEPT_VE_DISABLE). */
  readonly tdAttributes: Uint8Array;
  /** XFAM, 8 bytes. */
  readonly xfam: Uint8Array;
  /** Build-time measurement of the TD, 48 bytes. */
  readonly mrTd: Uint8Array;
  /** MRCONFIGID, 48 bytes. */
  readonly mrConfigId: Uint8Array;
  /** MROWNER, 48 bytes. */
  readonly mrOwner: Uint8Array;
  /** MROWNERCONFIG, 48 bytes. */
  readonly mrOwnerConfig: Uint8Array;
  /** RTMR0..RTMR3, 48 bytes each. */
  readonly rtmrs: readonly [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  /** REPORTDATA, 64 bytes. */
  readonly reportData: Uint8Array;
  /** TD 1.5: TEE_TCB_SVN2, 16 bytes; `null` for TD 1.0. */
  readonly teeTcbSvn2: Uint8Array | null;
  /** TD 1.5: MRSERVICETD, 48 bytes; `null` for TD 1.0. */
  readonly mrServiceTd: Uint8Array | null;
}

/** The QE report: an SGX report body of 384 bytes. */
export interface QeReport {
  /** The raw 384 bytes, as signed by the PCK key. */
  readonly raw: Uint8Array;
  /** CPUSVN, 16 bytes. */
  readonly cpuSvn: Uint8Array;
  /** MISCSELECT. */
  readonly miscSelect: number;
  /** Enclave attributes, 16 bytes (byte 0 bit 1 = DEBUG). */
  readonly attributes: Uint8Array;
  /** MRENCLAVE, 32 bytes. */
  readonly mrEnclave: Uint8Array;
  /** MRSIGNER, 32 bytes. */
  readonly mrSigner: Uint8Array;
  /** ISVPRODID. */
  readonly isvProdId: number;
  /** ISVSVN. */
  readonly isvSvn: number;
  /** REPORTDATA, 64 bytes. */
  readonly reportData: Uint8Array;
}

/** A parsed TDX quote. Every byte field is a view into `raw`. */
export interface TdxQuote {
  /** The quote's bytes up to its declared end (padding stripped). */
  readonly raw: Uint8Array;
  /** Length of the buffer the quote arrived in. */
  readonly bufferLength: number;
  /** The header. */
  readonly header: TdxQuoteHeader;
  /** The TD report body. */
  readonly body: TdReportBody;
  /** The bytes the attestation key signs: header ‖ body (v5: including type and size). */
  readonly signedRegion: Uint8Array;
  /** Quote signature, raw `r ‖ s`, 64 bytes. */
  readonly signature: Uint8Array;
  /** Attestation public key `x ‖ y`, 64 bytes. */
  readonly attestationKey: Uint8Array;
  /** The QE report. */
  readonly qeReport: QeReport;
  /** QE report signature by the PCK key, raw `r ‖ s`, 64 bytes. */
  readonly qeReportSignature: Uint8Array;
  /** QE authentication data. */
  readonly qeAuthData: Uint8Array;
  /** The PCK certificate chain, PEM text (trailing NUL bytes removed). */
  readonly pckChainPem: string;
}

/**
 * Parses a TDX quote (v4 or v5) from a buffer. A zero tail after the declared length is
 * stripped.
 *
 * @throws {QuoteParseError} when the bytes do not follow the layout.
 */
export function parseTdxQuote(bytes: Uint8Array): TdxQuote {
  if (!(bytes instanceof Uint8Array)) {
    throw new QuoteParseError(`Cannot parse TDX quote: expected bytes, found ${typeof bytes}`);
  }
  const reader = new ByteReader(bytes, "TDX quote");
  const header = parseHeader(reader);
  const body = parseBody(reader, header.version === 5 ? parseBodyType(reader) : 2);
  const signedEnd = reader.offset;
  const data = parseSignatureData(reader);
  const end = reader.offset;
  const tail = bytes.subarray(end);
  if (!isAllZero(tail)) {
    const first = tail.findIndex((b) => b !== 0);
    throw new QuoteParseError(
      `Cannot parse TDX quote: ${tail.length} bytes follow the declared end at ${end} and byte ` +
        `${end + first} is not zero; trailing data is refused`,
      { offset: end + first },
    );
  }
  return {
    raw: bytes.subarray(0, end),
    bufferLength: bytes.length,
    header,
    body,
    signedRegion: bytes.subarray(0, signedEnd),
    signature: data.signature,
    attestationKey: data.attestationKey,
    qeReport: parseQeReport(data.qeReportRaw),
    qeReportSignature: data.qeReportSignature,
    qeAuthData: data.qeAuthData,
    pckChainPem: decodePem(data.pemBytes, data.certStart),
  };
}

/** The 48-byte header: version 4 or 5, an ECDSA P-256 attestation key, TEE type TDX. */
function parseHeader(reader: ByteReader): TdxQuoteHeader {
  const version = reader.u16("version");
  if (version !== 4 && version !== 5) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: version ${version} is not supported, expected 4 or 5`,
      { offset: 0 },
    );
  }
  const attestationKeyType = reader.u16("attestation key type");
  if (attestationKeyType !== ATTESTATION_KEY_TYPE_ECDSA_P256) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: attestation key type ${attestationKeyType} is not supported, ` +
        `expected ${ATTESTATION_KEY_TYPE_ECDSA_P256} (ECDSA P-256)`,
      { offset: 2 },
    );
  }
  const teeType = reader.u32("TEE type");
  if (teeType !== TEE_TYPE_TDX) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: TEE type 0x${teeType.toString(16)} is not TDX (0x81)`,
      { offset: 4 },
    );
  }
  return {
    version,
    attestationKeyType,
    teeType,
    reserved: reader.bytes("reserved header bytes", 4),
    qeVendorId: reader.bytes("QE vendor id", 16),
    userData: reader.bytes("user data", 20),
  };
}

/** A v5 quote's body type and size: 2 (TD 1.0) or 3 (TD 1.5), the size matching the type. */
function parseBodyType(reader: ByteReader): 2 | 3 {
  const type = reader.u16("body type");
  const size = reader.u32("body size");
  if (type !== 2 && type !== 3) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: v5 body type ${type} is not supported, expected 2 (TD 1.0) or ` +
        "3 (TD 1.5)",
      { offset: HEADER_LENGTH },
    );
  }
  const bodyLength = type === 2 ? TD10_BODY_LENGTH : TD15_BODY_LENGTH;
  if (size !== bodyLength) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: body size ${size} does not match body type ${type}, expected ` +
        `${bodyLength}`,
      { offset: HEADER_LENGTH + 2 },
    );
  }
  return type;
}

/** The parts of a quote after the signed region, QE report and PCK chain still raw. */
interface SignatureData {
  readonly signature: Uint8Array;
  readonly attestationKey: Uint8Array;
  readonly qeReportRaw: Uint8Array;
  readonly qeReportSignature: Uint8Array;
  readonly qeAuthData: Uint8Array;
  readonly pemBytes: Uint8Array;
  /** Offset of the certification data, for messages about the PEM text. */
  readonly certStart: number;
}

/**
 * The signature data: the quote signature and attestation key, then certification data type 6
 * (the QE report, its signature and authentication data) wrapping type 5 (the PCK chain).
 * Every length must agree with what it announces.
 */
function parseSignatureData(reader: ByteReader): SignatureData {
  const signatureDataLength = reader.u32("signature data length");
  const signatureStart = reader.offset;
  const signature = reader.bytes("quote signature", 64);
  const attestationKey = reader.bytes("attestation key", 64);
  const certType = reader.u16("certification data type");
  if (certType !== CERT_DATA_QE_REPORT) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: certification data type ${certType} is not supported, expected ` +
        `${CERT_DATA_QE_REPORT} (QE report certification data)`,
      { offset: reader.offset - 2 },
    );
  }
  const certSize = reader.u32("certification data size");
  const certStart = reader.offset;
  const qeReportRaw = reader.bytes("QE report", QE_REPORT_LENGTH);
  const qeReportSignature = reader.bytes("QE report signature", 64);
  const authSize = reader.u16("QE authentication data size");
  const qeAuthData = reader.bytes("QE authentication data", authSize);
  const innerType = reader.u16("PCK certification data type");
  if (innerType !== CERT_DATA_PCK_CHAIN) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: inner certification data type ${innerType} is not supported, ` +
        `expected ${CERT_DATA_PCK_CHAIN} (PCK certificate chain)`,
      { offset: reader.offset - 2 },
    );
  }
  const pemSize = reader.u32("PCK certificate chain size");
  const pemBytes = reader.bytes("PCK certificate chain", pemSize);
  const end = reader.offset;
  if (end - certStart !== certSize) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: certification data size says ${certSize} bytes, its contents take ` +
        `${end - certStart}`,
      { offset: certStart - 4 },
    );
  }
  if (end - signatureStart !== signatureDataLength) {
    throw new QuoteParseError(
      `Cannot parse TDX quote: signature data length says ${signatureDataLength} bytes, its ` +
        `contents take ${end - signatureStart}`,
      { offset: signatureStart - 4 },
    );
  }
  return {
    signature,
    attestationKey,
    qeReportRaw,
    qeReportSignature,
    qeAuthData,
    pemBytes,
    certStart,
  };
}

function parseBody(reader: ByteReader, bodyType: 2 | 3): TdReportBody {
  const teeTcbSvn = reader.bytes("TEE_TCB_SVN", 16);
  const mrSeam = reader.bytes("MRSEAM", 48);
  const mrSignerSeam = reader.bytes("MRSIGNERSEAM", 48);
  const seamAttributes = reader.bytes("SEAMATTRIBUTES", 8);
  const tdAttributes = reader.bytes("TDATTRIBUTES", 8);
  const xfam = reader.bytes("XFAM", 8);
  const mrTd = reader.bytes("MRTD", 48);
  const mrConfigId = reader.bytes("MRCONFIGID", 48);
  const mrOwner = reader.bytes("MROWNER", 48);
  const mrOwnerConfig = reader.bytes("MROWNERCONFIG", 48);
  const rtmrs = [
    reader.bytes("RTMR0", 48),
    reader.bytes("RTMR1", 48),
    reader.bytes("RTMR2", 48),
    reader.bytes("RTMR3", 48),
  ] as const;
  const reportData = reader.bytes("REPORTDATA", 64);
  const teeTcbSvn2 = bodyType === 3 ? reader.bytes("TEE_TCB_SVN2", 16) : null;
  const mrServiceTd = bodyType === 3 ? reader.bytes("MRSERVICETD", 48) : null;
  return {
    bodyType,
    teeTcbSvn,
    mrSeam,
    mrSignerSeam,
    seamAttributes,
    tdAttributes,
    xfam,
    mrTd,
    mrConfigId,
    mrOwner,
    mrOwnerConfig,
    rtmrs,
    reportData,
    teeTcbSvn2,
    mrServiceTd,
  };
}

/** Parses a 384-byte SGX report body (the QE report). */
function parseQeReport(raw: Uint8Array): QeReport {
  const reader = new ByteReader(raw, "QE report");
  const cpuSvn = reader.bytes("CPUSVN", 16);
  const miscSelect = reader.u32("MISCSELECT");
  reader.bytes("reserved", 28);
  const attributes = reader.bytes("ATTRIBUTES", 16);
  const mrEnclave = reader.bytes("MRENCLAVE", 32);
  reader.bytes("reserved", 32);
  const mrSigner = reader.bytes("MRSIGNER", 32);
  reader.bytes("reserved", 96);
  const isvProdId = reader.u16("ISVPRODID");
  const isvSvn = reader.u16("ISVSVN");
  reader.bytes("reserved", 60);
  const reportData = reader.bytes("REPORTDATA", 64);
  return {
    raw,
    cpuSvn,
    miscSelect,
    attributes,
    mrEnclave,
    mrSigner,
    isvProdId,
    isvSvn,
    reportData,
  };
}

function decodePem(bytes: Uint8Array, offset: number): string {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  const text = bytes.subarray(0, end);
  for (let i = 0; i < text.length; i++) {
    const b = text[i];
    if (b > 0x7e || (b < 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09)) {
      throw new QuoteParseError(
        `Cannot parse TDX quote: the PCK certificate chain is not PEM text (byte 0x${
          b.toString(16).padStart(2, "0")
        } at chain offset ${i})`,
        { offset: offset + i },
      );
    }
  }
  return new TextDecoder().decode(text);
}
