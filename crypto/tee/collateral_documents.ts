/**
 * Intel's two signed collateral documents, TCB info (TDX, version 3) and QE identity (TD_QE,
 * version 2): their shapes and strict readers of their raw JSON text. The readers run only
 * after the document's signature over that exact text verified (`collateral.ts`).
 *
 * @module
 */

import { fromHex } from "../_bytes.ts";
import { AttestationError } from "./errors.ts";
import {
  type IdentityLevel,
  type IdentityStatus,
  TCB_LEVEL_STATUSES,
  type TcbLevel,
  type TcbStatus,
  type TdxModuleIdentity,
} from "./tcb_status.ts";

/** Intel's TDX TCB info (version 3), as the verifier uses it. */
export interface TcbInfo {
  /** `"TDX"`. */
  readonly id: string;
  /** 3. */
  readonly version: number;
  /** When Intel issued it. */
  readonly issueDate: Date;
  /** When it must be replaced. */
  readonly nextUpdate: Date;
  /** FMSPC, 6 bytes. */
  readonly fmspc: Uint8Array;
  /** PCE id, 2 bytes. */
  readonly pceId: Uint8Array;
  /** TCB evaluation data number (the TCB recovery event the levels reflect). */
  readonly tcbEvaluationDataNumber: number;
  /** Expected TDX module signer and attributes (`tdxModule`). */
  readonly tdxModule: {
    readonly mrSigner: Uint8Array;
    readonly attributes: Uint8Array;
    readonly attributesMask: Uint8Array;
  };
  /** `tdxModuleIdentities`. */
  readonly tdxModuleIdentities: readonly TdxModuleIdentity[];
  /** `tcbLevels`, in Intel's order. */
  readonly tcbLevels: readonly TcbLevel[];
}

/** Intel's TD QE identity (version 2). */
export interface QeIdentity {
  /** `"TD_QE"`. */
  readonly id: string;
  /** 2. */
  readonly version: number;
  /** When Intel issued it. */
  readonly issueDate: Date;
  /** When it must be replaced. */
  readonly nextUpdate: Date;
  /** MISCSELECT. */
  readonly miscSelect: number;
  /** Mask of MISCSELECT. */
  readonly miscSelectMask: number;
  /** Attributes, 16 bytes. */
  readonly attributes: Uint8Array;
  /** Mask of the attributes, 16 bytes. */
  readonly attributesMask: Uint8Array;
  /** MRSIGNER, 32 bytes. */
  readonly mrSigner: Uint8Array;
  /** TCB evaluation data number (the TCB recovery event the identity reflects). */
  readonly tcbEvaluationDataNumber: number;
  /** ISVPRODID. */
  readonly isvProdId: number;
  /** TCB levels by ISVSVN, in Intel's order. */
  readonly tcbLevels: readonly IdentityLevel[];
}

/** Throws the `malformed` refusal of collateral (check `collateral`). */
export function malformedCollateral(message: string, cause?: unknown): never {
  throw new AttestationError(
    "malformed",
    "collateral",
    `Cannot verify attestation: collateral ${message}`,
    { cause },
  );
}

type Json = Record<string, unknown>;

function object(value: unknown, where: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return malformedCollateral(`${where} must be an object`);
  }
  return value as Json;
}

function array(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) return malformedCollateral(`${where} must be an array`);
  return value;
}

function uint(value: unknown, where: string, max = 0xffff): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > max) {
    return malformedCollateral(
      `${where} must be an integer from 0 to ${max}, found ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function str(value: unknown, where: string): string {
  if (typeof value !== "string") return malformedCollateral(`${where} must be a string`);
  return value;
}

function date(value: unknown, where: string): Date {
  const text = str(value, where);
  const parsed = new Date(text);
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(text) || Number.isNaN(parsed.getTime())) {
    return malformedCollateral(
      `${where} must be an RFC 3339 UTC time, found ${JSON.stringify(text)}`,
    );
  }
  return parsed;
}

function hexOf(value: unknown, where: string, length: number): Uint8Array {
  const bytes = fromHex(str(value, where));
  if (!bytes || bytes.length !== length) {
    return malformedCollateral(`${where} must be ${length} bytes of hex`);
  }
  return bytes;
}

function advisories(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  return array(value, where).map((id, i) => str(id, `${where}[${i}]`));
}

function components(value: unknown, where: string): number[] {
  const list = array(value, where);
  if (list.length !== 16) {
    malformedCollateral(`${where} must have 16 components, found ${list.length}`);
  }
  return list.map((entry, i) =>
    uint(object(entry, `${where}[${i}]`).svn, `${where}[${i}].svn`, 255)
  );
}

function levelStatus(value: unknown, where: string): TcbStatus {
  const status = str(value, where);
  if (!(TCB_LEVEL_STATUSES as readonly string[]).includes(status)) {
    return malformedCollateral(`${where} "${status}" is not a known TCB status`);
  }
  return status as TcbStatus;
}

function identityStatus(value: unknown, where: string): IdentityStatus {
  const status = str(value, where);
  if (status !== "UpToDate" && status !== "OutOfDate" && status !== "Revoked") {
    return malformedCollateral(`${where} "${status}" is not a known identity TCB status`);
  }
  return status;
}

function identityLevels(value: unknown, where: string): IdentityLevel[] {
  return array(value, where).map((entry, i) => {
    const level = object(entry, `${where}[${i}]`);
    return {
      isvSvn: uint(object(level.tcb, `${where}[${i}].tcb`).isvsvn, `${where}[${i}].tcb.isvsvn`),
      tcbDate: str(level.tcbDate, `${where}[${i}].tcbDate`),
      status: identityStatus(level.tcbStatus, `${where}[${i}].tcbStatus`),
      advisoryIds: advisories(level.advisoryIDs, `${where}[${i}].advisoryIDs`),
    };
  });
}

function parseJson(text: string, what: string): Json {
  try {
    return object(JSON.parse(text), what);
  } catch (cause) {
    if (cause instanceof AttestationError) throw cause;
    return malformedCollateral(`${what} is not JSON`, cause);
  }
}

/**
 * Parses the raw TDX TCB info text (call only after its signature verified).
 *
 * @throws {AttestationError} `malformed` with check `collateral`.
 */
export function parseTcbInfo(text: string): TcbInfo {
  const info = parseJson(text, "TCB info");
  const module = object(info.tdxModule, "tcbInfo.tdxModule");
  return {
    id: str(info.id, "tcbInfo.id"),
    version: uint(info.version, "tcbInfo.version"),
    issueDate: date(info.issueDate, "tcbInfo.issueDate"),
    nextUpdate: date(info.nextUpdate, "tcbInfo.nextUpdate"),
    fmspc: hexOf(info.fmspc, "tcbInfo.fmspc", 6),
    pceId: hexOf(info.pceId, "tcbInfo.pceId", 2),
    tcbEvaluationDataNumber: uint(
      info.tcbEvaluationDataNumber,
      "tcbInfo.tcbEvaluationDataNumber",
      0xffffffff,
    ),
    tdxModule: {
      mrSigner: hexOf(module.mrsigner, "tcbInfo.tdxModule.mrsigner", 48),
      attributes: hexOf(module.attributes, "tcbInfo.tdxModule.attributes", 8),
      attributesMask: hexOf(module.attributesMask, "tcbInfo.tdxModule.attributesMask", 8),
    },
    tdxModuleIdentities:
      (info.tdxModuleIdentities === undefined
        ? []
        : array(info.tdxModuleIdentities, "tcbInfo.tdxModuleIdentities")).map((entry, i) => {
          const where = `tcbInfo.tdxModuleIdentities[${i}]`;
          const identity = object(entry, where);
          return {
            id: str(identity.id, `${where}.id`),
            mrSigner: hexOf(identity.mrsigner, `${where}.mrsigner`, 48),
            attributes: hexOf(identity.attributes, `${where}.attributes`, 8),
            attributesMask: hexOf(identity.attributesMask, `${where}.attributesMask`, 8),
            tcbLevels: identityLevels(identity.tcbLevels, `${where}.tcbLevels`),
          };
        }),
    tcbLevels: array(info.tcbLevels, "tcbInfo.tcbLevels").map((entry, i) => {
      const where = `tcbInfo.tcbLevels[${i}]`;
      const level = object(entry, where);
      const tcb = object(level.tcb, `${where}.tcb`);
      return {
        sgxComponents: components(tcb.sgxtcbcomponents, `${where}.tcb.sgxtcbcomponents`),
        pceSvn: uint(tcb.pcesvn, `${where}.tcb.pcesvn`),
        tdxComponents: components(tcb.tdxtcbcomponents, `${where}.tcb.tdxtcbcomponents`),
        tcbDate: str(level.tcbDate, `${where}.tcbDate`),
        status: levelStatus(level.tcbStatus, `${where}.tcbStatus`),
        advisoryIds: advisories(level.advisoryIDs, `${where}.advisoryIDs`),
      };
    }),
  };
}

/**
 * Parses the raw QE identity text (call only after its signature verified).
 *
 * @throws {AttestationError} `malformed` with check `collateral`.
 */
export function parseQeIdentity(text: string): QeIdentity {
  const identity = parseJson(text, "QE identity");
  const u32 = (value: unknown, where: string): number => {
    const bytes = hexOf(value, where, 4);
    return new DataView(bytes.buffer).getUint32(0, false);
  };
  return {
    id: str(identity.id, "qeIdentity.id"),
    version: uint(identity.version, "qeIdentity.version"),
    issueDate: date(identity.issueDate, "qeIdentity.issueDate"),
    nextUpdate: date(identity.nextUpdate, "qeIdentity.nextUpdate"),
    miscSelect: u32(identity.miscselect, "qeIdentity.miscselect"),
    miscSelectMask: u32(identity.miscselectMask, "qeIdentity.miscselectMask"),
    attributes: hexOf(identity.attributes, "qeIdentity.attributes", 16),
    attributesMask: hexOf(identity.attributesMask, "qeIdentity.attributesMask", 16),
    mrSigner: hexOf(identity.mrsigner, "qeIdentity.mrsigner", 32),
    tcbEvaluationDataNumber: uint(
      identity.tcbEvaluationDataNumber,
      "qeIdentity.tcbEvaluationDataNumber",
      0xffffffff,
    ),
    isvProdId: uint(identity.isvprodid, "qeIdentity.isvprodid"),
    tcbLevels: identityLevels(identity.tcbLevels, "qeIdentity.tcbLevels"),
  };
}
