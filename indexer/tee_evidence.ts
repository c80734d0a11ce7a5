/**
 * What the indexer can verify today of a TEE-tier provider's evidence: for each live-verified
 * provider of the `tee` tier, it asks the provider's endpoint (from its verified ad) for an
 * attestation bundle with a nonce it just issued (`GET {endpoint}/v1/attestation?nonce=…`,
 * `docs/protocol.md` §6) and verifies it as the daemon does (`crypto/tee`'s
 * `verifyAttestation`: the Intel TDX or AMD SEV-SNP quote to the pinned vendor roots, the
 * collateral, the measurement in the Registry's approved set, the binding to the nonce and the
 * serving key), then checks the attested serving key is the one the Registry lists.
 *
 * `verifyAttestation` also verifies the bundle's GPUs (their reports to the pinned NVIDIA root,
 * their measurements approved, bound to this nonce): a verified outcome lists them.
 *
 * The outcome, its time and its expiry are kept per provider (`/providers/{address}`'s `tee`,
 * and a `tee_evidence` event when it changes) and checked again after `recheckSecs` or when it
 * expires.
 *
 * The provider's endpoint is attacker-controlled: the request has a timeout, a size limit, no
 * redirects, and its failure is an outcome (`unreachable`), never an error of the refresh.
 *
 * @module
 */

import {
  ApprovedMeasurements,
  attestationBundleFromJson,
  AttestationError,
  NonceBook,
  type TrustRoots,
  verifyAttestation,
} from "../crypto/tee/mod.ts";
import { NetError } from "../errors.ts";
import type { Snapshot } from "./snapshot.ts";

/** What a check found. */
export type TeeEvidenceStatus =
  /** The bundle verified and attests the Registry's serving key. */
  | "verified"
  /** The provider answered with evidence that does not verify (`message` says which check). */
  | "refused"
  /** The provider says it has no evidence (404), or answered no bundle at all. */
  | "not_offered"
  /** The endpoint did not answer in time, or not over HTTP. */
  | "unreachable";

/** One provider's last check. */
export interface TeeEvidence {
  /** The provider (lower case). */
  provider: string;
  /** What the check found. */
  status: TeeEvidenceStatus;
  /** When it was checked. */
  checkedAt: Date;
  /** `tdx` or `sev-snp` when a bundle was read, else `null`. */
  format: "tdx" | "sev-snp" | null;
  /** The attested measurement id when verified, else `null`. */
  measurementId: string | null;
  /** The TCB status from collateral when verified (`unknown` without collateral), else `null`. */
  tcbStatus: string | null;
  /** When a verified outcome stops being valid, else `null`. */
  expiresAt: Date | null;
  /** The GPUs a verified outcome attests (their measurement ids and driver versions), else `null`. */
  gpus: readonly { measurementId: string; driverVersion: string }[] | null;
  /** Why it is not `verified`, in the checker's words, else `null`. */
  message: string | null;
}

/** Options of {@linkcode TeeEvidenceChecker}. */
export interface TeeEvidenceOptions {
  /**
   * The `fetch` of the requests to providers.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /**
   * Time allowed for one provider's answer, ms.
   *
   * @default {5_000}
   */
  timeoutMs?: number;
  /**
   * Seconds after which a provider is checked again.
   *
   * @default {600}
   */
  recheckSecs?: number;
  /**
   * The roots the quotes must chain to (tests pass their own).
   *
   * @default {the pinned Intel and AMD roots}
   */
  roots?: TrustRoots;
  /**
   * Receives every outcome that differs from the provider's previous one.
   *
   * @default {undefined}
   */
  onChange?: (evidence: TeeEvidence) => void;
  /**
   * The clock.
   *
   * @default {() => new Date()}
   */
  clock?: () => Date;
}

/** Largest attestation answer read, bytes. */
const MAX_BYTES = 1 << 20;
/** Providers checked at once. */
const CONCURRENCY = 4;

/** Checks the TEE-tier providers' evidence and keeps the outcomes. */
export class TeeEvidenceChecker {
  readonly #options: TeeEvidenceOptions;
  readonly #clock: () => Date;
  readonly #outcomes = new Map<string, TeeEvidence>();
  readonly #nonces = new NonceBook();
  #running: Promise<void> | undefined;

  /** Creates the checker; nothing is checked until {@linkcode TeeEvidenceChecker.check}. */
  constructor(options: TeeEvidenceOptions = {}) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
  }

  /** The last outcome for `address` (any case), or `undefined` before its first check. */
  get(address: string): TeeEvidence | undefined {
    return this.#outcomes.get(address.toLowerCase());
  }

  /**
   * Checks every live-verified TEE-tier provider of `snapshot` whose outcome is missing, older
   * than `recheckSecs` or expired. Single flight; never throws.
   */
  check(snapshot: Snapshot, signal?: AbortSignal): Promise<void> {
    this.#running ??= this.#checkAll(snapshot, signal).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Resolves when no check is running. */
  async idle(): Promise<void> {
    await this.#running;
  }

  async #checkAll(snapshot: Snapshot, signal?: AbortSignal): Promise<void> {
    const now = this.#clock();
    const recheckMs = (this.#options.recheckSecs ?? 600) * 1000;
    const due = snapshot.live.filter((live) => {
      if (live.state.tier !== "tee") return false;
      const last = this.#outcomes.get(live.state.address.toLowerCase());
      return !last || now.getTime() - last.checkedAt.getTime() >= recheckMs ||
        (last.expiresAt !== null && last.expiresAt <= now);
    });
    let approved: ApprovedMeasurements;
    try {
      approved = ApprovedMeasurements.fromList(snapshot.chain.approvedMeasurements, {
        source: "the Registry",
      });
    } catch {
      approved = ApprovedMeasurements.fromList([], { source: "the Registry" });
    }
    for (let i = 0; i < due.length && !signal?.aborted; i += CONCURRENCY) {
      await Promise.all(
        due.slice(i, i + CONCURRENCY).map(async (live) => {
          const outcome = await this.#checkOne(
            live.state.address.toLowerCase(),
            live.ad.endpoint,
            live.state.trustRoot.toLowerCase(),
            approved,
            signal,
          );
          const before = this.#outcomes.get(outcome.provider);
          this.#outcomes.set(outcome.provider, outcome);
          if (before?.status !== outcome.status || before?.message !== outcome.message) {
            this.#options.onChange?.(outcome);
          }
        }),
      );
    }
  }

  async #checkOne(
    provider: string,
    endpoint: string,
    servingKey: string,
    approved: ApprovedMeasurements,
    signal?: AbortSignal,
  ): Promise<TeeEvidence> {
    const checkedAt = this.#clock();
    const base: TeeEvidence = {
      provider,
      status: "unreachable",
      checkedAt,
      format: null,
      measurementId: null,
      tcbStatus: null,
      expiresAt: null,
      gpus: null,
      message: null,
    };
    const nonce = this.#nonces.issue(checkedAt);
    const hex = [...nonce].map((b) => b.toString(16).padStart(2, "0")).join("");
    const url = `${endpoint.replace(/\/+$/, "")}/v1/attestation?nonce=${hex}`;
    let json: unknown;
    try {
      const timeout = AbortSignal.timeout(this.#options.timeoutMs ?? 5_000);
      const response = await (this.#options.fetch ?? fetch)(url, {
        redirect: "manual",
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        headers: { accept: "application/json" },
      });
      const text = await readLimited(response);
      if (response.status === 404) {
        return { ...base, status: "not_offered", message: "the provider answered 404" };
      }
      if (response.status !== 200) {
        return { ...base, message: `the provider answered HTTP ${response.status}` };
      }
      json = JSON.parse(text);
    } catch (error) {
      const why = error instanceof SyntaxError
        ? "its answer is not JSON"
        : error instanceof Error
        ? error.message
        : String(error);
      return {
        ...base,
        status: error instanceof SyntaxError ? "not_offered" : "unreachable",
        message: why,
      };
    }
    try {
      const bundle = attestationBundleFromJson(json);
      const verdict = await verifyAttestation(bundle, {
        nonce,
        nonces: this.#nonces,
        approved,
        now: this.#clock(),
        ...(this.#options.roots ? { roots: this.#options.roots } : {}),
      });
      if (verdict.servingKey.toLowerCase() !== servingKey) {
        return {
          ...base,
          status: "refused",
          format: verdict.format,
          message:
            `the evidence attests serving key ${verdict.servingKey}, the Registry lists ${servingKey}`,
        };
      }
      return {
        ...base,
        status: "verified",
        format: verdict.format,
        measurementId: verdict.measurementId,
        tcbStatus: verdict.tcbStatus,
        expiresAt: verdict.expiresAt,
        gpus: verdict.gpus.map((gpu) => ({
          measurementId: gpu.measurementId,
          driverVersion: gpu.driverVersion,
        })),
      };
    } catch (error) {
      const format = typeof (json as { format?: unknown })?.format === "string"
        ? (json as { format: string }).format
        : null;
      const message = error instanceof AttestationError
        ? `${error.reason} (${error.check}): ${error.shortMessage}`
        : error instanceof NetError
        ? error.shortMessage
        : error instanceof Error
        ? error.message
        : String(error);
      return {
        ...base,
        status: "refused",
        format: format === "tdx" || format === "sev-snp" ? format : null,
        message,
      };
    }
  }
}

/** The body as text, at most {@linkcode MAX_BYTES}. */
async function readLimited(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_BYTES) {
      await reader.cancel();
      throw new Error(`its answer is larger than ${MAX_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(
    chunks.reduce((all, c) => {
      const out = new Uint8Array(all.length + c.length);
      out.set(all);
      out.set(c, all.length);
      return out;
    }, new Uint8Array()),
  );
}
