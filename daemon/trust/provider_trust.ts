/**
 * Deciding whether to seal to a provider's key (seed §3, architecture §6–§7). Fail closed:
 * nothing is sealed unless every check below passes.
 *
 * - Both tiers, when the daemon reads the chain: the provider is registered, active and
 *   bonded (its stake in Staking at least the minimum bond), in the tier asked for, its ad's commitment is the on-chain `adCommitment`, and its ad's
 *   serving key is the on-chain `trustRoot`.
 * - Verified tier: the key configuration is endorsed by the ad's serving key, not expired,
 *   and not bound to a nonce.
 * - TEE tier: a fresh nonce is issued; the attestation bundle must verify completely
 *   (`verifyAttestation`: not mock, chain to the pinned roots, measurement approved,
 *   report_data binding of nonce, serving key, GPU evidence and models, every GPU verified
 *   and approved, endorsement by the attested key, nonce single-use and recent), the attested
 *   serving key must be the ad's, and the enclave must attest, for the model asked for, the
 *   weights digest the ad names. Only then is the endorsed key configuration used; the
 *   attestation is kept with the key so that the reply's receipt can be checked against it.
 *
 * Refusals are {@linkcode DaemonError}s with the client-facing codes of `clients.md`; the full
 * reason stays in `cause` for the log.
 *
 * @module
 */

import { type Address, bytesToHex, type Hex } from "viem";
import { adCommitment } from "../../chain/ad.ts";
import { abbreviate } from "../../errors.ts";
import {
  EndorsementError,
  endorsementFromJson,
  verifyEndorsement,
} from "../../crypto/endorsement.ts";
import {
  type ApprovedMeasurements,
  type AttestationBundle,
  attestationBundleFromJson,
  AttestationError,
  type AttestationVerdict,
  type CollateralPolicy,
  type MeasurementId,
  type NonceBook,
  QuoteParseError,
  type TrustRoots,
  verifyAttestation,
} from "../../crypto/tee/mod.ts";
import { DaemonError, type DaemonErrorCode, type Tier } from "../core/mod.ts";
import type { GatewayClient, ProviderCandidate } from "../gateway/mod.ts";

/** A provider's on-chain record, as the daemon needs it. */
export interface RegistryRecord {
  /** Address of the serving key. */
  trustRoot: Address;
  /** The tier. */
  tier: Tier;
  /** Whether the Registry lists it as active. */
  active: boolean;
  /** The committed ad hash. */
  adCommitment: Hex;
  /** Registry-active and staked at least the minimum bond (Staking). */
  bonded: boolean;
  /** The stake in Staking, smallest unit, when it was read. */
  stake?: bigint;
  /**
   * Set when the record is not a fresh read (the chain could not be read and an older read
   * within the grace period stands in): shown in the verdict, e.g. `read 4 min ago, chain
   * unreachable`.
   */
  note?: string;
}

/** Options of {@linkcode trustProvider}. */
export interface ProviderTrustOptions {
  /** The clock. */
  clock: () => Date;
  /** Reads a provider's Registry record (`null`: not registered), when an RPC is configured. */
  registry?: (provider: Address, signal?: AbortSignal) => Promise<RegistryRecord | null>;
  /**
   * The approved TEE measurements. Without it, TEE requests are refused: there is no way to
   * know which enclaves to trust.
   */
  measurements?: (signal?: AbortSignal) => Promise<ApprovedMeasurements>;
  /** Issues and consumes the nonces of TEE attestations. */
  nonces: NonceBook;
  /** Trust anchors for quotes. Tests only; production uses the pinned vendor roots. */
  roots?: TrustRoots;
  /** Collateral policy. @default {DEFAULT_COLLATERAL_POLICY} */
  policy?: Partial<CollateralPolicy>;
  /** Verified-tier keys already checked (the endorsement is not verified again until then). */
  keyCache?: TrustedKeyCache;
  /**
   * The model the request asks for (`maker/model`): in the TEE tier, the enclave must attest
   * the weights digest the ad names for it.
   */
  model?: string;
}

/**
 * Verified-tier keys that passed their endorsement check, reused until the endorsement
 * expires or `maxAgeMs` passes, whichever is first. Keyed by provider and ad commitment, so a
 * changed ad is checked again. TEE-tier keys are never cached: each request needs its own
 * fresh nonce.
 */
export class TrustedKeyCache {
  readonly #entries = new Map<string, { key: TrustedKey; until: number }>();
  readonly #maxAgeMs: number;

  /** Creates an empty cache. */
  constructor(options: { maxAgeMs?: number } = {}) {
    this.#maxAgeMs = options.maxAgeMs ?? 60_000;
  }

  /** The cached key, if still fresh at `now`. */
  get(provider: Address, commitment: Hex, now: Date): TrustedKey | undefined {
    const entry = this.#entries.get(`${provider}|${commitment}`);
    if (!entry) return undefined;
    if (now.getTime() >= entry.until) {
      this.#entries.delete(`${provider}|${commitment}`);
      return undefined;
    }
    return entry.key;
  }

  /** Remembers a key until `expiresAt` (capped at `maxAgeMs` from `now`). */
  set(provider: Address, commitment: Hex, key: TrustedKey, expiresAt: Date, now: Date): void {
    if (this.#entries.size >= 4096) this.#entries.delete(this.#entries.keys().next().value!);
    const until = Math.min(expiresAt.getTime(), now.getTime() + this.#maxAgeMs);
    this.#entries.set(`${provider}|${commitment}`, { key, until });
  }

  /** Forgets every key of `provider` (after a failure with it). */
  forget(provider: Address): void {
    for (const id of [...this.#entries.keys()]) {
      if (id.startsWith(`${provider}|`)) this.#entries.delete(id);
    }
  }
}

/** The key to seal to, and why it is trusted. */
export interface TrustedKey {
  /** The endorsed RFC 9458 key configuration. */
  keyConfig: Uint8Array;
  /** A short line for the response headers and the verdict log. */
  verdict: string;
  /** TEE tier: the attestation the key was verified under (the reply's receipt names it). */
  attestation?: TeeAttestation;
}

/** A verified TEE attestation, kept for the reply's receipt. */
export interface TeeAttestation {
  /** The nonce it answers; the sealed request names it (`net-attestation-nonce`). */
  readonly nonce: Uint8Array;
  /** The bundle, as verified. */
  readonly bundle: AttestationBundle;
  /** Its verdict. */
  readonly verdict: AttestationVerdict;
  /** When it was verified. */
  readonly verifiedAt: Date;
  /** The approved ids it was judged by. */
  readonly measurements: readonly MeasurementId[];
}

/**
 * Checks a candidate and returns the key to seal to.
 *
 * @throws {DaemonError} a refusal of trust (`attestation_failed`, `attestation_mock`,
 * `attestation_stale`, `measurement_not_approved`, `key_not_vouched`, `tier_mismatch`) or
 * `no_provider` (TEE tier without an approved set).
 * @throws {GatewayError} when the gateway cannot be used (the caller fails over).
 */
export async function trustProvider(
  candidate: ProviderCandidate,
  gateway: GatewayClient,
  options: ProviderTrustOptions,
  signal?: AbortSignal,
): Promise<TrustedKey> {
  const { provider, ad } = candidate;
  const servingKey = ad.serving_key.toLowerCase() as Address;
  let onChain = "";
  if (options.registry) {
    const record = await options.registry(provider, signal);
    const problem = registryMismatch(record, candidate);
    if (problem) {
      // The one mismatch a client can act on is the tier; the rest mean the chain does not
      // vouch for this provider's key (not registered, inactive, unbonded, other key or ad).
      const code = record?.active && record.bonded && record.tier !== candidate.tier
        ? "tier_mismatch"
        : "key_not_vouched";
      throw refuse(code, `Cannot trust provider ${provider}: ${problem}`);
    }
    onChain = `, on-chain trust root${record?.note ? ` (${record.note})` : ""}`;
  }

  if (candidate.tier === "verified") {
    const commitment = candidate.commitment ?? adCommitment(ad);
    // Without the chain, the serving key is the one in the ad the gateway listed: say so. A
    // cached key says where its trust comes from now (the chain may be unreachable since).
    const verdict = `endorsed-key by ${abbreviate(servingKey, 12)}${
      onChain || ", gateway-listed key"
    }`;
    const cached = options.keyCache?.get(provider, commitment, options.clock());
    if (cached) return cached.verdict === verdict ? cached : { ...cached, verdict };
    let keyConfig: Uint8Array;
    let expiresAt: Date;
    try {
      const endorsement = endorsementFromJson(await gateway.key(provider, signal));
      await verifyEndorsement(endorsement, {
        now: options.clock(),
        nonce: null,
        signer: servingKey,
      });
      keyConfig = endorsement.keyConfig;
      expiresAt = new Date(endorsement.expiresAt * 1000);
    } catch (error) {
      if (!(error instanceof EndorsementError)) throw error;
      throw refuse(
        ENDORSEMENT_CODES[error.reason] ?? "attestation_failed",
        `Cannot trust the key of provider ${provider}: ${error.shortMessage}`,
        error,
      );
    }
    const trusted = { keyConfig, verdict };
    options.keyCache?.set(provider, commitment, trusted, expiresAt, options.clock());
    return trusted;
  }

  if (!options.measurements) {
    throw new DaemonError(
      "no_provider",
      "Cannot use the TEE tier: no approved measurement set is configured",
      {
        hints: [
          "Give the daemon NET_EVM_RPC_URL and NET_EVM_REGISTRY (the Registry's approved set), " +
          "or a measurements file with --measurements.",
        ],
      },
    );
  }
  const approved = await options.measurements(signal);
  const nonce = options.nonces.issue(options.clock());
  const raw = await gateway.attestation(provider, nonce, signal);
  try {
    const bundle = attestationBundleFromJson(raw);
    const verifiedAt = options.clock();
    const verdict = await verifyAttestation(bundle, {
      nonce,
      nonces: options.nonces,
      approved,
      now: verifiedAt,
      roots: options.roots,
      policy: options.policy,
    });
    if (verdict.servingKey.toLowerCase() !== servingKey) {
      throw refuse(
        "attestation_failed",
        `Cannot trust provider ${provider}: the attested serving key ${verdict.servingKey} is not the ad's ${servingKey}`,
      );
    }
    const weights = attestedWeights(candidate, verdict, options.model);
    const gpus = verdict.gpus.length === 0
      ? "no GPU"
      : `${verdict.gpus.length} GPU (driver ${verdict.gpus[0].driverVersion}) approved`;
    return {
      keyConfig: verdict.keyConfig,
      verdict:
        `tee:${verdict.format} measurement ${abbreviate(verdict.measurementId, 12)} approved, ` +
        `${gpus}, weights ${abbreviate(weights, 12)} attested, tcb ${verdict.tcbStatus}${onChain}`,
      attestation: { nonce, bundle, verdict, verifiedAt, measurements: approved.list() },
    };
  } catch (error) {
    if (error instanceof DaemonError) throw error;
    if (error instanceof AttestationError) {
      throw refuse(
        attestationCode(error),
        `Cannot trust provider ${provider}: ${error.shortMessage}`,
        error,
      );
    }
    if (error instanceof QuoteParseError || error instanceof EndorsementError) {
      throw refuse(
        "attestation_failed",
        `Cannot trust provider ${provider}: ${error.shortMessage}`,
        error,
      );
    }
    throw error;
  }
}

/** The client code of a refused attestation: one per reason a user can act on. */
export function attestationCode(error: AttestationError): DaemonErrorCode {
  if (error.reason === "mock") return "attestation_mock";
  if (error.reason === "stale") return "attestation_stale";
  switch (error.check) {
    case "measurement":
      return "measurement_not_approved";
    case "gpu_measurement":
      return "gpu_measurement_not_approved";
    case "gpu_required":
      return "gpu_not_attested";
    case "report_data":
      return "attestation_binding_failed";
    case "endorsement_signer":
      return "key_not_vouched";
    case "endorsement":
      return error.reason === "binding" ? "key_not_vouched" : "attestation_failed";
  }
  return error.check.startsWith("gpu_") ? "gpu_attestation_failed" : "attestation_failed";
}

/**
 * The weights digest the enclave attests for the model asked for, which must be the one the
 * ad names (lower-case hex).
 *
 * @throws {DaemonError} `model_not_attested`.
 */
function attestedWeights(
  candidate: ProviderCandidate,
  verdict: AttestationVerdict,
  model: string | undefined,
): string {
  const provider = candidate.provider;
  const refusal = (message: string) =>
    refuse("model_not_attested", `Cannot trust provider ${provider}: ${message}`);
  if (model === undefined) throw refusal("no model was named to check its attested weights");
  const advertised = candidate.ad.models.find((m) => m.id === model)?.weights_digest;
  if (!advertised) throw refusal(`its ad names no weights digest for ${model}`);
  const attested = verdict.models.find((m) => m.id === model);
  if (!attested) throw refusal(`its enclave attests no weights for ${model}`);
  const digest = bytesToHex(attested.weightsDigest);
  if (digest !== advertised.toLowerCase()) {
    throw refusal(
      `its enclave attests weights ${abbreviate(digest, 12)} for ${model}, its ad names ` +
        abbreviate(advertised.toLowerCase(), 12),
    );
  }
  return digest;
}

/** The refusal code of each endorsement failure that has its own (the rest: `attestation_failed`). */
const ENDORSEMENT_CODES: Partial<Record<EndorsementError["reason"], DaemonErrorCode>> = {
  expired: "attestation_stale",
  wrong_signer: "key_not_vouched",
  bad_signature: "key_not_vouched",
};

function refuse(code: DaemonErrorCode, message: string, cause?: unknown): DaemonError {
  return new DaemonError(code, message, { cause });
}

/** What is wrong with a candidate given its Registry record, or `undefined` when it agrees. */
export function registryMismatch(
  record: RegistryRecord | null,
  candidate: ProviderCandidate,
): string | undefined {
  if (!record) return "it is not registered on chain";
  if (!record.active) return "the Registry lists it as inactive";
  if (!record.bonded) return "its stake is below the minimum provider bond";
  if (record.tier !== candidate.tier) {
    return `the Registry lists it in the ${record.tier} tier, not ${candidate.tier}`;
  }
  if (record.trustRoot.toLowerCase() !== candidate.ad.serving_key.toLowerCase()) {
    return `its ad names serving key ${candidate.ad.serving_key}, the on-chain trust root is ${record.trustRoot}`;
  }
  const commitment = candidate.commitment ?? adCommitment(candidate.ad);
  if (commitment.toLowerCase() !== record.adCommitment.toLowerCase()) {
    return `its ad hashes to ${abbreviate(commitment, 12)}, the on-chain commitment is ${
      abbreviate(record.adCommitment, 12)
    }`;
  }
  return undefined;
}
