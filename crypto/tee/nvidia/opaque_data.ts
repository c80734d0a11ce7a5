/**
 * The opaque data of an NVIDIA GPU's SPDM measurement response: a list of `type (u16) ‖ size
 * (u16) ‖ data` items in which the GPU firmware reports its driver and VBIOS versions, the
 * firmware id (FWID) of its attestation key, the measurement counts and chip facts. The item
 * types are NVIDIA's (`nvtrust` `OpaqueDataType`, the same numbers in every public verifier).
 *
 * The items are covered by the report's signature; {@linkcode parseOpaqueData} only checks
 * their structure (every length, no type twice, the items the verifier needs present).
 *
 * @module
 */

import { ByteReader } from "../_byte_reader.ts";
import { toHex } from "../../_bytes.ts";
import { QuoteParseError } from "../errors.ts";

/** The opaque data item types the verifier reads (NVIDIA's numbering). */
export const OPAQUE_TYPES = Object.freeze(
  {
    certIssuerName: 1,
    certAuthorityKeyIdentifier: 2,
    driverVersion: 3,
    gpuInfo: 4,
    sku: 5,
    vbiosVersion: 6,
    manufacturerId: 7,
    tamperDetection: 8,
    smc: 9,
    vpr: 10,
    nvdec0Status: 11,
    measurementCount: 12,
    cprInfo: 13,
    boardId: 14,
    chipSku: 15,
    chipSkuMod: 16,
    project: 17,
    projectSku: 18,
    projectSkuMod: 19,
    fwid: 20,
    protectedPcieStatus: 21,
    switchPdi: 22,
    floorsweptPorts: 23,
    positionId: 24,
    lockSwitchStatus: 25,
    gpuLinkConn: 32,
    sysEnableStatus: 33,
    opaqueDataVersion: 34,
    chipInfo: 35,
    featureFlag: 36,
  } as const,
);

/** Largest opaque data SPDM 1.1 allows, in bytes. */
export const MAX_OPAQUE_LENGTH = 1024;
/** Length of the FWID: a SHA-384 digest. */
export const FWID_LENGTH = 48;

/** The parsed opaque data. Byte fields are views into the report. */
export interface GpuOpaqueData {
  /** Every item by type, in the report's order; types the verifier does not name are kept. */
  readonly items: ReadonlyMap<number, Uint8Array>;
  /** The driver version, e.g. `550.90.07` (the text up to its NUL padding). */
  readonly driverVersion: string;
  /** The VBIOS version, e.g. `96.00.9f.00.01` (NVIDIA's dotted hex). */
  readonly vbiosVersion: string;
  /** The firmware id the attestation key's certificate must name (48 bytes). */
  readonly fwid: Uint8Array;
  /** How many times each measurement index was extended, index 1 first. */
  readonly measurementCounts: readonly number[];
}

/**
 * Parses the opaque data items.
 *
 * @throws {QuoteParseError} when an item overruns, a type appears twice, or the driver
 * version, VBIOS version, FWID or measurement counts are missing or malformed.
 */
export function parseOpaqueData(bytes: Uint8Array, offset = 0): GpuOpaqueData {
  const reader = new ByteReader(bytes, "the GPU report's opaque data");
  const items = new Map<number, Uint8Array>();
  while (reader.remaining > 0) {
    const at = reader.offset;
    const type = reader.u16("an item type");
    const size = reader.u16(`the size of item ${type}`);
    const data = reader.bytes(`item ${type}`, size);
    if (items.has(type)) {
      throw new QuoteParseError(
        `Cannot parse the GPU report's opaque data: item type ${type} appears twice`,
        { offset: offset + at },
      );
    }
    items.set(type, data);
  }
  const required = (type: number, name: string): Uint8Array => {
    const item = items.get(type);
    if (!item) {
      throw new QuoteParseError(
        `Cannot parse the GPU report's opaque data: it has no ${name} (item type ${type})`,
      );
    }
    return item;
  };
  const fwid = required(OPAQUE_TYPES.fwid, "FWID");
  if (fwid.length !== FWID_LENGTH) {
    throw new QuoteParseError(
      `Cannot parse the GPU report's opaque data: the FWID must be ${FWID_LENGTH} bytes, found ` +
        fwid.length,
    );
  }
  const counts = required(OPAQUE_TYPES.measurementCount, "measurement counts");
  if (counts.length % 4 !== 0) {
    throw new QuoteParseError(
      `Cannot parse the GPU report's opaque data: the measurement counts must be 4-byte ` +
        `integers, found ${counts.length} bytes`,
    );
  }
  const view = new DataView(counts.buffer, counts.byteOffset, counts.byteLength);
  const measurementCounts = Array.from(
    { length: counts.length / 4 },
    (_, i) => view.getUint32(4 * i, true),
  );
  return {
    items,
    driverVersion: nulTerminatedText(required(OPAQUE_TYPES.driverVersion, "driver version")),
    vbiosVersion: vbiosVersionText(required(OPAQUE_TYPES.vbiosVersion, "VBIOS version")),
    fwid,
    measurementCounts,
  };
}

/** The text of a NUL-padded ASCII field (what comes before the first NUL). */
export function nulTerminatedText(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  const text = new TextDecoder("utf-8", { fatal: false }).decode(
    end === -1 ? bytes : bytes.subarray(0, end),
  );
  if (!/^[\x20-\x7e]*$/.test(text)) {
    throw new QuoteParseError(
      `Cannot parse the GPU report's opaque data: a text field is not printable ASCII ` +
        `(${toHex(bytes.subarray(0, 16))})`,
    );
  }
  return text;
}

/**
 * NVIDIA's VBIOS version text: the first half of the field's bytes in reverse order, as
 * two-digit hex joined by dots, then the first byte of the second half (`00 9f 00 96 01 00 00
 * 00` → `96.00.9f.00.01`).
 */
export function vbiosVersionText(bytes: Uint8Array): string {
  if (bytes.length < 2 || bytes.length % 2 !== 0) {
    throw new QuoteParseError(
      `Cannot parse the GPU report's opaque data: the VBIOS version must be an even number of ` +
        `bytes, found ${bytes.length}`,
    );
  }
  const half = bytes.length / 2;
  const parts = Array.from(bytes.subarray(0, half)).reverse().map((b) => toHex(Uint8Array.of(b)));
  return `${parts.join(".")}.${toHex(bytes.subarray(half, half + 1))}`;
}
