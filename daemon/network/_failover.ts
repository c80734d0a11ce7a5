/**
 * How the network backend judges the failures of one request (private): which failures move
 * the request on to the next provider, which ones say the provider could not be reached at all,
 * and what the client is told when every candidate failed.
 *
 * @module
 */

import { SealError } from "../../crypto/mod.ts";
import { type ChatRequest, DaemonError, TRUST_REFUSAL_CODES } from "../core/mod.ts";
import { GatewayError, type ProviderCandidate } from "../gateway/mod.ts";

/** `Retry-After` of `no_provider`: how soon asking again may help. */
export const NO_PROVIDER_RETRY_SECONDS = 5;

/** The gateway's codes that mean a provider cannot be reached (not that it misbehaved). */
const UNREACHABLE_CODES = new Set(["provider_unreachable", "provider_timeout", "unknown_provider"]);

/** One provider's failure of one request; `unreachable` when it could not be reached at all. */
export interface Failure {
  readonly error: DaemonError;
  readonly unreachable: boolean;
}

/**
 * What a request that every candidate failed is answered: a refusal of trust if there was one
 * (it says why nothing was sent); `no_provider` with `Retry-After` when no provider could even
 * be reached (nobody is serving right now); else the failure that explains best.
 */
export function final(
  request: Pick<ChatRequest, "tier" | "model">,
  failures: readonly Failure[],
): DaemonError {
  const refusal = failures.find((f) => TRUST_REFUSAL_CODES.has(f.error.code));
  if (refusal) return refusal.error;
  if (failures.length === 0 || failures.every((f) => f.unreachable)) {
    return new DaemonError(
      "no_provider",
      `No provider can serve ${request.model} in the ${request.tier} tier right now: ${
        failures.length === 1 ? "the one listed" : `all ${failures.length} listed`
      } could not be reached`,
      { retryAfterSeconds: NO_PROVIDER_RETRY_SECONDS, cause: failures[0]?.error },
    );
  }
  return best(failures.filter((f) => !f.unreachable).map((f) => f.error));
}

/**
 * The failure that explains best why nothing was served: a refusal of trust first (it says
 * why nothing was sent), then anything but "no such model", then the first.
 */
export function best(failures: readonly DaemonError[]): DaemonError {
  return failures.find((f) => TRUST_REFUSAL_CODES.has(f.code)) ??
    failures.find((f) => f.code !== "model_not_found") ?? failures[0];
}

/**
 * Refusals that come from the consumer's own side (a spend cap; a deposit that cannot pay, as a
 * provider found; its account that cannot be loaded): the request is answered with them at once,
 * no other provider is tried and the provider is not blamed.
 */
export const CONSUMER_REFUSALS: ReadonlySet<string> = new Set([
  "budget_exceeded",
  "insufficient_deposit",
  "chain_unreachable",
]);

/** Whether the next provider should be tried after this failure. */
export function retryable(error: DaemonError): boolean {
  if (error.code === "provider_error") {
    // The provider refused the request itself (bad request): another one would too.
    return !(error.status >= 400 && error.status < 500 &&
      ![404, 408, 409, 429].includes(error.status));
  }
  return error.code !== "no_provider" && error.code !== "model_not_found" &&
    !CONSUMER_REFUSALS.has(error.code);
}

export function classify(error: unknown, candidate: ProviderCandidate): Failure {
  if (error instanceof DaemonError) {
    // An attempt that got no first chunk in time: nobody answered.
    return { error, unreachable: error.code === "timeout" };
  }
  if (error instanceof GatewayError) {
    return {
      error: new DaemonError("provider_error", error.shortMessage, { cause: error }),
      unreachable: error.code !== undefined && UNREACHABLE_CODES.has(error.code),
    };
  }
  if (error instanceof SealError) {
    return {
      error: new DaemonError(
        "attestation_failed",
        `Cannot seal to the key of provider ${candidate.provider}: ${error.shortMessage}`,
        { cause: error },
      ),
      unreachable: false,
    };
  }
  throw error;
}

/**
 * The refusal when a gateway lists no candidate: `model_not_found` when the network does not
 * offer the model in that tier (`listed`) nor did lately (`recently`), `no_provider` (with
 * `Retry-After`) when it does but nobody can serve it now.
 */
export function noCandidate(
  request: Pick<ChatRequest, "tier" | "model">,
  listed: boolean,
  recently: boolean,
): DaemonError {
  if (!listed && !recently) {
    return new DaemonError(
      "model_not_found",
      `The network offers no model ${request.model} in the ${request.tier} tier`,
      { param: "model" },
    );
  }
  return new DaemonError(
    "no_provider",
    `No provider can serve ${request.model} in the ${request.tier} tier right now` +
      (listed ? "" : " (the network offered it within the last hour)"),
    { retryAfterSeconds: NO_PROVIDER_RETRY_SECONDS },
  );
}

/** A gateway that gave a request nothing usable, with the failure to report if none does better. */
export class GatewayExhausted extends Error {
  /** Carries `failure`. */
  constructor(readonly failure: DaemonError) {
    super(failure.shortMessage);
  }
}

/** Every acceptable candidate of a request was tried (thrown out of the queue's `take`). */
export class Exhausted extends Error {}
