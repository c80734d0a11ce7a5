/**
 * Paying for an attempt (private to `network/`): what the daemon's payments
 * ({@linkcode AttemptPayments}) are told of an attempt before it is sealed — the provider's
 * prices and context length for the model, from its ad, the exact body to be sealed and its
 * completion bound — and what a failed attempt cost: nothing when it was never sent or the
 * provider answered with a refusal, else unknown (its bill is looked up).
 *
 * @module
 */

import { maxTokensOf } from "../../chain/cost.ts";
import type {
  AttemptPayments,
  ChatRequest,
  EmbeddingsRequest,
  PaymentTicket,
} from "../core/mod.ts";
import { LOCAL_PAYER } from "../core/mod.ts";
import { ProviderBusyError, type ProviderCandidate } from "../gateway/mod.ts";
import { answeredByProvider } from "../sealing/mod.ts";
import type { Exchange } from "./exchanges.ts";

const encoder = new TextEncoder();

/** An attempt's sealed body and, when the daemon pays, its ticket and voucher header. */
export interface PaidAttempt {
  /** The body's JSON text, sealed as it is (its length bounds the prompt). */
  readonly text: string;
  /** The headers to seal besides `date` (the voucher). */
  readonly headers: readonly (readonly [string, string])[];
  /** The ticket, or `undefined` when the daemon does not pay. */
  readonly ticket: PaymentTicket | undefined;
}

/**
 * Pays for an attempt at `candidate` (when `payments` is given).
 *
 * @throws {DaemonError} `budget_exceeded` from the payments: nothing is sealed.
 */
export function payAttempt(
  payments: AttemptPayments | undefined,
  request: (ChatRequest | EmbeddingsRequest) & { readonly payer?: string },
  candidate: ProviderCandidate,
  exchange: Exchange<unknown>,
): PaidAttempt {
  const text = JSON.stringify(exchange.body);
  if (!payments) return { text, headers: [], ticket: undefined };
  const model = candidate.ad.models.find((m) => m.id === request.model);
  if (!model) {
    throw new Error(`Cannot pay provider ${candidate.provider}: its ad has no ${request.model}`);
  }
  const ticket = payments.authorize({
    provider: candidate.provider.toLowerCase() as `0x${string}`,
    model: request.model,
    tier: request.tier,
    kind: exchange.kind === "embedding" ? "embeddings" : "chat",
    prices: { input: BigInt(model.prices.input), output: BigInt(model.prices.output) },
    contextLength: model.context_length,
    requestBytes: encoder.encode(text).length,
    maxTokens: maxTokensOf(exchange.body),
    key: request.payer ?? LOCAL_PAYER,
  });
  return { text, headers: [ticket.header], ticket };
}

/**
 * Records what a failed attempt cost: nothing when it was not `sent`, when the provider was
 * busy (it answers that before opening anything), or when the provider answered with a refusal;
 * otherwise (a transport failure, a timeout) the provider may have served part of it, and its
 * bill is looked up.
 */
export function settleFailed(
  ticket: PaymentTicket | undefined,
  error: unknown,
  sent: boolean,
): void {
  if (!ticket) return;
  if (!sent || error instanceof ProviderBusyError || answeredByProvider(error)) ticket.refused();
  else ticket.unknown();
}
