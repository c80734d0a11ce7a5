/**
 * The binding between a TEE's CPU report and everything else the TEE tier trusts
 * (`docs/protocol.md` §6): the daemon's nonce, the provider's serving key, the GPUs' evidence
 * and the model weights the enclave serves. The CPU quote's 64-byte report data must equal
 *
 * ```
 * SHA-512("net-consumer/tee-report-data/v2" ‖ 0x00 ‖ nonce (32) ‖ serving_public_key (65) ‖
 *         evidence_digest (32))
 * evidence_digest = SHA-256("net-consumer/tee-evidence/v1" ‖ 0x00 ‖
 *         gpu_count (u8) ‖ SHA-256(gpu_report) for each GPU, in the bundle's order ‖
 *         model_count (u16 BE) ‖
 *         for each model, sorted by id: id_length (u8) ‖ id ‖ weights_digest (32))
 * ```
 *
 * and each GPU must have signed `gpuNonce = SHA-256("net-consumer/tee-gpu-nonce/v1" ‖ 0x00 ‖
 * nonce ‖ serving_public_key)`: a GPU report is fresh for this request and this key, and the
 * enclave vouches that these GPUs and these weights are the ones it serves with — neither can
 * be replayed with another.
 *
 * @example
 * ```ts
 * import { attestationReportData } from "@net/consumer/tee";
 *
 * const nonce = new Uint8Array(32);
 * const servingPublicKey = new Uint8Array(65);
 * servingPublicKey[0] = 4;
 * const none = { gpuReports: [], models: [] };
 * const reportData = attestationReportData(nonce, servingPublicKey, none);
 * console.assert(reportData.length === 64);
 * ```
 *
 * @module
 */

import { sha256, sha512 } from "@noble/hashes/sha2.js";
import { concat } from "../_bytes.ts";

/** ASCII domain tag that starts the report data preimage. */
export const REPORT_DATA_DOMAIN = "net-consumer/tee-report-data/v2";
/** ASCII domain tag of the evidence digest. */
export const EVIDENCE_DOMAIN = "net-consumer/tee-evidence/v1";
/** ASCII domain tag of the nonce the GPUs sign. */
export const GPU_NONCE_DOMAIN = "net-consumer/tee-gpu-nonce/v1";
/** Length of the daemon's nonce. */
export const ATTESTATION_NONCE_LENGTH = 32;
/** Length of an uncompressed secp256k1 public key. */
export const SERVING_PUBLIC_KEY_LENGTH = 65;
/** Length of a model's weights digest. */
export const WEIGHTS_DIGEST_LENGTH = 32;
/** Most GPUs one bundle may carry. */
export const MAX_GPUS = 16;
/** Most models one bundle may name. */
export const MAX_ATTESTED_MODELS = 256;

const encoder = new TextEncoder();

/** A model the enclave serves and the digest of the weights it loaded for it. */
export interface AttestedModel {
  /** The model id as the ad names it (`maker/model`). */
  readonly id: string;
  /** The 32-byte digest of the weights (e.g. the dm-verity root hash of the weights volume). */
  readonly weightsDigest: Uint8Array;
}

/** What the report data binds besides the nonce and the serving key. */
export interface BoundEvidence {
  /** Each GPU's report, exactly as the bundle carries it. */
  readonly gpuReports: readonly Uint8Array[];
  /** The served models, sorted by id, ids unique. */
  readonly models: readonly AttestedModel[];
}

/**
 * Why a model list cannot be bound, or `null` when it can: at most 256 models, ids of 1 to
 * 255 printable ASCII characters, sorted and unique, digests of 32 bytes.
 */
export function modelListProblem(models: readonly AttestedModel[]): string | null {
  if (models.length > MAX_ATTESTED_MODELS) {
    return `${models.length} models, at most ${MAX_ATTESTED_MODELS}`;
  }
  for (const [i, model] of models.entries()) {
    if (typeof model.id !== "string" || !/^[\x21-\x7e]{1,255}$/.test(model.id)) {
      return `model ${i}'s id must be 1 to 255 printable ASCII characters`;
    }
    if (i > 0 && !(models[i - 1].id < model.id)) {
      return `model ids must be sorted and unique ("${models[i - 1].id}" before "${model.id}")`;
    }
    if (
      !(model.weightsDigest instanceof Uint8Array) ||
      model.weightsDigest.length !== WEIGHTS_DIGEST_LENGTH
    ) {
      return `model "${model.id}"'s weights digest must be ${WEIGHTS_DIGEST_LENGTH} bytes`;
    }
  }
  return null;
}

/**
 * The 32-byte digest of the GPU reports and the model list.
 *
 * @throws {RangeError} when there are more than 16 GPUs or the model list cannot be bound.
 */
export function teeEvidenceDigest(evidence: BoundEvidence): Uint8Array {
  if (evidence.gpuReports.length > MAX_GPUS) {
    throw new RangeError(
      `teeEvidenceDigest: at most ${MAX_GPUS} GPUs, found ${evidence.gpuReports.length}`,
    );
  }
  const problem = modelListProblem(evidence.models);
  if (problem) throw new RangeError(`teeEvidenceDigest: ${problem}`);
  const models = evidence.models.flatMap((model) => {
    const id = encoder.encode(model.id);
    return [Uint8Array.of(id.length), id, model.weightsDigest];
  });
  return sha256(
    concat(
      encoder.encode(EVIDENCE_DOMAIN),
      Uint8Array.of(0, evidence.gpuReports.length),
      ...evidence.gpuReports.map((report) => sha256(report)),
      Uint8Array.of(evidence.models.length >>> 8, evidence.models.length & 0xff),
      ...models,
    ),
  );
}

function checkKeyAndNonce(where: string, nonce: Uint8Array, servingPublicKey: Uint8Array): void {
  if (!(nonce instanceof Uint8Array) || nonce.length !== ATTESTATION_NONCE_LENGTH) {
    throw new RangeError(
      `${where}: nonce must be ${ATTESTATION_NONCE_LENGTH} bytes, found ${
        nonce instanceof Uint8Array ? nonce.length : typeof nonce
      }`,
    );
  }
  if (
    !(servingPublicKey instanceof Uint8Array) ||
    servingPublicKey.length !== SERVING_PUBLIC_KEY_LENGTH || servingPublicKey[0] !== 4
  ) {
    throw new RangeError(
      `${where}: serving public key must be ${SERVING_PUBLIC_KEY_LENGTH} bytes starting with ` +
        "0x04 (uncompressed secp256k1)",
    );
  }
}

/**
 * Computes the 64-byte report data that binds a nonce, a serving public key, the GPUs'
 * reports and the served models.
 *
 * @throws {RangeError} when the nonce is not 32 bytes, the key is not 65 bytes starting with
 * `0x04`, or the evidence cannot be bound (see {@linkcode teeEvidenceDigest}).
 */
export function attestationReportData(
  nonce: Uint8Array,
  servingPublicKey: Uint8Array,
  evidence: BoundEvidence,
): Uint8Array {
  checkKeyAndNonce("attestationReportData", nonce, servingPublicKey);
  return sha512(
    concat(
      encoder.encode(REPORT_DATA_DOMAIN),
      Uint8Array.of(0),
      nonce,
      servingPublicKey,
      teeEvidenceDigest(evidence),
    ),
  );
}

/**
 * The 32-byte nonce every GPU of the bundle signs for this request and serving key.
 *
 * @throws {RangeError} when the nonce or the key has the wrong shape.
 */
export function gpuNonce(nonce: Uint8Array, servingPublicKey: Uint8Array): Uint8Array {
  checkKeyAndNonce("gpuNonce", nonce, servingPublicKey);
  return sha256(
    concat(encoder.encode(GPU_NONCE_DOMAIN), Uint8Array.of(0), nonce, servingPublicKey),
  );
}
