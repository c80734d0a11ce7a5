/**
 * The words of paying (`docs/daemon.md`, "Money") that the rooms share: what the network
 * backend asks of the daemon's payments before it seals an attempt ({@linkcode AttemptPayments},
 * implemented in `account/`), the ticket that records the attempt's cost, and which API key a
 * request is paid under ({@linkcode payerOf}, set by the API key check).
 *
 * @module
 */

import type { TokenPrices } from "../../chain/cost.ts";
import type { Tier } from "./backend.ts";

/** One attempt to be paid for. */
export interface PaymentAttempt {
  /** The provider (its Registry address, lower case). */
  readonly provider: `0x${string}`;
  /** `maker/model`. */
  readonly model: string;
  /** The tier. */
  readonly tier: Tier;
  /** A chat (completions) or embeddings (input only). */
  readonly kind: "chat" | "embeddings";
  /** The provider's ad prices for the model. */
  readonly prices: TokenPrices;
  /** The model's context length in the ad. */
  readonly contextLength: number;
  /** The inner request body's length in bytes. */
  readonly requestBytes: number;
  /** The request's completion bound (`max_completion_tokens`, `max_tokens`), if any. */
  readonly maxTokens: number | null;
  /** The API key's name ({@linkcode LOCAL_PAYER} when none was presented). */
  readonly key: string;
}

/** A paid attempt: its voucher, and how its cost is recorded. */
export interface PaymentTicket {
  /** The header to seal into the request (`net-voucher`). */
  readonly header: readonly [string, string];
  /** The bill id. */
  readonly id: string;
  /** The request's worst case (the most it is charged). */
  readonly worst: bigint;
  /** The provider's prices for the model. */
  readonly prices: TokenPrices;
  /** The cost of `usage`, at most the worst case, without recording it. */
  cost(usage: { promptTokens: number; completionTokens: number }): bigint;
  /** The reply ended with this usage: its cost is recorded (at most the worst case). */
  paid(usage: { promptTokens: number; completionTokens: number }): bigint;
  /** The provider answered with a refusal or was never reached: it costs nothing. */
  refused(): void;
  /** The reply ended without its usage: the provider's bill is looked up. */
  unknown(): void;
}

/** What the network backend asks before it seals an attempt. */
export interface AttemptPayments {
  /**
   * Resolves once payments can be authorized (the consumer key and the ledger are loaded); the
   * backend awaits it before each attempt.
   *
   * @throws {DaemonError} `chain_unreachable` when what is needed cannot be read now.
   */
  prepare?(): Promise<void>;
  /**
   * Pays for one attempt (synchronously: concurrent attempts see each other).
   *
   * @throws {DaemonError} `budget_exceeded` when a spend cap has less left than its worst case.
   */
  authorize(attempt: PaymentAttempt): PaymentTicket;
}

/** A provider's bill for one attempt, as its sealed `GET /v1/generation` answers it. */
export interface Bill {
  /** What it was charged, in the chain's smallest unit. */
  readonly cost: bigint;
  /** Prompt tokens. */
  readonly promptTokens: number;
  /** Completion tokens. */
  readonly completionTokens: number;
}

/** An attempt whose bill is looked up: who served it, and its bill id. */
export interface BillQuery {
  /** The bill id (32 hex digits). */
  readonly id: string;
  /** The provider. */
  readonly provider: string;
  /** `maker/model` (to find the provider's ad). */
  readonly model: string;
  /** The tier. */
  readonly tier: Tier;
}

/**
 * Looks up an attempt's bill at its provider: the bill, `"unknown"` when the provider keeps no
 * such id (it never served it), `"running"` while it is being served.
 *
 * @throws when the provider cannot be asked now (try again later).
 */
export type BillLookup = (
  query: BillQuery,
  signal: AbortSignal,
) => Promise<Bill | "unknown" | "running">;

/** The payer of a request made without an API key (a loopback client). */
export const LOCAL_PAYER = "local";

const payers = new WeakMap<Request, string>();

/** Records that `request` is paid under the API key named `name` (the key check does it). */
export function setPayer(request: Request, name: string): void {
  payers.set(request, name);
}

/** The API key name `request` is paid under, {@linkcode LOCAL_PAYER} when none. */
export function payerOf(request: Request): string {
  return payers.get(request) ?? LOCAL_PAYER;
}
