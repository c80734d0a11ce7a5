/**
 * The daemon's network backend: the real {@linkcode ChatBackend}.
 *
 * Per request: resolve a gateway (`gateway/gateway_resolver.ts`), take the candidate providers for the
 * model and tier (`candidate_cache.ts`: cached briefly, refreshed in the background), and let
 * the scheduler (`scheduler.ts`) choose one with a free slot — or wait in the bounded queue
 * (`queue.ts`) while every acceptable one is at capacity. For the chosen provider: establish
 * trust in its key (`trust/provider_trust.ts`: endorsement, cached until it expires, or full TEE
 * attestation), seal the request to that key (`sealing/`), relay it through the gateway, and
 * open the sealed reply (`exchanges.ts`: a chat's up to its first chunk, embeddings whole). A
 * provider that says it is at capacity is busy, not broken: the request moves on or waits, at no
 * cost to the provider. Any other failure before that first chunk moves on to the next acceptable provider, until every
 * one was tried (or, when the gateway itself fails, to the next gateway); after it, failures
 * reach the client in-stream. The slot is held until the reply has come in whole (it is read
 * ahead of the client, {@linkcode RELAY_READ_AHEAD_BYTES}) or the client goes away.
 * Every accepted or refused provider is recorded in the verdict log.
 *
 * Nothing leaves the machine in the clear: the only request bodies sent are sealed ones.
 *
 * @module
 */

import {
  type AttemptPayments,
  type Bill,
  type BillQuery,
  type ChatBackend,
  type ChatReply,
  type ChatRequest,
  DaemonError,
  type EmbeddingsReply,
  type EmbeddingsRequest,
  linkedController,
  type NetworkModel,
  publicMessage,
  type ServedBy,
  TRUST_REFUSAL_CODES,
  type Usage,
} from "../core/mod.ts";
import {
  chatExchange,
  checkModelKind,
  embeddingsExchange,
  type Exchange,
  type Sealable,
} from "./exchanges.ts";
import { CandidateCache } from "./candidate_cache.ts";
import {
  GatewayClient,
  GatewayError,
  type GatewayResolver,
  ProviderBusyError,
  type ProviderCandidate,
} from "../gateway/mod.ts";
import {
  type ProviderTrustOptions,
  receiptCheck,
  ReceiptLog,
  TrustedKeyCache,
  trustProvider,
  type VerdictLog,
} from "../trust/mod.ts";
import { ATTESTATION_NONCE_HEADER } from "../../crypto/mod.ts";
import { ProviderReputation } from "./provider_reputation.ts";
import { DEFAULT_MAX_QUEUE, DEFAULT_QUEUE_TIMEOUT_MS, RequestQueue } from "./queue.ts";
import { type Lease, ProviderScheduler } from "./scheduler.ts";
import { sealRequest } from "../sealing/mod.ts";
import { SetupPool } from "../../crypto/mod.ts";
import type { BackendMetrics } from "./backend_metrics.ts";
import { payAttempt, settleFailed } from "./_payment.ts";
import { lookupBill } from "./bill_lookup.ts";
import { preferred, type StakeOf } from "./preferences.ts";
import {
  best,
  classify,
  CONSUMER_REFUSALS,
  Exhausted,
  type Failure,
  final,
  GatewayExhausted,
  noCandidate,
  retryable,
} from "./_failover.ts";

export { rank } from "./scheduler.ts";

/** Options of {@linkcode NetworkBackend}. */
export interface NetworkBackendOptions {
  /** Finds the gateway to use. */
  resolver: GatewayResolver;
  /** How providers are trusted (chain reads, approved measurements, nonces, roots, policy). */
  trust: Omit<ProviderTrustOptions, "clock">;
  /** Where verdicts are recorded. */
  verdicts: VerdictLog;
  /** Where the receipts of TEE replies are kept. @default {a fresh ReceiptLog} */
  receipts?: ReceiptLog;
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** How long a model list is reused, in ms. @default {10000} */
  modelsTtlMs?: number;
  /**
   * Most providers that may fail one request (busy answers do not count).
   *
   * @default {Infinity: every acceptable candidate is tried}
   */
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
  /** Most requests waiting for a slot (`--max-queue`). @default {512} */
  maxQueue?: number;
  /**
   * How long a request may wait for a slot, from its arrival, in ms (`--queue-timeout-secs`).
   *
   * @default {120000}
   */
  queueTimeoutMs?: number;
  /** The scheduler (in-flight counts and the choice). @default {a fresh ProviderScheduler} */
  scheduler?: ProviderScheduler;
  /** Where a cancelled or failed attempt is noted (one line). @default {() => {}} */
  log?: (line: string) => void;
  /**
   * Records attempts, trust checks, first chunks and relayed tokens (`backend_metrics.ts`; `service/metrics.ts` renders them).
   *
   * @default {undefined}
   */
  metrics?: BackendMetrics;
  /**
   * Pays for each attempt before it is sealed (`account/`): the spend caps, the voucher sealed
   * with the request, its cost. @default {undefined: requests carry no voucher}
   */
  payments?: AttemptPayments;
}

/**
 * How far a reply is read ahead of the client: 256 KiB, a reply of about a thousand streamed
 * tokens sealed (so the provider's slot is free when it is done, whoever reads slowly), and a
 * bound on what a slow client makes the daemon hold.
 */
export const RELAY_READ_AHEAD_BYTES = 256 * 1024;

/** How long a model the network offered counts as offered when no provider lists it. */
const KNOWN_MODEL_MS = 3_600_000;

/** What the daemon sees of its own load, for tests and benchmarks. */
export interface BackendLoad {
  /** Requests holding a provider slot (being answered). */
  readonly inFlight: number;
  /** Requests waiting in the queue for a slot. */
  readonly queued: number;
}

/** The network side of the daemon. */
export class NetworkBackend implements ChatBackend {
  readonly #options: NetworkBackendOptions;
  readonly #clock: () => Date;
  // Verified-tier keys are kept until their endorsement expires; the chain (when configured)
  // is still asked on every request, through its own short cache (`trust/trust_sources.ts`).
  readonly #keys = new TrustedKeyCache({ maxAgeMs: Number.POSITIVE_INFINITY });
  readonly #reputation: ProviderReputation;
  readonly #scheduler: ProviderScheduler;
  readonly #queue: RequestQueue;
  readonly #candidates: CandidateCache;
  /** HPKE setups prepared ahead for the verified-tier keys sealed to again. */
  readonly #setups = new SetupPool();
  readonly #receipts: ReceiptLog;
  /** `tier|model` → when the network last offered it (clock ms). */
  readonly #known = new Map<string, number>();
  #models: { at: number; list: readonly NetworkModel[] } | undefined;

  /** Creates the backend. */
  constructor(options: NetworkBackendOptions) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
    this.#reputation = options.reputation ?? new ProviderReputation({ clock: this.#clock });
    this.#receipts = options.receipts ?? new ReceiptLog();
    this.#scheduler = options.scheduler ?? new ProviderScheduler();
    const scheduler = this.#scheduler;
    this.#queue = new RequestQueue({
      maxQueue: options.maxQueue ?? DEFAULT_MAX_QUEUE,
      nextWake: () => scheduler.nextExpiry(),
    });
    this.#candidates = new CandidateCache({ onRefresh: () => this.#queue.wake() });
    scheduler.onFree(() => this.#queue.wake());
  }

  /** Requests in flight and waiting now. */
  get load(): BackendLoad {
    return { inFlight: this.#scheduler.totalInFlight, queued: this.#queue.size };
  }

  /** {@inheritDoc ChatBackend.listModels} */
  async listModels(signal: AbortSignal): Promise<readonly NetworkModel[]> {
    const now = this.#clock().getTime();
    if (this.#models && now - this.#models.at < (this.#options.modelsTtlMs ?? 10_000)) {
      return this.#models.list;
    }
    const list = await this.#withGateway(signal, (gateway) => gateway.models(signal));
    this.#models = { at: now, list };
    for (const m of list) this.#remember(m.tier, m.model);
    return list;
  }

  /** {@inheritDoc ChatBackend.chat} */
  async chat(request: ChatRequest, signal: AbortSignal): Promise<ChatReply> {
    const started = performance.now();
    const deadline = started + (this.#options.queueTimeoutMs ?? DEFAULT_QUEUE_TIMEOUT_MS);
    const metrics = this.#options.metrics;
    const onUsage = metrics && ((usage: Usage) => metrics.relayed(request.tier, usage));
    const exchange = chatExchange(request, signal, onUsage);
    const reply = await this.#withGateway(
      signal,
      (gateway) => this.#serve(gateway, request, { signal, deadline, exchange }),
    );
    metrics?.firstChunk(request.tier, (performance.now() - started) / 1000);
    return reply;
  }

  /**
   * {@inheritDoc ChatBackend.embed}
   *
   * The provider's answer is read whole and checked (`exchanges.ts`).
   */
  async embed(request: EmbeddingsRequest, signal: AbortSignal): Promise<EmbeddingsReply> {
    const deadline = performance.now() + (this.#options.queueTimeoutMs ?? DEFAULT_QUEUE_TIMEOUT_MS);
    const exchange = embeddingsExchange(request);
    const reply = await this.#withGateway(
      signal,
      (gateway) => this.#serve(gateway, request, { signal, deadline, exchange }),
    );
    this.#options.metrics?.relayed(request.tier, { prompt_tokens: reply.promptTokens });
    return reply;
  }

  /** Serves `request` through `gateway`: choose, wait, attempt, until served or exhausted. */
  async #serve<R>(
    gateway: GatewayClient,
    request: Sealable,
    call: { signal: AbortSignal; deadline: number; exchange: Exchange<R> },
  ): Promise<R> {
    const { signal } = call;
    const { model, tier } = request;
    let candidates = await this.#candidates.get(gateway, { model, tier }, signal);
    if (candidates.length === 0) {
      candidates = await this.#candidates.get(gateway, { model, tier, fresh: true }, signal);
    }
    if (candidates.length === 0) {
      throw new GatewayExhausted(await this.#noCandidate(request, signal));
    }
    checkModelKind(call.exchange.kind, model, candidates);
    this.#remember(tier, model);
    // The client's routing preferences: who may serve it (a refusal names the one that
    // excluded the last candidate), then the order the scheduler follows.
    const preferences = "preferences" in request ? request.preferences : undefined;
    const allowed = preferences
      ? new Set(
        (await preferred(candidates, request as ChatRequest, this.#stakeOf())).map((c) =>
          c.provider
        ),
      )
      : undefined;
    const failures: Failure[] = [];
    const excluded = new Set<string>();
    const limit = this.#options.maxProviderAttempts ?? Infinity;
    const score = (provider: string) => this.#reputation.score(provider);
    const take = (): Lease | undefined => {
      const listed = this.#candidates.peek(gateway.url, model, tier) ?? candidates;
      const list = allowed ? listed.filter((c) => allowed.has(c.provider)) : listed;
      if (failures.length >= limit || list.every((c) => excluded.has(c.provider))) {
        throw new Exhausted();
      }
      const pick = this.#scheduler.pick(list, {
        model,
        exclude: excluded,
        score,
        sort: preferences?.sort,
        order: preferences?.order,
        latency: (provider) => this.#reputation.latency(provider),
      });
      return pick && this.#scheduler.acquire(pick);
    };
    let waited = false;
    while (true) {
      let lease: Lease;
      try {
        lease = await this.#queue.wait(`${tier}\u0000${model}`, take, {
          signal,
          deadline: call.deadline,
          label: `${model} in the ${tier} tier`,
          front: waited,
        });
      } catch (error) {
        if (error instanceof Exhausted) throw new GatewayExhausted(final(request, failures));
        throw error;
      }
      waited = true;
      const { candidate } = lease;
      const metrics = this.#options.metrics;
      try {
        const attempted = performance.now();
        const reply = await this.#attempt(gateway, { candidate, lease, request }, call);
        this.#reputation.record(candidate.provider, true);
        this.#reputation.recordLatency(candidate.provider, performance.now() - attempted);
        metrics?.attempted(tier, "ok");
        return reply.finish({
          provider: candidate.provider,
          tier: candidate.tier,
          verdict: reply.verdict,
          gateway: gateway.url,
          ...(reply.receipt ? { receipt: reply.receipt } : {}),
        });
      } catch (error) {
        if (error instanceof ProviderBusyError) {
          // Busy, not broken: no penalty, the key stays cached; wait for a slot somewhere.
          metrics?.attempted(tier, "busy");
          lease.release({ busyForMs: error.retryAfterMs });
          continue;
        }
        lease.release();
        // The consumer's own limits (a spend cap, its deposit): every provider would refuse.
        if (error instanceof DaemonError && CONSUMER_REFUSALS.has(error.code)) throw error;
        this.#keys.forget(candidate.provider);
        const failure = this.#failure(error, candidate, request, signal);
        // A bad request of the client's own (a provider's 4xx) says nothing about the
        // provider, and another provider would refuse it too.
        if (!retryable(failure.error)) throw failure.error;
        this.#reputation.record(candidate.provider, false);
        this.#options.log?.(
          `daemon: provider ${candidate.provider} failed a request (${failure.error.code}); ` +
            "trying the next one",
        );
        excluded.add(candidate.provider);
        failures.push(failure);
      }
    }
  }

  /** Reads a provider's stake on chain (cached), when the daemon reads a chain. */
  #stakeOf(): StakeOf | undefined {
    const registry = this.#options.trust.registry;
    if (!registry) return undefined;
    return async (provider) => {
      try {
        return (await registry(provider))?.stake;
      } catch {
        return undefined; // unreadable: it cannot show the stake asked for
      }
    };
  }

  /**
   * What a failed attempt (not a busy one) says, counted: thrown on when the gateway failed, the
   * request was aborted or the error is not one of a provider.
   */
  #failure(
    error: unknown,
    candidate: ProviderCandidate,
    request: Sealable,
    signal: AbortSignal,
  ): Failure {
    const metrics = this.#options.metrics;
    if (error instanceof GatewayError && error.reason === "gateway") {
      metrics?.attempted(request.tier, "gateway_error");
      throw error;
    }
    if (signal.aborted) metrics?.attempted(request.tier, "aborted");
    signal.throwIfAborted();
    try {
      const failure = classify(error, candidate);
      metrics?.attempted(request.tier, "failed", failure.error.code);
      return failure;
    } catch (unknown) {
      metrics?.attempted(request.tier, "failed", "internal_error");
      throw unknown;
    }
  }

  async #attempt<R>(
    gateway: GatewayClient,
    chosen: { candidate: ProviderCandidate; lease: Lease; request: Sealable },
    call: { signal: AbortSignal; exchange: Exchange<R> },
  ): Promise<{ finish: (served: ServedBy) => R; verdict: string; receipt?: string }> {
    const { candidate, request } = chosen;
    const { signal } = call;
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
        model: request.model,
      }, signal);
    } catch (error) {
      const refused = error instanceof DaemonError && TRUST_REFUSAL_CODES.has(error.code);
      if (refused) {
        // The log is served to clients: the fixed message per code, never which check failed.
        record("refused", publicMessage(error), error.code);
      }
      if (!signal.aborted) {
        this.#options.metrics?.verified(request.tier, refused ? error.code : "incomplete");
      }
      throw error;
    }
    this.#options.metrics?.verified(request.tier, "ok");
    // The provider passed every check: that is the verdict, whatever its reply does next.
    record("accepted", trusted.verdict);
    // Only now, with a key that passed every check, is the request sealed and sent.
    // The date inside the seal lets the provider refuse a relay's replay (RFC 9458 §6.5).
    // A verified-tier key is sealed to again: its next HPKE setup is prepared meanwhile.
    // In the TEE tier the sealed request names the attestation it is sealed under, and the
    // reply must end with the provider's receipt for it. The request is paid for before it is
    // sealed (a spend cap may refuse it here: nothing is sent); the voucher goes inside the seal.
    const attestation = trusted.attestation;
    await this.#options.payments?.prepare?.();
    const paid = payAttempt(this.#options.payments, request, candidate, call.exchange);
    const headers: (readonly [string, string])[] = [
      ["date", this.#clock().toUTCString()],
      ...paid.headers,
    ];
    if (attestation) headers.push([ATTESTATION_NONCE_HEADER, hex(attestation.nonce)]);
    let sent = false;
    let sealed;
    try {
      sealed = await sealRequest(trusted.keyConfig, {
        body: call.exchange.body,
        text: paid.text,
        headers,
        path: call.exchange.path,
      }, { pool: candidate.tier === "verified" ? this.#setups : undefined });
    } catch (error) {
      settleFailed(paid.ticket, error, sent);
      throw error;
    }
    const receipt = attestation ? this.#receipts.newId() : undefined;
    const onEnd = attestation && receipt
      ? receiptCheck(attestation, {
        provider: candidate.provider,
        model: request.model,
        content: sealed.content,
        id: receipt,
        receipts: this.#receipts,
      })
      : undefined;
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
    // The relay is aborted when the request is (the client went away) or the head times out.
    const attempt = linkedController(signal, head.signal);
    const attemptSignal = attempt.controller.signal;
    try {
      // The sealed request is small (the body limit bounds it): sent whole with a
      // Content-Length, it goes out in one write. Streamed in pieces it met TCP small-write
      // stalls: 46 ms at p90 before the reply's head, against 4 ms sent whole (measured).
      // The reply is read as it comes (up to RELAY_READ_AHEAD_BYTES ahead of the client), so
      // its end is seen when the provider is done, however slowly the client reads.
      const relayed = Promise.withResolvers<void>();
      sent = true;
      const stream = await gateway.relay(candidate.provider, sealed.bytes, {
        signal: attemptSignal,
        readAheadBytes: RELAY_READ_AHEAD_BYTES,
        onEnd: relayed.resolve,
      });
      const finish = await Promise.race([
        call.exchange.open(
          sealed,
          stream,
          chosen.lease,
          attemptSignal,
          candidate,
          onEnd,
          paid.ticket,
        ),
        new Promise<never>((_, reject) => {
          if (head.signal.aborted) reject(head.signal.reason);
          head.signal.addEventListener("abort", () => reject(head.signal.reason), { once: true });
        }),
      ]);
      // Opened: the provider serves this reply, and its slot is free once the reply has come
      // in whole (not when the client has read it; before the opening, a failure releases the
      // slot as it is, a busy provider with its wait).
      void relayed.promise.then(() => chosen.lease.release());
      return { finish, verdict: trusted.verdict, ...(receipt ? { receipt } : {}) };
    } catch (error) {
      settleFailed(paid.ticket, error, sent);
      attempt.dispose();
      if (head.signal.aborted && !signal.aborted) throw head.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Looks up an attempt's bill at its provider (`bill_lookup.ts`), through the resolved
   * gateway: what `account/` asks for a reply that ended before its usage.
   */
  lookupBill(query: BillQuery, signal: AbortSignal): Promise<Bill | "unknown" | "running"> {
    const trust = { ...this.#options.trust, clock: this.#clock, keyCache: this.#keys };
    const parts = { candidates: this.#candidates, setups: this.#setups, trust, clock: this.#clock };
    return this.#withGateway(signal, (gateway) => lookupBill(gateway, query, parts, signal));
  }

  /** The refusal when a gateway lists no candidate (`_failover.ts`'s `noCandidate`). */
  async #noCandidate(request: Sealable, signal: AbortSignal): Promise<DaemonError> {
    // Fresh, not the cached list: a model listed a moment ago must not read as unknown.
    this.#models = undefined;
    const offered = await this.listModels(signal).catch(() => [] as NetworkModel[]);
    const listed = offered.some((m) => m.model === request.model && m.tier === request.tier);
    const seen = this.#known.get(`${request.tier}\u0000${request.model}`);
    const recently = seen !== undefined && this.#clock().getTime() - seen < KNOWN_MODEL_MS;
    return noCandidate(request, listed, recently);
  }

  #remember(tier: string, model: string): void {
    const key = `${tier}\u0000${model}`;
    this.#known.delete(key);
    this.#known.set(key, this.#clock().getTime());
    if (this.#known.size > 10_000) this.#known.delete(this.#known.keys().next().value!);
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

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
