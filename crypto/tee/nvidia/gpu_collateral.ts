/**
 * Revocation collateral of NVIDIA GPU certificate chains: OCSP answers (RFC 6960) and CRLs
 * from NVIDIA's device identity PKI, carried in the bundle (`docs/protocol.md` §6) because the
 * verifier makes no network call. Like Intel's collateral, it is signed by the vendor, so it
 * may come from anywhere — the provider fetches it from `ocsp.ndis.nvidia.com` and
 * `crl.ndis.nvidia.com` and attaches it.
 *
 * {@linkcode verifyGpuRevocation} requires a signed, fresh "good" answer for every certificate
 * of a validated GPU chain below the root except the attestation key's own certificate (the
 * firmware alias certificate the GPU makes at boot, which NVIDIA's responder does not list; it
 * is covered by its issuer's status and the FWID check). An answer for that one is checked
 * too when present. Signatures are checked before any status or date is read.
 *
 * @module
 */

import { sha1 } from "@noble/hashes/legacy.js";
import { equalBytes, fromHex, toHex } from "../../_bytes.ts";
import { type ValidatedChain, verifyChain } from "../_chain.ts";
import { digest, verifySignedData } from "../_signature.ts";
import { childrenOf, readOid, readRoot, TAG } from "../_der.ts";
import { type Certificate, parseRevocationList, type RevocationList } from "../_x509.ts";
import { refuseAttestation as refuse } from "../errors.ts";
import { type OcspResponse, type OcspSingleResponse, parseOcspResponse } from "./_ocsp.ts";

/** Revocation answers for GPU certificate chains. */
export interface GpuCollateral {
  /** DER `OCSPResponse`s (successful, basic). */
  readonly ocsp: readonly Uint8Array[];
  /** DER CRLs. */
  readonly crls: readonly Uint8Array[];
}

/** The JSON form: hex strings (`0x`-prefixed or not). */
export interface GpuCollateralJson {
  /** Hex DER OCSP responses. */
  ocsp: string[];
  /** Hex DER CRLs. */
  crls: string[];
}

/** Most answers of each kind a collateral object may carry. */
export const MAX_GPU_COLLATERAL_ITEMS = 32;
/** Largest accepted answer, in bytes. */
export const MAX_GPU_COLLATERAL_ITEM_LENGTH = 64 * 1024;
/** Extended key usage that makes a certificate an OCSP responder. */
const OID_OCSP_SIGNING = "1.3.6.1.5.5.7.3.9";
const OID_EXTENDED_KEY_USAGE = "2.5.29.37";

function malformed(message: string): never {
  return refuse("malformed", "gpu_collateral", `the GPU collateral ${message}`);
}

/**
 * Parses the JSON form. Unknown fields are refused.
 *
 * @throws {AttestationError} `malformed`, check `gpu_collateral`, naming the field.
 */
export function gpuCollateralFromJson(value: unknown): GpuCollateral {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return malformed(`must be an object {"ocsp":[…],"crls":[…]}, found ${typeof value}`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== "ocsp" && key !== "crls") malformed(`has an unknown field "${key}"`);
  }
  const list = (name: "ocsp" | "crls"): Uint8Array[] => {
    const items = record[name];
    if (!Array.isArray(items)) return malformed(`field "${name}" must be an array`);
    if (items.length > MAX_GPU_COLLATERAL_ITEMS) {
      malformed(`field "${name}" has ${items.length} items, at most ${MAX_GPU_COLLATERAL_ITEMS}`);
    }
    return items.map((item, i) => {
      const bytes =
        typeof item === "string" && item.length <= 2 + 2 * MAX_GPU_COLLATERAL_ITEM_LENGTH
          ? fromHex(item)
          : null;
      if (!bytes || bytes.length === 0) {
        return malformed(
          `field "${name}" item ${i} must be non-empty hex of at most ` +
            `${MAX_GPU_COLLATERAL_ITEM_LENGTH} bytes`,
        );
      }
      return bytes;
    });
  };
  return { ocsp: list("ocsp"), crls: list("crls") };
}

/** Converts GPU collateral to its JSON form (`0x` hex). */
export function gpuCollateralToJson(collateral: GpuCollateral): GpuCollateralJson {
  return {
    ocsp: collateral.ocsp.map((item) => `0x${toHex(item)}`),
    crls: collateral.crls.map((item) => `0x${toHex(item)}`),
  };
}

/** What the revocation check established. */
export interface GpuRevocation {
  /** The certificates with a verified "good" answer. */
  readonly checked: readonly Certificate[];
  /** The earliest `nextUpdate` of the answers used. */
  readonly notAfter: Date;
}

/** Options of {@linkcode verifyGpuRevocation}. */
export interface VerifyGpuRevocationOptions {
  /** The time at which every answer must be valid. */
  readonly now: Date;
  /** The pinned NVIDIA roots (a delegated OCSP responder must chain to one). */
  readonly anchors: readonly Certificate[];
  /** Which GPU, for messages ("GPU #0"). */
  readonly label: string;
}

/** A verified answer for one certificate. */
interface Answer {
  readonly status: "good" | "revoked" | "unknown";
  readonly thisUpdate: Date;
  readonly nextUpdate: Date;
  readonly source: string;
}

/**
 * Checks the revocation status of a validated GPU chain against the collateral.
 *
 * @throws {AttestationError} `untrusted` with check `gpu_collateral` (an answer's signature or
 * responder, or no answer for a certificate) or `gpu_revocation` (revoked, or unknown to the
 * responder); `stale` (an answer outside its validity at `now`); `malformed`.
 */
export async function verifyGpuRevocation(
  chain: ValidatedChain,
  collateral: GpuCollateral,
  options: VerifyGpuRevocationOptions,
): Promise<GpuRevocation> {
  const certs = [...chain.path, chain.anchor];
  const ocsp = collateral.ocsp.map((der, i) =>
    parseOcspResponse(der, `the GPU collateral's OCSP response #${i + 1}`)
  );
  const crls = collateral.crls.map((der, i) =>
    parseRevocationList(der, {
      check: "gpu_collateral",
      label: `the GPU collateral's CRL #${i + 1}`,
    })
  );
  const required = chain.path.length > 1 ? chain.path.slice(1) : chain.path;
  let notAfter: Date | null = null;
  const checked: Certificate[] = [];
  for (const [index, cert] of chain.path.entries()) {
    const issuer = certs[index + 1];
    const answer = await findAnswer(cert, issuer, { ocsp, crls, certs, options });
    if (!answer) {
      if (required.includes(cert)) {
        refuse(
          "untrusted",
          "gpu_collateral",
          `${options.label}'s collateral has no OCSP answer or CRL for "${cert.subjectCn}" ` +
            `(serial ${cert.serial}, issued by "${cert.issuerCn}")`,
          { hints: ["The provider must attach fresh answers of NVIDIA's OCSP responder or CRLs."] },
        );
      }
      continue;
    }
    if (answer.status !== "good") {
      refuse(
        "untrusted",
        "gpu_revocation",
        `${options.label}'s certificate "${cert.subjectCn}" (serial ${cert.serial}) is ` +
          `${answer.status} according to ${answer.source}`,
      );
    }
    if (options.now < answer.thisUpdate || options.now > answer.nextUpdate) {
      refuse(
        "stale",
        "gpu_collateral",
        `${answer.source} for ${options.label}'s "${cert.subjectCn}" is valid from ` +
          `${answer.thisUpdate.toISOString()} to ${answer.nextUpdate.toISOString()}, now is ` +
          options.now.toISOString(),
        { hints: ["NVIDIA's OCSP answers are short-lived: the provider must attach fresh ones."] },
      );
    }
    if (!notAfter || answer.nextUpdate < notAfter) notAfter = answer.nextUpdate;
    checked.push(cert);
  }
  return { checked, notAfter: notAfter ?? chain.notAfter };
}

interface Sources {
  readonly ocsp: readonly OcspResponse[];
  readonly crls: readonly RevocationList[];
  readonly certs: readonly Certificate[];
  readonly options: VerifyGpuRevocationOptions;
}

/** The first verified answer for `cert`: an OCSP single response, else a CRL of its issuer. */
async function findAnswer(
  cert: Certificate,
  issuer: Certificate,
  sources: Sources,
): Promise<Answer | null> {
  for (const [i, response] of sources.ocsp.entries()) {
    const single = response.responses.find((entry) => matchesCertId(entry, cert, issuer));
    if (!single) continue;
    const source = `OCSP response #${i + 1}`;
    await verifyResponder(response, issuer, source, sources);
    if (!single.nextUpdate) {
      refuse("malformed", "gpu_collateral", `${source} has no nextUpdate for "${cert.subjectCn}"`);
    }
    return {
      status: single.status,
      thisUpdate: single.thisUpdate,
      nextUpdate: single.nextUpdate,
      source,
    };
  }
  for (const [i, crl] of sources.crls.entries()) {
    if (!equalBytes(crl.issuer, cert.issuer)) continue;
    const source = `CRL #${i + 1} of "${crl.issuerCn}"`;
    if (!await verifySignedData(crl.signatureAlgorithm, issuer.publicKey, crl.tbs, crl.signature)) {
      refuse(
        "untrusted",
        "gpu_collateral",
        `${source} has a bad signature (not signed by "${issuer.subjectCn}")`,
      );
    }
    return {
      status: crl.revoked.has(cert.serial) ? "revoked" : "good",
      thisUpdate: crl.thisUpdate,
      nextUpdate: crl.nextUpdate,
      source,
    };
  }
  return null;
}

/** Whether an OCSP single response names `cert` (issued by `issuer`). */
function matchesCertId(entry: OcspSingleResponse, cert: Certificate, issuer: Certificate): boolean {
  if (entry.serial !== cert.serial || issuer.publicKey.kind !== "ec") return false;
  const hash = (bytes: Uint8Array) =>
    entry.hash === "SHA-1" ? sha1(bytes) : digest(entry.hash, bytes);
  return equalBytes(entry.issuerNameHash, hash(issuer.subject)) &&
    equalBytes(entry.issuerKeyHash, hash(issuer.publicKey.point));
}

/**
 * The response is signed by the certificate's issuer itself, or by a delegated responder: a
 * certificate the response carries, with the OCSP-signing key usage, that chains to a pinned
 * NVIDIA root (through the response's and the device chain's certificates).
 */
async function verifyResponder(
  response: OcspResponse,
  issuer: Certificate,
  source: string,
  { certs, options }: Sources,
): Promise<void> {
  const signer = responderOf(response, [issuer, ...response.certs]);
  if (!signer) {
    refuse(
      "untrusted",
      "gpu_collateral",
      `${source}'s responder ${
        response.responderCn ? `"${response.responderCn}"` : "(by key)"
      } is neither the issuer "${issuer.subjectCn}" nor a certificate the response carries`,
    );
  }
  if (signer !== issuer) {
    if (!hasOcspSigning(signer)) {
      refuse(
        "untrusted",
        "gpu_collateral",
        `${source} is signed by "${signer.subjectCn}", which is not an OCSP responder ` +
          "(no OCSP-signing extended key usage)",
      );
    }
    await verifyChain(pathTo(signer, [...response.certs, ...certs], options.anchors), {
      check: "gpu_collateral",
      label: `${source}'s responder chain`,
      anchors: options.anchors,
      now: options.now,
      maxDepth: 5,
    });
  }
  const ok = await verifySignedData(
    response.signatureAlgorithm,
    signer.publicKey,
    response.tbs,
    response.signature,
  );
  if (!ok) {
    refuse(
      "untrusted",
      "gpu_collateral",
      `${source} has a bad signature (not signed by "${signer.subjectCn}")`,
    );
  }
}

function responderOf(response: OcspResponse, candidates: readonly Certificate[]) {
  return candidates.find((cert) =>
    response.responderName
      ? equalBytes(cert.subject, response.responderName)
      : cert.publicKey.kind === "ec" && response.responderKeyHash !== null &&
        equalBytes(sha1(cert.publicKey.point), response.responderKeyHash)
  );
}

function hasOcspSigning(cert: Certificate): boolean {
  const extension = cert.extensions.get(OID_EXTENDED_KEY_USAGE);
  if (!extension) return false;
  try {
    return childrenOf(readRoot(extension.value), TAG.sequence, "extendedKeyUsage")
      .some((usage) => readOid(usage, "a key purpose") === OID_OCSP_SIGNING);
  } catch {
    return false;
  }
}

/** A path from `leaf` up through `pool`, leaf first, stopping below an anchor. */
function pathTo(
  leaf: Certificate,
  pool: readonly Certificate[],
  anchors: readonly Certificate[],
): Certificate[] {
  const path = [leaf];
  while (path.length < 6) {
    const top = path[path.length - 1];
    if (anchors.some((anchor) => equalBytes(anchor.subject, top.issuer))) break;
    const next = pool.find((cert) =>
      equalBytes(cert.subject, top.issuer) && !path.includes(cert) &&
      !anchors.some((anchor) => equalBytes(anchor.der, cert.der))
    );
    if (!next) break;
    path.push(next);
  }
  return path;
}
