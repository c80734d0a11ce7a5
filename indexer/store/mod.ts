/**
 * The indexer's persistent settlement history: the scan cursor, the confirmed volume per
 * (provider, epoch), and the unconfirmed window with its block hashes, so a restart resumes
 * where the scan stopped and a reorg inside the window is undone exactly.
 *
 * Two backends on one code path (the same schema, migrations and SQL): PGlite (PostgreSQL in
 * WebAssembly) in a data directory by default, and a PostgreSQL server when a database URL is
 * given. `docs/store.md` describes the schema, the window and reorg rules, and the writer lock.
 *
 * @example
 * ```ts ignore
 * import { defaultDataDir, openStore } from "./mod.ts";
 *
 * await using store = await openStore({ dataDir: defaultDataDir() }, {
 *   chainId: 31337,
 *   escrow: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
 *   scanFromBlock: 0n,
 * });
 * const state = await store.state();
 * console.log(`scan continues at block ${state.cursor.nextBlock}`);
 * ```
 *
 * @module
 */

export { defaultDataDir, type DefaultDataDirOptions } from "./data_dir.ts";
export { StoreError, type StoreFailure } from "./errors.ts";
export { type Migration, MIGRATIONS, SCHEMA_VERSION } from "./schema.ts";
export {
  DEFAULT_SCHEMA,
  openStore,
  type OpenStoreOptions,
  type RebuildPolicy,
  type StoreLocation,
  storeMayExist,
} from "./store.ts";
export type {
  BlockHash,
  CanonicalHashes,
  ChunkCommit,
  CommitResult,
  EpochRange,
  EpochTotals,
  Hex,
  HistoryStore,
  Page,
  PageOptions,
  ProviderTotals,
  ReconcileResult,
  Settlement,
  SettlementBucket,
  StoreCursor,
  StoreIdentity,
  StoreState,
} from "./types.ts";
