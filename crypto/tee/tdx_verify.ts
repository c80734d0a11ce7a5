/**
 * Full verification of an Intel TDX quote (v4, v5): the quoting enclave's vendor, the PCK
 * chain to a pinned Intel root, the QE report signature and report data, the QE identity, the
 * quote signature, optional collateral (revocation, TCB level, freshness) and the TD policy.
 * `now` is a parameter; nothing reads the clock.
 *
 * Order (each step trusts only what the steps before it verified):
 *
 * 1. QE vendor id is Intel's.
 * 2. PCK chain: names and signatures to a pinned root, CA constraints, validity at `now`.
 * 3. QE report signature with the PCK leaf key.
 * 4. QE report data = SHA-256(attestation key ‖ QE auth data) ‖ 32 zero bytes.
 * 5. QE identity: Intel's TD QE MRSIGNER, ISVPRODID 2, not debug (and the collateral's masks
 *    and TCB levels when collateral is given).
 * 6. Quote signature over header ‖ body with the attestation key.
 * 7. Collateral, when given: see {@linkcode verifyTdxCollateral}; then FMSPC and PCE id, the
 *    TDX module identity, and the TCB level → status and advisories. `Revoked` and "no
 *    matching TCB level" are refused here; other statuses are returned for the caller's policy.
 * 8. TD policy: DEBUG off, reserved attribute bits zero, SEPT_VE_DISABLE on, SEAMATTRIBUTES
 *    zero, MRSIGNERSEAM Intel's, MRSERVICETD zero, and MRCONFIGID, MROWNER and MROWNERCONFIG
 *    zero (the host sets them at TD creation and the measurement id does not cover them; see
 *    `docs/attestation.md` §7).
 *
 * @example
 * ```ts ignore
 * import { verifyTdxQuote } from "@net/consumer/tee";
 *
 * const result = await verifyTdxQuote(quoteBytes, { now: new Date() });
 * console.log(result.tcb?.status ?? "crypto only");
 * ```
 *
 * @module
 */

import { sha256 } from "@noble/hashes/sha2.js";
import { type Anchors, resolveAnchors } from "./_anchors.ts";
import { concat, equalBytes, hexConstant, isAllZero, toHex } from "../_bytes.ts";
import { checkNow } from "../_time.ts";
import { type ValidatedChain, verifyChain } from "./_chain.ts";
import { readPckPlatform } from "./_pck_extension.ts";
import { type PublicKey, verifyEcdsa } from "./_signature.ts";
import { parsePemChain } from "./_x509.ts";
import {
  type TdxCollateral,
  type VerifyCollateralOptions,
  verifyTdxCollateral,
} from "./collateral.ts";
import type { QeIdentity, TcbInfo } from "./collateral_documents.ts";
import { AttestationError, QuoteParseError } from "./errors.ts";
import { PINNED_ROOTS, type TrustRoots } from "./roots.ts";
import { evaluateTdxTcb, findModuleIdentity, type TcbEvaluation } from "./tcb_status.ts";
import {
  INTEL_QE_VENDOR_ID,
  parseTdxQuote,
  type QeReport,
  type TdReportBody,
  type TdxQuote,
} from "./tdx_quote.ts";

/** An elliptic-curve public key of a certificate. */
type EcPublicKey = Extract<PublicKey, { kind: "ec" }>;

/** MRSIGNER of Intel's TD quoting enclave. */
export const INTEL_TD_QE_MRSIGNER: Uint8Array = hexConstant(
  "dc9e2a7c6f948f17474e34a7fc43ed030f7c1563f1babddf6340c82e0e54a8c5",
);
/** ISVPRODID of Intel's TD quoting enclave. */
export const INTEL_TD_QE_ISVPRODID = 2;

/**
 * TD attribute bits a TD may have set: SEPT_VE_DISABLE (28, required), PKS (30), KL (31) and
 * PERFMON (63). Every other bit (DEBUG, the reserved bits, MIGRATABLE) must be zero.
 */
export const TD_ATTRIBUTES_ALLOWED: bigint = (1n << 28n) | (1n << 30n) | (1n << 31n) | (1n << 63n);
/** TD attribute bit 0: the TD is debuggable. */
export const TD_ATTRIBUTE_DEBUG: bigint = 1n;
/** TD attribute bit 28: EPT violations are not converted to #VE (required). */
export const TD_ATTRIBUTE_SEPT_VE_DISABLE: bigint = 1n << 28n;

/** Options of {@linkcode verifyTdxQuote}. */
export interface VerifyTdxQuoteOptions {
  /** The time at which certificates and collateral must be valid. */
  now: Date;
  /**
   * The roots to trust.
   *
   * @default {PINNED_ROOTS}
   */
  roots?: TrustRoots;
  /**
   * Intel collateral for this quote's platform. Without it, the quote is checked
   * cryptographically only and `tcb` is `null`.
   *
   * @default {null}
   */
  collateral?: TdxCollateral | null;
}

/** What the PCK certificate says about the platform. */
export interface PckPlatform {
  /** FMSPC, 6 bytes. */
  readonly fmspc: Uint8Array;
  /** PCE id, 2 bytes. */
  readonly pceId: Uint8Array;
  /** The 16 SGX TCB component SVNs. */
  readonly sgxComponents: readonly number[];
  /** PCESVN. */
  readonly pceSvn: number;
  /** CPUSVN, 16 bytes. */
  readonly cpuSvn: Uint8Array;
}

/** The result of a successful TDX verification. */
export interface TdxVerification {
  /** The parsed quote. */
  readonly quote: TdxQuote;
  /** What the PCK certificate says about the platform. */
  readonly platform: PckPlatform;
  /** TCB status and advisories, or `null` when no collateral was given. */
  readonly tcb: TcbEvaluation | null;
  /**
   * The TCB evaluation data numbers of the collateral's TCB info and QE identity (which TCB
   * recovery event they reflect), or `null` when no collateral was given.
   */
  readonly evaluationDataNumbers: { readonly tcbInfo: number; readonly qeIdentity: number } | null;
  /** Earliest end of validity of the certificates and collateral used. */
  readonly validUntil: Date;
}

function refuse(check: ConstructorParameters<typeof AttestationError>[1], message: string): never {
  throw new AttestationError("untrusted", check, `Cannot verify attestation: ${message}`);
}

function abbreviateHex(bytes: Uint8Array): string {
  const hex = toHex(bytes);
  return hex.length <= 24 ? hex : `${hex.slice(0, 24)}…`;
}

function readU64(bytes: Uint8Array): bigint {
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
}

/**
 * Verifies a TDX quote, see the module documentation for the steps.
 *
 * @throws {AttestationError} `malformed` (the quote does not parse: check `quote`),
 * `untrusted`, or `stale` (a certificate or collateral item outside its validity at `now`).
 */
export async function verifyTdxQuote(
  input: TdxQuote | Uint8Array,
  options: VerifyTdxQuoteOptions,
): Promise<TdxVerification> {
  const now = checkNow(options.now, "verifyTdxQuote");
  const quote = parseInput(input);
  const anchors: Anchors = resolveAnchors(options.roots ?? PINNED_ROOTS);
  const { pckChain, pckKey, platform } = await verifyPckChain(quote, anchors, now);
  await verifyQuotingEnclave(quote, pckKey);
  await verifyQuoteSignature(quote);
  const platformTcb = options.collateral
    ? await verifyPlatformTcb(quote, platform, {
      collateral: options.collateral,
      anchors: anchors.intel,
      pckChain,
      now,
    })
    : {
      tcb: null,
      evaluationDataNumbers: null,
      validUntil: pckChain.notAfter,
      // Without collateral, Intel's module: a zero MRSIGNERSEAM.
      moduleSigner: new Uint8Array(48),
    };
  checkTdPolicy(quote.body, platformTcb.moduleSigner);
  const { tcb, evaluationDataNumbers, validUntil } = platformTcb;
  return { quote, platform, tcb, evaluationDataNumbers, validUntil };
}

function parseInput(input: TdxQuote | Uint8Array): TdxQuote {
  try {
    return input instanceof Uint8Array ? parseTdxQuote(input) : input;
  } catch (cause) {
    if (!(cause instanceof QuoteParseError)) throw cause;
    throw new AttestationError("malformed", "quote", cause.shortMessage, { cause });
  }
}

/** 1. The QE vendor is Intel; 2. the PCK chain leads to a pinned root and certifies a P-256 key. */
async function verifyPckChain(
  quote: TdxQuote,
  anchors: Anchors,
  now: Date,
): Promise<{ pckChain: ValidatedChain; pckKey: EcPublicKey; platform: PckPlatform }> {
  if (!equalBytes(quote.header.qeVendorId, INTEL_QE_VENDOR_ID)) {
    refuse(
      "qe_vendor",
      `the quoting enclave's vendor id is ${toHex(quote.header.qeVendorId)}, expected Intel's ` +
        toHex(INTEL_QE_VENDOR_ID),
    );
  }
  const pckChain = await verifyChain(
    parsePemChain(quote.pckChainPem, { check: "pck_chain", label: "the PCK certificate chain" }),
    { check: "pck_chain", label: "the PCK certificate chain", anchors: anchors.intel, now },
  );
  const leaf = pckChain.path[0];
  if (!leaf.subjectCn.includes("SGX PCK Certificate") || leaf.publicKey.kind !== "ec") {
    refuse(
      "pck_chain",
      `the quote is certified by "${leaf.subjectCn}", not an SGX PCK certificate`,
    );
  }
  if (leaf.publicKey.curve !== "P-256") {
    refuse("pck_chain", `the PCK key is ${leaf.publicKey.curve}, expected P-256`);
  }
  return { pckChain, pckKey: leaf.publicKey, platform: readPckPlatform(leaf) };
}

/**
 * 3. The QE report is signed by the PCK key; 4. its report data binds the attestation key;
 * 5. it is Intel's TD quoting enclave, not in debug mode.
 */
async function verifyQuotingEnclave(quote: TdxQuote, pckKey: EcPublicKey): Promise<void> {
  if (
    !await verifyEcdsa(pckKey, quote.qeReport.raw, quote.qeReportSignature, {
      hash: "SHA-256",
      format: "compact",
    })
  ) {
    refuse("qe_report_signature", "the QE report signature does not verify with the PCK key");
  }
  const expectedQeData = concat(
    sha256(concat(quote.attestationKey, quote.qeAuthData)),
    new Uint8Array(32),
  );
  if (!equalBytes(quote.qeReport.reportData, expectedQeData)) {
    refuse(
      "qe_report_data",
      `the QE report data is ${toHex(quote.qeReport.reportData.subarray(0, 8))}…, expected ` +
        `SHA-256(attestation key ‖ QE auth data) ${toHex(expectedQeData.subarray(0, 8))}… ` +
        "followed by 32 zero bytes",
    );
  }
  if (!equalBytes(quote.qeReport.mrSigner, INTEL_TD_QE_MRSIGNER)) {
    refuse(
      "qe_identity",
      `the QE MRSIGNER is ${toHex(quote.qeReport.mrSigner)}, expected Intel's ` +
        toHex(INTEL_TD_QE_MRSIGNER),
    );
  }
  if (quote.qeReport.isvProdId !== INTEL_TD_QE_ISVPRODID) {
    refuse(
      "qe_identity",
      `the QE ISVPRODID is ${quote.qeReport.isvProdId}, expected ${INTEL_TD_QE_ISVPRODID}`,
    );
  }
  if ((quote.qeReport.attributes[0] & 0x02) !== 0) {
    refuse("qe_identity", "the quoting enclave runs in debug mode");
  }
}

/** 6. The quote is signed by the attestation key. */
async function verifyQuoteSignature(quote: TdxQuote): Promise<void> {
  const attestationKey = concat(Uint8Array.of(4), quote.attestationKey);
  if (
    !await verifyEcdsa(
      { curve: "P-256", point: attestationKey },
      quote.signedRegion,
      quote.signature,
      {
        hash: "SHA-256",
        format: "compact",
      },
    )
  ) {
    refuse("quote_signature", "the quote signature does not verify with the attestation key");
  }
}

/** What collateral establishes about the platform. */
interface PlatformTcb {
  readonly tcb: TcbEvaluation | null;
  readonly evaluationDataNumbers: TdxVerification["evaluationDataNumbers"];
  readonly validUntil: Date;
  /** The MRSIGNERSEAM the TD policy expects: the TDX module identity's signer. */
  readonly moduleSigner: Uint8Array;
}

/**
 * 7. The collateral verifies, is this platform's, matches the QE and the TDX module, and places
 * the platform at a TCB level that is neither missing nor revoked.
 */
async function verifyPlatformTcb(
  quote: TdxQuote,
  platform: PckPlatform,
  options: VerifyCollateralOptions & { collateral: TdxCollateral },
): Promise<PlatformTcb> {
  const { tcbInfo, qeIdentity, notAfter } = await verifyTdxCollateral(options.collateral, options);
  if (!equalBytes(tcbInfo.fmspc, platform.fmspc) || !equalBytes(tcbInfo.pceId, platform.pceId)) {
    throw new AttestationError(
      "untrusted",
      "collateral",
      `Cannot verify attestation: the collateral is for FMSPC ${toHex(tcbInfo.fmspc)} / PCE ` +
        `${toHex(tcbInfo.pceId)}, the PCK certificate says FMSPC ${toHex(platform.fmspc)} / ` +
        `PCE ${toHex(platform.pceId)}`,
    );
  }
  checkQeIdentity(quote.qeReport, qeIdentity);
  const module = moduleIdentity(quote.body, tcbInfo);
  const tcb = evaluateTdxTcb(tcbInfo, {
    sgxComponents: platform.sgxComponents,
    pceSvn: platform.pceSvn,
    teeTcbSvn: quote.body.teeTcbSvn,
    teeTcbSvn2: quote.body.teeTcbSvn2,
    qeIsvSvn: quote.qeReport.isvSvn,
    qeLevels: qeIdentity.tcbLevels,
  });
  if (tcb.status === "NotSupported") {
    refuse(
      "tcb_status",
      `no matching TCB level: the platform (FMSPC ${toHex(platform.fmspc)}, PCESVN ` +
        `${platform.pceSvn}, TEE_TCB_SVN ${toHex(quote.body.teeTcbSvn)}, QE ISVSVN ` +
        `${quote.qeReport.isvSvn}) is below every level of the TCB info; the TCB is not supported`,
    );
  }
  if (tcb.status === "Revoked") {
    refuse("tcb_status", `the platform's TCB level is Revoked (${tcb.advisoryIds.join(", ")})`);
  }
  return {
    tcb,
    evaluationDataNumbers: {
      tcbInfo: tcbInfo.tcbEvaluationDataNumber,
      qeIdentity: qeIdentity.tcbEvaluationDataNumber,
    },
    validUntil: notAfter,
    moduleSigner: module.mrSigner,
  };
}

/** The QE report under the QE identity's masks. */
function checkQeIdentity(qe: QeReport, qeIdentity: QeIdentity): void {
  if ((qe.miscSelect & qeIdentity.miscSelectMask) >>> 0 !== qeIdentity.miscSelect >>> 0) {
    refuse("qe_identity", "the QE MISCSELECT does not match the QE identity");
  }
  for (let i = 0; i < 16; i++) {
    if ((qe.attributes[i] & qeIdentity.attributesMask[i]) !== qeIdentity.attributes[i]) {
      refuse("qe_identity", "the QE attributes do not match the QE identity");
    }
  }
  if (!equalBytes(qe.mrSigner, qeIdentity.mrSigner) || qe.isvProdId !== qeIdentity.isvProdId) {
    refuse("qe_identity", "the QE MRSIGNER or ISVPRODID does not match the QE identity");
  }
}

/**
 * The TDX module's identity: the one named by the module's major version, or the TCB info's
 * `tdxModule`; SEAMATTRIBUTES must match it under its mask.
 */
function moduleIdentity(body: TdReportBody, tcbInfo: TcbInfo): TcbInfo["tdxModule"] {
  const moduleVersion = body.teeTcbSvn[1];
  let module = tcbInfo.tdxModule;
  if (moduleVersion > 0) {
    const identity = findModuleIdentity(tcbInfo.tdxModuleIdentities, moduleVersion);
    if (!identity) {
      refuse(
        "tcb_status",
        `the collateral has no TDX module identity for module version ${moduleVersion}`,
      );
    }
    module = identity;
  }
  for (let i = 0; i < 8; i++) {
    if ((body.seamAttributes[i] & module.attributesMask[i]) !== module.attributes[i]) {
      refuse("td_policy", "SEAMATTRIBUTES do not match the TDX module identity");
    }
  }
  return module;
}

/** 8. The TD policy: see the module documentation. */
function checkTdPolicy(body: TdReportBody, moduleSigner: Uint8Array): void {
  const attributes = readU64(body.tdAttributes);
  if ((attributes & TD_ATTRIBUTE_DEBUG) !== 0n) {
    refuse("td_policy", "the TD is debuggable (TDATTRIBUTES.DEBUG is set)");
  }
  const forbidden = attributes & ~TD_ATTRIBUTES_ALLOWED;
  if (forbidden !== 0n) {
    refuse(
      "td_policy",
      `TDATTRIBUTES has reserved or forbidden bits set (0x${forbidden.toString(16)})`,
    );
  }
  if ((attributes & TD_ATTRIBUTE_SEPT_VE_DISABLE) === 0n) {
    refuse("td_policy", "TDATTRIBUTES lacks SEPT_VE_DISABLE (bit 28)");
  }
  if (!isAllZero(body.seamAttributes)) {
    refuse("td_policy", `SEAMATTRIBUTES must be zero, found ${toHex(body.seamAttributes)}`);
  }
  if (!equalBytes(body.mrSignerSeam, moduleSigner)) {
    refuse(
      "td_policy",
      `MRSIGNERSEAM is ${toHex(body.mrSignerSeam)}, expected ${toHex(moduleSigner)} ` +
        "(Intel's TDX module)",
    );
  }
  if (body.mrServiceTd && !isAllZero(body.mrServiceTd)) {
    refuse(
      "td_policy",
      `MRSERVICETD is ${toHex(body.mrServiceTd)}, expected zero (no service TD may be bound)`,
    );
  }
  // The measurement id is keccak256(MRTD ‖ RTMR0 ‖ RTMR1 ‖ RTMR2): these three 48-byte values
  // are chosen by whoever creates the TD (the provider's host) and are not in it. A TD that
  // read configuration or an owner identity from them would run something the approved id does
  // not describe, so they must be unused (zero).
  for (
    const [name, value] of [
      ["MRCONFIGID", body.mrConfigId],
      ["MROWNER", body.mrOwner],
      ["MROWNERCONFIG", body.mrOwnerConfig],
    ] as const
  ) {
    if (!isAllZero(value)) {
      refuse(
        "td_policy",
        `${name} is ${abbreviateHex(value)}, expected zero (host-provided values are not covered ` +
          "by the measurement id)",
      );
    }
  }
}
