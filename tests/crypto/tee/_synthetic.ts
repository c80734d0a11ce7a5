/**
 * Test-only builders of real, signed TEE evidence under **test roots**: an Intel-shaped PKI
 * (root CA → PCK CA → PCK leaf with the SGX extension, and a TCB signing certificate), TDX v4
 * and v5 quotes signed by an attestation key certified by a QE report signed by the PCK leaf,
 * Intel-shaped collateral (TCB info, QE identity, CRLs) signed by the test chain, and an
 * AMD-shaped PKI (ARK → ASK → VCEK, RSA-PSS and P-384) with SEV-SNP reports.
 *
 * Nothing here is trusted by the library unless a test passes the returned `roots` through the
 * `roots` option. Whole bundles (with GPUs) are built by `_synthetic_bundle.ts`.
 *
 * @module
 */

import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import { sha256 } from "@noble/hashes/sha2.js";
import { hexToBytes } from "viem";
import type { TdxCollateral, TrustRoots } from "../../../crypto/tee/mod.ts";
import { INTEL_QE_VENDOR_ID } from "../../../crypto/tee/tdx_quote.ts";
import { INTEL_TD_QE_MRSIGNER } from "../../../crypto/tee/tdx_verify.ts";

const SGX_OID = "1.2.840.113741.1.13.1";
const AMD_OID = "1.3.6.1.4.1.3704.1";
const DAY = 86_400_000;
const encoder = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// Small helpers.

/** Lower-case hex without `0x`. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Concatenates byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function u16(value: number): Uint8Array {
  const out = new Uint8Array(2);
  new DataView(out.buffer).setUint16(0, value, true);
  return out;
}

function u32(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value, true);
  return out;
}

function u64(value: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, value, true);
  return out;
}

function filled(length: number, byte: number): Uint8Array {
  return new Uint8Array(length).fill(byte);
}

function iso(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** One certificate as PEM. */
export function pem(der: Uint8Array): string {
  const base64 = btoa(String.fromCharCode(...der));
  const lines = base64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
}

/** A fresh ECDSA key pair (extractable). */
export async function ecKeys(curve: "P-256" | "P-384"): Promise<CryptoKeyPair> {
  return await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: curve }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
}

async function rawPublicKey(key: CryptoKey): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.exportKey("raw", key));
}

/** Signs with ECDSA and returns raw `r ‖ s` (WebCrypto's format, Intel's too). */
export async function signRaw(
  key: CryptoKey,
  data: Uint8Array,
  hash: "SHA-256" | "SHA-384" = "SHA-256",
): Promise<Uint8Array> {
  return new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash }, key, data as Uint8Array<ArrayBuffer>),
  );
}

/** A distinguished name `CN=cn, O=organization`. */
export function name(cn: string, organization: string): pkijs.RelativeDistinguishedNames {
  return new pkijs.RelativeDistinguishedNames({
    typesAndValues: [
      new pkijs.AttributeTypeAndValue({
        type: "2.5.4.3",
        value: new asn1js.Utf8String({ value: cn }),
      }),
      new pkijs.AttributeTypeAndValue({
        type: "2.5.4.10",
        value: new asn1js.Utf8String({ value: organization }),
      }),
    ],
  });
}

let serialCounter = 0x1000;

/** What {@linkcode issue} issues. */
export interface CertSpec {
  subject: string;
  issuer: string;
  organization?: string;
  publicKey: CryptoKey;
  signingKey: CryptoKey;
  hash: "SHA-256" | "SHA-384";
  notBefore: Date;
  notAfter: Date;
  ca?: { pathLength?: number };
  keyUsage?: number;
  extensions?: pkijs.Extension[];
  serial?: Uint8Array;
}

/** Issues a certificate with pkijs; returns its DER and serial (hex). */
export async function issue(spec: CertSpec): Promise<{ der: Uint8Array; serial: string }> {
  const cert = new pkijs.Certificate();
  const serial = spec.serial ??
    Uint8Array.of(0x01, (serialCounter >> 8) & 0xff, serialCounter++ & 0xff);
  cert.version = 2;
  cert.serialNumber = new asn1js.Integer({ valueHex: serial.slice().buffer });
  const organization = spec.organization ?? "Test Corporation";
  cert.subject = name(spec.subject, organization);
  cert.issuer = name(spec.issuer, organization);
  cert.notBefore.value = spec.notBefore;
  cert.notAfter.value = spec.notAfter;
  await cert.subjectPublicKeyInfo.importKey(spec.publicKey);
  const extensions: pkijs.Extension[] = [];
  if (spec.ca) {
    const constraints = new pkijs.BasicConstraints({
      cA: true,
      ...(spec.ca.pathLength === undefined ? {} : { pathLenConstraint: spec.ca.pathLength }),
    });
    extensions.push(
      new pkijs.Extension({
        extnID: "2.5.29.19",
        critical: true,
        extnValue: constraints.toSchema().toBER(false),
      }),
    );
  }
  if (spec.keyUsage !== undefined) {
    const bits = Uint8Array.of(spec.keyUsage & 0xff);
    extensions.push(
      new pkijs.Extension({
        extnID: "2.5.29.15",
        critical: true,
        extnValue: new asn1js.BitString({ valueHex: bits.buffer, unusedBits: 0 }).toBER(false),
      }),
    );
  }
  extensions.push(...(spec.extensions ?? []));
  if (extensions.length) cert.extensions = extensions;
  await cert.sign(spec.signingKey, spec.hash);
  let start = 0;
  while (start < serial.length - 1 && serial[start] === 0) start++;
  return {
    der: new Uint8Array(cert.toSchema(true).toBER(false)),
    serial: hex(serial.subarray(start)),
  };
}

const KEY_CERT_SIGN_CRL_SIGN = 0x06; // bits 5 and 6, first byte
const DIGITAL_SIGNATURE = 0x80;

function sequenceOf(oid: string, value: asn1js.AsnType): asn1js.Sequence {
  return new asn1js.Sequence({ value: [new asn1js.ObjectIdentifier({ value: oid }), value] });
}

function sgxExtension(platform: TestPlatform): pkijs.Extension {
  const tcb = [
    ...platform.sgxComponents.map((svn, i) =>
      sequenceOf(`${SGX_OID}.2.${i + 1}`, new asn1js.Integer({ value: svn }))
    ),
    sequenceOf(`${SGX_OID}.2.17`, new asn1js.Integer({ value: platform.pceSvn })),
    sequenceOf(
      `${SGX_OID}.2.18`,
      new asn1js.OctetString({ valueHex: Uint8Array.from(platform.sgxComponents).buffer }),
    ),
  ];
  const value = new asn1js.Sequence({
    value: [
      sequenceOf(`${SGX_OID}.1`, new asn1js.OctetString({ valueHex: filled(16, 0x5a).buffer })),
      sequenceOf(`${SGX_OID}.2`, new asn1js.Sequence({ value: tcb })),
      sequenceOf(
        `${SGX_OID}.3`,
        new asn1js.OctetString({ valueHex: platform.pceId.slice().buffer }),
      ),
      sequenceOf(
        `${SGX_OID}.4`,
        new asn1js.OctetString({ valueHex: platform.fmspc.slice().buffer }),
      ),
      sequenceOf(`${SGX_OID}.5`, new asn1js.Enumerated({ value: 0 })),
    ],
  });
  return new pkijs.Extension({ extnID: SGX_OID, critical: false, extnValue: value.toBER(false) });
}

/** Options of {@linkcode issueTestCertificate}. */
export interface TestCertificateOptions {
  /** Subject common name. */
  subject: string;
  /** The issuer; omitted: self-signed. */
  issuer?: { cn: string; keys: CryptoKeyPair };
  /** Validity. @default {2020-01-01 … 2040-01-01} */
  validity?: Window;
  /** basicConstraints CA, with an optional path length. @default {not a CA} */
  ca?: { pathLength?: number };
  /** First byte of keyUsage (0x80 digitalSignature, 0x04 keyCertSign, 0x02 cRLSign). */
  keyUsage?: number;
  /** Extra extensions: `[oid, critical]` with an empty OCTET STRING value. */
  extraExtensions?: [string, boolean][];
}

/** Issues one P-256 certificate for path-validation tests; returns it with its keys. */
export async function issueTestCertificate(
  options: TestCertificateOptions,
): Promise<TestCertificate> {
  const keys = await ecKeys("P-256");
  const validity = options.validity ??
    { from: new Date("2020-01-01T00:00:00Z"), to: new Date("2040-01-01T00:00:00Z") };
  const { der, serial } = await issue({
    subject: options.subject,
    issuer: options.issuer?.cn ?? options.subject,
    publicKey: keys.publicKey,
    signingKey: options.issuer?.keys.privateKey ?? keys.privateKey,
    hash: "SHA-256",
    notBefore: validity.from,
    notAfter: validity.to,
    ca: options.ca,
    keyUsage: options.keyUsage,
    extensions: (options.extraExtensions ?? []).map(([oid, critical]) =>
      new pkijs.Extension({
        extnID: oid,
        critical,
        extnValue: new asn1js.OctetString({ valueHex: new ArrayBuffer(0) }).toBER(false),
      })
    ),
  });
  return { der, serial, keys, notBefore: validity.from, notAfter: validity.to };
}

// ---------------------------------------------------------------------------------------------
// The Intel-shaped test PKI.

/** What the test PCK certificate says about the platform. */
export interface TestPlatform {
  /** FMSPC, 6 bytes. */
  readonly fmspc: Uint8Array;
  /** PCE id, 2 bytes. */
  readonly pceId: Uint8Array;
  /** 16 SGX TCB component SVNs (also the CPUSVN). */
  readonly sgxComponents: readonly number[];
  /** PCESVN. */
  readonly pceSvn: number;
}

/** A certificate of the test PKI with its key. */
export interface TestCertificate {
  /** DER bytes. */
  readonly der: Uint8Array;
  /** Serial, lower-case hex without leading zeros. */
  readonly serial: string;
  /** The certified key pair. */
  readonly keys: CryptoKeyPair;
  /** Validity. */
  readonly notBefore: Date;
  /** Validity. */
  readonly notAfter: Date;
}

/** An Intel-shaped PKI under a test root. */
export interface TestIntelPki {
  /** Roots to pass to the verifiers: this PKI's root only. */
  readonly roots: TrustRoots;
  /** The test root CA ("Test SGX Root CA"). */
  readonly root: TestCertificate;
  /** The PCK CA ("Test SGX PCK Platform CA"). */
  readonly pckCa: TestCertificate;
  /** The PCK leaf ("Test SGX PCK Certificate") with the SGX extension. */
  readonly pckLeaf: TestCertificate;
  /** The TCB signing certificate ("Test SGX TCB Signing"). */
  readonly tcbSigning: TestCertificate;
  /** The platform the PCK leaf describes. */
  readonly platform: TestPlatform;
  /** PEM chain leaf → CA → root, as a quote carries it. */
  readonly pckChainPem: string;
}

/** Validity overrides of {@linkcode createTestIntelPki}, per certificate. */
export interface TestPkiValidity {
  /** Root CA validity. */
  root?: { from: Date; to: Date };
  /** PCK CA validity. */
  pckCa?: { from: Date; to: Date };
  /** PCK leaf validity. */
  pckLeaf?: { from: Date; to: Date };
  /** TCB signing validity. */
  tcbSigning?: { from: Date; to: Date };
}

/** Options of {@linkcode createTestIntelPki}. */
export interface TestIntelPkiOptions {
  /** Certificates are valid from `now - 30 days` to `now + 3 years` unless overridden. */
  now: Date;
  /** Per-certificate validity overrides. */
  validity?: TestPkiValidity;
  /** Platform facts for the PCK leaf. */
  platform?: Partial<TestPlatform>;
}

/** Default platform: FMSPC 00906ed50000, PCE 0000, SGX components 5…, PCESVN 13. */
export const TEST_PLATFORM: TestPlatform = Object.freeze({
  fmspc: Uint8Array.of(0x00, 0x90, 0x6e, 0xd5, 0x00, 0x00),
  pceId: Uint8Array.of(0, 0),
  sgxComponents: Object.freeze([5, 5, 2, 2, 3, 1, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0]),
  pceSvn: 13,
});

/** Creates the Intel-shaped test PKI. */
export async function createTestIntelPki(options: TestIntelPkiOptions): Promise<TestIntelPki> {
  const { now } = options;
  const window = (override?: { from: Date; to: Date }) =>
    override ??
      { from: new Date(now.getTime() - 30 * DAY), to: new Date(now.getTime() + 3 * 365 * DAY) };
  const platform: TestPlatform = { ...TEST_PLATFORM, ...options.platform };
  const [rootKeys, caKeys, leafKeys, tcbKeys] = await Promise.all([
    ecKeys("P-256"),
    ecKeys("P-256"),
    ecKeys("P-256"),
    ecKeys("P-256"),
  ]);
  const make = async (
    keys: CryptoKeyPair,
    validity: { from: Date; to: Date },
    spec: Omit<CertSpec, "publicKey" | "notBefore" | "notAfter" | "hash">,
  ): Promise<TestCertificate> => {
    const { der, serial } = await issue({
      ...spec,
      publicKey: keys.publicKey,
      notBefore: validity.from,
      notAfter: validity.to,
      hash: "SHA-256",
    });
    return { der, serial, keys, notBefore: validity.from, notAfter: validity.to };
  };
  const rootValidity = window(options.validity?.root);
  const root = await make(rootKeys, rootValidity, {
    subject: "Test SGX Root CA",
    issuer: "Test SGX Root CA",
    signingKey: rootKeys.privateKey,
    ca: { pathLength: 1 },
    keyUsage: KEY_CERT_SIGN_CRL_SIGN,
  });
  const pckCa = await make(caKeys, window(options.validity?.pckCa), {
    subject: "Test SGX PCK Platform CA",
    issuer: "Test SGX Root CA",
    signingKey: rootKeys.privateKey,
    ca: { pathLength: 0 },
    keyUsage: KEY_CERT_SIGN_CRL_SIGN,
  });
  const pckLeaf = await make(leafKeys, window(options.validity?.pckLeaf), {
    subject: "Test SGX PCK Certificate",
    issuer: "Test SGX PCK Platform CA",
    signingKey: caKeys.privateKey,
    keyUsage: DIGITAL_SIGNATURE,
    extensions: [sgxExtension(platform)],
  });
  const tcbSigning = await make(tcbKeys, window(options.validity?.tcbSigning), {
    subject: "Test SGX TCB Signing",
    issuer: "Test SGX Root CA",
    signingKey: rootKeys.privateKey,
    keyUsage: DIGITAL_SIGNATURE,
  });
  return {
    roots: { intel: [root.der], amd: [] },
    root,
    pckCa,
    pckLeaf,
    tcbSigning,
    platform,
    pckChainPem: pem(pckLeaf.der) + pem(pckCa.der) + pem(root.der),
  };
}

// ---------------------------------------------------------------------------------------------
// TDX quotes.

/** Options of {@linkcode buildTdxQuote}: the TD's registers and the knobs tests turn. */
export interface TdxQuoteOptions {
  /** REPORTDATA, 64 bytes. */
  reportData: Uint8Array;
  /** Quote version. @default {4} */
  version?: 4 | 5;
  /** v5 body type (2 = TD 1.0, 3 = TD 1.5). @default {3 for v5} */
  bodyType?: 2 | 3;
  /** MRTD, 48 bytes. @default {0x11 × 48} */
  mrTd?: Uint8Array;
  /** RTMR0..3, 48 bytes each. @default {0x20+i × 48} */
  rtmrs?: readonly [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  /** TDATTRIBUTES as a 64-bit integer. @default {SEPT_VE_DISABLE (1 << 28)} */
  tdAttributes?: bigint;
  /** TEE_TCB_SVN, 16 bytes. @default {03 01 02 00…} */
  teeTcbSvn?: Uint8Array;
  /** MRSERVICETD for TD 1.5. @default {zero} */
  mrServiceTd?: Uint8Array;
  /** SEAMATTRIBUTES. @default {zero} */
  seamAttributes?: Uint8Array;
  /** MRCONFIGID, MROWNER, MROWNERCONFIG (48 bytes each). @default {zero} */
  hostValues?: { mrConfigId?: Uint8Array; mrOwner?: Uint8Array; mrOwnerConfig?: Uint8Array };
  /** MRSIGNERSEAM. @default {zero} */
  mrSignerSeam?: Uint8Array;
  /** QE vendor id. @default {Intel's} */
  qeVendorId?: Uint8Array;
  /** QE MRSIGNER. @default {Intel's TD QE} */
  qeMrSigner?: Uint8Array;
  /** QE ISVPRODID (Intel's TD QE is 2). @default {2} */
  qeIsvProdId?: number;
  /** QE ISVSVN. @default {8} */
  qeIsvSvn?: number;
  /** QE attributes byte 0. @default {0x11} */
  qeAttributes0?: number;
  /** The attestation key. @default {a fresh P-256 key} */
  attestationKey?: CryptoKeyPair;
  /** Zero bytes appended after the quote (a padded buffer). @default {0} */
  padding?: number;
}

/** Default TEE_TCB_SVN of synthetic quotes: module SVN 3, major version 1, microcode 2. */
export const TEST_TEE_TCB_SVN: Uint8Array = Uint8Array.of(
  3,
  1,
  2,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
  0,
);

/** Builds a signed TDX quote certified by the test PKI's PCK leaf. */
export async function buildTdxQuote(
  pki: TestIntelPki,
  options: TdxQuoteOptions,
): Promise<Uint8Array> {
  const version = options.version ?? 4;
  const bodyType = version === 4 ? 2 : options.bodyType ?? 3;
  if (options.reportData.length !== 64) throw new RangeError("reportData must be 64 bytes");
  const header = concat(
    u16(version),
    u16(2),
    u32(0x81),
    new Uint8Array(4),
    options.qeVendorId ?? INTEL_QE_VENDOR_ID,
    filled(20, 0x07),
  );
  const rtmrs = options.rtmrs ??
    [filled(48, 0x20), filled(48, 0x21), filled(48, 0x22), filled(48, 0x23)];
  let body = concat(
    options.teeTcbSvn ?? TEST_TEE_TCB_SVN,
    filled(48, 0x42), // MRSEAM
    options.mrSignerSeam ?? new Uint8Array(48),
    options.seamAttributes ?? new Uint8Array(8),
    u64(options.tdAttributes ?? (1n << 28n)),
    u64(0xe7n), // XFAM
    options.mrTd ?? filled(48, 0x11),
    options.hostValues?.mrConfigId ?? new Uint8Array(48),
    options.hostValues?.mrOwner ?? new Uint8Array(48),
    options.hostValues?.mrOwnerConfig ?? new Uint8Array(48),
    ...rtmrs,
    options.reportData,
  );
  if (bodyType === 3) {
    body = concat(
      body,
      options.teeTcbSvn ?? TEST_TEE_TCB_SVN,
      options.mrServiceTd ?? new Uint8Array(48),
    );
  }
  const signed = version === 5
    ? concat(header, u16(bodyType), u32(body.length), body)
    : concat(header, body);

  const attestation = options.attestationKey ?? await ecKeys("P-256");
  const attestationKey = (await rawPublicKey(attestation.publicKey)).subarray(1);
  const authData = filled(32, 0x3c);
  const qeReport = concat(
    Uint8Array.from(pki.platform.sgxComponents), // CPUSVN
    u32(0), // MISCSELECT
    new Uint8Array(28),
    concat(Uint8Array.of(options.qeAttributes0 ?? 0x11), new Uint8Array(15)),
    filled(32, 0x99), // MRENCLAVE
    new Uint8Array(32),
    options.qeMrSigner ?? INTEL_TD_QE_MRSIGNER,
    new Uint8Array(96),
    u16(options.qeIsvProdId ?? 2), // ISVPRODID
    u16(options.qeIsvSvn ?? 8),
    new Uint8Array(60),
    concat(sha256(concat(attestationKey, authData)), new Uint8Array(32)),
  );
  const qeReportSignature = await signRaw(pki.pckLeaf.keys.privateKey, qeReport);
  const chain = encoder.encode(pki.pckChainPem);
  const certData = concat(
    qeReport,
    qeReportSignature,
    u16(authData.length),
    authData,
    u16(5),
    u32(chain.length),
    chain,
  );
  const signature = await signRaw(attestation.privateKey, signed);
  const signatureData = concat(signature, attestationKey, u16(6), u32(certData.length), certData);
  return concat(
    signed,
    u32(signatureData.length),
    signatureData,
    new Uint8Array(options.padding ?? 0),
  );
}

// ---------------------------------------------------------------------------------------------
// Collateral.

/** A validity window. */
export interface Window {
  /** Start (inclusive). */
  from: Date;
  /** End (inclusive). */
  to: Date;
}

/** Options of {@linkcode buildTdxCollateral}. */
export interface TdxCollateralOptions {
  /** Items are valid from `now - 1 day` to `now + 29 days` unless overridden. */
  now: Date;
  /** Status of the TCB level that matches the platform. @default {"UpToDate"} */
  tcbStatus?: string;
  /** Advisory ids of that level. @default {[]} */
  advisoryIds?: string[];
  /** TEE_TCB_SVN the matching level requires. @default {TEST_TEE_TCB_SVN} */
  tdxComponents?: Uint8Array;
  /** Status of the QE identity level. @default {"UpToDate"} */
  qeTcbStatus?: string;
  /** ISVSVN the QE identity level requires. @default {8} */
  qeIsvSvn?: number;
  /** FMSPC of the TCB info. @default {the platform's} */
  fmspc?: Uint8Array;
  /** TCB evaluation data numbers of the TCB info and the QE identity. @default {17 each} */
  evaluationDataNumbers?: { tcbInfo?: number; qeIdentity?: number };
  /** Serials (hex) the PCK CRL revokes. @default {[]} */
  revokePck?: string[];
  /** Serials (hex) the root CA CRL revokes. @default {[]} */
  revokeRoot?: string[];
  /** Validity windows per item. */
  windows?: { tcbInfo?: Window; qeIdentity?: Window; pckCrl?: Window; rootCrl?: Window };
  /** Replace the TCB info text after signing (to test the signature over raw bytes). */
  tamperTcbInfo?: (text: string) => string;
}

/** A CRL of `issuerCn` revoking `revoked` (hex serials), signed with `hash`. */
export async function crl(
  issuerCn: string,
  signingKey: CryptoKey,
  window: Window,
  revoked: string[],
  options: { organization?: string; hash?: "SHA-256" | "SHA-384" } = {},
): Promise<Uint8Array> {
  const list = new pkijs.CertificateRevocationList();
  list.version = 1;
  list.issuer = name(issuerCn, options.organization ?? "Test Corporation");
  list.thisUpdate = new pkijs.Time({ type: 0, value: window.from });
  list.nextUpdate = new pkijs.Time({ type: 0, value: window.to });
  if (revoked.length) {
    list.revokedCertificates = revoked.map((serial) =>
      new pkijs.RevokedCertificate({
        userCertificate: new asn1js.Integer({ valueHex: hexToBytes(`0x${serial}`).slice().buffer }),
        revocationDate: new pkijs.Time({ type: 0, value: window.from }),
      })
    );
  }
  await list.sign(signingKey, options.hash ?? "SHA-256");
  return new Uint8Array(list.toSchema(true).toBER(false));
}

/** Builds Intel-shaped collateral for the test PKI's platform, signed by the test chain. */
export async function buildTdxCollateral(
  pki: TestIntelPki,
  options: TdxCollateralOptions,
): Promise<TdxCollateral> {
  const { now } = options;
  const base: Window = {
    from: new Date(now.getTime() - DAY),
    to: new Date(now.getTime() + 29 * DAY),
  };
  const windows = {
    tcbInfo: base,
    qeIdentity: base,
    pckCrl: base,
    rootCrl: base,
    ...options.windows,
  };
  const tdx = options.tdxComponents ?? TEST_TEE_TCB_SVN;
  const components = (list: readonly number[] | Uint8Array) => Array.from(list, (svn) => ({ svn }));
  const tcbInfo = JSON.stringify({
    id: "TDX",
    version: 3,
    issueDate: iso(windows.tcbInfo.from),
    nextUpdate: iso(windows.tcbInfo.to),
    fmspc: hex(options.fmspc ?? pki.platform.fmspc).toUpperCase(),
    pceId: hex(pki.platform.pceId),
    tcbType: 0,
    tcbEvaluationDataNumber: options.evaluationDataNumbers?.tcbInfo ?? 17,
    tdxModule: {
      mrsigner: "00".repeat(48),
      attributes: "0000000000000000",
      attributesMask: "FFFFFFFFFFFFFFFF",
    },
    tdxModuleIdentities: [
      {
        id: "TDX_01",
        mrsigner: "00".repeat(48),
        attributes: "0000000000000000",
        attributesMask: "FFFFFFFFFFFFFFFF",
        tcbLevels: [{ tcb: { isvsvn: 2 }, tcbDate: "2024-03-13T00:00:00Z", tcbStatus: "UpToDate" }],
      },
    ],
    tcbLevels: [
      {
        tcb: {
          sgxtcbcomponents: components(pki.platform.sgxComponents),
          pcesvn: pki.platform.pceSvn,
          tdxtcbcomponents: components(tdx),
        },
        tcbDate: "2024-03-13T00:00:00Z",
        tcbStatus: options.tcbStatus ?? "UpToDate",
        ...(options.advisoryIds?.length ? { advisoryIDs: options.advisoryIds } : {}),
      },
    ],
  });
  const qeIdentity = JSON.stringify({
    id: "TD_QE",
    version: 2,
    issueDate: iso(windows.qeIdentity.from),
    nextUpdate: iso(windows.qeIdentity.to),
    tcbEvaluationDataNumber: options.evaluationDataNumbers?.qeIdentity ?? 17,
    miscselect: "00000000",
    miscselectMask: "FFFFFFFF",
    attributes: "11000000000000000000000000000000",
    attributesMask: "FBFFFFFFFFFFFFFF0000000000000000",
    mrsigner: hex(INTEL_TD_QE_MRSIGNER).toUpperCase(),
    isvprodid: 2,
    tcbLevels: [
      {
        tcb: { isvsvn: options.qeIsvSvn ?? 8 },
        tcbDate: "2024-03-13T00:00:00Z",
        tcbStatus: options.qeTcbStatus ?? "UpToDate",
      },
    ],
  });
  const signingKey = pki.tcbSigning.keys.privateKey;
  const tcbInfoSignature = await signRaw(signingKey, encoder.encode(tcbInfo));
  const qeIdentitySignature = await signRaw(signingKey, encoder.encode(qeIdentity));
  return {
    pckCrlIssuerChain: pem(pki.pckCa.der) + pem(pki.root.der),
    rootCaCrl: await crl(
      "Test SGX Root CA",
      pki.root.keys.privateKey,
      windows.rootCrl,
      options.revokeRoot ?? [],
    ),
    pckCrl: await crl(
      "Test SGX PCK Platform CA",
      pki.pckCa.keys.privateKey,
      windows.pckCrl,
      options.revokePck ?? [],
    ),
    tcbInfoIssuerChain: pem(pki.tcbSigning.der) + pem(pki.root.der),
    tcbInfo: options.tamperTcbInfo ? options.tamperTcbInfo(tcbInfo) : tcbInfo,
    tcbInfoSignature,
    qeIdentityIssuerChain: pem(pki.tcbSigning.der) + pem(pki.root.der),
    qeIdentity,
    qeIdentitySignature,
  };
}

// ---------------------------------------------------------------------------------------------
// SEV-SNP.

/** An AMD-shaped PKI under a test ARK. */
export interface TestAmdPki {
  /** Roots to pass to the verifiers: this PKI's ARK and ASK only. */
  readonly roots: TrustRoots;
  /** The ARK ("ARK-Milan", RSA-PSS, self-signed). */
  readonly ark: TestCertificate;
  /** The ASK ("SEV-Milan"). */
  readonly ask: TestCertificate;
  /** The VCEK ("SEV-VCEK", P-384). */
  readonly vcek: TestCertificate;
  /** The chip id the VCEK certifies. */
  readonly chipId: Uint8Array;
  /** The TCB the VCEK certifies (Milan layout bytes of REPORTED_TCB). */
  readonly reportedTcb: Uint8Array;
}

function splExtension(oid: string, value: number): pkijs.Extension {
  return new pkijs.Extension({
    extnID: `${AMD_OID}.${oid}`,
    critical: false,
    extnValue: new asn1js.Integer({ value }).toBER(false),
  });
}

/** Creates an AMD Milan-shaped test PKI (RSA-PSS 2048 ARK/ASK, P-384 VCEK). */
export async function createTestAmdPki(
  options: { now: Date; vcekValidity?: Window },
): Promise<TestAmdPki> {
  const { now } = options;
  const rsa = () =>
    crypto.subtle.generateKey(
      {
        name: "RSA-PSS",
        modulusLength: 2048,
        publicExponent: Uint8Array.of(1, 0, 1),
        hash: "SHA-384",
      },
      true,
      ["sign", "verify"],
    ) as Promise<CryptoKeyPair>;
  const [arkKeys, askKeys, vcekKeys] = await Promise.all([rsa(), rsa(), ecKeys("P-384")]);
  const long: Window = {
    from: new Date(now.getTime() - 365 * DAY),
    to: new Date(now.getTime() + 20 * 365 * DAY),
  };
  const organization = "Advanced Micro Devices (test)";
  const ark = await issue({
    subject: "ARK-Milan",
    issuer: "ARK-Milan",
    organization,
    publicKey: arkKeys.publicKey,
    signingKey: arkKeys.privateKey,
    hash: "SHA-384",
    notBefore: long.from,
    notAfter: long.to,
    ca: {},
    keyUsage: KEY_CERT_SIGN_CRL_SIGN,
  });
  const ask = await issue({
    subject: "SEV-Milan",
    issuer: "ARK-Milan",
    organization,
    publicKey: askKeys.publicKey,
    signingKey: arkKeys.privateKey,
    hash: "SHA-384",
    notBefore: long.from,
    notAfter: long.to,
    ca: { pathLength: 0 },
    keyUsage: 0x04,
  });
  const chipId = filled(64, 0xc1);
  const reportedTcb = Uint8Array.of(3, 0, 0, 0, 0, 0, 8, 115);
  const vcekWindow = options.vcekValidity ??
    { from: new Date(now.getTime() - 30 * DAY), to: new Date(now.getTime() + 7 * 365 * DAY) };
  const vcek = await issue({
    subject: "SEV-VCEK",
    issuer: "SEV-Milan",
    organization,
    publicKey: vcekKeys.publicKey,
    signingKey: askKeys.privateKey,
    hash: "SHA-384",
    notBefore: vcekWindow.from,
    notAfter: vcekWindow.to,
    extensions: [
      splExtension("3.1", reportedTcb[0]),
      splExtension("3.2", reportedTcb[1]),
      splExtension("3.3", reportedTcb[6]),
      splExtension("3.8", reportedTcb[7]),
      new pkijs.Extension({
        extnID: `${AMD_OID}.4`,
        critical: false,
        extnValue: chipId.slice().buffer,
      }),
    ],
  });
  return {
    roots: { intel: [], amd: [{ product: "Milan", ark: ark.der, ask: ask.der }] },
    ark: { ...ark, keys: arkKeys, notBefore: long.from, notAfter: long.to },
    ask: { ...ask, keys: askKeys, notBefore: long.from, notAfter: long.to },
    vcek: { ...vcek, keys: vcekKeys, notBefore: vcekWindow.from, notAfter: vcekWindow.to },
    chipId,
    reportedTcb,
  };
}

/** Options of {@linkcode buildSnpReport}. */
export interface SnpReportOptions {
  /** REPORT_DATA, 64 bytes. */
  reportData: Uint8Array;
  /** MEASUREMENT, 48 bytes. @default {0x5e × 48} */
  measurement?: Uint8Array;
  /** Guest policy. @default {0x30000 (bit 17 set, SMT allowed, no debug)} */
  policy?: bigint;
  /** REPORTED_TCB, 8 bytes. @default {the VCEK's} */
  reportedTcb?: Uint8Array;
  /** CHIP_ID. @default {the VCEK's} */
  chipId?: Uint8Array;
}

/** Builds an SEV-SNP report (version 2) signed by the test VCEK. */
export async function buildSnpReport(
  pki: TestAmdPki,
  options: SnpReportOptions,
): Promise<Uint8Array> {
  const report = new Uint8Array(1184);
  const view = new DataView(report.buffer);
  view.setUint32(0, 2, true);
  view.setBigUint64(0x08, options.policy ?? 0x30000n, true);
  view.setUint32(0x34, 1, true);
  report.set(pki.reportedTcb, 0x38);
  report.set(options.reportData, 0x50);
  report.set(options.measurement ?? filled(48, 0x5e), 0x90);
  report.set(options.reportedTcb ?? pki.reportedTcb, 0x180);
  report.set(options.chipId ?? pki.chipId, 0x1a0);
  report.set(pki.reportedTcb, 0x1e0);
  report.set(pki.reportedTcb, 0x1f0);
  const signature = await signRaw(pki.vcek.keys.privateKey, report.subarray(0, 0x2a0), "SHA-384");
  report.set(signature.subarray(0, 48).reverse(), 0x2a0);
  report.set(signature.subarray(48, 96).reverse(), 0x2a0 + 72);
  return report;
}
