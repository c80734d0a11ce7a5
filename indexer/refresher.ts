/**
 * The refresh loop: every `refreshSecs` it takes a new snapshot — the chain state pinned to
 * one block, every router's ads fetched in parallel and verified, the settlement history
 * scanned on from where the last refresh stopped — and replaces the indexer's state as a
 * whole. It is separate from the request handler, which only reads {@linkcode Refresher.state}.
 *
 * - **Single flight**: a `refresh()` while one runs returns the running one.
 * - **Never stale**: a failed refresh clears the snapshot (the handler then answers 503 with
 *   the failure); the next successful refresh serves again.
 * - **Incremental settlements**: the scan cursor is kept between refreshes, so each refresh
 *   reads only the new blocks. A reorg deeper than the confirmation depth (or a chain that
 *   went backwards, e.g. a restarted devnet) resets the cursor and rescans from the start
 *   block once, in the same refresh; `/health` counts the rescans.
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
 * const refresher = new Refresher({ rpcUrl, contracts, refreshSecs: 30 });
 * refresher.start();
 * Deno.serve(createIndexerHandler({ state: () => refresher.state }));
 * ```
 *
 * @module
 */

import { type ChainClient, type ChainClientOptions, createChainClient } from "../chain/client.ts";
import {
  ChainConfigError,
  ChainReadError,
  ContractCheckError,
  SettlementScanError,
} from "../chain/errors.ts";
import { readNetworkState } from "../chain/network_state.ts";
import { scanSettlements, type SettlementCursor } from "../chain/settlements.ts";
import type { ChainContracts, NetworkState } from "../chain/types.ts";
import { NetError } from "../errors.ts";
import { RouterAdsError, SnapshotError } from "./errors.ts";
import { fetchRouterAds, MAX_ROUTER_BODY_BYTES } from "./router_ads.ts";
import {
  buildSnapshot,
  type RouterAnswer,
  type SettlementIndex,
  type Snapshot,
} from "./snapshot.ts";
import { type IndexerState, initialState } from "./state.ts";

/** Options of {@linkcode Refresher}. */
export interface RefresherOptions {
  /** The JSON-RPC endpoint (http: or https:). */
  rpcUrl: string;
  /** The four contract addresses. */
  contracts: ChainContracts;
  /**
   * Refresh interval of the loop ({@linkcode Refresher.start}), seconds.
   *
   * @default {30}
   */
  refreshSecs?: number;
  /**
   * Snapshots older than this are refused by the handler, seconds.
   *
   * @default {2 × refreshSecs}
   */
  staleAfterSecs?: number;
  /**
   * Options of the chain client (timeout, retries, batching, multicall address, fetch).
   *
   * @default {{}} (the client's defaults: 10 s timeout, 2 retries)
   */
  client?: ChainClientOptions;
  /**
   * The fetch used for routers.
   *
   * @default {globalThis.fetch}
   */
  fetch?: typeof fetch;
  /**
   * Time allowed for one router's `GET /v1/ads`, milliseconds.
   *
   * @default {5_000}
   */
  routerTimeoutMs?: number;
  /**
   * Largest router body, bytes.
   *
   * @default {MAX_ROUTER_BODY_BYTES} (8 MiB)
   */
  routerMaxBytes?: number;
  /**
   * First block of the settlement scan (the Escrow's deployment block).
   *
   * @default {0n}
   */
  scanFromBlock?: bigint;
  /**
   * Confirmation depth of the settlement scan, blocks.
   *
   * @default {12}
   */
  confirmations?: number;
  /**
   * The clock: snapshot times, `/health` times, the loop's next-refresh time.
   *
   * @default {() => new Date()}
   */
  clock?: () => Date;
  /**
   * Checks that the contracts are the network's, each time a chain client is created (before
   * its first read), e.g. `(client) => checkNetworkContracts(client, contracts)`. Its
   * {@linkcode ContractCheckError} fails the refresh.
   *
   * @default {undefined} (no check)
   */
  checkContracts?: (client: ChainClient) => Promise<void>;
  /**
   * Receives the {@linkcode ContractCheckError} of `checkContracts` (the indexer's `main` stops
   * on it: wrong contracts do not get better by waiting).
   *
   * @default {undefined}
   */
  onContractsRefused?: (error: ContractCheckError) => void;
  /**
   * Receives one line at the first snapshot, when the indexer stops serving (and why), when
   * it serves again, and on rescans.
   *
   * @default {console.error}
   */
  log?: (message: string) => void;
}

function checkNumber(name: string, value: number | undefined, min: number, max: number): void {
  if (value !== undefined && (!Number.isFinite(value) || value < min || value > max)) {
    throw new RangeError(
      `Cannot create the refresher: ${name} must be from ${min} to ${max}, found ${value}`,
    );
  }
}

/** The snapshot loop of the indexer. `await using` stops it. */
export class Refresher implements AsyncDisposable {
  readonly #options: RefresherOptions;
  readonly #clock: () => Date;
  readonly #log: (message: string) => void;
  readonly #rpcOrigin: string;
  #client: ChainClient | undefined;
  #chainId: number | undefined;
  #cursor: SettlementCursor | undefined;
  #state: IndexerState;
  #inflight: Promise<IndexerState> | undefined;
  #abort = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #loop: Promise<void> | undefined;

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
    let origin: string;
    try {
      origin = new URL(options.rpcUrl).origin;
    } catch {
      throw new RangeError(
        `Cannot create the refresher: rpcUrl ${JSON.stringify(options.rpcUrl)} is not a URL`,
      );
    }
    this.#options = options;
    this.#rpcOrigin = origin;
    this.#clock = options.clock ?? (() => new Date());
    this.#log = options.log ?? ((message) => console.error(message));
    const refreshSecs = options.refreshSecs ?? 30;
    this.#state = initialState(refreshSecs, options.staleAfterSecs ?? 2 * refreshSecs);
  }

  /** The current state; replaced as a whole by each refresh. */
  get state(): IndexerState {
    return this.#state;
  }

  /** The settlement cursor kept between refreshes (a copy), or `undefined` before any scan. */
  get cursor(): SettlementCursor | undefined {
    return this.#cursor ? structuredClone(this.#cursor) : undefined;
  }

  /**
   * Takes a snapshot now and returns the new state. Single flight: while a refresh runs,
   * this returns the running one. Never throws for network or chain failures: they become
   * the state's `lastError` (and the snapshot is cleared).
   */
  refresh(): Promise<IndexerState> {
    if (!this.#inflight) {
      this.#state = { ...this.#state, refreshing: true };
      this.#inflight = this.#run().finally(() => {
        this.#inflight = undefined;
      });
    }
    return this.#inflight;
  }

  /**
   * Starts the loop: a refresh now, then one every `refreshSecs` (measured from the start of
   * the previous one; at once when a refresh took longer). Idempotent.
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
      this.#state = {
        ...this.#state,
        nextRefreshAt: new Date(this.#clock().getTime() + delay),
      };
      this.#timer = setTimeout(() => {
        this.#loop = tick();
      }, delay);
    };
    this.#loop = tick();
  }

  /** Stops the loop and cancels a running refresh; resolves when it has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#abort.abort();
    await this.#loop?.catch(() => {});
    await this.#inflight?.catch(() => {});
    this.#abort = new AbortController();
    this.#state = { ...this.#state, nextRefreshAt: null };
  }

  /** Same as {@linkcode Refresher.stop}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  async #run(): Promise<IndexerState> {
    const takenAt = this.#clock();
    const signal = this.#abort.signal;
    const before = this.#state;
    try {
      const snapshot = await this.#take(takenAt, signal);
      // A refresh cancelled by stop() is discarded, whatever it managed to read.
      signal.throwIfAborted();
      this.#state = {
        ...this.#state,
        snapshot,
        lastSnapshotAt: takenAt,
        lastAttemptAt: takenAt,
        failing: false,
        refreshing: false,
      };
      if (before.failing || before.lastSnapshotAt === null) {
        this.#log(
          `indexer: serving${
            before.failing ? " again" : ""
          }: snapshot at block ${snapshot.chain.block.number}, ` +
            `${snapshot.live.length} live-verified of ${
              snapshot.chain.providers.filter((p) => p.bonded).length
            } bonded providers, ${
              snapshot.routers.filter((r) => r.reachable).length
            }/${snapshot.routers.length} routers reachable`,
        );
      }
    } catch (error) {
      const failure = signal.aborted
        ? new SnapshotError("aborted", "Cannot take a snapshot: the refresh was stopped")
        : this.#classify(error);
      if (failure.reason === "aborted") {
        this.#state = { ...this.#state, refreshing: false };
        return this.#state;
      }
      // Re-create the client (and re-check the chain id) once the endpoint is back.
      if (failure.reason === "chain_unreachable") this.#client = undefined;
      if (failure.cause instanceof ContractCheckError) {
        this.#options.onContractsRefused?.(failure.cause);
      }
      const message = this.#redact(
        failure.details ? `${failure.shortMessage} (${failure.details})` : failure.shortMessage,
      );
      this.#state = {
        ...this.#state,
        snapshot: null,
        lastAttemptAt: takenAt,
        lastError: { code: failure.reason, message, at: takenAt },
        failing: true,
        refreshing: false,
      };
      if (!before.failing || before.lastError?.message !== message) {
        this.#log(`indexer: not serving: ${message}`);
      }
    }
    return this.#state;
  }

  async #take(takenAt: Date, signal: AbortSignal): Promise<Snapshot> {
    const client = await this.#connect();
    signal.throwIfAborted();
    const chain = await readNetworkState(client, this.#options.contracts);
    signal.throwIfAborted();
    const [routers, settlements] = await Promise.all([
      this.#fetchRouters(chain, signal),
      this.#scan(client, chain, takenAt, signal),
    ]);
    return buildSnapshot({ takenAt, chain, routers, settlements });
  }

  async #connect(): Promise<ChainClient> {
    if (this.#client) return this.#client;
    const options = this.#options.client ?? {};
    const client = await createChainClient(this.#options.rpcUrl, {
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
        return { router, entries };
      } catch (error) {
        if (!(error instanceof RouterAdsError)) throw error;
        return { router, error: { code: error.reason, message: error.shortMessage } };
      }
    }));
  }

  async #scan(
    client: ChainClient,
    chain: NetworkState,
    takenAt: Date,
    signal: AbortSignal,
  ): Promise<SettlementIndex> {
    const confirmations = this.#options.confirmations ?? 12;
    const fromBlock = this.#options.scanFromBlock ?? 0n;
    const escrow = this.#options.contracts.escrow;
    const rescan = (reason: string) => {
      this.#cursor = undefined;
      const rescans = this.#state.rescans;
      this.#state = {
        ...this.#state,
        rescans: { count: rescans.count + 1, last: { at: takenAt, reason } },
      };
      this.#log(`indexer: rescanning settlements from block ${fromBlock}: ${reason}`);
    };
    const last = this.#cursor?.lastBlock;
    if (last && BigInt(last.number) > chain.block.number) {
      rescan(
        `the cursor counted block ${last.number}, the chain's head is ${chain.block.number}`,
      );
    }
    const options = { fromBlock, confirmations, toBlock: chain.block.number, signal };
    let scan;
    try {
      scan = await scanSettlements(client, escrow, { ...options, cursor: this.#cursor });
    } catch (error) {
      if (
        !(error instanceof SettlementScanError) ||
        (error.reason !== "reorg" && error.reason !== "bad_cursor") || !this.#cursor
      ) throw error;
      rescan(error.shortMessage);
      scan = await scanSettlements(client, escrow, options);
    }
    this.#cursor = scan.cursor;
    // With no confirmations, the scan ends at the pinned block itself: it must be the same
    // block, or the settlement figures would come from another fork than the snapshot's.
    const end = scan.cursor.lastBlock;
    if (
      end && BigInt(end.number) === chain.block.number &&
      end.hash.toLowerCase() !== chain.block.hash.toLowerCase()
    ) {
      throw new SnapshotError(
        "chain_error",
        `The chain reorganized during the refresh: block ${end.number} is ${end.hash} in the ` +
          `settlement scan and ${chain.block.hash} in the snapshot`,
      );
    }
    return { buckets: scan.buckets, scannedTo: scan.scannedTo, confirmations };
  }

  #classify(error: unknown): SnapshotError {
    if (error instanceof SnapshotError) return error;
    const where = `the chain at ${this.#rpcOrigin}`;
    if (error instanceof ContractCheckError) {
      return new SnapshotError("chain_error", error.shortMessage, { cause: error });
    }
    if (error instanceof ChainConfigError) {
      return error.reason === "unreachable"
        ? new SnapshotError("chain_unreachable", `${where} is unreachable: ${error.shortMessage}`, {
          cause: error,
        })
        : new SnapshotError("chain_error", `Cannot use ${where}: ${error.shortMessage}`, {
          cause: error,
        });
    }
    if (error instanceof ChainReadError || error instanceof SettlementScanError) {
      return error.reason === "rpc"
        ? new SnapshotError("chain_unreachable", `${where} is unreachable: ${error.shortMessage}`, {
          cause: error,
        })
        : new SnapshotError("chain_error", `Cannot use ${where}: ${error.shortMessage}`, {
          cause: error,
        });
    }
    const text = error instanceof NetError
      ? error.shortMessage
      : error instanceof Error
      ? error.message
      : String(error);
    console.error("indexer: unexpected refresh failure", error);
    return new SnapshotError("internal", `Cannot take a snapshot: unexpected failure: ${text}`, {
      cause: error,
    });
  }

  /** Reduces the RPC URL (which may carry an API key in its path) to its origin. */
  #redact(message: string): string {
    const url = this.#options.rpcUrl;
    if (url === this.#rpcOrigin || url === `${this.#rpcOrigin}/`) return message;
    return message.replaceAll(url, `${this.#rpcOrigin}/…`);
  }
}
