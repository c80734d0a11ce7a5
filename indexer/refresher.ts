/**
 * The refresh loop: every `refreshSecs` it takes a new snapshot — the chain state pinned to
 * one block and every router's ads fetched in parallel and verified — and replaces the
 * indexer's state as a whole. Beside it runs the settlement history (`history.ts`): its own
 * loop keeps the persistent store up to date and reads the settlement figures, which the
 * views serve with a snapshot once the history has caught up with it. The request handler
 * only reads {@linkcode Refresher.state}.
 *
 * - **Single flight**: a `refresh()` while one runs returns the running one.
 * - **Fresh, never stale**: a failed refresh keeps the last snapshot, which is served while it
 *   is within its freshness bound (`staleAfterSecs`) — so a refresh that fails now and then
 *   (an endpoint's 429, a 502, a reorg under a read) costs no 503 — and never after it: then
 *   the handler answers 503 with the failure; the next successful refresh serves again. The history never fails a
 *   refresh: its problems are shown on `/health`, and its figures are `null` meanwhile.
 * - **Caught up together**: when the history was in step with the last snapshot, a new
 *   snapshot waits (at most {@linkcode CATCH_UP_MS}) for the history to reach its block, so
 *   the figures do not blink to `null` at every new block.
 * - **Unchanged ads are not verified again**: their checks are remembered by their text
 *   between refreshes (the commitment is compared with the chain's every time).
 * - The chain client is created on the first refresh that reaches the endpoint (a chain that
 *   is down at start-up is a 503, not a crash) and its chain id is then pinned. With
 *   `checkContracts`, the contracts are checked before the client is first used (and after a
 *   reconnect): a refusal is a `chain_error` 503 and goes to `onContractsRefused`.
 *
 * @example
 * ```ts ignore
 * import { Refresher } from "./refresher.ts";
 * import { createIndexerHandler } from "./handler.ts";
 *
 * const refresher = new Refresher({
 *   rpcUrl,
 *   contracts,
 *   refreshSecs: 30,
 *   history: { dataDir: "/var/lib/net-stats" },
 * });
 * refresher.start();
 * Deno.serve(createIndexerHandler({
 *   state: () => refresher.state,
 *   readProviderHistory: (address) => refresher.readProviderHistory(address),
 * }));
 * ```
 *
 * @module
 */

import {
  type ChainClient,
  type ChainClientOptions,
  createChainClient,
  RpcEndpoints,
  type RpcEndpointStatus,
} from "../chain/client.ts";
import { ChainConfigError, ContractCheckError } from "../chain/errors.ts";
import { readNetworkState } from "../chain/network_state.ts";
import type { NetworkState } from "../chain/types.ts";
import type { LogSink } from "../io/log.ts";
import { syncFor } from "./_history_data.ts";
import { RouterAdsError, SnapshotError } from "./errors.ts";
import type { ProviderHistoryAnswer } from "./handler.ts";
import { History, type HistoryState } from "./history.ts";
import { fetchRouterAds, MAX_ROUTER_BODY_BYTES } from "./router_ads.ts";
import { buildSnapshot, type RouterAnswer, type Snapshot } from "./snapshot.ts";
import { type IndexerState, initialState } from "./state.ts";
import { sleep, storeIsNew, storeOpener } from "./_history_store.ts";
import { checkNumber, type RefresherOptions } from "./refresher_options.ts";
import { AdCache } from "./verify_entry.ts";
import { firstEpochNeeded } from "./views.ts";
import { classifyRefreshFailure } from "./_refresh_failure.ts";
import { RefreshLog } from "./_refresh_log.ts";
import { type TeeEvidence, TeeEvidenceChecker } from "./tee_evidence.ts";
import { stateEvents } from "./_state_events.ts";

/** How long a new snapshot waits for a history that was in step with the last one, ms. */
export const CATCH_UP_MS = 2_000;

export type { RefresherOptions } from "./refresher_options.ts";

/** The snapshot loop of the indexer, and the settlement history beside it. `await using` stops both. */
export class Refresher implements AsyncDisposable {
  readonly #options: RefresherOptions;
  readonly #clock: () => Date;
  readonly #log: LogSink;
  readonly #rpcOrigin: string;
  readonly #endpoints: RpcEndpoints;
  readonly #history: History;
  readonly #adCache = new AdCache();
  readonly #tee: TeeEvidenceChecker | undefined;
  readonly #pollMs: number;
  #client: ChainClient | undefined;
  #chainId: number | undefined;
  #state: IndexerState;
  #inflight: Promise<IndexerState> | undefined;
  #abort = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #loop: Promise<void> | undefined;
  /** The lines about serving and not serving. */
  readonly #lines: RefreshLog;
  #historyLoop: Promise<void> | undefined;

  /**
   * Creates the refresher; nothing happens until {@linkcode Refresher.refresh} or
   * {@linkcode Refresher.start}.
   *
   * @throws {RangeError} for an option out of range.
   */
  constructor(options: RefresherOptions) {
    checkNumber("refreshSecs", options.refreshSecs, 0.001, 86_400);
    checkNumber("staleAfterSecs", options.staleAfterSecs, 0.001, 2 * 86_400);
    checkNumber("routerTimeoutMs", options.routerTimeoutMs, 1, 600_000);
    checkNumber("confirmations", options.confirmations, 0, 1_000_000);
    checkNumber("historyPollMs", options.historyPollMs, 1, 86_400_000);
    try {
      this.#endpoints = new RpcEndpoints(
        typeof options.rpcUrl === "string" ? [options.rpcUrl] : options.rpcUrl,
        { maxRps: options.rpcMaxRps, clock: options.clock },
      );
    } catch (error) {
      if (!(error instanceof ChainConfigError)) throw error;
      throw new RangeError(
        `Cannot create the refresher: ${
          error.shortMessage.replace("Cannot create chain client: ", "")
        }`,
      );
    }
    this.#options = options;
    this.#rpcOrigin = this.#endpoints.list.length === 1
      ? this.#endpoints.list[0].label.replace(/\/…$/, "")
      : this.#endpoints.list.map((e) => e.label).join(", ");
    this.#clock = options.clock ?? (() => new Date());
    this.#log = options.log ?? ((message) => console.error(message));
    this.#lines = new RefreshLog(this.#log, this.#clock, () => this.#state);
    const refreshSecs = options.refreshSecs ?? 30;
    this.#pollMs = options.historyPollMs ?? Math.min(2_000, refreshSecs * 1000);
    this.#history = this.#createHistory(options);
    this.#tee = options.tee === false ? undefined : new TeeEvidenceChecker({
      clock: options.clock,
      ...options.tee,
      onChange: (evidence) => {
        options.events?.publish("tee_evidence", {
          provider: evidence.provider,
          status: evidence.status,
          message: evidence.message,
        });
      },
    });
    this.#state = {
      ...initialState(refreshSecs, options.staleAfterSecs ?? 2 * refreshSecs),
      history: this.#history.state,
    };
    this.#history.subscribe((history) => {
      const rescans = history.rescans.count - this.#state.history.rescans.count;
      if (rescans > 0) options.metrics?.historyRescanned(rescans);
      this.#setState({ ...this.#state, history });
    });
  }

  #createHistory(options: RefresherOptions): History {
    const confirmations = options.confirmations ?? 12;
    return new History({
      rpcUrl: this.#endpoints,
      client: this.#clientOptions("history"),
      escrow: options.contracts.escrow,
      scanFromBlock: options.scanFromBlock ?? 0n,
      confirmations,
      store: storeOpener(options.history, {
        confirmations,
        rebuild: options.rebuildHistory,
        log: (line) => this.#log(`indexer: ${line}`, { level: "info" }),
      }),
      storeIsNew: storeIsNew(options.history, options.rebuildHistory),
      clock: options.clock,
      log: (line, entry) => this.#log(this.#redact(line), entry),
      onFatal: options.onHistoryFatal,
    });
  }

  /** The chain client options of `client`, its requests counted when metrics are recorded. */
  #clientOptions(client: "snapshot" | "history"): ChainClientOptions | undefined {
    const options = this.#options.client;
    const metrics = this.#options.metrics;
    if (!metrics) return options;
    return { ...options, fetch: metrics.rpcFetch(client, options?.fetch) };
  }

  /** Replaces the state and publishes what changed (`events`). */
  #setState(next: IndexerState): void {
    const before = this.#state;
    this.#state = next;
    const events = this.#options.events;
    if (events) {
      for (const { type, data } of stateEvents(before, next)) events.publish(type, data);
    }
  }

  /** The current state; replaced as a whole by each refresh and each move of the history. */
  get state(): IndexerState {
    return this.#state;
  }

  /**
   * Checks the TEE-tier providers' evidence of the served snapshot now (the loop does it after
   * each snapshot) and resolves when done; nothing without a snapshot.
   */
  async checkTeeEvidence(): Promise<void> {
    const snapshot = this.#state.snapshot;
    if (snapshot) await this.#tee?.check(snapshot, this.#abort.signal);
  }

  /** The last TEE evidence check of a provider, or `undefined` (`/providers/{address}`). */
  teeEvidence(address: string): TeeEvidence | undefined {
    return this.#tee?.get(address);
  }

  /** Every RPC endpoint's state (`/health`'s `rpc`), in the order given. */
  rpcStatus(): RpcEndpointStatus[] {
    return this.#endpoints.status();
  }

  /** The settlement history's state. */
  get history(): HistoryState {
    return this.#history.state;
  }

  /**
   * Runs one pass of the settlement history now (scan to the head as the writer, or read the
   * writer's progress as a replica) and returns its state. Single flight; never throws.
   */
  syncHistory(): Promise<HistoryState> {
    return this.#history.pass();
  }

  /**
   * One provider's whole settlement history, read from the store at one confirmed block, or
   * `null` while the store is not open (`/providers/{address}`).
   */
  readProviderHistory(address: string): Promise<ProviderHistoryAnswer | null> {
    return this.#history.readProvider(address);
  }

  /**
   * Takes a snapshot now and returns the new state. Single flight: while a refresh runs,
   * this returns the running one. Never throws for network or chain failures: they become
   * the state's `lastError` (and the snapshot is cleared).
   */
  refresh(): Promise<IndexerState> {
    if (!this.#inflight) {
      this.#setState({ ...this.#state, refreshing: true });
      this.#inflight = this.#run().finally(() => {
        this.#inflight = undefined;
      });
    }
    return this.#inflight;
  }

  /**
   * Starts the loops: a refresh now, then one every `refreshSecs` (measured from the start of
   * the previous one; at once when a refresh took longer); and the settlement history, a pass
   * now and then one every history poll interval (longer while it fails). Idempotent.
   */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    const period = (this.#options.refreshSecs ?? 30) * 1000;
    const tick = async (): Promise<void> => {
      const started = performance.now();
      await this.refresh();
      if (!this.#running) return;
      const delay = Math.max(0, period - (performance.now() - started));
      this.#setState({
        ...this.#state,
        nextRefreshAt: new Date(this.#clock().getTime() + delay),
      });
      this.#timer = setTimeout(() => {
        this.#loop = tick();
      }, delay);
    };
    this.#loop = tick();
    this.#historyLoop = this.#runHistory(period, this.#abort.signal);
  }

  async #runHistory(period: number, signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (this.#running && !signal.aborted) {
      const state = await this.#history.pass();
      if (state.stopped) return;
      failures = state.failing ? failures + 1 : 0;
      const delay = failures === 0
        ? this.#pollMs
        : Math.min(Math.max(period, this.#pollMs), this.#pollMs * 2 ** (failures - 1));
      await sleep(delay, signal);
    }
  }

  /** Stops the loops and cancels a running refresh; resolves when they have ended. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#lines.stop();
    this.#abort.abort();
    await this.#loop?.catch(() => {});
    await this.#historyLoop?.catch(() => {});
    await this.#inflight?.catch(() => {});
    await this.#tee?.idle();
    await this.#history.stop();
    this.#abort = new AbortController();
    this.#setState({ ...this.#state, nextRefreshAt: null });
  }

  /** Same as {@linkcode Refresher.stop}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  async #run(): Promise<IndexerState> {
    const takenAt = this.#clock();
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const signal = this.#abort.signal;
    const before = this.#state;
    try {
      const snapshot = await this.#take(takenAt, signal);
      // A refresh cancelled by stop() is discarded, whatever it managed to read.
      signal.throwIfAborted();
      await this.#catchUp(before.snapshot, snapshot, signal);
      signal.throwIfAborted();
      this.#setState({
        ...this.#state,
        snapshot,
        lastSnapshotAt: takenAt,
        lastAttemptAt: takenAt,
        failing: false,
        refreshing: false,
      });
      this.#lines.stop();
      // TEE-tier providers' evidence, checked beside the loop (never delays a snapshot).
      if (this.#running) void this.#tee?.check(snapshot, signal);
      this.#options.metrics?.refreshed({ ok: true, seconds: seconds() });
      if (before.failing || before.lastSnapshotAt === null) this.#lines.serving(snapshot, before);
    } catch (error) {
      const failure = signal.aborted
        ? new SnapshotError("aborted", "Cannot take a snapshot: the refresh was stopped")
        : this.#classify(error);
      if (failure.reason === "aborted") {
        this.#setState({ ...this.#state, refreshing: false });
        return this.#state;
      }
      this.#options.metrics?.refreshed({ ok: false, code: failure.reason, seconds: seconds() });
      // Re-create the client (and re-check the chain id) once the endpoint is back.
      if (failure.reason === "chain_unreachable") this.#client = undefined;
      if (failure.cause instanceof ContractCheckError) {
        this.#options.onContractsRefused?.(failure.cause);
      }
      const message = this.#redact(
        failure.details ? `${failure.shortMessage} (${failure.details})` : failure.shortMessage,
      );
      // The last snapshot is kept: it is served while it is within its freshness bound.
      this.#setState({
        ...this.#state,
        lastAttemptAt: takenAt,
        lastError: { code: failure.reason, message, at: takenAt },
        failing: true,
        refreshing: false,
      });
      this.#lines.failure(failure.reason, message, before, this.#running);
    }
    return this.#state;
  }

  /** Whether the history's figures may be served with `snapshot`. */
  #inStep(snapshot: Snapshot): boolean {
    const history = this.#history.state;
    return syncFor(history, snapshot.chain.block, {
      confirmations: history.confirmations,
      scanFromBlock: history.scanFromBlock,
      fromEpoch: firstEpochNeeded(snapshot.chain.emission.currentEpoch, this.#options.views),
    }).synced;
  }

  /**
   * When the history was in step with the previous snapshot, gives it a moment (at most
   * {@linkcode CATCH_UP_MS}) to reach the new one, so the figures do not go `null` for a
   * refresh at every new block. Never fails the refresh.
   */
  async #catchUp(previous: Snapshot | null, next: Snapshot, signal: AbortSignal): Promise<void> {
    this.#history.fromEpoch = firstEpochNeeded(
      next.chain.emission.currentEpoch,
      this.#options.views,
    );
    if (this.#inStep(next)) return;
    if (!previous || !this.#inStep(previous)) {
      // Behind (or just started): a pass now, not waited for (it reads the figures once the
      // first snapshot said which epochs they need).
      void this.#history.pass();
      return;
    }
    const deadline = performance.now() + Math.min(CATCH_UP_MS, this.#pollMs * 4);
    while (!signal.aborted && performance.now() < deadline) {
      const state = await this.#history.pass();
      if (this.#inStep(next) || state.failing || state.stopped || state.unreadable) return;
      await sleep(Math.min(100, this.#pollMs), signal);
    }
  }

  async #take(takenAt: Date, signal: AbortSignal): Promise<Snapshot> {
    const client = await this.#connect();
    signal.throwIfAborted();
    const chain = await readNetworkState(client, this.#options.contracts);
    signal.throwIfAborted();
    const routers = await this.#fetchRouters(chain, signal);
    const snapshot = buildSnapshot({ takenAt, chain, routers }, { adCache: this.#adCache });
    this.#adCache.rotate();
    return snapshot;
  }

  async #connect(): Promise<ChainClient> {
    if (this.#client) return this.#client;
    const options = this.#clientOptions("snapshot") ?? {};
    const client = await createChainClient(this.#endpoints, {
      ...options,
      chainId: options.chainId ?? this.#chainId,
    });
    await this.#options.checkContracts?.(client);
    this.#client = client;
    this.#chainId = client.chain.id;
    return client;
  }

  #fetchRouters(chain: NetworkState, signal: AbortSignal): Promise<RouterAnswer[]> {
    return Promise.all(chain.routers.map(async (router): Promise<RouterAnswer> => {
      try {
        const entries = await fetchRouterAds(router.url, {
          fetch: this.#options.fetch,
          timeoutMs: this.#options.routerTimeoutMs ?? 5_000,
          maxBytes: this.#options.routerMaxBytes ?? MAX_ROUTER_BODY_BYTES,
          signal,
        });
        this.#options.metrics?.routerAnswered("ok");
        return { router, entries };
      } catch (error) {
        if (!(error instanceof RouterAdsError)) throw error;
        this.#options.metrics?.routerAnswered(error.reason);
        return { router, error: { code: error.reason, message: error.shortMessage } };
      }
    }));
  }

  #classify(error: unknown): SnapshotError {
    return classifyRefreshFailure(error, `the chain at ${this.#rpcOrigin}`, this.#log);
  }

  /** Reduces the RPC URLs (which may carry an API key in their path) to their origin. */
  #redact(message: string): string {
    return this.#endpoints.redact(message);
  }
}
