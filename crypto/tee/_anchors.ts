/**
 * Parses a {@linkcode TrustRoots} object once and keeps the result (private). The cache is
 * keyed by the roots object; a caller that builds new roots gets them parsed anew.
 *
 * @module
 */

import { type Certificate, certificateFromPemOrDer } from "./_x509.ts";
import { AttestationError } from "./errors.ts";
import type { TrustRoots } from "./roots.ts";

/** Parsed AMD roots of one product line. */
export interface AmdAnchors {
  /** Product line name. */
  readonly product: string;
  /** The ARK (trust anchor). */
  readonly ark: Certificate;
  /** The ASK (verified under the ARK on every use). */
  readonly ask: Certificate;
}

/** Parsed roots. */
export interface Anchors {
  /** Intel root CAs. */
  readonly intel: readonly Certificate[];
  /** AMD product lines. */
  readonly amd: readonly AmdAnchors[];
  /** NVIDIA device identity roots (empty when none is trusted). */
  readonly nvidia: readonly Certificate[];
}

const cache = new WeakMap<TrustRoots, Anchors>();

/**
 * Parses the roots (once per roots object).
 *
 * @throws {AttestationError} `malformed` when a root does not parse.
 */
export function resolveAnchors(roots: TrustRoots): Anchors {
  const cached = cache.get(roots);
  if (cached) return cached;
  if (
    typeof roots !== "object" || roots === null || !Array.isArray(roots.intel) ||
    !Array.isArray(roots.amd) || (roots.nvidia !== undefined && !Array.isArray(roots.nvidia))
  ) {
    throw new AttestationError(
      "malformed",
      "pck_chain",
      "Cannot verify attestation: the trust roots must be an object with `intel` and `amd` " +
        "lists (and optionally `nvidia`)",
    );
  }
  const anchors: Anchors = {
    intel: roots.intel.map((root, i) =>
      certificateFromPemOrDer(root, { check: "pck_chain", label: `Intel trust root #${i + 1}` })
    ),
    amd: roots.amd.map((entry) => ({
      product: entry.product,
      ark: certificateFromPemOrDer(entry.ark, {
        check: "vcek_chain",
        label: `the AMD ARK of ${entry.product}`,
      }),
      ask: certificateFromPemOrDer(entry.ask, {
        check: "vcek_chain",
        label: `the AMD ASK of ${entry.product}`,
      }),
    })),
    nvidia: (roots.nvidia ?? []).map((root, i) =>
      certificateFromPemOrDer(root, { check: "gpu_chain", label: `NVIDIA trust root #${i + 1}` })
    ),
  };
  cache.set(roots, anchors);
  return anchors;
}
