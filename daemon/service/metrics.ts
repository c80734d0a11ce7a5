/**
 * The daemon's Prometheus metrics (`GET /metrics`, prefix `net_daemon_`): what an operator
 * graphs and alerts on. The request metrics come from the HTTP layer's middleware
 * (`http/metrics.ts`) with one more label, `dialect`; the network backend records its provider
 * attempts, trust checks, first chunks and relayed tokens through {@linkcode BackendMetrics};
 * the load gauges are read from the backend at each scrape. Every label takes a closed list of
 * values: no prompt, reply, model id, provider or client address, API key or request id is ever
 * a label or a value.
 *
 * | metric                                   | type      | labels                               |
 * | ---------------------------------------- | --------- | ------------------------------------ |
 * | `http_requests_total`                    | counter   | `method`, `route`, `status`, `dialect` |
 * | `http_request_duration_seconds`          | histogram | `method`, `route`, `dialect`         |
 * | `http_response_first_byte_seconds`       | histogram | `method`, `route`, `dialect`         |
 * | `http_requests_in_flight`                | gauge     |                                      |
 * | `chat_first_chunk_seconds`               | histogram | `tier`                               |
 * | `provider_requests_in_flight`            | gauge     |                                      |
 * | `queued_requests`                        | gauge     |                                      |
 * | `provider_attempts_total`                | counter   | `tier`, `result`                     |
 * | `provider_failures_total`                | counter   | `tier`, `reason`                     |
 * | `attestation_verifications_total`        | counter   | `tier`, `result`                     |
 * | `relayed_tokens_total`                   | counter   | `tier`, `kind`                       |
 * | `spend_total`                            | counter   | `tier`                               |
 * | `budget_refusals_total`                  | counter   | `scope`                              |
 * | `process_*`                              | gauge     |                                      |
 *
 * @example
 * ```ts
 * import { DaemonMetrics } from "./metrics.ts";
 *
 * const metrics = new DaemonMetrics();
 * metrics.attempted("verified", "failed", "timeout");
 * metrics.relayed("verified", { prompt_tokens: 12, completion_tokens: 30 });
 * const text = await metrics.registry.text();
 * console.assert(text.includes('net_daemon_provider_failures_total{tier="verified",reason="timeout"} 1'));
 * console.assert(text.includes('net_daemon_relayed_tokens_total{tier="verified",kind="completion"} 30'));
 * ```
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { httpMetrics, UNMATCHED_ROUTE } from "../../http/metrics.ts";
import { LATENCY_BUCKETS, MetricsRegistry } from "../../io/metrics.ts";
import {
  DAEMON_ERROR_STATUS,
  type DaemonErrorCode,
  dialectOf,
  TRUST_REFUSAL_CODES,
} from "../core/mod.ts";
import type {
  AttemptResult,
  BackendMetrics,
  LoadReading,
  VerificationResult,
} from "../network/mod.ts";

/** The `dialect` label: the API a route belongs to. */
export type DialectLabel = "openai" | "ollama" | "anthropic" | "other";

const TIERS = ["verified", "tee"];
const ATTEMPT_RESULTS: readonly AttemptResult[] = [
  "ok",
  "busy",
  "failed",
  "gateway_error",
  "aborted",
];
const CODES = Object.keys(DAEMON_ERROR_STATUS) as DaemonErrorCode[];
const VERIFICATION_RESULTS = ["ok", "incomplete", ...TRUST_REFUSAL_CODES];

/** Time to a chat's first chunk: 10 ms to 5 minutes (queueing and failover included). */
const FIRST_CHUNK_BUCKETS = [...LATENCY_BUCKETS, 60, 120, 300];

/**
 * The API a request belongs to, from its route template: `/v1/messages…` Anthropic, the rest of
 * `/v1/…` OpenAI, `/` and `/api/…` Ollama, the daemon's own (`/metrics`, `/openapi.json`)
 * `other`. A request no route served is
 * labelled with the dialect its error was answered in.
 */
export function dialectLabel(route: string, path: string): DialectLabel {
  if (route === UNMATCHED_ROUTE) return dialectOf(path);
  if (route === "/" || route.startsWith("/api/")) return "ollama";
  if (route.startsWith("/v1/")) return dialectOf(route) === "anthropic" ? "anthropic" : "openai";
  return "other";
}

/** The daemon's metrics registry, its request middleware and the backend's recorders. */
export class DaemonMetrics implements BackendMetrics {
  /** The registry (`GET /metrics` renders it). */
  readonly registry: MetricsRegistry = new MetricsRegistry({ prefix: "net_daemon_" });
  #load: (() => LoadReading) | undefined;
  #middleware: MiddlewareHandler | undefined;

  readonly #firstChunk = this.registry.histogram<"tier">({
    name: "chat_first_chunk_seconds",
    help: "Time from a chat reaching the network backend to its reply's first chunk (queueing, " +
      "trust checks, sealing and failover included), seconds.",
    labels: ["tier"],
    values: { tier: TIERS },
    buckets: FIRST_CHUNK_BUCKETS,
  });
  readonly #attempts = this.registry.counter<"tier" | "result">({
    name: "provider_attempts_total",
    help: "Attempts to have a provider answer a chat, by result: ok (a first chunk), busy (at " +
      "capacity, not a failure), failed, gateway_error (the gateway failed), aborted.",
    labels: ["tier", "result"],
    values: { tier: TIERS, result: ATTEMPT_RESULTS },
  });
  readonly #failures = this.registry.counter<"tier" | "reason">({
    name: "provider_failures_total",
    help: "Failed provider attempts by reason (the error code the client would see).",
    labels: ["tier", "reason"],
    values: { tier: TIERS, reason: CODES },
  });
  readonly #verifications = this.registry.counter<"tier" | "result">({
    name: "attestation_verifications_total",
    help: "Trust checks of a provider before sealing (TEE attestation, key endorsement, chain " +
      "records), by result: ok, a refusal code, or incomplete (the evidence could not be read).",
    labels: ["tier", "result"],
    values: { tier: TIERS, result: VERIFICATION_RESULTS },
  });
  readonly #tokens = this.registry.counter<"tier" | "kind">({
    name: "relayed_tokens_total",
    help: "Tokens of the replies relayed, from their usage: prompt and completion.",
    labels: ["tier", "kind"],
    values: { tier: TIERS, kind: ["prompt", "completion"] },
  });

  readonly #spend = this.registry.counter<"tier">({
    name: "spend_total",
    help: "What the daemon's paid attempts cost, in the chain's whole unit (the ledger's " +
      "recorded costs; exact figures in GET /v1/usage).",
    labels: ["tier"],
    values: { tier: TIERS },
  });
  readonly #budgetRefusals = this.registry.counter<"scope">({
    name: "budget_refusals_total",
    help: "Requests answered 402 budget_exceeded, by the cap that refused them: daemon or key.",
    labels: ["scope"],
    values: { scope: ["daemon", "key"] },
  });

  /** A registry with every metric declared (the load gauges read 0 until {@linkcode watch}). */
  constructor() {
    this.registry.gauge({
      name: "provider_requests_in_flight",
      help: "Requests holding a provider slot now (being answered by a provider).",
      collect: (g) => g.set({}, this.#load?.().inFlight ?? 0),
    });
    this.registry.gauge({
      name: "queued_requests",
      help: "Requests waiting in the queue for a provider slot now.",
      collect: (g) => g.set({}, this.#load?.().queued ?? 0),
    });
    this.registry.processMetrics();
  }

  /** Reads the load gauges from `load` at every scrape. */
  watch(load: () => LoadReading): void {
    this.#load = load;
  }

  /**
   * The request-metrics middleware (the same one however often asked): put it first, so that
   * refusals of the Host, Origin and API-key rules are counted too.
   */
  middleware(): MiddlewareHandler {
    return this.#middleware ??= httpMetrics(this.registry, {
      labels: {
        names: ["dialect"],
        values: { dialect: ["openai", "ollama", "anthropic", "other"] },
        of: (c: Context, route: string) => ({ dialect: dialectLabel(route, c.req.path) }),
      },
    });
  }

  /** {@inheritDoc BackendMetrics.attempted} */
  attempted(tier: string, result: AttemptResult, reason?: DaemonErrorCode): void {
    this.#attempts.inc({ tier, result });
    if (result === "failed") this.#failures.inc({ tier, reason: reason ?? "internal_error" });
  }

  /** {@inheritDoc BackendMetrics.verified} */
  verified(tier: string, result: VerificationResult): void {
    this.#verifications.inc({ tier, result });
  }

  /** {@inheritDoc BackendMetrics.firstChunk} */
  firstChunk(tier: string, seconds: number): void {
    this.#firstChunk.observe({ tier }, seconds);
  }

  /** {@inheritDoc BackendMetrics.relayed} */
  relayed(tier: string, usage: { prompt_tokens?: number; completion_tokens?: number }): void {
    for (const kind of ["prompt", "completion"] as const) {
      const count = usage[`${kind}_tokens`];
      if (typeof count === "number" && Number.isFinite(count) && count > 0) {
        this.#tokens.inc({ tier, kind }, count);
      }
    }
  }

  /** Counts the cost of a paid attempt, in the chain's smallest unit. */
  spent(tier: string, wei: bigint): void {
    if (wei > 0n) this.#spend.inc({ tier }, Number(wei) / 1e18);
  }

  /** Counts a `budget_exceeded` refusal. */
  budgetRefused(scope: "daemon" | "key"): void {
    this.#budgetRefusals.inc({ scope });
  }
}
