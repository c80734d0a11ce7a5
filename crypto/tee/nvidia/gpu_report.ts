/**
 * A bounds-checked parser of an NVIDIA GPU attestation report: the SPDM 1.1 `GET_MEASUREMENTS`
 * request the GPU was sent, followed by its signed `MEASUREMENTS` response (DMTF DSP0274
 * 1.1, §10.11), as NVIDIA's attestation tools capture it. All integers are little-endian.
 *
 * ```
 * request (37 bytes)  version 0x11 ‖ code 0xE0 ‖ param1 (bit 0: signature requested) ‖
 *                     param2 0xFF (all measurements) ‖ nonce (32) ‖ slot id
 * response            version 0x11 ‖ code 0x60 ‖ param1 ‖ param2 ‖ number of blocks (u8) ‖
 *                     record length (u24) ‖ blocks ‖ responder nonce (32) ‖
 *                     opaque length (u16) ‖ opaque data ‖ signature (96: ECDSA P-384 r ‖ s)
 * block               index (u8) ‖ specification (u8, 1 = DMTF) ‖ size (u16) ‖
 *                     value type (u8) ‖ value size (u16) ‖ value
 * ```
 *
 * The signature covers the request and the response up to the signature (SPDM 1.1's L1/L2
 * transcript), hashed with SHA-384. A tail of zero bytes after the signature is stripped (real
 * captures arrive padded); any non-zero byte there is refused. The parser checks structure
 * only; {@linkcode verifyGpuEvidence} decides trust.
 *
 * @example
 * ```ts ignore
 * import { parseGpuReport } from "@net/consumer/tee";
 *
 * const report = parseGpuReport(reportBytes);
 * console.log(report.opaque.driverVersion, report.blocks.length);
 * ```
 *
 * @module
 */

import { isAllZero, toHex } from "../../_bytes.ts";
import { ByteReader } from "../_byte_reader.ts";
import { QuoteParseError } from "../errors.ts";
import { type GpuOpaqueData, MAX_OPAQUE_LENGTH, parseOpaqueData } from "./opaque_data.ts";

/** SPDM version 1.1, the version NVIDIA Hopper GPUs answer with. */
export const SPDM_VERSION_11 = 0x11;
/** SPDM request code of `GET_MEASUREMENTS`. */
export const SPDM_GET_MEASUREMENTS = 0xe0;
/** SPDM response code of `MEASUREMENTS`. */
export const SPDM_MEASUREMENTS = 0x60;
/** Length of the `GET_MEASUREMENTS` request with a nonce. */
export const SPDM_REQUEST_LENGTH = 37;
/** Length of an SPDM nonce. */
export const SPDM_NONCE_LENGTH = 32;
/** Length of an ECDSA P-384 signature as `r ‖ s`. */
export const GPU_SIGNATURE_LENGTH = 96;
/** Largest accepted report, in bytes. */
export const MAX_GPU_REPORT_LENGTH = 64 * 1024;
/** Measurement specification value of the DMTF layout. */
const DMTF_SPECIFICATION = 0x01;

/** One measurement block. `value` is a view into the report. */
export interface GpuMeasurementBlock {
  /** The measurement index (1 to 254). */
  readonly index: number;
  /** The DMTF value type (bit 7: raw bit stream rather than a digest). */
  readonly valueType: number;
  /** The measurement value (a SHA-384 digest on NVIDIA GPUs). */
  readonly value: Uint8Array;
}

/** A parsed GPU attestation report. Byte fields are views into `raw`. */
export interface GpuReport {
  /** The report without its zero tail: request ‖ response. */
  readonly raw: Uint8Array;
  /** The SPDM version (0x11). */
  readonly spdmVersion: number;
  /** The request's 32-byte nonce: what the requester asked the GPU to sign. */
  readonly nonce: Uint8Array;
  /** The response's param2 (slot id and content-changed bits). */
  readonly slotParam: number;
  /** The measurement record: every block, in the response's order. */
  readonly measurementRecord: Uint8Array;
  /** The blocks, indices strictly increasing. */
  readonly blocks: readonly GpuMeasurementBlock[];
  /** The responder's own 32-byte nonce. */
  readonly responderNonce: Uint8Array;
  /** The opaque data: driver and VBIOS versions, FWID, measurement counts, chip facts. */
  readonly opaque: GpuOpaqueData;
  /** What the signature covers: request ‖ response without the signature. */
  readonly signedRegion: Uint8Array;
  /** ECDSA P-384 `r ‖ s`. */
  readonly signature: Uint8Array;
}

function fail(message: string, offset?: number): never {
  throw new QuoteParseError(`Cannot parse the GPU report: ${message}`, { offset });
}

/**
 * Parses a GPU attestation report (request ‖ response).
 *
 * @throws {QuoteParseError} when the bytes do not follow the layout.
 */
export function parseGpuReport(input: Uint8Array): GpuReport {
  if (!(input instanceof Uint8Array)) fail(`expected bytes, found ${typeof input}`);
  if (input.length > MAX_GPU_REPORT_LENGTH) {
    fail(`it is ${input.length} bytes, at most ${MAX_GPU_REPORT_LENGTH} are accepted`);
  }
  const reader = new ByteReader(input, "the GPU report");
  // The request.
  const version = readExpected(reader, "the request's SPDM version", SPDM_VERSION_11);
  readExpected(reader, "the request code", SPDM_GET_MEASUREMENTS);
  const param1 = reader.bytes("the request's param1", 1)[0];
  if ((param1 & 1) === 0) fail("the request did not ask for a signature (param1 bit 0)", 2);
  readExpected(reader, "the request's param2 (all measurements)", 0xff);
  const nonce = reader.bytes("the request's nonce", SPDM_NONCE_LENGTH);
  reader.bytes("the request's slot id", 1);
  // The response.
  readExpected(reader, "the response's SPDM version", version);
  readExpected(reader, "the response code", SPDM_MEASUREMENTS);
  reader.bytes("the response's param1", 1);
  const slotParam = reader.bytes("the response's param2", 1)[0];
  const blockCount = reader.bytes("the number of blocks", 1)[0];
  const recordLength = reader.u16("the record length") |
    (reader.bytes("the record length", 1)[0] << 16);
  const recordStart = reader.offset;
  const measurementRecord = reader.bytes("the measurement record", recordLength);
  const blocks = parseBlocks(measurementRecord, blockCount, recordStart);
  const responderNonce = reader.bytes("the response's nonce", SPDM_NONCE_LENGTH);
  const opaqueLength = reader.u16("the opaque data length");
  if (opaqueLength > MAX_OPAQUE_LENGTH) {
    fail(`the opaque data is ${opaqueLength} bytes, SPDM allows ${MAX_OPAQUE_LENGTH}`);
  }
  const opaqueStart = reader.offset;
  const opaque = parseOpaqueData(reader.bytes("the opaque data", opaqueLength), opaqueStart);
  const signedLength = reader.offset;
  const signature = reader.bytes("the signature", GPU_SIGNATURE_LENGTH);
  const tail = input.subarray(reader.offset);
  if (!isAllZero(tail)) {
    fail(
      `${tail.length} bytes of trailing data after the signature (first non-zero at offset ` +
        `${reader.offset + tail.findIndex((b) => b !== 0)})`,
      reader.offset,
    );
  }
  const raw = input.subarray(0, reader.offset);
  return {
    raw,
    spdmVersion: version,
    nonce,
    slotParam,
    measurementRecord,
    blocks,
    responderNonce,
    opaque,
    signedRegion: raw.subarray(0, signedLength),
    signature,
  };
}

function readExpected(reader: ByteReader, field: string, expected: number): number {
  const at = reader.offset;
  const value = reader.bytes(field, 1)[0];
  if (value !== expected) {
    fail(
      `${field} is 0x${toHex(Uint8Array.of(value))}, expected 0x${toHex(Uint8Array.of(expected))}`,
      at,
    );
  }
  return value;
}

/** Parses `count` DMTF blocks that must fill the record exactly, indices strictly increasing. */
function parseBlocks(record: Uint8Array, count: number, base: number): GpuMeasurementBlock[] {
  if (count === 0) fail("the response has no measurement block");
  const reader = new ByteReader(record, "the GPU report's measurement record");
  const blocks: GpuMeasurementBlock[] = [];
  for (let i = 0; i < count; i++) {
    const at = base + reader.offset;
    const [index, specification] = reader.bytes(`block ${i + 1}'s index`, 2);
    if (index === 0 || index === 0xff) fail(`block ${i + 1} has the reserved index ${index}`, at);
    if (blocks.length && index <= blocks[blocks.length - 1].index) {
      fail(`block ${i + 1}'s index ${index} does not follow ${blocks.at(-1)!.index}`, at);
    }
    if (specification !== DMTF_SPECIFICATION) {
      fail(`block ${index} is not in the DMTF layout (specification ${specification})`, at);
    }
    const size = reader.u16(`block ${index}'s size`);
    const measurement = new ByteReader(reader.bytes(`block ${index}`, size), `block ${index}`);
    const valueType = measurement.bytes("its value type", 1)[0];
    const value = measurement.bytes("its value", measurement.u16("its value size"));
    if (measurement.remaining !== 0) {
      fail(`block ${index} is ${size} bytes but its value ends ${measurement.remaining} early`, at);
    }
    blocks.push({ index, valueType, value });
  }
  if (reader.remaining !== 0) {
    fail(`${reader.remaining} bytes of the measurement record follow its ${count} blocks`);
  }
  return blocks;
}
