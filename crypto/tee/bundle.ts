/**
 * The attestation bundle of the TEE tier (`docs/protocol.md` §6): what a provider answers to
 * `GET /v1/attestation?nonce=…`. Parsing is strict (unknown fields refused, every byte field
 * checked for length) except for `mock` bundles, which are recognised by their `format` alone
 * so that they can be refused as mock whatever else they hold.
 *
 * @example Round-trip a bundle through JSON
 * ```ts ignore
 * import { attestationBundleFromJson, attestationBundleToJson } from "@net/consumer/tee";
 *
 * const bundle = attestationBundleFromJson(await response.json());
 * const again = attestationBundleFromJson(JSON.parse(JSON.stringify(attestationBundleToJson(bundle))));
 * ```
 *
 * @module
 */

import {
  EndorsementError,
  endorsementFromJson,
  endorsementToJson,
  type KeyEndorsement,
  type KeyEndorsementJson,
} from "../endorsement.ts";
import { fromHex, to0x } from "../_bytes.ts";
import {
  type TdxCollateral,
  tdxCollateralFromJson,
  type TdxCollateralJson,
  tdxCollateralToJson,
} from "./collateral.ts";
import { AttestationError } from "./errors.ts";
import {
  type GpuCollateral,
  gpuCollateralFromJson,
  type GpuCollateralJson,
  gpuCollateralToJson,
} from "./nvidia/gpu_collateral.ts";
import { MAX_GPU_REPORT_LENGTH } from "./nvidia/gpu_report.ts";
import type { GpuEvidence } from "./nvidia/verify_gpu.ts";
import {
  ATTESTATION_NONCE_LENGTH,
  type AttestedModel,
  MAX_GPUS,
  modelListProblem,
  SERVING_PUBLIC_KEY_LENGTH,
  WEIGHTS_DIGEST_LENGTH,
} from "./report_data.ts";

/** The formats of the `format` field. */
export type AttestationFormat = "tdx" | "sev-snp" | "mock";

/** Largest accepted quote or report, in bytes. */
export const MAX_QUOTE_LENGTH = 64 * 1024;
/** Largest accepted VCEK certificate, in bytes. */
export const MAX_VCEK_LENGTH = 16 * 1024;
/** Largest accepted GPU certificate chain (PEM), in characters. */
export const MAX_GPU_CHAIN_LENGTH = 32 * 1024;

/** Fields every real bundle has. */
export interface BundleCommon {
  /** The 32-byte nonce the bundle answers. */
  readonly nonce: Uint8Array;
  /** The serving key's uncompressed secp256k1 public key, 65 bytes. */
  readonly servingPublicKey: Uint8Array;
  /** The TDX quote or SEV-SNP report. */
  readonly quote: Uint8Array;
  /** The serving key's endorsement of the HPKE key configuration. */
  readonly endorsement: KeyEndorsement;
  /** One piece of evidence per GPU (empty: the enclave claims no GPU). */
  readonly gpus: readonly GpuEvidence[];
  /** Revocation answers for the GPUs' chains, or `null`. */
  readonly gpuCollateral: GpuCollateral | null;
  /** The models the enclave serves and their weights digests, sorted by id. */
  readonly models: readonly AttestedModel[];
}

/** A TDX bundle. */
export interface TdxBundle extends BundleCommon {
  /** `"tdx"`. */
  readonly format: "tdx";
  /** Intel collateral, or `null`. */
  readonly collateral: TdxCollateral | null;
}

/** An SEV-SNP bundle. */
export interface SnpBundle extends BundleCommon {
  /** `"sev-snp"`. */
  readonly format: "sev-snp";
  /** The VCEK that signed the report (required). */
  readonly collateral: { readonly vcek: Uint8Array };
}

/** A mock bundle (always refused). */
export interface MockBundle {
  /** `"mock"`. */
  readonly format: "mock";
}

/** A parsed attestation bundle. */
export type AttestationBundle = TdxBundle | SnpBundle | MockBundle;

/** The JSON form of a bundle. */
export interface AttestationBundleJson {
  /** `"tdx"`, `"sev-snp"` or `"mock"`. */
  format: AttestationFormat;
  /** `0x` + 32 bytes. */
  nonce?: string;
  /** `0x04` + 64 bytes. */
  serving_public_key?: string;
  /** `0x` + the quote or report. */
  quote?: string;
  /** TDX collateral, `{"vcek":"0x…"}` for SEV-SNP, or `null`. */
  collateral?: TdxCollateralJson | { vcek: string } | null;
  /** The endorsement (section 5). */
  endorsement?: KeyEndorsementJson;
  /** One entry per GPU: its SPDM report and its device chain. Absent: none. */
  gpus?: { report: string; certificate_chain: string }[];
  /** OCSP answers and CRLs for the GPU chains, or `null`. Absent: `null`. */
  gpu_collateral?: GpuCollateralJson | null;
  /** The served models: `{"id":"maker/model","weights_digest":"0x…"}`. Absent: none. */
  models?: { id: string; weights_digest: string }[];
}

const FIELDS = [
  "format",
  "nonce",
  "serving_public_key",
  "quote",
  "collateral",
  "endorsement",
  "gpus",
  "gpu_collateral",
  "models",
];

function malformed(message: string, cause?: unknown): never {
  throw new AttestationError(
    "malformed",
    "bundle",
    `Cannot verify attestation: the bundle ${message}`,
    { cause },
  );
}

function hexField(
  record: Record<string, unknown>,
  name: string,
  bounds: { length?: number; max?: number },
): Uint8Array {
  const value = record[name];
  if (typeof value !== "string" || !value.startsWith("0x")) {
    return malformed(`field "${name}" must be 0x-prefixed hex, found ${typeof value}`);
  }
  if (bounds.max !== undefined && value.length > 2 + 2 * bounds.max) {
    return malformed(`field "${name}" is longer than ${bounds.max} bytes`);
  }
  const bytes = fromHex(value);
  if (!bytes) return malformed(`field "${name}" is not hex`);
  if (bounds.length !== undefined && bytes.length !== bounds.length) {
    malformed(`field "${name}" must be ${bounds.length} bytes, found ${bytes.length}`);
  }
  if (bytes.length === 0) malformed(`field "${name}" is empty`);
  return bytes;
}

/**
 * Parses the JSON form of a bundle.
 *
 * @throws {AttestationError} `malformed` with check `bundle` (or `collateral`), naming the field.
 */
export function attestationBundleFromJson(value: unknown): AttestationBundle {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return malformed(
      `must be a JSON object, found ${Array.isArray(value) ? "array" : typeof value}`,
    );
  }
  const record = value as Record<string, unknown>;
  const format = record.format;
  if (format === "mock") return { format: "mock" };
  if (format !== "tdx" && format !== "sev-snp") {
    return malformed(
      `format must be "tdx", "sev-snp" or "mock", found ${JSON.stringify(format)?.slice(0, 40)}`,
    );
  }
  for (const key of Object.keys(record)) {
    if (!FIELDS.includes(key)) malformed(`has an unknown field "${key}"`);
  }
  const nonce = hexField(record, "nonce", { length: ATTESTATION_NONCE_LENGTH });
  const servingPublicKey = hexField(record, "serving_public_key", {
    length: SERVING_PUBLIC_KEY_LENGTH,
  });
  if (servingPublicKey[0] !== 4) {
    malformed(`field "serving_public_key" must be an uncompressed key (0x04…)`);
  }
  const quote = hexField(record, "quote", { max: MAX_QUOTE_LENGTH });
  let endorsement: KeyEndorsement;
  try {
    endorsement = endorsementFromJson(record.endorsement);
  } catch (cause) {
    if (!(cause instanceof EndorsementError)) throw cause;
    return malformed(`field "endorsement" is invalid: ${cause.shortMessage}`, cause);
  }
  const extra = {
    gpus: gpusFromJson(record.gpus),
    gpuCollateral: record.gpu_collateral === null || record.gpu_collateral === undefined
      ? null
      : gpuCollateralFromJson(record.gpu_collateral),
    models: modelsFromJson(record.models),
  };
  const collateral = record.collateral;
  if (format === "tdx") {
    return {
      format,
      nonce,
      servingPublicKey,
      quote,
      collateral: collateral === null || collateral === undefined
        ? null
        : tdxCollateralFromJson(collateral),
      endorsement,
      ...extra,
    };
  }
  if (typeof collateral !== "object" || collateral === null || Array.isArray(collateral)) {
    return malformed(`field "collateral" must be {"vcek":"0x…"} for sev-snp`);
  }
  const snp = collateral as Record<string, unknown>;
  for (const key of Object.keys(snp)) {
    if (key !== "vcek") malformed(`field "collateral" has an unknown field "${key}"`);
  }
  return {
    format,
    nonce,
    servingPublicKey,
    quote,
    collateral: { vcek: hexField(snp, "vcek", { max: MAX_VCEK_LENGTH }) },
    endorsement,
    ...extra,
  };
}

function list(value: unknown, name: string, max: number): Record<string, unknown>[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return malformed(`field "${name}" must be an array`);
  if (value.length > max) malformed(`field "${name}" has ${value.length} entries, at most ${max}`);
  return value.map((entry, i) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      return malformed(`field "${name}" entry ${i} must be an object`);
    }
    return entry as Record<string, unknown>;
  });
}

function onlyFields(entry: Record<string, unknown>, fields: string[], where: string): void {
  for (const key of Object.keys(entry)) {
    if (!fields.includes(key)) malformed(`${where} has an unknown field "${key}"`);
  }
}

function gpusFromJson(value: unknown): GpuEvidence[] {
  return list(value, "gpus", MAX_GPUS).map((entry, i) => {
    onlyFields(entry, ["report", "certificate_chain"], `GPU ${i}`);
    const chain = entry.certificate_chain;
    if (typeof chain !== "string" || chain.length === 0 || chain.length > MAX_GPU_CHAIN_LENGTH) {
      return malformed(
        `GPU ${i}'s "certificate_chain" must be PEM text of at most ` +
          `${MAX_GPU_CHAIN_LENGTH} characters`,
      );
    }
    return {
      report: hexField(entry, "report", { max: MAX_GPU_REPORT_LENGTH }),
      certificateChain: chain,
    };
  });
}

function modelsFromJson(value: unknown): AttestedModel[] {
  const models = list(value, "models", 256).map((entry, i) => {
    onlyFields(entry, ["id", "weights_digest"], `model ${i}`);
    if (typeof entry.id !== "string") return malformed(`model ${i}'s "id" must be a string`);
    return {
      id: entry.id,
      weightsDigest: hexField(entry, "weights_digest", { length: WEIGHTS_DIGEST_LENGTH }),
    };
  });
  const problem = modelListProblem(models);
  if (problem) malformed(`field "models" is invalid: ${problem}`);
  return models;
}

/** Converts a bundle to its JSON form. */
export function attestationBundleToJson(bundle: AttestationBundle): AttestationBundleJson {
  if (bundle.format === "mock") return { format: "mock" };
  return {
    format: bundle.format,
    nonce: to0x(bundle.nonce),
    serving_public_key: to0x(bundle.servingPublicKey),
    quote: to0x(bundle.quote),
    collateral: bundle.format === "tdx"
      ? bundle.collateral ? tdxCollateralToJson(bundle.collateral) : null
      : { vcek: to0x(bundle.collateral.vcek) },
    endorsement: endorsementToJson(bundle.endorsement),
    gpus: bundle.gpus.map((gpu) => ({
      report: to0x(gpu.report),
      certificate_chain: gpu.certificateChain,
    })),
    gpu_collateral: bundle.gpuCollateral ? gpuCollateralToJson(bundle.gpuCollateral) : null,
    models: bundle.models.map((model) => ({
      id: model.id,
      weights_digest: to0x(model.weightsDigest),
    })),
  };
}
