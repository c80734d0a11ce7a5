/**
 * Signature checks used by the TEE verifiers (private): ECDSA over P-256 and P-384 with
 * `@noble/curves` (high-S accepted, as Intel and AMD sign with OpenSSL; the hash is computed
 * here from the algorithm, never implied by the curve), and RSASSA-PSS through WebCrypto.
 *
 * Every function returns `false` for a signature that does not verify, including malformed
 * signatures and keys; none throws. Successes are memoized by their exact inputs (see
 * `_memo.ts`), so re-checking the same certificate or collateral signature costs one hash.
 *
 * @module
 */

import { p256, p384 } from "@noble/curves/nist.js";
import { sha256, sha384, sha512 } from "@noble/hashes/sha2.js";
import { memoKey, memoTable } from "./_memo.ts";

/** Signature checks that succeeded, by their exact inputs. */
const verified = memoTable<true>(1024);

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

/**
 * Verifies an ECDSA signature. `signature` is raw `r ‖ s` (`format: "compact"`, as in quotes
 * and collateral) or ASN.1 DER (`format: "der"`, as in certificates and CRLs).
 */
export function verifyEcdsa(
  key: { curve: CurveName; point: Uint8Array },
  message: Uint8Array,
  signature: Uint8Array,
  options: { hash: HashName; format: "compact" | "der" },
): boolean {
  const curve = key.curve === "P-256" ? p256 : p384;
  const id = memoKey(
    `ecdsa/${key.curve}/${options.hash}/${options.format}`,
    key.point,
    message,
    signature,
  );
  if (verified.get(id)) return true;
  let ok: boolean;
  try {
    ok = curve.verify(signature, digest(options.hash, message), key.point, {
      prehash: false,
      lowS: false,
      format: options.format,
    });
  } catch {
    ok = false;
  }
  if (ok) verified.set(id, true);
  return ok;
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
    return verifyEcdsa(key, message, signature, { hash: algorithm.hash, format: "der" });
  }
  if (key.kind !== "rsa" || key.bits < MIN_RSA_BITS) return false;
  return await verifyRsaPss(key.spki, message, signature, algorithm);
}
