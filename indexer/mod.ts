/**
 * The indexer: a read-only HTTP service (`GET /stats /models /providers /health`) that reports
 * what the network can serve, how much stake secures it and how much has been emitted. Every
 * listed provider is bonded on chain and served by a router with an ad whose commitment equals
 * its on-chain `adCommitment`; when the chain or all routers are unreachable, or the snapshot
 * is too old, the data endpoints answer 503 — never stale or invented numbers.
 *
 * - {@linkcode Refresher}: the snapshot loop (chain pinned to one block, routers' ads in
 *   parallel); single flight. Beside it, the settlement history keeps a persistent store
 *   ({@linkcode openStore}: embedded PGlite by default, PostgreSQL for replicas) up to date.
 *   Its {@linkcode IndexerState} holds the current {@linkcode Snapshot} and the
 *   {@linkcode HistoryState}.
 * - {@linkcode createIndexerHandler}: the pure request handler over the refresher's state;
 *   {@linkcode createIndexerService}: the same service with its route table and its OpenAPI
 *   3.1 document (generated from the route declarations, served at `GET /openapi.json`), the
 *   dashboard page at `GET /`, and cache-safe data answers (ETag, 304, a `max-age` that never
 *   reaches past the snapshot's freshness bound).
 * - {@linkcode IndexerMetrics}: the Prometheus metrics of `GET /metrics`, recorded by the
 *   refresher and the service.
 * - {@linkcode parseIndexerConfig}: flags and environment (`indexer/main.ts` runs it all).
 *
 * `docs/indexer.md` documents every field, the error rules and the reputation formula.
 *
 * @example Serve the indexer
 * ```ts ignore
 * import { createIndexerHandler, Refresher } from "@net/consumer/indexer";
 *
 * const refresher = new Refresher({
 *   rpcUrl: "http://127.0.0.1:8545",
 *   contracts: {
 *     registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
 *     staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
 *     emission: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
 *     escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
 *   },
 *   refreshSecs: 30,
 *   history: { dataDir: "/var/lib/net-stats" },
 * });
 * refresher.start();
 * Deno.serve({ hostname: "127.0.0.1", port: 8088 }, createIndexerHandler({
 *   state: () => refresher.state,
 *   readProviderHistory: (address) => refresher.readProviderHistory(address),
 * }));
 * ```
 *
 * @example Answer a request from a state (no server, no chain)
 * ```ts
 * import { createIndexerHandler, initialState } from "@net/consumer/indexer";
 *
 * const handler = createIndexerHandler({ state: () => initialState(30, 60) });
 * const response = await handler(new Request("http://localhost/health"));
 * console.assert(response.status === 503); // starting: no snapshot yet
 * console.assert((await response.json()).status === "starting");
 * ```
 *
 * @module
 */

export {
  type BindAddress,
  type IndexerConfig,
  type ParsedIndexerArgs,
  parseIndexerConfig,
} from "./config.ts";
export type { RouterAdsFailure, SnapshotFailure } from "./errors.ts";
export {
  createIndexerHandler,
  createIndexerService,
  type IndexerHandlerOptions,
} from "./handler.ts";
export {
  IndexerMetrics,
  type IndexerMetricsOptions,
  type RefreshOutcome,
  type RpcClientName,
  type RpcErrorReason,
} from "./metrics.ts";
export { Refresher, type RefresherOptions } from "./refresher.ts";
export type { OpenApiDocument, Service } from "../http/mod.ts";
export type { LiveProvider, RejectionExample, RouterReport, Snapshot } from "./snapshot.ts";
export type { HistoryFailure, HistoryRescan, HistoryState, StoreOpener } from "./history.ts";
export type { ProviderHistoryAnswer } from "./handler.ts";
export {
  defaultDataDir,
  type HistoryStore,
  openStore,
  type OpenStoreOptions,
  StoreError,
  type StoreFailure,
  type StoreIdentity,
  type StoreLocation,
} from "./store/mod.ts";
export { type IndexerState, initialState, type RefreshFailure, type Rescan } from "./state.ts";
export type { Capacity, Metrics, RejectionReason } from "./verify_entry.ts";
export type { ViewOptions } from "./views.ts";
