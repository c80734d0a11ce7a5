/**
 * Signature checks used by the TEE verifiers (private): ECDSA over P-256 and P-384 and
 * RSASSA-PSS, through WebCrypto (native code: several times faster than pure JavaScript, which
 * matters because a daemon verifies a provider's chain before every TEE request). ECDSA
 * accepts high-S signatures (Intel and AMD sign with OpenSSL, which does not normalize S;
 * WebCrypto verifies any S in range), and the hash is named from the algorithm, never implied
 * by the curve. DER signatures (certificates, CRLs, OCSP) are converted to `r ‖ s` here.
 *
 * Every function returns `false` for a signature that does not verify, including malformed
 * signatures and keys; none throws. Successes are memoized by their exact inputs (see
 * `_memo.ts`), so re-checking the same certificate or collateral signature costs one hash.
 *
 * @module
 */

import { sha256, sha384, sha512 } from "@noble/hashes/sha2.js";
import { childrenOf, DerError, readIntegerBytes, readRoot, TAG } from "./_der.ts";
import { memoKey, memoTable } from "./_memo.ts";

/** Signature checks that succeeded, by their exact inputs. */
const verified = memoTable<true>(1024);
/** Imported WebCrypto keys by curve and point (importing is cheap, but not free). */
const importedKeys = memoTable<CryptoKey>(256);

/** Smallest RSA modulus accepted, in bits (AMD's keys have 4096). */
export const MIN_RSA_BITS = 2048;

/** A hash named by its WebCrypto name. */
export type HashName = "SHA-256" | "SHA-384" | "SHA-512";

/** A curve the verifiers accept. */
export type CurveName = "P-256" | "P-384";

/** A public key taken from a certificate or a quote. */
export type PublicKey =
  | { readonly kind: "ec"; readonly curve: CurveName; readonly point: Uint8Array }
  | { readonly kind: "rsa"; readonly spki: Uint8Array; readonly bits: number };

/** How a certificate or CRL is signed. */
export type SignatureAlgorithm =
  | { readonly kind: "ecdsa"; readonly hash: HashName }
  | { readonly kind: "rsa-pss"; readonly hash: HashName; readonly saltLength: number };

/** Hashes a message with the named hash. */
export function digest(hash: HashName, message: Uint8Array): Uint8Array {
  switch (hash) {
    case "SHA-256":
      return sha256(message);
    case "SHA-384":
      return sha384(message);
    case "SHA-512":
      return sha512(message);
  }
}

/** Length in bytes of a scalar of the curve. */
const SCALAR_LENGTH: Record<CurveName, number> = { "P-256": 32, "P-384": 48 };

/**
 * Verifies an ECDSA signature. `signature` is raw `r ‖ s` (`format: "compact"`, as in quotes
 * and collateral) or ASN.1 DER (`format: "der"`, as in certificates and CRLs).
 */
export async function verifyEcdsa(
  key: { curve: CurveName; point: Uint8Array },
  message: Uint8Array,
  signature: Uint8Array,
  options: { hash: HashName; format: "compact" | "der" },
): Promise<boolean> {
  const id = memoKey(
    `ecdsa/${key.curve}/${options.hash}/${options.format}`,
    key.point,
    message,
    signature,
  );
  if (verified.get(id)) return true;
  const size = SCALAR_LENGTH[key.curve];
  const raw = options.format === "der" ? derSignatureToRaw(signature, size) : signature;
  if (!raw || raw.length !== 2 * size) return false;
  let ok: boolean;
  try {
    ok = await crypto.subtle.verify(
      { name: "ECDSA", hash: options.hash },
      await ecdsaKey(key),
      raw as Uint8Array<ArrayBuffer>,
      message as Uint8Array<ArrayBuffer>,
    );
  } catch {
    ok = false;
  }
  if (ok) verified.set(id, true);
  return ok;
}

async function ecdsaKey(key: { curve: CurveName; point: Uint8Array }): Promise<CryptoKey> {
  const id = memoKey(`ecdsa-key/${key.curve}`, key.point);
  const cached = importedKeys.get(id);
  if (cached) return cached;
  const imported = await crypto.subtle.importKey(
    "raw",
    key.point as Uint8Array<ArrayBuffer>,
    { name: "ECDSA", namedCurve: key.curve },
    false,
    ["verify"],
  );
  importedKeys.set(id, imported);
  return imported;
}

/**
 * `SEQUENCE { r INTEGER, s INTEGER }` (DER, positive, minimal) as `r ‖ s` of `size` bytes
 * each, or `null` when it is not that.
 */
export function derSignatureToRaw(signature: Uint8Array, size: number): Uint8Array | null {
  try {
    const parts = childrenOf(readRoot(signature), TAG.sequence, "the signature");
    if (parts.length !== 2) return null;
    const out = new Uint8Array(2 * size);
    for (const [i, part] of parts.entries()) {
      let value = readIntegerBytes(part, "a signature value");
      if (value[0] & 0x80) return null; // negative
      if (value[0] === 0) value = value.subarray(1);
      if (value.length > size) return null;
      out.set(value, (i + 1) * size - value.length);
    }
    return out;
  } catch (error) {
    if (error instanceof DerError) return null;
    throw error;
  }
}

/** Verifies an RSASSA-PSS signature (MGF1 with the same hash). */
export async function verifyRsaPss(
  spki: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
  options: { hash: HashName; saltLength: number },
): Promise<boolean> {
  const id = memoKey(`rsa-pss/${options.hash}/${options.saltLength}`, spki, message, signature);
  if (verified.get(id)) return true;
  try {
    const key = await crypto.subtle.importKey(
      "spki",
      spki as Uint8Array<ArrayBuffer>,
      { name: "RSA-PSS", hash: options.hash },
      false,
      ["verify"],
    );
    const ok = await crypto.subtle.verify(
      { name: "RSA-PSS", saltLength: options.saltLength },
      key,
      signature as Uint8Array<ArrayBuffer>,
      message as Uint8Array<ArrayBuffer>,
    );
    if (ok) verified.set(id, true);
    return ok;
  } catch {
    return false;
  }
}

/**
 * Verifies a certificate's or CRL's signature (`der` signature for ECDSA) with an issuer's
 * public key. A key of the wrong kind for the algorithm does not verify.
 */
export async function verifySignedData(
  algorithm: SignatureAlgorithm,
  key: PublicKey,
  message: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  if (algorithm.kind === "ecdsa") {
    if (key.kind !== "ec") return false;
    return await verifyEcdsa(key, message, signature, { hash: algorithm.hash, format: "der" });
  }
  if (key.kind !== "rsa" || key.bits < MIN_RSA_BITS) return false;
  return await verifyRsaPss(key.spki, message, signature, algorithm);
}
