/**
 * A small, bounded, in-memory log of verification verdicts: every time the network backend
 * accepts or refuses a provider (key endorsement, attestation), it appends one record; the
 * daemon serves the latest ones, newest first, at `GET /v1/verdicts` so a user can see what was
 * checked. Memory is bounded: at most `capacity` records, each string field cut to a fixed
 * length.
 *
 * @example
 * ```ts
 * import { VerdictLog } from "./verdict_log.ts";
 *
 * const log = new VerdictLog({ capacity: 2 });
 * for (const provider of ["0xa", "0xb", "0xc"]) {
 *   log.append({
 *     at: new Date(),
 *     tier: "verified",
 *     model: "devnet/tiny-chat",
 *     provider,
 *     gateway: "http://127.0.0.1:9201",
 *     outcome: "accepted",
 *     verdict: "endorsed-key",
 *   });
 * }
 * console.assert(log.latest().map((r) => r.provider).join() === "0xc,0xb");
 * ```
 *
 * @module
 */

import type { DaemonErrorCode, Tier } from "../core/mod.ts";

/** One verification verdict. */
export interface VerdictRecord {
  /** When the verdict was reached. */
  readonly at: Date;
  /** The tier of the request. */
  readonly tier: Tier;
  /** The network model id, `maker/model`. */
  readonly model: string;
  /** The provider's address. */
  readonly provider: string;
  /** The gateway that relayed the check. */
  readonly gateway: string;
  /** Whether the provider was accepted (the request was then sealed to it) or refused. */
  readonly outcome: "accepted" | "refused";
  /** A short line: what was verified, e.g. `tee:tdx measurement 0x91eb… approved`. */
  readonly verdict: string;
  /** For a refusal: the client-facing code (no finer detail). */
  readonly code?: DaemonErrorCode;
}

/** The JSON form of a record, as served by `GET /v1/verdicts`. */
export interface VerdictRecordJson {
  /** RFC 3339 UTC time. */
  at: string;
  /** The tier. */
  tier: Tier;
  /** `maker/model`. */
  model: string;
  /** The provider's address. */
  provider: string;
  /** The gateway URL. */
  gateway: string;
  /** `accepted` or `refused`. */
  outcome: "accepted" | "refused";
  /** The verdict line. */
  verdict: string;
  /** The refusal code, or `null`. */
  code: DaemonErrorCode | null;
}

/** Options of {@linkcode VerdictLog}. */
export interface VerdictLogOptions {
  /** Largest number of records kept; older ones are dropped. @default {200} */
  capacity?: number;
}

/** Longest kept string field; longer values are cut and end with `…`. */
const MAX_FIELD = 200;

/** A bounded log of verdicts, newest first on read. */
export class VerdictLog {
  readonly #records: (VerdictRecord | undefined)[];
  #next = 0;
  #size = 0;

  /**
   * Creates an empty log.
   *
   * @throws {RangeError} when `capacity` is not an integer in 1–100000.
   */
  constructor(options: VerdictLogOptions = {}) {
    const capacity = options.capacity ?? 200;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 100_000) {
      throw new RangeError(
        `Cannot create verdict log: capacity must be an integer in 1–100000, found ${capacity}`,
      );
    }
    this.#records = new Array(capacity);
  }

  /** How many records the log keeps at most. */
  get capacity(): number {
    return this.#records.length;
  }

  /** How many records the log holds. */
  get size(): number {
    return this.#size;
  }

  /**
   * Appends a record (copied, strings cut to 200 characters), dropping the oldest when full.
   *
   * @throws {TypeError} when `at` is not a valid date.
   */
  append(record: VerdictRecord): void {
    if (!(record.at instanceof Date) || Number.isNaN(record.at.getTime())) {
      throw new TypeError(`Cannot append verdict: "at" must be a valid Date, found ${record.at}`);
    }
    const copy: VerdictRecord = {
      at: new Date(record.at.getTime()),
      tier: record.tier,
      model: cut(record.model),
      provider: cut(record.provider),
      gateway: cut(record.gateway),
      outcome: record.outcome,
      verdict: cut(record.verdict),
      ...(record.code === undefined ? {} : { code: record.code }),
    };
    this.#records[this.#next] = copy;
    this.#next = (this.#next + 1) % this.#records.length;
    this.#size = Math.min(this.#size + 1, this.#records.length);
  }

  /** The latest `limit` records (all by default), newest first. */
  latest(limit: number = this.#records.length): VerdictRecord[] {
    const count = Math.max(0, Math.min(Math.floor(limit), this.#size));
    const out: VerdictRecord[] = [];
    for (let i = 1; i <= count; i++) {
      const at = (this.#next - i + this.#records.length) % this.#records.length;
      out.push(this.#records[at]!);
    }
    return out;
  }
}

/** Converts a record to its JSON form. */
export function verdictToJson(record: VerdictRecord): VerdictRecordJson {
  return {
    at: record.at.toISOString(),
    tier: record.tier,
    model: record.model,
    provider: record.provider,
    gateway: record.gateway,
    outcome: record.outcome,
    verdict: record.verdict,
    code: record.code ?? null,
  };
}

function cut(value: string): string {
  const text = String(value);
  return text.length <= MAX_FIELD ? text : `${text.slice(0, MAX_FIELD - 1)}…`;
}
