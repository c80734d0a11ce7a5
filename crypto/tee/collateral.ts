/**
 * Intel's TDX collateral: TCB info, QE identity, the PCK and root CRLs and their issuer chains
 * (`docs/protocol.md` §6, the shape of Intel PCS / PCCS answers). Collateral is Intel-signed,
 * so it may come from anywhere, including the provider itself; {@linkcode verifyTdxCollateral}
 * checks every signature over the **exact raw bytes** (the JSON text is never re-serialized),
 * every chain to the pinned root, revocation, and freshness at `now`.
 *
 * @example Parse the collateral of a bundle
 * ```ts ignore
 * import { tdxCollateralFromJson } from "@net/consumer/tee";
 *
 * const collateral = tdxCollateralFromJson(JSON.parse(await Deno.readTextFile("collateral.json")));
 * console.log(collateral.tcbInfo.slice(0, 40));
 * ```
 *
 * @module
 */

import { checkNow } from "../_time.ts";
import { equalBytes, fromHex, toHex } from "../_bytes.ts";
import { type ValidatedChain, verifyChain } from "./_chain.ts";
import { verifyEcdsa, verifySignedData } from "./_signature.ts";
import {
  type Certificate,
  parsePemChain,
  parseRevocationList,
  type RevocationList,
} from "./_x509.ts";
import {
  malformedCollateral,
  parseQeIdentity,
  parseTcbInfo,
  type QeIdentity,
  type TcbInfo,
} from "./collateral_documents.ts";
import { AttestationError } from "./errors.ts";

/** TDX collateral as carried in an attestation bundle. Text fields keep their exact bytes. */
export interface TdxCollateral {
  /** PEM chain of the PCK CRL issuer (PCK Platform/Processor CA, root). */
  readonly pckCrlIssuerChain: string;
  /** DER of the Intel SGX Root CA's CRL. */
  readonly rootCaCrl: Uint8Array;
  /** DER of the PCK CA's CRL. */
  readonly pckCrl: Uint8Array;
  /** PEM chain of the TCB info signer (TCB Signing, root). */
  readonly tcbInfoIssuerChain: string;
  /** The raw JSON text of the `tcbInfo` object, exactly as Intel signed it. */
  readonly tcbInfo: string;
  /** ECDSA P-256 signature `r ‖ s` over the raw TCB info text. */
  readonly tcbInfoSignature: Uint8Array;
  /** PEM chain of the QE identity signer. */
  readonly qeIdentityIssuerChain: string;
  /** The raw JSON text of the `enclaveIdentity` object. */
  readonly qeIdentity: string;
  /** ECDSA P-256 signature `r ‖ s` over the raw QE identity text. */
  readonly qeIdentitySignature: Uint8Array;
}

/** The JSON form of {@linkcode TdxCollateral} (binary fields are hex, with or without `0x`). */
export interface TdxCollateralJson {
  /** PEM text. */
  pck_crl_issuer_chain: string;
  /** Hex of the DER CRL. */
  root_ca_crl: string;
  /** Hex of the DER CRL. */
  pck_crl: string;
  /** PEM text. */
  tcb_info_issuer_chain: string;
  /** Raw JSON text. */
  tcb_info: string;
  /** Hex, 64 bytes. */
  tcb_info_signature: string;
  /** PEM text. */
  qe_identity_issuer_chain: string;
  /** Raw JSON text. */
  qe_identity: string;
  /** Hex, 64 bytes. */
  qe_identity_signature: string;
}

/** Collateral whose signatures, chains, revocation and freshness were checked. */
export interface VerifiedCollateral {
  /** The TCB info. */
  readonly tcbInfo: TcbInfo;
  /** The QE identity. */
  readonly qeIdentity: QeIdentity;
  /** Earliest end of validity among the collateral's items and chains. */
  readonly notAfter: Date;
}

const FIELDS = [
  "pck_crl_issuer_chain",
  "root_ca_crl",
  "pck_crl",
  "tcb_info_issuer_chain",
  "tcb_info",
  "tcb_info_signature",
  "qe_identity_issuer_chain",
  "qe_identity",
  "qe_identity_signature",
] as const;

/**
 * Parses the JSON form of TDX collateral. Unknown fields are refused; the JSON texts are kept
 * byte for byte.
 *
 * @throws {AttestationError} `malformed` with check `collateral`.
 */
export function tdxCollateralFromJson(value: unknown): TdxCollateral {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return malformedCollateral(
      `must be a JSON object, found ${Array.isArray(value) ? "array" : typeof value}`,
    );
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      malformedCollateral(`has an unknown field "${key}"`);
    }
  }
  const text = (name: (typeof FIELDS)[number]): string => {
    const field = record[name];
    if (typeof field !== "string" || field.length === 0) {
      return malformedCollateral(
        `field "${name}" must be a non-empty string, found ${typeof field}`,
      );
    }
    return field;
  };
  const hex = (name: (typeof FIELDS)[number], length?: number): Uint8Array => {
    const bytes = fromHex(text(name));
    if (!bytes || bytes.length === 0) return malformedCollateral(`field "${name}" must be hex`);
    if (length !== undefined && bytes.length !== length) {
      malformedCollateral(`field "${name}" must be ${length} bytes, found ${bytes.length}`);
    }
    return bytes;
  };
  return {
    pckCrlIssuerChain: text("pck_crl_issuer_chain"),
    rootCaCrl: hex("root_ca_crl"),
    pckCrl: hex("pck_crl"),
    tcbInfoIssuerChain: text("tcb_info_issuer_chain"),
    tcbInfo: text("tcb_info"),
    tcbInfoSignature: hex("tcb_info_signature", 64),
    qeIdentityIssuerChain: text("qe_identity_issuer_chain"),
    qeIdentity: text("qe_identity"),
    qeIdentitySignature: hex("qe_identity_signature", 64),
  };
}

/** Converts collateral to its JSON form (hex without `0x`, as Intel's PCS writes it). */
export function tdxCollateralToJson(collateral: TdxCollateral): TdxCollateralJson {
  return {
    pck_crl_issuer_chain: collateral.pckCrlIssuerChain,
    root_ca_crl: toHex(collateral.rootCaCrl),
    pck_crl: toHex(collateral.pckCrl),
    tcb_info_issuer_chain: collateral.tcbInfoIssuerChain,
    tcb_info: collateral.tcbInfo,
    tcb_info_signature: toHex(collateral.tcbInfoSignature),
    qe_identity_issuer_chain: collateral.qeIdentityIssuerChain,
    qe_identity: collateral.qeIdentity,
    qe_identity_signature: toHex(collateral.qeIdentitySignature),
  };
}

// ---------------------------------------------------------------------------------------------
// Verification.

/** What {@linkcode verifyTdxCollateral} needs besides the collateral. */
export interface VerifyCollateralOptions {
  /** The time at which everything must be valid. */
  now: Date;
  /** The Intel root(s) the PCK chain was validated against. */
  anchors: readonly Certificate[];
  /** The validated PCK chain of the quote (leaf, PCK CA). */
  pckChain: ValidatedChain;
}

function stale(what: string, from: Date, to: Date, now: Date): never {
  throw new AttestationError(
    "stale",
    "collateral",
    `Cannot verify attestation: collateral ${what} is valid from ${from.toISOString()} to ` +
      `${to.toISOString()}, now is ${now.toISOString()}`,
    {
      hints: [
        "Intel collateral is reissued about every 30 days: the provider must attach fresh " +
        "collateral from Intel PCS or a PCCS.",
      ],
    },
  );
}

/** Starts `work` now; its rejection is handled when awaited (none goes unhandled meanwhile). */
function started<T>(work: () => Promise<T>): Promise<T> {
  const promise = work();
  promise.catch(() => {});
  return promise;
}

function untrusted(message: string): never {
  throw new AttestationError("untrusted", "collateral", `Cannot verify attestation: ${message}`);
}

async function verifyCrl(
  crl: RevocationList,
  issuer: Certificate,
  what: string,
): Promise<void> {
  if (!equalBytes(crl.issuer, issuer.subject)) {
    untrusted(`the ${what} is issued by "${crl.issuerCn}", expected "${issuer.subjectCn}"`);
  }
  if (!await verifySignedData(crl.signatureAlgorithm, issuer.publicKey, crl.tbs, crl.signature)) {
    untrusted(`the ${what} has a bad signature (not signed by "${issuer.subjectCn}")`);
  }
}

async function verifySignedDocument(
  chainPem: string,
  text: string,
  signature: Uint8Array,
  what: string,
  options: VerifyCollateralOptions,
): Promise<ValidatedChain> {
  const chain = await verifyChain(
    parsePemChain(chainPem, { check: "collateral", label: `the ${what} issuer chain` }),
    {
      check: "collateral",
      label: `the ${what} issuer chain`,
      anchors: options.anchors,
      now: options.now,
      maxDepth: 1,
    },
  );
  const signer = chain.path[0];
  if (!signer.subjectCn.includes("TCB Signing") || signer.publicKey.kind !== "ec") {
    untrusted(`the ${what} is signed by "${signer.subjectCn}", expected an SGX TCB Signing key`);
  }
  const bytes = new TextEncoder().encode(text);
  if (
    signer.publicKey.kind !== "ec" ||
    !await verifyEcdsa(signer.publicKey, bytes, signature, { hash: "SHA-256", format: "compact" })
  ) {
    untrusted(`the ${what} signature does not verify over its raw bytes`);
  }
  return chain;
}

/**
 * Verifies TDX collateral for a quote whose PCK chain is already validated: the root CA CRL
 * (signed by the root), the PCK CRL and its issuer chain (signed by the quote's PCK CA), that
 * neither the PCK leaf, its CA nor the TCB signing certificates are revoked, the TCB info and
 * QE identity signatures over their raw bytes, their ids and versions, and that every item is
 * valid at `now`. Signatures are checked before any date or content is read.
 *
 * @throws {AttestationError} `untrusted` (signatures, chains), check `revocation` (a revoked
 * certificate), `stale` (a validity window), `malformed`.
 * @throws {TypeError} when `now` is not a valid `Date`.
 */
export async function verifyTdxCollateral(
  collateral: TdxCollateral,
  options: VerifyCollateralOptions,
): Promise<VerifiedCollateral> {
  const { pckChain } = options;
  const now = checkNow(options.now, "verifyTdxCollateral");
  const root = pckChain.anchor;
  const leaf = pckChain.path[0];
  const pckCa = pckChain.path[1] ?? root;

  // Signatures first: every one at once (WebCrypto verifies on a thread pool), each outcome read
  // in this order, so the first failure in it is the one reported.
  const rootCrlCheck = started(async () => {
    const crl = parseRevocationList(collateral.rootCaCrl, {
      check: "collateral",
      label: "the root CA CRL",
    });
    await verifyCrl(crl, root, "root CA CRL");
    return crl;
  });
  const crlChainCheck = started(async () => {
    const chain = await verifyChain(
      parsePemChain(collateral.pckCrlIssuerChain, {
        check: "collateral",
        label: "the PCK CRL issuer chain",
      }),
      {
        check: "collateral",
        label: "the PCK CRL issuer chain",
        anchors: options.anchors,
        now,
        maxDepth: 1,
      },
    );
    const issuer = chain.path[0];
    if (!equalBytes(issuer.subject, pckCa.subject) || chain.anchor !== root) {
      untrusted(
        `the PCK CRL issuer chain is for "${issuer.subjectCn}", but the quote's PCK certificate ` +
          `is issued by "${pckCa.subjectCn}"`,
      );
    }
    return chain;
  });
  const pckCrlCheck = started(async () => {
    const crl = parseRevocationList(collateral.pckCrl, {
      check: "collateral",
      label: "the PCK CRL",
    });
    await verifyCrl(crl, pckCa, "PCK CRL");
    return crl;
  });
  const tcbCheck = started(() =>
    verifySignedDocument(
      collateral.tcbInfoIssuerChain,
      collateral.tcbInfo,
      collateral.tcbInfoSignature,
      "TCB info",
      options,
    )
  );
  const qeCheck = started(() =>
    verifySignedDocument(
      collateral.qeIdentityIssuerChain,
      collateral.qeIdentity,
      collateral.qeIdentitySignature,
      "QE identity",
      options,
    )
  );
  const rootCrl = await rootCrlCheck;
  const crlChain = await crlChainCheck;
  const crlIssuer = crlChain.path[0];
  const pckCrl = await pckCrlCheck;
  const tcbChain = await tcbCheck;
  const qeChain = await qeCheck;

  // Revocation.
  const revoked = (cert: Certificate, crl: RevocationList, what: string) => {
    if (crl.revoked.has(cert.serial)) {
      throw new AttestationError(
        "untrusted",
        "revocation",
        `Cannot verify attestation: ${what} "${cert.subjectCn}" (serial ${cert.serial}) is ` +
          `revoked by "${crl.issuerCn}"`,
      );
    }
  };
  revoked(leaf, pckCrl, "the PCK certificate");
  if (pckCa !== root) revoked(pckCa, rootCrl, "the PCK CA certificate");
  revoked(crlIssuer, rootCrl, "the PCK CRL issuer");
  revoked(tcbChain.path[0], rootCrl, "the TCB info signer");
  revoked(qeChain.path[0], rootCrl, "the QE identity signer");

  // Contents and freshness.
  const tcbInfo = parseTcbInfo(collateral.tcbInfo);
  const qeIdentity = parseQeIdentity(collateral.qeIdentity);
  if (tcbInfo.id !== "TDX" || tcbInfo.version !== 3) {
    untrusted(
      `the TCB info is "${tcbInfo.id}" version ${tcbInfo.version}, expected "TDX" version 3`,
    );
  }
  if (qeIdentity.id !== "TD_QE" || qeIdentity.version !== 2) {
    untrusted(
      `the QE identity is "${qeIdentity.id}" version ${qeIdentity.version}, expected "TD_QE" ` +
        "version 2",
    );
  }
  const windows: [string, Date, Date][] = [
    ["root CA CRL", rootCrl.thisUpdate, rootCrl.nextUpdate],
    ["PCK CRL", pckCrl.thisUpdate, pckCrl.nextUpdate],
    ["TCB info", tcbInfo.issueDate, tcbInfo.nextUpdate],
    ["QE identity", qeIdentity.issueDate, qeIdentity.nextUpdate],
  ];
  let notAfter = pckChain.notAfter;
  for (const chain of [crlChain, tcbChain, qeChain]) {
    if (chain.notAfter < notAfter) notAfter = chain.notAfter;
  }
  for (const [what, from, to] of windows) {
    if (now < from || now > to) stale(what, from, to, now);
    if (to < notAfter) notAfter = to;
  }
  return { tcbInfo, qeIdentity, notAfter };
}
