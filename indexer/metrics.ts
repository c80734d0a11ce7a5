/**
 * The indexer's Prometheus metrics (`GET /metrics`, prefix `net_indexer_`): what an operator
 * graphs and alerts on. Counters and histograms are recorded as things happen (a refresh, a
 * request to the RPC endpoint, a router's answer); the gauges that describe the served state
 * (providers, routers, rejected ads, the snapshot's age, the history's lag) are read from the
 * state at each scrape, so they always describe what the endpoints serve now. Every label
 * takes a closed list of values: no address, URL, model id or query ever becomes a label.
 *
 * | metric                                     | type      | labels              |
 * | ------------------------------------------ | --------- | ------------------- |
 * | `refreshes_total`                          | counter   | `result`, `code`    |
 * | `refresh_duration_seconds`                 | histogram | `result`            |
 * | `rpc_requests_total`                       | counter   | `client`            |
 * | `rpc_calls_total`                          | counter   | `client`, `method`  |
 * | `rpc_errors_total`                         | counter   | `client`, `reason`  |
 * | `rpc_request_duration_seconds`             | histogram | `client`            |
 * | `router_requests_total`                    | counter   | `result`            |
 * | `serving`                                  | gauge     |                     |
 * | `snapshot_age_seconds`                     | gauge     |                     |
 * | `providers`                                | gauge     | `state`             |
 * | `routers`                                  | gauge     | `state`             |
 * | `rejected_ads`                             | gauge     | `reason`            |
 * | `history_lag_blocks`                       | gauge     |                     |
 * | `history_synced`                           | gauge     |                     |
 * | `history_failing`                          | gauge     |                     |
 * | `history_rescans_total`                    | counter   |                     |
 * | `http_*` (`http/metrics.ts`), `process_*`  |           |                     |
 *
 * @example
 * ```ts
 * import { IndexerMetrics } from "./metrics.ts";
 * import { initialState } from "./state.ts";
 *
 * const metrics = new IndexerMetrics();
 * metrics.watch(() => initialState(30, 60));
 * metrics.refreshed({ ok: false, code: "chain_unreachable", seconds: 0.2 });
 * const text = await metrics.registry.text();
 * console.assert(text.includes('net_indexer_refreshes_total{result="failed",code="chain_unreachable"} 1'));
 * ```
 *
 * @module
 */

import { type Gauge, LATENCY_BUCKETS, MetricsRegistry } from "../io/metrics.ts";
import type { SnapshotFailure } from "./errors.ts";
import type { RouterAdsFailure } from "./errors.ts";
import type { IndexerState } from "./state.ts";
import { REJECTION_REASONS } from "./verify_entry.ts";

/** Which chain client a request to the RPC endpoint came from. */
export type RpcClientName = "snapshot" | "history" | "check";

/** Why a request to the RPC endpoint failed. */
export type RpcErrorReason = "timeout" | "network" | "http_status" | "rpc_error";

const RPC_CLIENTS: readonly RpcClientName[] = ["snapshot", "history", "check"];
const RPC_ERRORS: readonly RpcErrorReason[] = ["timeout", "network", "http_status", "rpc_error"];
/** The JSON-RPC methods counted by name; any other is `other`. */
const RPC_METHODS = [
  "eth_chainId",
  "eth_blockNumber",
  "eth_call",
  "eth_getCode",
  "eth_getLogs",
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
];
const SNAPSHOT_FAILURES: readonly SnapshotFailure[] = [
  "chain_unreachable",
  "chain_error",
  "routers_unreachable",
  "aborted",
  "internal",
];
const ROUTER_RESULTS: readonly ("ok" | RouterAdsFailure)[] = [
  "ok",
  "invalid_url",
  "unreachable",
  "timeout",
  "aborted",
  "status",
  "too_large",
  "invalid_json",
  "invalid_envelope",
];
/** Refresh durations: 10 ms to 2 minutes. */
const REFRESH_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** An answer at most this large is read (a copy) for JSON-RPC errors; larger ones are results. */
const MAX_INSPECTED_BYTES = 256 * 1024;

/** One refresh, as {@linkcode IndexerMetrics.refreshed} records it. */
export interface RefreshOutcome {
  /** Whether it produced a snapshot. */
  ok: boolean;
  /** Why not (the 503's code). */
  code?: SnapshotFailure;
  /** How long it took, seconds. */
  seconds: number;
}

/** Options of {@linkcode IndexerMetrics}. */
export interface IndexerMetricsOptions {
  /**
   * The clock of `snapshot_age_seconds`.
   *
   * @default {() => new Date()}
   */
  clock?: () => Date;
  /**
   * The monotonic clock of the RPC request timer, milliseconds.
   *
   * @default {() => performance.now()}
   */
  now?: () => number;
}

/** The number of JSON-RPC calls in a request body and their methods. */
function callsOf(body: unknown): string[] {
  if (typeof body !== "string") return [];
  try {
    const parsed = JSON.parse(body);
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    return calls.map((call) => typeof call?.method === "string" ? call.method : "unknown");
  } catch {
    return [];
  }
}

/** How many JSON-RPC error objects an answer carries (one, or each of a batch). */
function rpcErrorsIn(text: string): number {
  try {
    const parsed = JSON.parse(text);
    const answers = Array.isArray(parsed) ? parsed : [parsed];
    return answers.filter((answer) => answer !== null && typeof answer === "object" && answer.error)
      .length;
  } catch {
    return 0;
  }
}

function isTimeout(error: unknown): boolean {
  const name = (error as { name?: unknown })?.name;
  return name === "TimeoutError" || name === "AbortError";
}

/** The indexer's metrics registry and the recorders the refresher and the service use. */
export class IndexerMetrics {
  /** The registry (`GET /metrics` renders it). */
  readonly registry: MetricsRegistry = new MetricsRegistry({ prefix: "net_indexer_" });
  readonly #clock: () => Date;
  readonly #now: () => number;
  readonly #started: Date;
  #state: (() => IndexerState) | undefined;
  #synced: (state: IndexerState) => boolean = () => false;

  readonly #refreshes = this.registry.counter<"result" | "code">({
    name: "refreshes_total",
    help: "Snapshot refreshes by result (ok, failed) and failure code (none when ok).",
    labels: ["result", "code"],
    values: { result: ["ok", "failed"], code: ["none", ...SNAPSHOT_FAILURES] },
  });
  readonly #refreshDuration = this.registry.histogram<"result">({
    name: "refresh_duration_seconds",
    help: "Time a snapshot refresh took (chain read, routers, verification), seconds.",
    labels: ["result"],
    values: { result: ["ok", "failed"] },
    buckets: REFRESH_BUCKETS,
  });
  readonly #rpcRequests = this.registry.counter<"client">({
    name: "rpc_requests_total",
    help: "HTTP requests to the JSON-RPC endpoint (a batch is one), by chain client.",
    labels: ["client"],
    values: { client: RPC_CLIENTS },
  });
  readonly #rpcCalls = this.registry.counter<"client" | "method">({
    name: "rpc_calls_total",
    help: "JSON-RPC calls sent to the endpoint (each call of a batch), by client and method.",
    labels: ["client", "method"],
    values: { client: RPC_CLIENTS, method: RPC_METHODS },
  });
  readonly #rpcErrors = this.registry.counter<"client" | "reason">({
    name: "rpc_errors_total",
    help: "Failed requests to the JSON-RPC endpoint (timeout, network, http_status) and " +
      "JSON-RPC error answers (rpc_error, each call of a batch), by client.",
    labels: ["client", "reason"],
    values: { client: RPC_CLIENTS, reason: RPC_ERRORS },
  });
  readonly #rpcDuration = this.registry.histogram<"client">({
    name: "rpc_request_duration_seconds",
    help: "Time from a request to the JSON-RPC endpoint to its answer's headers, seconds.",
    labels: ["client"],
    values: { client: RPC_CLIENTS },
    buckets: LATENCY_BUCKETS,
  });
  readonly #routerRequests = this.registry.counter<"result">({
    name: "router_requests_total",
    help: "Routers' GET /v1/ads by result (ok, or why the router was unreachable).",
    labels: ["result"],
    values: { result: ROUTER_RESULTS },
  });
  readonly #rescans = this.registry.counter({
    name: "history_rescans_total",
    help: "Rescans of the settlement history from its first block (reorgs deeper than the " +
      "confirmation depth) since start.",
  });

  /** A registry with every metric declared (the state gauges show once {@linkcode watch}ed). */
  constructor(options: IndexerMetricsOptions = {}) {
    this.#clock = options.clock ?? (() => new Date());
    this.#now = options.now ?? (() => performance.now());
    this.#started = this.#clock();
    this.#declareStateGauges();
    this.registry.processMetrics();
  }

  /**
   * Reads the state gauges from `state` at every scrape; `synced` says whether the served
   * snapshot's settlement figures are in (the service calls it, with its own rule).
   */
  watch(state: () => IndexerState, synced?: (state: IndexerState) => boolean): void {
    this.#state = state;
    if (synced) this.#synced = synced;
  }

  /** Records rescans of the settlement history. */
  historyRescanned(count = 1): void {
    this.#rescans.inc(undefined, count);
  }

  /** Records one refresh. */
  refreshed(outcome: RefreshOutcome): void {
    const result = outcome.ok ? "ok" : "failed";
    this.#refreshes.inc({ result, code: outcome.ok ? "none" : outcome.code ?? "internal" });
    this.#refreshDuration.observe({ result }, outcome.seconds);
  }

  /** Records one router's `GET /v1/ads`: `ok`, or why it could not be used. */
  routerAnswered(result: "ok" | RouterAdsFailure): void {
    this.#routerRequests.inc({ result });
  }

  /**
   * A `fetch` for a chain client that counts its requests, calls, errors and latency under
   * `client`, and otherwise passes everything through to `base`.
   */
  rpcFetch(client: RpcClientName, base: typeof fetch = globalThis.fetch): typeof fetch {
    return async (input, init) => {
      const labels = { client };
      this.#rpcRequests.inc(labels);
      for (const method of callsOf(init?.body)) this.#rpcCalls.inc({ client, method });
      const started = this.#now();
      let response: Response;
      try {
        response = await base(input, init);
      } catch (error) {
        this.#rpcErrors.inc({ client, reason: isTimeout(error) ? "timeout" : "network" });
        throw error;
      } finally {
        this.#rpcDuration.observe(labels, (this.#now() - started) / 1000);
      }
      if (!response.ok) {
        this.#rpcErrors.inc({ client, reason: "http_status" });
        return response;
      }
      const length = Number(response.headers.get("content-length") ?? NaN);
      if (response.body && length <= MAX_INSPECTED_BYTES) {
        // A copy is read beside the caller's; counted when it has arrived.
        response.clone().text().then((text) => {
          const errors = rpcErrorsIn(text);
          if (errors > 0) this.#rpcErrors.inc({ client, reason: "rpc_error" }, errors);
        }).catch(() => {});
      }
      return response;
    };
  }

  #declareStateGauges(): void {
    const gauge = <L extends string = never>(
      name: string,
      help: string,
      read: (state: IndexerState, gauge: Gauge<L>) => void,
      labels?: { labels: readonly L[]; values: Record<L, readonly string[]> },
    ) =>
      this.registry.gauge<L>({
        name,
        help,
        ...labels,
        collect: (g) => {
          if (labels) g.reset();
          if (this.#state) read(this.#state(), g);
        },
      });
    gauge(
      "serving",
      "1 when the data endpoints answer 200 (a fresh snapshot), else 0.",
      (s, g) => g.set({}, this.#serving(s) ? 1 : 0),
    );
    gauge(
      "snapshot_age_seconds",
      "Seconds since the last successful snapshot was taken (served or not); before the " +
        "first one, since the indexer started.",
      (s, g) =>
        g.set({}, (this.#clock().getTime() - (s.lastSnapshotAt ?? this.#started).getTime()) / 1000),
    );
    gauge<"state">(
      "providers",
      "Providers in the served snapshot: registered, bonded, live_verified.",
      (s, g) => {
        if (!this.#serving(s)) return;
        const chain = s.snapshot!.chain;
        g.set({ state: "registered" }, chain.providers.length);
        g.set({ state: "bonded" }, chain.providers.filter((p) => p.bonded).length);
        g.set({ state: "live_verified" }, s.snapshot!.live.length);
      },
      { labels: ["state"], values: { state: ["registered", "bonded", "live_verified"] } },
    );
    gauge<"state">(
      "routers",
      "Routers in the served snapshot: registered on chain, and of " +
        "those reachable (a valid answer).",
      (s, g) => {
        if (!this.#serving(s)) return;
        const routers = s.snapshot!.routers;
        g.set({ state: "registered" }, routers.length);
        g.set({ state: "reachable" }, routers.filter((r) => r.reachable).length);
      },
      { labels: ["state"], values: { state: ["registered", "reachable"] } },
    );
    gauge<"reason">(
      "rejected_ads",
      "Router entries rejected in the served snapshot, by " +
        "reason (every reason present).",
      (s, g) => {
        if (!this.#serving(s)) return;
        for (const reason of REJECTION_REASONS) {
          g.set({ reason }, s.snapshot!.rejections[reason]);
        }
      },
      { labels: ["reason"], values: { reason: REJECTION_REASONS } },
    );
    gauge(
      "history_lag_blocks",
      "Blocks the settlement history has yet to count: (chain head - confirmations) - the " +
        "last confirmed block it counts; 0 when up to date, and until it has measured the head.",
      (s, g) => g.set({}, historyLag(s) ?? 0),
    );
    gauge(
      "history_synced",
      "1 when the settlement figures are served with the snapshot " +
        "(the history has caught up with it), else 0.",
      (s, g) => g.set({}, this.#serving(s) && this.#synced(s) ? 1 : 0),
    );
    gauge(
      "history_failing",
      "1 when the settlement history's last pass failed (or it " +
        "stopped for good), else 0.",
      (s, g) => g.set({}, s.history.failing || s.history.stopped !== null ? 1 : 0),
    );
  }

  #serving(state: IndexerState): boolean {
    return state.snapshot !== null &&
      this.#clock().getTime() - state.snapshot.takenAt.getTime() <= state.staleAfterSecs * 1000;
  }
}

/** `(head - confirmations) - confirmed`, at least 0; `null` before the head was measured. */
function historyLag(state: IndexerState): number | null {
  const history = state.history;
  if (history.headBlock === null) return null;
  const target = history.headBlock - BigInt(history.confirmations);
  const counted = history.confirmed?.number ?? history.scanFromBlock - 1n;
  return target > counted ? Number(target - counted) : 0;
}
