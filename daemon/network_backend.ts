/**
 * The daemon's network backend: the real {@linkcode ChatBackend}.
 *
 * Per request: resolve a gateway (`gateway_resolver.ts`), list the candidate providers for
 * the model and tier, rank them, and for each in turn until one answers: establish trust in
 * its key (`provider_trust.ts`: endorsement, or full TEE attestation), seal the request to
 * that key (`crypto/`), relay it through the gateway, and open the sealed reply up to its
 * first chunk (`sealed_reply.ts`). A failure before that first chunk moves on to the next
 * provider (or, when the gateway itself fails, to the next gateway); after it, failures reach
 * the client in-stream. Every accepted or refused provider is recorded in the verdict log.
 *
 * Nothing leaves the machine in the clear: the only request bodies sent are sealed ones.
 *
 * @module
 */

import { blendedPrice } from "../chain/ad.ts";
import { SealError, sealHttpRequest } from "../crypto/mod.ts";
import type {
  ChatBackend,
  ChatCompletionChunk,
  ChatReply,
  ChatRequest,
  NetworkModel,
} from "./backend.ts";
import { DaemonError } from "./daemon_error.ts";
import { publicMessage } from "./http_error.ts";
import { GatewayClient, GatewayError, type ProviderCandidate } from "./gateway_client.ts";
import type { GatewayResolver } from "./gateway_resolver.ts";
import { type ProviderTrustOptions, TrustedKeyCache, trustProvider } from "./provider_trust.ts";
import { ProviderReputation } from "./provider_reputation.ts";
import { openSealedReply } from "./sealed_reply.ts";
import type { VerdictLog } from "./verdict_log.ts";

/** Options of {@linkcode NetworkBackend}. */
export interface NetworkBackendOptions {
  /** Finds the gateway to use. */
  resolver: GatewayResolver;
  /** How providers are trusted (chain reads, approved measurements, nonces, roots, policy). */
  trust: Omit<ProviderTrustOptions, "clock">;
  /** Where verdicts are recorded. */
  verdicts: VerdictLog;
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** How long a model list is reused, in ms. @default {10000} */
  modelsTtlMs?: number;
  /** Most providers tried for one request. @default {3} */
  maxProviderAttempts?: number;
  /** Most gateways tried for one request. @default {3} */
  maxGatewayAttempts?: number;
  /** The daemon's record of providers' reliability. @default {a fresh ProviderReputation} */
  reputation?: ProviderReputation;
  /**
   * How long one attempt may wait for the reply's first chunk, in ms, before the next
   * provider is tried. It bounds a stalling gateway or provider; a real model's prompt
   * processing must fit in it.
   *
   * @default {60000}
   */
  attemptTimeoutMs?: number;
}

/** Codes that describe a provider that could not be trusted. */
const REFUSALS = new Set(["attestation_failed", "attestation_mock", "attestation_stale"]);

/** The network side of the daemon. */
export class NetworkBackend implements ChatBackend {
  readonly #options: NetworkBackendOptions;
  readonly #clock: () => Date;
  readonly #keys = new TrustedKeyCache();
  readonly #reputation: ProviderReputation;
  #models: { at: number; list: readonly NetworkModel[] } | undefined;

  /** Creates the backend. */
  constructor(options: NetworkBackendOptions) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
    this.#reputation = options.reputation ?? new ProviderReputation({ clock: this.#clock });
  }

  /** {@inheritDoc ChatBackend.listModels} */
  async listModels(signal: AbortSignal): Promise<readonly NetworkModel[]> {
    const now = this.#clock().getTime();
    if (this.#models && now - this.#models.at < (this.#options.modelsTtlMs ?? 10_000)) {
      return this.#models.list;
    }
    const list = await this.#withGateway(signal, (gateway) => gateway.models(signal));
    this.#models = { at: now, list };
    return list;
  }

  /** {@inheritDoc ChatBackend.chat} */
  async chat(request: ChatRequest, signal: AbortSignal): Promise<ChatReply> {
    return await this.#withGateway(signal, async (gateway) => {
      const candidates = rank(
        await gateway.providers(request.model, request.tier, signal),
        request.model,
        (provider) => this.#reputation.score(provider),
      );
      if (candidates.length === 0) {
        // Fresh, not the cached list: a model listed a moment ago must not read as unknown.
        this.#models = undefined;
        const offered = await this.listModels(signal).catch(() => [] as NetworkModel[]);
        const listed = offered.some((m) => m.model === request.model && m.tier === request.tier);
        throw new GatewayExhausted(
          listed
            ? new DaemonError(
              "no_provider",
              `No provider can serve ${request.model} in the ${request.tier} tier right now`,
            )
            : new DaemonError(
              "model_not_found",
              `The network offers no model ${request.model} in the ${request.tier} tier`,
              { param: "model" },
            ),
        );
      }
      const failures: DaemonError[] = [];
      for (const candidate of candidates.slice(0, this.#options.maxProviderAttempts ?? 3)) {
        try {
          const reply = await this.#attempt(gateway, candidate, request, signal);
          this.#reputation.record(candidate.provider, true);
          return reply;
        } catch (error) {
          this.#keys.forget(candidate.provider);
          if (error instanceof GatewayError && error.reason === "gateway") throw error;
          signal.throwIfAborted();
          const failure = asDaemonError(error, candidate);
          // The provider (or the path to it) failed this request; a bad request of the
          // client's own (a provider's 4xx) says nothing about the provider.
          if (retryable(failure)) this.#reputation.record(candidate.provider, false);
          if (!retryable(failure)) throw failure;
          failures.push(failure);
        }
      }
      throw new GatewayExhausted(best(failures));
    });
  }

  async #attempt(
    gateway: GatewayClient,
    candidate: ProviderCandidate,
    request: ChatRequest,
    signal: AbortSignal,
  ): Promise<ChatReply> {
    const record = (outcome: "accepted" | "refused", verdict: string, code?: DaemonError["code"]) =>
      this.#options.verdicts.append({
        at: this.#clock(),
        tier: request.tier,
        model: request.model,
        provider: candidate.provider,
        gateway: gateway.url,
        outcome,
        verdict,
        ...(code ? { code } : {}),
      });
    let trusted;
    try {
      trusted = await trustProvider(candidate, gateway, {
        ...this.#options.trust,
        clock: this.#clock,
        keyCache: this.#keys,
      }, signal);
    } catch (error) {
      if (error instanceof DaemonError && REFUSALS.has(error.code)) {
        // The log is served to clients: the fixed message per code, never which check failed.
        record("refused", publicMessage(error), error.code);
      }
      throw error;
    }
    // The provider passed every check: that is the verdict, whatever its reply does next.
    record("accepted", trusted.verdict);
    // Only now, with a key that passed every check, is the request sealed and sent.
    // The date inside the seal lets the provider refuse a relay's replay (RFC 9458 §6.5).
    const sealed = await sealHttpRequest(trusted.keyConfig, {
      body: request.body,
      headers: { date: this.#clock().toUTCString() },
    });
    // One attempt may wait so long for the reply's first chunk; a stalling gateway or provider
    // then costs one attempt, not the client's whole budget. The stream itself is not timed.
    const limit = this.#options.attemptTimeoutMs ?? 60_000;
    const head = new AbortController();
    const timer = setTimeout(
      () =>
        head.abort(
          new DaemonError(
            "timeout",
            `Provider ${candidate.provider} did not start answering within ${limit} ms`,
          ),
        ),
      limit,
    );
    let reply;
    try {
      const attemptSignal = AbortSignal.any([signal, head.signal]);
      // The sealed request is small (the body limit bounds it): sent whole with a
      // Content-Length, it goes out in one write. Streamed in pieces it met TCP small-write
      // stalls: 46 ms at p90 before the reply's head, against 4 ms sent whole (measured).
      const whole = new Uint8Array(await new Response(sealed.body).arrayBuffer());
      const stream = await gateway.relay(candidate.provider, whole, attemptSignal);
      reply = await Promise.race([
        openSealedReply(sealed, stream),
        new Promise<never>((_, reject) => {
          if (head.signal.aborted) reject(head.signal.reason);
          head.signal.addEventListener("abort", () => reject(head.signal.reason), { once: true });
        }),
      ]);
    } catch (error) {
      if (head.signal.aborted && !signal.aborted) throw head.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return {
      served: {
        provider: candidate.provider,
        tier: candidate.tier,
        verdict: trusted.verdict,
        gateway: gateway.url,
      },
      chunks: prepend(reply.first, reply.rest),
    };
  }

  /**
   * Runs `work` against the resolved gateway. A gateway that fails, or that gives this request
   * nothing usable (no candidate, every candidate failed), is reported and the next one is
   * tried: an untrusted gateway must not be able to deny service while others could serve.
   */
  async #withGateway<T>(
    signal: AbortSignal,
    work: (gateway: GatewayClient) => Promise<T>,
  ): Promise<T> {
    const { resolver } = this.#options;
    const attempts = this.#options.maxGatewayAttempts ?? 3;
    const tried = new Set<string>();
    const exhausted: DaemonError[] = [];
    let unreachable: GatewayError | undefined;
    for (let i = 0; i < attempts; i++) {
      const url = await resolver.resolve(signal);
      if (tried.has(url)) break; // no other gateway left to try
      tried.add(url);
      try {
        return await work(new GatewayClient(url, { fetch: this.#options.fetch }));
      } catch (error) {
        if (error instanceof GatewayExhausted) exhausted.push(error.failure);
        else if (error instanceof GatewayError && error.reason === "gateway") unreachable = error;
        else throw error;
        signal.throwIfAborted();
        resolver.reportFailure(url);
        if (resolver.pinned) break;
      }
    }
    if (exhausted.length > 0) throw best(exhausted);
    throw new DaemonError("no_gateway", `Cannot use any gateway: ${unreachable?.shortMessage}`, {
      cause: unreachable,
    });
  }
}

/**
 * Orders candidates (`docs/daemon.md`, "The network side"): those with free capacity first;
 * then those this daemon has found reliable (`score` ≥ ½: unknown providers count as
 * reliable) before those that keep failing it; then the lowest blended price of the model
 * (input + output, exact); then the better reputation; then the higher observed throughput;
 * then by address, so the order is total.
 */
export function rank(
  candidates: readonly ProviderCandidate[],
  model: string,
  score: (provider: string) => number = () => 0.5,
): ProviderCandidate[] {
  const price = (c: ProviderCandidate) =>
    blendedPrice(c.ad.models.find((x) => x.id === model)!.prices);
  return [...candidates].map((c) => ({ c, price: price(c), score: score(c.provider) }))
    .sort((a, b) => {
      if ((a.c.available > 0) !== (b.c.available > 0)) return a.c.available > 0 ? -1 : 1;
      if ((a.score >= 0.5) !== (b.score >= 0.5)) return a.score >= 0.5 ? -1 : 1;
      if (a.price !== b.price) return a.price < b.price ? -1 : 1;
      if (a.score !== b.score) return b.score - a.score;
      if (a.c.tokensPerSec !== b.c.tokensPerSec) return b.c.tokensPerSec - a.c.tokensPerSec;
      return a.c.provider < b.c.provider ? -1 : a.c.provider > b.c.provider ? 1 : 0;
    })
    .map(({ c }) => c);
}

/** A gateway that gave a request nothing usable, with the failure to report if none does better. */
class GatewayExhausted extends Error {
  constructor(readonly failure: DaemonError) {
    super(failure.shortMessage);
  }
}

/**
 * The failure that explains best why nothing was served: a refusal of trust first (it says
 * why nothing was sent), then anything but "no such model", then the first.
 */
function best(failures: readonly DaemonError[]): DaemonError {
  return failures.find((f) => REFUSALS.has(f.code)) ??
    failures.find((f) => f.code !== "model_not_found") ?? failures[0];
}

/** Whether the next provider should be tried after this failure. */
function retryable(error: DaemonError): boolean {
  if (error.code === "provider_error") {
    // The provider refused the request itself (bad request): another one would too.
    return !(error.status >= 400 && error.status < 500 &&
      ![404, 408, 409, 429].includes(error.status));
  }
  return error.code !== "no_provider" && error.code !== "model_not_found";
}

function asDaemonError(error: unknown, candidate: ProviderCandidate): DaemonError {
  if (error instanceof DaemonError) return error;
  if (error instanceof GatewayError) {
    return new DaemonError("provider_error", error.shortMessage, { cause: error });
  }
  if (error instanceof SealError) {
    return new DaemonError(
      "attestation_failed",
      `Cannot seal to the key of provider ${candidate.provider}: ${error.shortMessage}`,
      { cause: error },
    );
  }
  throw error;
}

async function* prepend(
  first: ChatCompletionChunk,
  rest: AsyncGenerator<ChatCompletionChunk>,
): AsyncGenerator<ChatCompletionChunk> {
  try {
    yield first;
    yield* rest;
  } finally {
    await rest.return(undefined);
  }
}
