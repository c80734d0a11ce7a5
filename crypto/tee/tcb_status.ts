/**
 * TCB statuses of Intel's collateral and the evaluation of a TDX quote's TCB against it: the
 * platform TCB level (SGX and TDX components, PCESVN), the TDX module identity, the QE
 * identity's TCB level and, for TD 1.5 quotes, the "TD relaunch advised" rule. The algorithm
 * follows Intel's quote verification library (`TcbLevelCheck`, `TdxModuleCheck`,
 * `TDRelaunchCheck`): the first TCB level, in the order Intel lists them, whose every
 * component is at or below the platform's wins. One deliberate difference: all 16 TEE_TCB_SVN
 * bytes are compared with the level's TDX components even when a TDX module identity also
 * applies (Intel skips the first two then), which can only make the status worse.
 *
 * @module
 */

/** A TCB status as Intel's TCB info and the verifier report it. */
export type TcbStatus =
  | "UpToDate"
  | "SWHardeningNeeded"
  | "ConfigurationNeeded"
  | "ConfigurationAndSWHardeningNeeded"
  | "OutOfDate"
  | "OutOfDateConfigurationNeeded"
  | "TDRelaunchAdvised"
  | "TDRelaunchAdvisedConfigurationNeeded"
  | "Revoked"
  | "NotSupported";

/** The statuses a TCB level of Intel's TCB info may carry. */
export const TCB_LEVEL_STATUSES: readonly TcbStatus[] = Object.freeze(
  [
    "UpToDate",
    "SWHardeningNeeded",
    "ConfigurationNeeded",
    "ConfigurationAndSWHardeningNeeded",
    "OutOfDate",
    "OutOfDateConfigurationNeeded",
    "Revoked",
  ] as const,
);

/** The statuses of a QE identity or TDX module identity TCB level. */
export type IdentityStatus = "UpToDate" | "OutOfDate" | "Revoked";

/** One TCB level of Intel's TDX TCB info. */
export interface TcbLevel {
  /** The 16 SGX component SVNs. */
  readonly sgxComponents: readonly number[];
  /** PCESVN. */
  readonly pceSvn: number;
  /** The 16 TDX component SVNs. */
  readonly tdxComponents: readonly number[];
  /** The level's date. */
  readonly tcbDate: string;
  /** The level's status. */
  readonly status: TcbStatus;
  /** Intel security advisories that apply at this level. */
  readonly advisoryIds: readonly string[];
}

/** One TCB level of an identity (QE identity or TDX module identity). */
export interface IdentityLevel {
  /** ISVSVN at or above which this level applies. */
  readonly isvSvn: number;
  /** The level's date. */
  readonly tcbDate: string;
  /** The level's status. */
  readonly status: IdentityStatus;
  /** Advisories that apply at this level. */
  readonly advisoryIds: readonly string[];
}

/** A TDX module identity (`tdxModuleIdentities[]` of the TCB info). */
export interface TdxModuleIdentity {
  /** `TDX_<major version as two hex digits>`, e.g. `TDX_01`. */
  readonly id: string;
  /** Expected MRSIGNERSEAM, 48 bytes. */
  readonly mrSigner: Uint8Array;
  /** Expected SEAMATTRIBUTES, 8 bytes. */
  readonly attributes: Uint8Array;
  /** Mask of SEAMATTRIBUTES, 8 bytes. */
  readonly attributesMask: Uint8Array;
  /** The module's TCB levels. */
  readonly tcbLevels: readonly IdentityLevel[];
}

/** The result of TCB evaluation. */
export interface TcbEvaluation {
  /** The converged status. */
  readonly status: TcbStatus;
  /** Advisory ids of the matched levels (platform, TDX module, QE), without duplicates. */
  readonly advisoryIds: readonly string[];
  /** Date of the matched platform TCB level, or `null` when none matched. */
  readonly tcbDate: string | null;
}

/** What evaluation needs from the TCB info. */
export interface TcbInfoLevels {
  /** The platform TCB levels, in Intel's order (newest first). */
  readonly tcbLevels: readonly TcbLevel[];
  /** The TDX module identities. */
  readonly tdxModuleIdentities: readonly TdxModuleIdentity[];
}

/** What evaluation needs from the quote and the PCK certificate. */
export interface TcbInputs {
  /** SGX TCB components from the PCK certificate. */
  readonly sgxComponents: readonly number[];
  /** PCESVN from the PCK certificate. */
  readonly pceSvn: number;
  /** TEE_TCB_SVN of the TD report. */
  readonly teeTcbSvn: Uint8Array;
  /** TEE_TCB_SVN2 of a TD 1.5 report, else `null`. */
  readonly teeTcbSvn2: Uint8Array | null;
  /** The QE's ISVSVN. */
  readonly qeIsvSvn: number;
  /** The QE identity's TCB levels. */
  readonly qeLevels: readonly IdentityLevel[];
}

/** Finds the module identity `TDX_<version>` (case-insensitive). */
export function findModuleIdentity(
  identities: readonly TdxModuleIdentity[],
  version: number,
): TdxModuleIdentity | undefined {
  const id = `TDX_${version.toString(16).padStart(2, "0")}`.toUpperCase();
  return identities.find((identity) => identity.id.toUpperCase() === id);
}

function sgxAtLeast(inputs: TcbInputs, level: TcbLevel): boolean {
  return level.sgxComponents.every((svn, i) => inputs.sgxComponents[i] >= svn) &&
    inputs.pceSvn >= level.pceSvn;
}

function tdxAtLeast(teeTcbSvn: Uint8Array, level: TcbLevel): boolean {
  // Intel's library skips bytes 0 and 1 (the TDX module's SVN and major version) when the module
  // reports a major version, and judges them by the module identity instead. We compare all 16
  // bytes *and* apply the module identity: never more lenient than Intel, and the same result
  // as `@phala/dcap-qvl` (docs/attestation.md, "TCB evaluation").
  for (let i = 0; i < 16; i++) if (teeTcbSvn[i] < level.tdxComponents[i]) return false;
  return true;
}

function isConfigurationNeeded(status: TcbStatus): boolean {
  return status === "ConfigurationNeeded" || status === "OutOfDateConfigurationNeeded" ||
    status === "ConfigurationAndSWHardeningNeeded" ||
    status === "TDRelaunchAdvisedConfigurationNeeded";
}

/** Folds an "OutOfDate" or "Revoked" identity status into the platform status. */
function converge(status: TcbStatus, identity: IdentityStatus | "NotSupported"): TcbStatus {
  if (identity === "NotSupported") return "NotSupported";
  if (identity === "Revoked") return "Revoked";
  if (identity === "OutOfDate") {
    if (status === "UpToDate" || status === "SWHardeningNeeded") return "OutOfDate";
    if (status === "ConfigurationNeeded" || status === "ConfigurationAndSWHardeningNeeded") {
      return "OutOfDateConfigurationNeeded";
    }
  }
  return status;
}

function matchIdentityLevel(
  levels: readonly IdentityLevel[],
  isvSvn: number,
): IdentityLevel | undefined {
  return levels.find((level) => isvSvn >= level.isvSvn);
}

/**
 * Evaluates the TCB of a TDX quote against verified TCB info and QE identity. Returns
 * `NotSupported` when no TCB level (platform, module or QE) matches; the caller refuses it.
 */
export function evaluateTdxTcb(info: TcbInfoLevels, inputs: TcbInputs): TcbEvaluation {
  const advisories = new Set<string>();
  const notSupported: TcbEvaluation = { status: "NotSupported", advisoryIds: [], tcbDate: null };

  // QE identity level.
  const qeLevel = matchIdentityLevel(inputs.qeLevels, inputs.qeIsvSvn);
  const qeStatus: IdentityStatus | "NotSupported" = qeLevel ? qeLevel.status : "NotSupported";

  // Platform levels: the first level whose SGX part matches, and the first whose SGX and TDX
  // parts both match.
  let sgxLevel: TcbLevel | undefined;
  let tdxLevel: TcbLevel | undefined;
  for (const level of info.tcbLevels) {
    if (!sgxAtLeast(inputs, level)) continue;
    sgxLevel ??= level;
    if (tdxAtLeast(inputs.teeTcbSvn, level)) {
      tdxLevel = level;
      break;
    }
  }
  if (!sgxLevel || !tdxLevel) return notSupported;

  // TDX module identity (only when the module reports a major version).
  let moduleStatus: IdentityStatus = "UpToDate";
  const moduleVersion = inputs.teeTcbSvn[1];
  if (moduleVersion > 0) {
    const identity = findModuleIdentity(info.tdxModuleIdentities, moduleVersion);
    if (!identity) return notSupported;
    const level = matchIdentityLevel(identity.tcbLevels, inputs.teeTcbSvn[0]);
    if (!level) return notSupported;
    moduleStatus = level.status;
    for (const id of level.advisoryIds) advisories.add(id);
  }
  for (const id of tdxLevel.advisoryIds) advisories.add(id);

  let status = converge(tdxLevel.status, moduleStatus);
  if (status === "Revoked") {
    return { status, advisoryIds: [...advisories], tcbDate: tdxLevel.tcbDate };
  }

  // TD 1.5: a TD running on an up-to-date platform but launched before a module update.
  if (inputs.teeTcbSvn2 && qeStatus === "UpToDate") {
    status = relaunch(info, inputs.teeTcbSvn2, sgxLevel.status, status, moduleStatus);
  }
  if (qeLevel) { for (const id of qeLevel.advisoryIds) advisories.add(id); }
  status = converge(status, qeStatus);
  if (status === "NotSupported") return notSupported;
  return { status, advisoryIds: [...advisories], tcbDate: tdxLevel.tcbDate };
}

function relaunch(
  info: TcbInfoLevels,
  teeTcbSvn2: Uint8Array,
  sgxStatus: TcbStatus,
  tdxStatus: TcbStatus,
  moduleStatus: IdentityStatus,
): TcbStatus {
  const sgxFine = sgxStatus === "UpToDate" || sgxStatus === "SWHardeningNeeded" ||
    sgxStatus === "ConfigurationNeeded" || sgxStatus === "ConfigurationAndSWHardeningNeeded";
  const tdxOld = tdxStatus === "OutOfDate" || tdxStatus === "OutOfDateConfigurationNeeded";
  if (!sgxFine || !tdxOld || moduleStatus !== "OutOfDate") return tdxStatus;
  const latest = info.tcbLevels[0];
  if (!latest) return "NotSupported";
  let moduleCurrent: boolean;
  if (teeTcbSvn2[1] === 0) {
    moduleCurrent = teeTcbSvn2[0] >= latest.tdxComponents[0];
  } else {
    const identity = findModuleIdentity(info.tdxModuleIdentities, teeTcbSvn2[1]);
    const newest = identity?.tcbLevels[0];
    if (!newest) return "NotSupported";
    moduleCurrent = teeTcbSvn2[0] >= newest.isvSvn;
  }
  if (!moduleCurrent || teeTcbSvn2[2] < latest.tdxComponents[2]) return tdxStatus;
  return isConfigurationNeeded(sgxStatus) || isConfigurationNeeded(tdxStatus)
    ? "TDRelaunchAdvisedConfigurationNeeded"
    : "TDRelaunchAdvised";
}
