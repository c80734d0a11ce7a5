/**
 * The options of the refresher (`refresher.ts`), each with its default, and their range checks.
 *
 * @module
 */

import type { ChainClient, ChainClientOptions } from "../chain/client.ts";
import type { ContractCheckError } from "../chain/errors.ts";
import type { ChainContracts } from "../chain/types.ts";
import type { LogSink } from "../io/log.ts";
import type { StoreOpener } from "./history.ts";
import type { IndexerMetrics } from "./metrics.ts";
import type { IndexerEvents } from "./events.ts";
import type { TeeEvidenceOptions } from "./tee_evidence.ts";
import type { HistoryStore, RebuildPolicy, StoreError, StoreLocation } from "./store/mod.ts";
import type { ViewOptions } from "./views.ts";

/** Options of {@linkcode Refresher}. */
export interface RefresherOptions {
  /**
   * The JSON-RPC endpoint (http: or https:), or several: reads are spread over them and fail
   * over (`createChainClient`); the snapshot and the history share their budgets and waits.
   */
  rpcUrl: string | readonly string[];
  /**
   * Most JSON-RPC calls per second to each endpoint (a batch counts each call).
   *
   * @default {undefined} (no budget)
   */
  rpcMaxRps?: number;
  /** The four contract addresses. */
  contracts: ChainContracts;
  /**
   * Refresh interval of the loop (`Refresher.start`), seconds.
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
   * Where the settlement history is kept: an open store, a location (`{dataDir}` for the
   * embedded store, `{databaseUrl}` for PostgreSQL) opened once the chain id is known, or a
   * function that opens it.
   *
   * @default {a temporary embedded store, deleted when the refresher stops}
   */
  history?: HistoryStore | StoreLocation | StoreOpener;
  /**
   * With a location: when to discard the stored history and start again (`openStore`).
   *
   * @default {"never"}
   */
  rebuildHistory?: RebuildPolicy;
  /**
   * Receives a store error that stops the history for good (a corrupt store, one from a newer
   * version or of another chain, a data directory held by another process). `indexer/main.ts`
   * exits with it; by default the history stays stopped and `/health` says why.
   *
   * @default {undefined}
   */
  onHistoryFatal?: (error: StoreError) => void;
  /**
   * How often the history looks for new blocks (the writer) or for the writer's progress and
   * a free writer lock (a replica), ms.
   *
   * @default {min(2000, refreshSecs × 1000)}
   */
  historyPollMs?: number;
  /**
   * Windows of the views, which decide the epochs whose buckets the history reads.
   *
   * @default {{}}
   */
  views?: ViewOptions;
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
   * it serves again, and the settlement history's lines, each with its level (a logger's
   * `sink()`, `io/log.ts`; a plain `(message) => void` works too).
   *
   * @default {each message to stderr}
   */
  log?: LogSink;
  /**
   * The change stream: each replacement of the state publishes what changed (a new snapshot,
   * providers joining, leaving or failing verification, an epoch closing, the history moving,
   * the health turning); `GET /events` serves it.
   *
   * @default {undefined} (nothing published)
   */
  events?: IndexerEvents;
  /**
   * How the TEE-tier providers' evidence is checked (`tee_evidence.ts`: fetch, timeout, how
   * often, the roots), or `false` for not at all. Checks run beside the refresh loop.
   *
   * @default {{}} (checked every 10 minutes, against the pinned roots)
   */
  tee?: Omit<TeeEvidenceOptions, "onChange" | "clock"> | false;
  /**
   * Records refreshes, requests to the RPC endpoint (the snapshot's and the history's chain
   * clients) and routers' answers (`metrics.ts`); the service exposes them at `/metrics`.
   *
   * @default {undefined} (nothing recorded)
   */
  metrics?: IndexerMetrics;
}

/** Refuses an option out of its range. */
export function checkNumber(
  name: string,
  value: number | undefined,
  min: number,
  max: number,
): void {
  if (value !== undefined && (!Number.isFinite(value) || value < min || value > max)) {
    throw new RangeError(
      `Cannot create the refresher: ${name} must be from ${min} to ${max}, found ${value}`,
    );
  }
}
