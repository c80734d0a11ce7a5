/**
 * Checking a reply's receipt against what the daemon saw ({@linkcode checkReceipt}), and
 * re-verifying a saved receipt offline ({@linkcode verifyReceiptRecord}): the attestation
 * bundle it names is verified again, at the time it was verified, down to the pinned vendor
 * roots; the receipt must be signed by the serving key that bundle attests and name exactly
 * that bundle's evidence and one of its attested models. No network is used.
 *
 * A receipt record (`docs/protocol.md` §8) is what the daemon keeps and serves at
 * `GET /v1/verdicts/{id}`:
 *
 * ```json
 * { "version": 1, "provider": "0x…", "verified_at": "<RFC 3339>", "measurements": ["0x…"],
 *   "attestation": { …the bundle… }, "receipt": { …the receipt… } }
 * ```
 *
 * @example Re-verify a saved record
 * ```ts ignore
 * import { receiptRecordFromJson, verifyReceiptRecord } from "@net/consumer/tee";
 *
 * const record = receiptRecordFromJson(JSON.parse(await Deno.readTextFile("receipt.json")));
 * const { verdict, signer } = await verifyReceiptRecord(record);
 * console.log(signer, verdict.measurementId, verdict.gpus.length);
 * ```
 *
 * @module
 */

import type { Address } from "viem";
import { equalBytes, fromHex, toHex } from "../_bytes.ts";
import {
  type Receipt,
  ReceiptError,
  receiptFromJson,
  type ReceiptJson,
  receiptSigner,
  receiptToJson,
} from "../receipt.ts";
import { ApprovedMeasurements } from "./approved_set.ts";
import {
  type AttestationBundle,
  attestationBundleFromJson,
  type AttestationBundleJson,
  attestationBundleToJson,
} from "./bundle.ts";
import type { CollateralPolicy } from "./collateral_policy.ts";
import type { MeasurementId } from "./measurement_id.ts";
import { NonceBook } from "./nonce_book.ts";
import type { TrustRoots } from "./roots.ts";
import { type AttestationVerdict, verifyAttestation } from "./verify_attestation.ts";

/** What the daemon expects a reply's receipt to say. */
export interface ExpectedReceipt {
  /** The attestation nonce of this request. */
  readonly nonce: Uint8Array;
  /** SHA-256 of the inner request content the daemon sealed. */
  readonly requestDigest: Uint8Array;
  /** SHA-256 of the inner response content the daemon opened. */
  readonly replyDigest: Uint8Array;
  /** The inner response's status. */
  readonly status: number;
  /** The model asked for. */
  readonly model: string;
  /** The verdict of the attestation the request was sealed under. */
  readonly verdict: Pick<AttestationVerdict, "servingKey" | "digests" | "models">;
}

function mismatch(message: string): never {
  throw new ReceiptError("mismatch", `Cannot accept receipt: ${message}`);
}

const hex = (bytes: Uint8Array) => `0x${toHex(bytes).slice(0, 12)}…`;

/**
 * Checks that a receipt is signed by the verdict's serving key and names this request, this
 * reply, this model with its attested weights and the verdict's evidence; returns the signer.
 *
 * @throws {ReceiptError} `bad_signature`, or `mismatch` naming the first field that differs.
 */
export async function checkReceipt(receipt: Receipt, expected: ExpectedReceipt): Promise<Address> {
  const signer = await receiptSigner(receipt);
  const { verdict } = expected;
  if (signer !== verdict.servingKey.toLowerCase()) {
    mismatch(`it is signed by ${signer}, the attested serving key is ${verdict.servingKey}`);
  }
  const same: [string, Uint8Array, Uint8Array][] = [
    ["nonce", receipt.nonce, expected.nonce],
    ["request digest", receipt.requestDigest, expected.requestDigest],
    ["reply digest", receipt.replyDigest, expected.replyDigest],
  ];
  for (const [what, found, wanted] of same) {
    if (!equalBytes(found, wanted)) {
      mismatch(`its ${what} is ${hex(found)}, expected ${hex(wanted)}`);
    }
  }
  if (receipt.status !== expected.status) {
    mismatch(`it names status ${receipt.status}, the reply's is ${expected.status}`);
  }
  if (receipt.model !== expected.model) {
    mismatch(`it names model ${receipt.model}, the request asked for ${expected.model}`);
  }
  checkEvidence(receipt, verdict);
  return signer;
}

/** The receipt names the verdict's evidence digests and one of its attested models. */
function checkEvidence(
  receipt: Receipt,
  verdict: Pick<AttestationVerdict, "digests" | "models">,
): void {
  const digests = verdict.digests;
  const gpus = receipt.evidence.gpus.map((gpu) => `0x${toHex(gpu)}`);
  if (
    `0x${toHex(receipt.evidence.quote)}` !== digests.quote ||
    `0x${toHex(receipt.evidence.bound)}` !== digests.evidence ||
    gpus.length !== digests.gpus.length || gpus.some((gpu, i) => gpu !== digests.gpus[i])
  ) {
    mismatch("its evidence digests are not those of the attestation the request was sealed under");
  }
  const model = verdict.models.find((entry) => entry.id === receipt.model);
  if (!model) mismatch(`model ${receipt.model} is not among the attested models`);
  if (!equalBytes(model.weightsDigest, receipt.weightsDigest)) {
    mismatch(
      `it names weights ${hex(receipt.weightsDigest)} for ${receipt.model}, the attested ` +
        `weights are ${hex(model.weightsDigest)}`,
    );
  }
}

/** A receipt with the attestation it was given under. */
export interface ReceiptRecord {
  /** The provider's registry address. */
  readonly provider: Address;
  /** When the daemon verified the attestation. */
  readonly verifiedAt: Date;
  /** The approved measurement ids the daemon used. */
  readonly measurements: readonly MeasurementId[];
  /** The attestation bundle. */
  readonly attestation: AttestationBundle;
  /** The receipt. */
  readonly receipt: Receipt;
}

/** The JSON form of a {@linkcode ReceiptRecord}. */
export interface ReceiptRecordJson {
  /** `1`. */
  version: 1;
  /** `0x` address. */
  provider: string;
  /** RFC 3339. */
  verified_at: string;
  /** `0x` + 32 bytes each. */
  measurements: string[];
  /** The bundle. */
  attestation: AttestationBundleJson;
  /** The receipt. */
  receipt: ReceiptJson;
}

/** Converts a record to JSON. */
export function receiptRecordToJson(record: ReceiptRecord): ReceiptRecordJson {
  return {
    version: 1,
    provider: record.provider.toLowerCase(),
    verified_at: record.verifiedAt.toISOString(),
    measurements: [...record.measurements],
    attestation: attestationBundleToJson(record.attestation),
    receipt: receiptToJson(record.receipt),
  };
}

/**
 * Parses a record. Unknown fields are refused.
 *
 * @throws {ReceiptError} `malformed` (the record or its receipt), or an `AttestationError`
 * `malformed` (its bundle).
 */
export function receiptRecordFromJson(value: unknown): ReceiptRecord {
  const fail = (message: string): never => {
    throw new ReceiptError("malformed", `Cannot read receipt record: ${message}`);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return fail("it must be a JSON object");
  }
  const record = value as Record<string, unknown>;
  const fields = ["version", "provider", "verified_at", "measurements", "attestation", "receipt"];
  for (const key of Object.keys(record)) {
    if (!fields.includes(key)) fail(`it has an unknown field "${key}"`);
  }
  if (record.version !== 1) fail(`version must be 1`);
  if (typeof record.provider !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(record.provider)) {
    fail(`"provider" must be an address`);
  }
  const verifiedAt = new Date(String(record.verified_at));
  if (typeof record.verified_at !== "string" || Number.isNaN(verifiedAt.getTime())) {
    fail(`"verified_at" must be an RFC 3339 time`);
  }
  if (
    !Array.isArray(record.measurements) ||
    !record.measurements.every((id) => typeof id === "string" && fromHex(id)?.length === 32)
  ) {
    fail(`"measurements" must be a list of 32-byte ids`);
  }
  return {
    provider: (record.provider as string).toLowerCase() as Address,
    verifiedAt,
    measurements: (record.measurements as string[]).map((id) => id.toLowerCase() as MeasurementId),
    attestation: attestationBundleFromJson(record.attestation),
    receipt: receiptFromJson(record.receipt),
  };
}

/** Options of {@linkcode verifyReceiptRecord}. */
export interface VerifyReceiptRecordOptions {
  /**
   * The approved ids to judge the attestation by.
   *
   * @default {the record's own `measurements`: what the daemon approved then}
   */
  approved?: ApprovedMeasurements;
  /**
   * The roots.
   *
   * @default {PINNED_ROOTS}
   */
  roots?: TrustRoots;
  /**
   * The policy.
   *
   * @default {DEFAULT_COLLATERAL_POLICY}
   */
  policy?: Partial<CollateralPolicy>;
}

/** What an offline re-verification establishes. */
export interface ReceiptVerification {
  /** The attestation's verdict, as of `verifiedAt`. */
  readonly verdict: AttestationVerdict;
  /** The receipt's signer: the attested serving key. */
  readonly signer: Address;
}

/**
 * Re-verifies a receipt record offline: the bundle at the time it was verified, the receipt's
 * signature by the attested serving key, its evidence digests and its model's weights.
 *
 * @throws {AttestationError} when the attestation does not verify.
 * @throws {ReceiptError} `bad_signature` or `mismatch`.
 */
export async function verifyReceiptRecord(
  record: ReceiptRecord,
  options: VerifyReceiptRecordOptions = {},
): Promise<ReceiptVerification> {
  const { receipt, attestation } = record;
  if (attestation.format === "mock" || !equalBytes(attestation.nonce, receipt.nonce)) {
    mismatch("it names another attestation than the record's (the nonces differ)");
  }
  const nonce = receipt.nonce;
  const nonces = new NonceBook({ random: () => nonce.slice() });
  nonces.issue(record.verifiedAt);
  const verdict = await verifyAttestation(attestation, {
    nonce,
    nonces,
    now: record.verifiedAt,
    approved: options.approved ??
      ApprovedMeasurements.fromList(record.measurements, { source: "the record" }),
    roots: options.roots,
    policy: options.policy,
  });
  const signer = await receiptSigner(receipt);
  if (signer !== verdict.servingKey) {
    mismatch(`it is signed by ${signer}, the attested serving key is ${verdict.servingKey}`);
  }
  checkEvidence(receipt, verdict);
  return { verdict, signer };
}
