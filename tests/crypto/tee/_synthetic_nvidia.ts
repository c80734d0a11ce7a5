/**
 * Test-only builders of real, signed NVIDIA GPU evidence under a **test root**: an
 * NVIDIA-shaped device identity PKI (root → GH100 identity → provisioner ICA → device "BROM"
 * → attestation key "FMC" certificate with the DICE FWID extension, all P-384), SPDM 1.1
 * measurement reports signed by the FMC key, and revocation collateral: OCSP responses from a
 * delegated responder (or the issuer) and CRLs.
 *
 * Nothing here is trusted unless a test passes the returned `roots` (their `nvidia` list).
 *
 * @module
 */

import * as asn1js from "asn1js";
import * as pkijs from "pkijs";
import type { GpuCollateral, GpuEvidence, TrustRoots } from "../../../crypto/tee/mod.ts";
import {
  concat,
  crl,
  ecKeys,
  issue,
  pem,
  signRaw,
  type TestCertificate,
  type Window,
} from "./_synthetic.ts";

const DAY = 86_400_000;
const ORGANIZATION = "NVIDIA Corporation (test)";
const OCSP_SIGNING = "1.3.6.1.5.5.7.3.9";
const SHA384_OID = "2.16.840.1.101.3.4.2.2";
const KEY_CERT_SIGN_CRL_SIGN = 0x06;
const KEY_CERT_SIGN = 0x04;
const DIGITAL_SIGNATURE = 0x80;

/** The FWID of the synthetic GPU's attestation firmware. */
export const TEST_FWID: Uint8Array = Uint8Array.from({ length: 48 }, (_, i) => (i * 11 + 5) & 0xff);

/** An NVIDIA-shaped PKI under a test root, with one GPU's certificates. */
export interface TestNvidiaPki {
  /** Roots to pass to the verifiers: this PKI's root as the only NVIDIA root. */
  readonly roots: TrustRoots;
  /** "Test NVIDIA Device Identity CA" (self-signed). */
  readonly root: TestCertificate;
  /** "Test NVIDIA GH100 Identity". */
  readonly identity: TestCertificate;
  /** "Test NVIDIA GH100 Provisioner ICA 1". */
  readonly provisioner: TestCertificate;
  /** The GPU's device certificate, "Test GH100 A01 GSP BROM". */
  readonly device: TestCertificate;
  /** The attestation key certificate, "Test GH100 A01 GSP FMC LF", naming {@linkcode fwid}. */
  readonly leaf: TestCertificate;
  /** The delegated OCSP responder, "Test NVIDIA OCSP Responder" (issued by the root). */
  readonly responder: TestCertificate;
  /** The FWID the leaf names. */
  readonly fwid: Uint8Array;
  /** PEM chain leaf → device → provisioner → identity → root, as a GPU's evidence carries it. */
  readonly chainPem: string;
}

/** Options of {@linkcode createTestNvidiaPki}. */
export interface TestNvidiaPkiOptions {
  /** Certificates are valid from `now - 30 days` to `now + 10 years` unless overridden. */
  now: Date;
  /** The FWID the attestation key certificate names. @default {TEST_FWID} */
  fwid?: Uint8Array;
  /** The leaf's validity. */
  leafValidity?: Window;
}

/** The DICE `TcbInfo` extension as NVIDIA encodes it: version, the issuer's key, the FWID. */
function fwidExtension(fwid: Uint8Array, issuerSpki: asn1js.AsnType): pkijs.Extension {
  const value = new asn1js.Sequence({
    value: [
      new asn1js.Integer({ value: 1 }),
      issuerSpki,
      new asn1js.Sequence({
        value: [
          new asn1js.ObjectIdentifier({ value: SHA384_OID }),
          new asn1js.OctetString({ valueHex: fwid.slice().buffer }),
        ],
      }),
    ],
  });
  return new pkijs.Extension({ extnID: "2.23.133.5.4.1", extnValue: value.toBER(false) });
}

/** Creates the NVIDIA-shaped test PKI and one GPU's certificates. */
export async function createTestNvidiaPki(options: TestNvidiaPkiOptions): Promise<TestNvidiaPki> {
  const { now } = options;
  const long: Window = {
    from: new Date(now.getTime() - 30 * DAY),
    to: new Date(now.getTime() + 3650 * DAY),
  };
  const keys = await Promise.all(Array.from({ length: 6 }, () => ecKeys("P-384")));
  const [rootKeys, identityKeys, provisionerKeys, deviceKeys, leafKeys, responderKeys] = keys;
  const make = async (
    subject: string,
    issuer: string,
    own: CryptoKeyPair,
    signer: CryptoKeyPair,
    extra: { ca?: boolean; keyUsage?: number; extensions?: pkijs.Extension[]; window?: Window },
  ): Promise<TestCertificate> => {
    const window = extra.window ?? long;
    const { der, serial } = await issue({
      subject,
      issuer,
      organization: ORGANIZATION,
      publicKey: own.publicKey,
      signingKey: signer.privateKey,
      hash: "SHA-384",
      notBefore: window.from,
      notAfter: window.to,
      ca: extra.ca ? {} : undefined,
      keyUsage: extra.keyUsage,
      extensions: extra.extensions,
    });
    return { der, serial, keys: own, notBefore: window.from, notAfter: window.to };
  };
  const rootName = "Test NVIDIA Device Identity CA";
  const root = await make(rootName, rootName, rootKeys, rootKeys, {
    ca: true,
    keyUsage: KEY_CERT_SIGN_CRL_SIGN,
  });
  const identity = await make("Test NVIDIA GH100 Identity", rootName, identityKeys, rootKeys, {
    ca: true,
    keyUsage: KEY_CERT_SIGN_CRL_SIGN,
  });
  const provisioner = await make(
    "Test NVIDIA GH100 Provisioner ICA 1",
    "Test NVIDIA GH100 Identity",
    provisionerKeys,
    identityKeys,
    { ca: true, keyUsage: KEY_CERT_SIGN_CRL_SIGN },
  );
  const device = await make(
    "Test GH100 A01 GSP BROM",
    "Test NVIDIA GH100 Provisioner ICA 1",
    deviceKeys,
    provisionerKeys,
    { ca: true, keyUsage: KEY_CERT_SIGN },
  );
  const deviceSpki = asn1js.fromBER(
    new pkijs.Certificate({ schema: asn1js.fromBER(device.der.slice().buffer).result })
      .subjectPublicKeyInfo.toSchema().toBER(false),
  ).result;
  const fwid = options.fwid ?? TEST_FWID;
  const leaf = await make(
    "Test GH100 A01 GSP FMC LF",
    "Test GH100 A01 GSP BROM",
    leafKeys,
    deviceKeys,
    {
      keyUsage: DIGITAL_SIGNATURE,
      extensions: [fwidExtension(fwid, deviceSpki)],
      window: options.leafValidity,
    },
  );
  const responder = await make("Test NVIDIA OCSP Responder", rootName, responderKeys, rootKeys, {
    keyUsage: DIGITAL_SIGNATURE,
    extensions: [
      new pkijs.Extension({
        extnID: "2.5.29.37",
        extnValue: new pkijs.ExtKeyUsage({ keyPurposes: [OCSP_SIGNING] }).toSchema().toBER(false),
      }),
    ],
  });
  return {
    roots: { intel: [], amd: [], nvidia: [root.der] },
    root,
    identity,
    provisioner,
    device,
    leaf,
    responder,
    fwid,
    chainPem: [leaf, device, provisioner, identity, root].map((c) => pem(c.der)).join(""),
  };
}

// ---------------------------------------------------------------------------------------------
// Reports.

/** Options of {@linkcode buildGpuReport}. */
export interface GpuReportOptions {
  /** The nonce the GPU signs. */
  nonce: Uint8Array;
  /** The measurement values (48 bytes each), index 1 first. @default {8 values 0xA0+i} */
  measurements?: readonly Uint8Array[];
  /** The driver version. @default {"550.90.07"} */
  driverVersion?: string;
  /** The VBIOS version field (8 bytes). @default {96.00.9f.00.01} */
  vbiosVersion?: Uint8Array;
  /** The FWID written into the opaque data. @default {the PKI's} */
  fwid?: Uint8Array;
  /** The key that signs. @default {the leaf's} */
  signingKey?: CryptoKey;
  /** Zero bytes appended after the signature. @default {0} */
  padding?: number;
}

/** The default measurements of synthetic reports. */
export function testGpuMeasurements(): Uint8Array[] {
  return Array.from({ length: 8 }, (_, i) => new Uint8Array(48).fill(0xa0 + i));
}

function le(value: number, length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (value >>> (8 * i)) & 0xff);
}

function opaqueItem(type: number, data: Uint8Array): Uint8Array {
  return concat(le(type, 2), le(data.length, 2), data);
}

/** Builds an SPDM 1.1 measurement report (request ‖ signed response) of the test GPU. */
export async function buildGpuReport(
  pki: TestNvidiaPki,
  options: GpuReportOptions,
): Promise<Uint8Array> {
  const measurements = options.measurements ?? testGpuMeasurements();
  const request = concat(Uint8Array.of(0x11, 0xe0, 0x01, 0xff), options.nonce, Uint8Array.of(0));
  const record = concat(
    ...measurements.map((value, i) =>
      concat(
        Uint8Array.of(i + 1, 0x01),
        le(value.length + 3, 2),
        Uint8Array.of(0x01),
        le(value.length, 2),
        value,
      )
    ),
  );
  const opaque = concat(
    opaqueItem(6, options.vbiosVersion ?? Uint8Array.of(0x00, 0x9f, 0x00, 0x96, 0x01, 0, 0, 0)),
    opaqueItem(3, new TextEncoder().encode(`${options.driverVersion ?? "550.90.07"}\0`)),
    opaqueItem(12, concat(...measurements.map(() => le(1, 4)))),
    opaqueItem(20, options.fwid ?? pki.fwid),
    opaqueItem(11, Uint8Array.of(0x55)),
    opaqueItem(21, Uint8Array.of(0x55)),
  );
  const response = concat(
    Uint8Array.of(0x11, 0x60, 0x00, 0x00, measurements.length),
    le(record.length, 3),
    record,
    crypto.getRandomValues(new Uint8Array(32)),
    le(opaque.length, 2),
    opaque,
  );
  const signed = concat(request, response);
  const signature = await signRaw(
    options.signingKey ?? pki.leaf.keys.privateKey,
    signed,
    "SHA-384",
  );
  return concat(signed, signature, new Uint8Array(options.padding ?? 0));
}

/** One GPU's evidence: a fresh report for the nonce and the PKI's chain. */
export async function buildGpuEvidence(
  pki: TestNvidiaPki,
  options: GpuReportOptions,
): Promise<GpuEvidence> {
  return { report: await buildGpuReport(pki, options), certificateChain: pki.chainPem };
}

// ---------------------------------------------------------------------------------------------
// Revocation collateral.

/** A certificate status in a synthetic OCSP response. */
export type TestOcspStatus = "good" | "revoked" | "unknown";

/** Options of {@linkcode buildGpuOcsp}. */
export interface GpuOcspOptions {
  /** Answers are valid from `now - 1 hour` to `now + 7 days` unless `window` says otherwise. */
  now: Date;
  /** The certificates answered for, each with its issuer. @default {device, provisioner, identity} */
  subjects?: readonly { cert: TestCertificate; issuer: TestCertificate }[];
  /** Status per serial (hex). @default {"good"} */
  status?: Readonly<Record<string, TestOcspStatus>>;
  /** Validity of the answers. */
  window?: Window;
  /** Who signs: the delegated responder (default) or another certificate's key. */
  signer?: TestCertificate;
  /** Leave `nextUpdate` out. */
  noNextUpdate?: boolean;
}

/** The certificates the verifier needs answers for, with their issuers. */
export function requiredSubjects(
  pki: TestNvidiaPki,
): { cert: TestCertificate; issuer: TestCertificate }[] {
  return [
    { cert: pki.device, issuer: pki.provisioner },
    { cert: pki.provisioner, issuer: pki.identity },
    { cert: pki.identity, issuer: pki.root },
  ];
}

function pkijsCertificate(der: Uint8Array): pkijs.Certificate {
  return new pkijs.Certificate({ schema: asn1js.fromBER(der.slice().buffer).result });
}

function certStatus(status: TestOcspStatus, at: Date): asn1js.BaseBlock {
  if (status === "revoked") {
    return new asn1js.Constructed({
      idBlock: { tagClass: 3, tagNumber: 1 },
      value: [new asn1js.GeneralizedTime({ valueDate: at })],
    });
  }
  return new asn1js.Primitive({
    idBlock: { tagClass: 3, tagNumber: status === "good" ? 0 : 2 },
  });
}

/** Builds a signed, successful basic OCSP response (DER) for the subjects. */
export async function buildGpuOcsp(
  pki: TestNvidiaPki,
  options: GpuOcspOptions,
): Promise<Uint8Array> {
  const { now } = options;
  const window = options.window ??
    { from: new Date(now.getTime() - 3_600_000), to: new Date(now.getTime() + 7 * DAY) };
  const signer = options.signer ?? pki.responder;
  const signerCert = pkijsCertificate(signer.der);
  const responses = await Promise.all(
    (options.subjects ?? requiredSubjects(pki)).map(async ({ cert, issuer }) => {
      const certID = await pkijs.CertID.create(pkijsCertificate(cert.der), {
        hashAlgorithm: "SHA-1",
        issuerCertificate: pkijsCertificate(issuer.der),
      });
      return new pkijs.SingleResponse({
        certID,
        certStatus: certStatus(options.status?.[cert.serial] ?? "good", window.from),
        thisUpdate: window.from,
        ...(options.noNextUpdate ? {} : { nextUpdate: window.to }),
      });
    }),
  );
  const basic = new pkijs.BasicOCSPResponse({
    tbsResponseData: new pkijs.ResponseData({
      responderID: signerCert.subject,
      producedAt: now,
      responses,
    }),
    certs: signer === pki.responder ? [signerCert] : undefined,
  });
  await basic.sign(signer.keys.privateKey, "SHA-384");
  const response = new pkijs.OCSPResponse({
    responseStatus: new asn1js.Enumerated({ value: 0 }),
    responseBytes: new pkijs.ResponseBytes({
      responseType: "1.3.6.1.5.5.7.48.1.1",
      response: new asn1js.OctetString({ valueHex: basic.toSchema().toBER(false) }),
    }),
  });
  return new Uint8Array(response.toSchema().toBER(false));
}

/** A CRL of one of the PKI's CAs (DER), revoking the given serials. */
export async function buildGpuCrl(
  issuer: TestCertificate & { cn?: string },
  issuerCn: string,
  options: { now: Date; revoked?: string[]; window?: Window },
): Promise<Uint8Array> {
  const window = options.window ??
    { from: new Date(options.now.getTime() - DAY), to: new Date(options.now.getTime() + 30 * DAY) };
  return await crl(issuerCn, issuer.keys.privateKey, window, options.revoked ?? [], {
    organization: ORGANIZATION,
    hash: "SHA-384",
  });
}

/** Collateral answering for every certificate the verifier requires: one OCSP response. */
export async function buildGpuCollateral(
  pki: TestNvidiaPki,
  options: Omit<GpuOcspOptions, "subjects"> & { subjects?: GpuOcspOptions["subjects"] },
): Promise<GpuCollateral> {
  return { ocsp: [await buildGpuOcsp(pki, options)], crls: [] };
}
