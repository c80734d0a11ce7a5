/**
 * The settlement history beside the snapshot loop: a loop of its own that keeps the persistent
 * store (`store/`) up to date with the Escrow's `Settled` logs and reads the figures the API
 * serves from it. It never makes the chain-state endpoints fail: whatever happens here (the
 * store unreachable, a block no endpoint can return, a deep reorg) is shown on `/health`, and
 * the settlement figures are `null` until the history has caught up again.
 *
 * - **One writer.** The process holding the store's writer lock scans and commits; every other
 *   replica on the same PostgreSQL database only reads, and tries to take the lock on each pass
 *   (so one of them takes over within a poll interval of the writer's death).
 * - **A pass** (writer): the chain head, the stored hashes checked against the chain (a fork in
 *   the unconfirmed window undone; a deeper one discards the history, which is scanned again),
 *   then `eth_getLogs` from the store's next block to the head, each chunk committed with its
 *   block hashes as soon as it is read. A block that cannot be read even alone is reported by
 *   number, and the scan waits there (retrying on every pass).
 * - **Figures** are read again only when the store's confirmed block moved (or older epochs
 *   are needed), as one consistent set.
 *
 * @module
 */

import {
  type ChainClient,
  type ChainClientOptions,
  createChainClient,
  RpcEndpoints,
} from "../chain/client.ts";
import { ChainConfigError, SettlementScanError } from "../chain/errors.ts";
import { DEFAULT_MAX_SETTLEMENTS } from "../chain/settlements.ts";
import type { Address } from "viem";
import { compactHeap } from "../io/heap.ts";
import type { LogSink } from "../io/log.ts";
import { classifyFailure } from "./_history_failure.ts";
import { type HistoryState, initialHistoryState } from "./history_state.ts";
import { type HistoryFigures, readFigures, readProviderBuckets } from "./_history_data.ts";
import { scanPass, startEarlyScan } from "./_history_scan.ts";
import type { ScanPipeline } from "./_history_pipeline.ts";
import {
  type BlockHash,
  type HistoryStore,
  type SettlementBucket,
  type StoreCursor,
  StoreError,
  type StoreIdentity,
} from "./store/mod.ts";

/** Opens the store once the chain id is known. */
export type StoreOpener = (identity: StoreIdentity) => Promise<HistoryStore>;

/** Options of {@linkcode History}. */
export interface HistoryOptions {
  /** The JSON-RPC endpoint, several, or the endpoints shared with the snapshot's client. */
  rpcUrl: string | readonly string[] | RpcEndpoints;
  /** Options of the history's own chain client (it never shares a batch with the snapshot). */
  client?: ChainClientOptions;
  /** The Escrow whose `Settled` logs are indexed. */
  escrow: Address;
  /** The first block of the scan. */
  scanFromBlock: bigint;
  /** Confirmation depth, blocks. */
  confirmations: number;
  /** The store, or how to open it once the chain id is known. */
  store: HistoryStore | StoreOpener;
  /**
   * Whether the store the opener opens will be a new one (nothing stored to resume from, e.g.
   * `!storeMayExist(location)`): the first pass then starts reading the chain from
   * `scanFromBlock` while the store is being created, and commits what it read once it is
   * open. Asked once, before the first open.
   *
   * @default {() => Promise.resolve(false)}
   */
  storeIsNew?: () => Promise<boolean>;
  /** Largest `eth_getLogs` range, blocks. @default {10_000} */
  maxChunkSize?: number;
  /**
   * Settlements per step of the scan: an `eth_getLogs` answer with more is committed in steps
   * of at most this many, and the next request sized to about this many (bounds the memory a
   * scan holds at once). @default {DEFAULT_MAX_SETTLEMENTS}
   */
  maxSettlements?: number;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /**
   * Receives one line per rescan, role change, unreadable block and failure, with its level.
   *
   * @default {each message to stderr}
   */
  log?: LogSink;
  /** Receives a store error this process cannot get past (e.g. a corrupt store). */
  onFatal?: (error: StoreError) => void;
}

/**
 * Steps (of the scan's settlement budget) a pass commits before the main isolate's heap is
 * compacted once it caught up (`io/heap.ts`): a first scan or a long catch-up, never the
 * refresh of a live chain.
 */
const COMPACT_AFTER_STEPS = 10;

/**
 * Steps one commit may merge (`scanPass`'s `commitSteps`): as many as were read while the last
 * commit ran, or while a new store was being created; what a batch holds is bounded by its
 * number of sums (`_history_pipeline.ts`), not by its settlements.
 */
const COMMIT_STEPS = Infinity;

/**
 * Steps a new store's early scan reads between two heap compactions while the store is being
 * created (`compactHeap`: a full collection of a heap of mostly garbage, a few ms).
 */
const EARLY_COMPACT_STEPS = 16;

/** Store failures that no retry fixes: the history stops (and `onFatal` is told). */
const FATAL: ReadonlySet<string> = new Set([
  "corrupt",
  "newer_schema",
  "mismatch",
  "locked",
  "invalid_input",
]);

/** The settlement history: its store, its writer pass, its figures. */
export class History {
  readonly #options: HistoryOptions;
  readonly #clock: () => Date;
  readonly #log: LogSink;
  readonly #endpoints: RpcEndpoints;
  #store: HistoryStore | undefined;
  #ownStore = false;
  #storeIsNew: (() => Promise<boolean>) | undefined;
  /** The chain's head when the last scan pass left the store caught up (`scanPass`). */
  #lastHead: BlockHash | undefined;
  /** The cursor the figures were last read at. */
  #cursor: StoreCursor | undefined;
  #client: ChainClient | undefined;
  #state: HistoryState;
  /** The first epoch the views need; `undefined` until the first snapshot says. */
  #fromEpoch: bigint | undefined;
  #inflight: Promise<HistoryState> | undefined;
  #abort = new AbortController();
  /** The first pass's scan, begun while a new store is being created. */
  #early: ScanPipeline | undefined;
  /** A pass scanned many steps and caught up: the heap is compacted once its figures are read. */
  #compact = false;
  #listeners = new Set<(state: HistoryState) => void>();

  /** Creates the history; nothing happens until {@linkcode History.pass}. */
  constructor(options: HistoryOptions) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
    this.#log = options.log ?? ((message) => console.error(message));
    const rpc = options.rpcUrl;
    this.#endpoints = rpc instanceof RpcEndpoints
      ? rpc
      : new RpcEndpoints(typeof rpc === "string" ? [rpc] : rpc, { clock: options.clock });
    this.#state = initialHistoryState(options.confirmations, options.scanFromBlock);
    if (typeof options.store !== "function") this.#store = options.store;
    this.#storeIsNew = options.storeIsNew;
  }

  /** The current state. */
  get state(): HistoryState {
    return this.#state;
  }

  /** The first epoch whose buckets the figures must hold (the views' recent epochs). */
  set fromEpoch(epoch: bigint) {
    this.#fromEpoch = epoch;
  }

  /** Calls `listener` with every new state; returns the unsubscribe function. */
  subscribe(listener: (state: HistoryState) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #set(patch: Partial<HistoryState>): void {
    this.#state = { ...this.#state, ...patch };
    for (const listener of this.#listeners) listener(this.#state);
  }

  /**
   * One pass: open the store if needed, take the writer lock if free, scan to the head (writer)
   * or read the store's position (reader), and read the figures again if they moved. Single
   * flight: while a pass runs, this returns it. Never throws: failures become the state's
   * `lastError`.
   */
  pass(): Promise<HistoryState> {
    this.#inflight ??= this.#run().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  /**
   * One provider's whole history and the confirmed block it was read at, or `null` while the
   * store is not open.
   *
   * @throws {StoreError} when the read fails.
   */
  async readProvider(
    address: string,
  ): Promise<{ buckets: SettlementBucket[]; at: BlockHash | null } | null> {
    const store = this.#store;
    if (!store || this.#state.role === null) return null;
    return await readProviderBuckets(store, address.toLowerCase() as `0x${string}`);
  }

  /** Cancels a running pass and closes the store if this history opened it. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#inflight?.catch(() => {});
    this.#abort = new AbortController();
    if (this.#ownStore) {
      await this.#store?.close();
      this.#store = undefined;
      this.#lastHead = undefined;
      this.#cursor = undefined;
    }
  }

  async #run(): Promise<HistoryState> {
    if (this.#state.stopped) return this.#state;
    const signal = this.#abort.signal;
    try {
      const store = await this.#open();
      if (!store) return this.#state;
      const writer = store.writer || await store.tryBecomeWriter();
      this.#setRole(writer ? "writer" : "reader", store);
      const quiet = writer && await this.#scan(store, signal);
      // One consistent position: the cursor the figures were read at (a replica's figures may
      // be newer than the cursor it read first, when the writer committed in between). After
      // a quiet pass (nothing changed on the chain) the last one, without reading the store.
      let cursor = quiet && this.#cursor ? this.#cursor : (await store.state()).cursor;
      const read = await this.#readFigures(store, cursor.confirmed);
      if (read) cursor = read.cursor;
      this.#cursor = cursor;
      this.#set({
        confirmed: cursor.confirmed,
        lastBlock: cursor.lastBlock,
        headBlock: writer ? this.#state.headBlock : cursor.head,
        ...(read ? { figures: read.figures } : {}),
      });
      if (this.#state.failing) {
        this.#log("indexer: the settlement history is running again", { level: "info" });
      }
      this.#set({ failing: false, ...(writer ? {} : { unreadable: null }) });
    } catch (error) {
      if (!signal.aborted) await this.#fail(error);
    } finally {
      await this.#early?.cancel();
      this.#early = undefined;
    }
    if (this.#compact) {
      // After the figures (which the first full answer waits for), not before them.
      this.#compact = false;
      compactHeap();
    }
    return this.#state;
  }

  async #open(): Promise<HistoryStore | undefined> {
    if (this.#store) return this.#store;
    const client = await this.#connect();
    const opener = this.#options.store as StoreOpener;
    // Asked once: a store reopened later (a lost connection) has what was committed.
    const isNew = await this.#storeIsNew?.().catch(() => false);
    this.#storeIsNew = undefined;
    const opening = opener({
      chainId: client.chain.id,
      escrow: this.#options.escrow.toLowerCase() as `0x${string}`,
      scanFromBlock: this.#options.scanFromBlock,
    });
    opening.catch(() => {}); // awaited below, after the early scan started
    if (isNew) {
      // Creating a store takes a second or more: the scan reads meanwhile (`startEarlyScan`).
      this.#early = await startEarlyScan(client, {
        escrow: this.#options.escrow,
        scanFromBlock: this.#options.scanFromBlock,
        confirmations: this.#options.confirmations,
        maxChunkSize: this.#options.maxChunkSize ?? 10_000,
        maxSettlements: this.#options.maxSettlements,
        signal: this.#abort.signal,
        onHead: (head) => this.#set({ headBlock: head }),
        // What the reading grows (the heap, tens of MiB) is given back every few steps while
        // the store is created, and once the head is reached, so it is small when the
        // creation peaks.
        onRead: (steps) => {
          if (steps % EARLY_COMPACT_STEPS === 0 && this.#store === undefined) compactHeap();
        },
      }).catch(() => undefined);
      const early = this.#early;
      void early?.read.then(() => {
        if (this.#early === early && this.#store === undefined) compactHeap();
      });
    }
    this.#store = await opening;
    this.#ownStore = true;
    return this.#store;
  }

  async #connect(): Promise<ChainClient> {
    if (this.#client) return this.#client;
    this.#client = await createChainClient(this.#endpoints, this.#options.client ?? {});
    return this.#client;
  }

  #setRole(role: "writer" | "reader", store: HistoryStore): void {
    if (this.#state.role !== role) {
      if (this.#state.role !== null || role === "reader") {
        this.#log(`indexer: settlement history: this process is now the ${role}`, {
          level: "info",
        });
      }
      this.#set({ role, store: { backend: store.backend, location: store.location } });
    }
  }

  /** One scan pass; true when it was quiet (nothing changed on the chain, the store unread). */
  async #scan(store: HistoryStore, signal: AbortSignal): Promise<boolean> {
    const client = await this.#connect();
    const lastHead = this.#lastHead;
    this.#lastHead = undefined;
    let pass;
    let committed = 0;
    const early = this.#early;
    this.#early = undefined; // the pass adopts it or cancels it
    try {
      pass = await scanPass(store, client, {
        lastHead,
        escrow: this.#options.escrow,
        confirmations: this.#options.confirmations,
        maxChunkSize: this.#options.maxChunkSize ?? 10_000,
        maxSettlements: this.#options.maxSettlements,
        commitSteps: COMMIT_STEPS,
        early,
        signal,
        progress: {
          onHead: (head) => this.#set({ headBlock: head }),
          onCommit: (cursor, settlements) => {
            committed += settlements;
            this.#set({
              confirmed: cursor.confirmed,
              lastBlock: cursor.lastBlock,
              ...(this.#state.unreadable ? { unreadable: null } : {}),
            });
          },
          onRescan: (reason) => this.#rescan(reason),
        },
      });
    } catch (error) {
      if (!(error instanceof SettlementScanError) || error.reason !== "range_limit") throw error;
      const { cursor } = await store.state();
      const block = cursor.nextBlock;
      if (this.#state.unreadable?.block !== block) {
        this.#log(
          `indexer: settlement history waits at block ${block}: ${error.shortMessage}`,
          { level: "warn" },
        );
        this.#set({ unreadable: { block, message: error.shortMessage, since: this.#clock() } });
      }
      return false;
    }
    if (this.#state.unreadable) this.#set({ unreadable: null });
    this.#lastHead = pass.caughtUp;
    // A pass that read many steps and caught up (a first scan, a long catch-up) leaves its
    // garbage and a grown heap, tens of MiB: given back now, once, rather than kept while idle.
    const budget = this.#options.maxSettlements ?? DEFAULT_MAX_SETTLEMENTS;
    if (pass.caughtUp && committed >= COMPACT_AFTER_STEPS * budget) this.#compact = true;
    return pass.quiet;
  }

  #rescan(reason: string): void {
    const at = this.#clock();
    this.#log(
      `indexer: rescanning settlements from block ${this.#options.scanFromBlock}: ${reason}`,
      { level: "warn" },
    );
    this.#set({
      rescans: { count: this.#state.rescans.count + 1, last: { at, reason } },
      figures: null,
    });
  }

  /** Reads the figures again when the confirmed block moved (or older epochs are needed). */
  async #readFigures(
    store: HistoryStore,
    confirmed: BlockHash | null,
  ): Promise<{ figures: HistoryFigures; cursor: StoreCursor } | undefined> {
    // Not before a snapshot said which epochs the views need (all of them could be many).
    const fromEpoch = this.#fromEpoch;
    if (fromEpoch === undefined) return undefined;
    const figures = this.#state.figures;
    const at = figures?.at ?? null;
    const moved = at === null
      ? confirmed !== null || figures === null
      : confirmed === null || at.number !== confirmed.number || at.hash !== confirmed.hash;
    if (!moved && figures!.fromEpoch <= fromEpoch) return undefined;
    return await readFigures(store, fromEpoch);
  }

  async #fail(error: unknown): Promise<void> {
    const failure = classifyFailure(error, {
      at: this.#clock(),
      redact: (message) => this.#endpoints.redact(message),
      log: this.#log,
    });
    const store = this.#store;
    if (error instanceof StoreError) {
      if (FATAL.has(error.reason)) {
        this.#set({ stopped: failure.message, role: null });
        this.#log(`indexer: the settlement history stopped: ${failure.message}`, {
          level: "error",
          fields: { code: failure.code },
        });
        this.#options.onFatal?.(error);
      } else if (error.reason === "lost_lock" || error.reason === "conflict") {
        this.#set({ role: "reader" });
      } else if (error.reason === "failed" || error.reason === "closed") {
        // A lost connection: reopen on the next pass (another replica may write meanwhile).
        if (this.#ownStore && store) {
          this.#store = undefined;
          this.#lastHead = undefined;
          this.#cursor = undefined;
          await store.close().catch(() => {});
          this.#set({ role: null });
        }
      }
    }
    if (error instanceof ChainConfigError && error.reason === "unreachable") {
      this.#client = undefined;
    }
    if (!this.#state.failing || this.#state.lastError?.message !== failure.message) {
      this.#log(`indexer: settlement history: ${failure.message}`, {
        level: "warn",
        fields: { code: failure.code },
      });
    }
    this.#set({ failing: true, lastError: failure });
  }
}

export type { HistoryFigures, HistorySync, Volume } from "./_history_data.ts";
export {
  type HistoryFailure,
  type HistoryRescan,
  type HistoryState,
  initialHistoryState,
} from "./history_state.ts";
