/**
 * The types of the settlement-history store: what a chunk commit carries, what the reads
 * return, and the store's interface itself ({@linkcode HistoryStore}).
 *
 * Amounts, tokens, epochs and block numbers are `bigint`; counts of settlements are `number`
 * (exact up to 2^53). Addresses and hashes are lower-case `0x` hex.
 *
 * @module
 */

/** A 0x-prefixed hex string. */
export type Hex = `0x${string}`;

/** What the store belongs to; checked on every open. */
export interface StoreIdentity {
  /** The chain id. */
  chainId: number;
  /** The Escrow contract whose `Settled` logs are indexed (lower case). */
  escrow: Hex;
  /** The first block of the scan (the Escrow's deployment block). */
  scanFromBlock: bigint;
}

/** A block number with its hash. */
export interface BlockHash {
  /** The block number. */
  number: bigint;
  /** Its hash (32 bytes). */
  hash: Hex;
}

/** One `Settled` event as the scan read it. */
export interface Settlement {
  /** The block it was emitted in. */
  block: bigint;
  /** The provider paid. */
  provider: Hex;
  /** The epoch of the Emission clock at settlement. */
  epoch: bigint;
  /** The settled amount (uint256). */
  amount: bigint;
  /** The settled tokens (uint256). */
  tokens: bigint;
  /**
   * The consumer whose voucher paid it (`VoucherRedeemed`), or `null`/absent for a settlement
   * by a trusted settler.
   */
  consumer?: Hex | null;
  /**
   * How many settlements this entry stands for, when a scan summed several of the same
   * provider, epoch and consumer (and window block) into one: `amount` and `tokens` are then
   * their sums. A whole number from 1 to 2^53 − 1.
   *
   * @default {1}
   */
  count?: number;
}

/** One scanned range, committed by {@linkcode HistoryStore.commitChunk} in one transaction. */
export interface ChunkCommit {
  /** First block of the range: must be the cursor's `nextBlock`. */
  from: bigint;
  /** Last block of the range, inclusive: `from ≤ to ≤ head`. */
  to: bigint;
  /** The chain head the confirmation depth is measured from. */
  head: bigint;
  /** Every `Settled` event of the range, in any order. */
  settlements: readonly Settlement[];
  /**
   * Block hashes: exactly the blocks of the range above `head − confirmations` (the window),
   * plus the last confirmed block of the range (`min(to, head − confirmations)`) when the range
   * reaches it. So `to`'s hash is always there.
   */
  hashes: readonly BlockHash[];
  /**
   * The chunk size that worked, saved in the cursor for the next start.
   *
   * @default {the cursor's current chunk size}
   */
  chunkSize?: number;
}

/** Where the scan stands. */
export interface StoreCursor {
  /** The next block to scan. */
  nextBlock: bigint;
  /** The last block scanned and its hash (in the window, or the last confirmed), or `null`. */
  lastBlock: BlockHash | null;
  /** The last block whose settlements are in the confirmed figures, and its hash, or `null`. */
  confirmed: BlockHash | null;
  /** The head the last commit measured confirmations from, or `null` before any commit. */
  head: bigint | null;
  /** The chunk size saved by the last commit. */
  chunkSize: number;
}

/** The whole state of the store, for `/health` and for the scan. */
export interface StoreState {
  /** What it belongs to. */
  identity: StoreIdentity;
  /** Its schema version. */
  schemaVersion: number;
  /** Where the scan stands. */
  cursor: StoreCursor;
  /** The unconfirmed window: blocks held with their hashes, and the settlements in them. */
  window: { blocks: number; settlements: number; from: bigint | null; to: bigint | null };
  /** When the last commit (or reorg undo) happened, or `null`. */
  updatedAt: Date | null;
}

/** What one commit did. */
export interface CommitResult {
  /** The cursor after the commit. */
  cursor: StoreCursor;
  /** Settlements of the chunk counted as confirmed at once. */
  confirmed: number;
  /** Settlements of the chunk put into the window. */
  windowed: number;
  /** Window blocks that became confirmed and were folded into the buckets. */
  folded: number;
}

/**
 * Reads the chain's canonical hashes of the given blocks (`null` for a block the chain does not
 * have), in the same order. The indexer batches them into one JSON-RPC request.
 */
export type CanonicalHashes = (blocks: readonly bigint[]) => Promise<readonly (Hex | null)[]>;

/** What {@linkcode HistoryStore.reconcile} found and did. */
export type ReconcileResult =
  /** The last scanned block is still canonical (so is everything below it); nothing changed. */
  | { kind: "unchanged"; cursor: StoreCursor }
  /** A fork inside the window: everything above the last common block was undone. */
  | {
    kind: "rewound";
    /** The last block both forks share; the scan continues after it. */
    forkBlock: bigint;
    /** Window blocks removed. */
    blocks: number;
    /** Settlements removed with them. */
    settlements: number;
    /** The cursor after the undo. */
    cursor: StoreCursor;
  }
  /**
   * A confirmed block changed (a reorg deeper than the confirmation depth). Nothing was
   * changed: the confirmed figures cannot be undone; the operator rebuilds the store.
   */
  | {
    kind: "deep_reorg";
    /** The confirmed block whose hash changed. */
    block: bigint;
    /** The hash the store holds for it. */
    stored: Hex;
    /** The chain's hash now, or `null` when the chain no longer has that block. */
    found: Hex | null;
  };

/** Confirmed settled volume of one provider in one epoch. */
export interface SettlementBucket {
  /** The provider (lower case). */
  provider: Hex;
  /** The epoch. */
  epoch: bigint;
  /** Sum of settled amounts. */
  amount: bigint;
  /** Sum of settled tokens. */
  tokens: bigint;
  /** Number of `Settled` events. */
  settlements: number;
}

/** Confirmed settled volume of the whole network in one epoch. */
export interface EpochTotals {
  /** The epoch. */
  epoch: bigint;
  /** Sum of settled amounts. */
  amount: bigint;
  /** Sum of settled tokens. */
  tokens: bigint;
  /** Number of `Settled` events. */
  settlements: number;
  /** Providers paid at least once in the epoch. */
  providers: number;
  /** Sum of the amounts paid by consumers' vouchers (`VoucherRedeemed`). */
  signedAmount: bigint;
  /** Number of those settlements. */
  signedSettlements: number;
  /** Distinct consumers who paid with a voucher in the epoch. */
  consumers: number;
}

/** Confirmed settled volume of one provider over a range of epochs (or all time). */
export interface ProviderTotals {
  /** The provider (lower case). */
  provider: Hex;
  /** Sum of settled amounts. */
  amount: bigint;
  /** Sum of settled tokens. */
  tokens: bigint;
  /** Number of `Settled` events. */
  settlements: number;
  /** Epochs with at least one settlement. */
  epochs: number;
  /** The first epoch with a settlement. */
  firstEpoch: bigint;
  /** The last epoch with a settlement. */
  lastEpoch: bigint;
}

/** A page of a keyset-paginated read. */
export interface Page<T> {
  /** The items, in the requested order. */
  items: T[];
  /** Pass it as `after` to get the next page; `null` on the last page. */
  next: bigint | null;
}

/** Options of a paginated read, keyed by epoch. */
export interface PageOptions {
  /**
   * Start after this epoch (the `next` of the previous page).
   *
   * @default {undefined} (from the first epoch in the order)
   */
  after?: bigint;
  /**
   * Items per page, 1–10,000.
   *
   * @default {100}
   */
  limit?: number;
  /**
   * Oldest first, or newest first.
   *
   * @default {"asc"}
   */
  order?: "asc" | "desc";
}

/** An inclusive range of epochs; an open end is unbounded. */
export interface EpochRange {
  /** The first epoch, inclusive. */
  fromEpoch?: bigint;
  /** The last epoch, inclusive. */
  toEpoch?: bigint;
}

/**
 * The persistent settlement history of one chain's Escrow: the scan cursor, the confirmed
 * buckets per (provider, epoch), and the unconfirmed window with its block hashes.
 * `docs/store.md` describes the rules.
 */
export interface HistoryStore extends AsyncDisposable {
  /** `embedded` (PGlite in a data directory) or `postgres`. */
  readonly backend: "embedded" | "postgres";
  /** The data directory, or the database URL without its password. */
  readonly location: string;
  /** What the store belongs to. */
  readonly identity: StoreIdentity;
  /** The confirmation depth commits use. */
  readonly confirmations: number;
  /** Whether this store holds the writer lock (as far as it knows; commits re-check it). */
  readonly writer: boolean;
  /**
   * Tries to take the writer lock (PostgreSQL: a session-level advisory lock, released when
   * this connection ends). Returns whether this store is the writer now.
   */
  tryBecomeWriter(): Promise<boolean>;
  /** The cursor, window and identity. */
  state(): Promise<StoreState>;
  /**
   * Adds one scanned range in one transaction: confirmed settlements into the buckets, the
   * others into the window with their block hashes; folds window blocks that became confirmed;
   * moves the cursor.
   *
   * @throws {StoreError} `not_writer`, `lost_lock`, `conflict` (`from` is not the cursor's
   * next block), `invalid_input`, `newer_schema` (a newer process migrated the store), `failed`.
   */
  commitChunk(chunk: ChunkCommit): Promise<CommitResult>;
  /**
   * Compares the stored hashes with the chain's and undoes the window above a fork. Call it
   * before each scan.
   *
   * @throws {StoreError} `not_writer`, `lost_lock`, `conflict`, `failed`.
   */
  reconcile(canonical: CanonicalHashes): Promise<ReconcileResult>;
  /**
   * Discards the whole history (confirmed figures and window) and moves the cursor back to
   * the first block, in one transaction: what the indexer does after a reorg deeper than the
   * confirmation depth, before scanning again.
   *
   * @throws {StoreError} `not_writer`, `lost_lock`, `newer_schema`, `failed`.
   */
  reset(): Promise<StoreCursor>;
  /** Network-wide confirmed volume per epoch, a page at a time. */
  epochs(page?: PageOptions): Promise<Page<EpochTotals>>;
  /** One provider's confirmed volume per epoch, a page at a time. */
  providerHistory(provider: Hex, page?: PageOptions): Promise<Page<SettlementBucket>>;
  /** Every provider's confirmed totals over a range of epochs (all time by default), by address. */
  providerTotals(range?: EpochRange): Promise<ProviderTotals[]>;
  /** Every confirmed bucket in a range of epochs, sorted by provider, then epoch. */
  buckets(range: EpochRange): Promise<SettlementBucket[]>;
  /** Releases the locks and the connection; idempotent. */
  close(): Promise<void>;
}
