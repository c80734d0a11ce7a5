/**
 * The parts of the indexer's answers the dashboard reads (`docs/indexer.md`), written down as
 * the page expects them. Fields the page does not read are left out; fields that later
 * versions make `null` (settlement figures before the history has caught up) or add
 * (pagination, `/epochs`) are optional or nullable here, so an older and a newer indexer both
 * render.
 *
 * @module
 */

/** A decimal string: token amounts, prices, blocks, epochs (uint256 do not fit a number). */
export type Decimal = string;

/** `{code, message}`: why something is not available. */
export interface ErrorDetail {
  /** A stable code, e.g. `chain_unreachable`. */
  code: string;
  /** What failed, what was found, what was expected. */
  message: string;
}

/** The network's error shape: `{"error": {code, message}}`. */
export interface ErrorBody {
  /** The error. */
  error: ErrorDetail;
}

/** How far the indexer's settlement history is (`history` of the lists, `/stats`' settlements). */
export interface HistoryInfo {
  /** Whether the settlement figures are served (the history has caught up with the snapshot). */
  synced: boolean;
  /** The last block the figures count, or `null`. */
  scanned_to_block: Decimal | null;
  /** The chain head the history last measured, or `null`. */
  head_block: Decimal | null;
  /** The confirmation depth, blocks. */
  confirmations: number;
}

/** Which block and when. */
export interface SnapshotInfo {
  /** The block every chain value was read at. */
  block_number: Decimal;
  /** Its timestamp, Unix seconds. */
  block_timestamp: Decimal;
  /** When the refresh started (RFC 3339). */
  taken_at: string;
}

/** The `/stats` body. */
export interface Stats {
  /** Provider counts. */
  providers: { registered: number; bonded: number; live_verified: number };
  /** Validators in the Registry. */
  validators: number;
  /** Total stake. */
  staked_security: Decimal;
  /** The minimum provider bond. */
  min_provider_bond: Decimal;
  /** Routers in the Registry and how many answered. */
  routers: { total: number; reachable: number };
  /** Approved TEE measurement ids. */
  tee_measurements: string[];
  /** Emission totals and the schedule. */
  emission: {
    total_emitted: Decimal;
    cap: Decimal;
    current_epoch: Decimal;
    current_epoch_reward: Decimal;
    emitted_epochs: Decimal;
    schedule: {
      rule: string;
      genesis_time: Decimal;
      epoch_length: Decimal;
      initial_reward: Decimal;
      halving_interval: Decimal;
    };
  };
  /** Advertised capacity of the live-verified providers. */
  capacity: { max_concurrency: number; available_concurrency: number };
  /** Distinct models served. */
  models: number;
  /** All settled volume counted so far (`null` figures until the history is synced). */
  settlements: Partial<HistoryInfo> & {
    amount: Decimal | null;
    tokens: Decimal | null;
    count: number | null;
    /** Of the amount, what consumers paid with vouchers they signed (absent from older indexers). */
    signed_amount?: Decimal | null;
    /** Settlements paid by vouchers. */
    signed_count?: number | null;
    /** Distinct consumers who paid with a voucher in the current epoch. */
    paying_consumers?: number | null;
  };
  /** The snapshot. */
  snapshot: SnapshotInfo;
}

/** One entry of `/models`. */
export interface Model {
  /** `maker/model`. */
  model: string;
  /** The cheapest offer, per 1M tokens in the smallest unit. */
  cheapest_price: { input: Decimal; output: Decimal; provider: string; tier: string };
  /** Live-verified providers serving it. */
  providers: number;
  /** Of those, per tier. */
  tiers: { verified: number; tee: number };
  /** Mean reputation, or `null`. */
  reputation: number | null;
  /** Mean observed tokens per second. */
  tokens_per_sec: number;
  /** The largest context length offered. */
  context_length: number;
}

/** Settled volume of one epoch of a provider (`settled.epochs`). */
export interface EpochVolume {
  /** The epoch. */
  epoch: Decimal;
  /** Settled amount. */
  amount: Decimal;
  /** Settled tokens. */
  tokens: Decimal;
  /** Settlements. */
  settlements: number;
}

/** One epoch of `/epochs`: its reward, and the network's settled volume (`null` until synced). */
export interface Epoch {
  /** The epoch. */
  epoch: Decimal;
  /** Its emission reward. */
  reward: Decimal;
  /** Settled amount, every provider; `null` until the history is synced. */
  amount: Decimal | null;
  /** Settled tokens; `null` until synced. */
  tokens: Decimal | null;
  /** Settlements; `null` until synced. */
  settlements: number | null;
  /** Of the amount, what consumers' vouchers paid; `null` until synced. */
  signed_amount?: Decimal | null;
  /** Distinct consumers who paid with a voucher in it; `null` until synced. */
  paying_consumers?: number | null;
}

/** One entry of `/providers`. */
export interface Provider {
  /** Its address. */
  provider: string;
  /** `verified` or `tee`. */
  tier: string;
  /** Its stake. */
  stake: Decimal;
  /** Advertised capacity. */
  capacity: { max_concurrency: number; available_concurrency: number };
  /** Observed throughput. */
  metrics?: { tokens_per_sec: number };
  /** Settled volume: recent epochs and the total (`null` while the history catches up). */
  settled?: {
    epochs?: EpochVolume[] | null;
    total?: { amount: Decimal; tokens: Decimal; settlements: number } | null;
  } | null;
  /** Reputation, or `null`. */
  reputation: number | null;
}

/** The `/health` body (the same for its 200 and its 503). */
export interface Health {
  /** `ok`, `starting`, `unavailable` or `stale`. */
  status: string;
  /** Whether the data endpoints answer 200 now. */
  serving: boolean;
  /** Why not, or `null`. */
  error: ErrorDetail | null;
  /** The refresh interval, seconds. */
  refresh_secs: number;
  /** The freshness bound, seconds. */
  stale_after_secs?: number;
  /** When the next refresh is due, or `null`. */
  next_refresh_at?: string | null;
}

/** A page of a paginated list: the items and where the next page starts. */
export interface PageInfo {
  /** Where the next page starts; `null` on the last page; absent when the list is whole. */
  next_cursor?: string | null;
  /** How far the settlement history is (the rows' settlement figures are `null` unless synced). */
  history?: HistoryInfo;
}

/** The answer of `GET /providers/{address}`: one provider, its trust and its settled volume. */
export interface ProviderDetail {
  /** Its address. */
  provider: string;
  /** Its Registry record, or `null` when the Registry does not list it. */
  registry: {
    tier: string;
    active: boolean;
    stake: Decimal;
    bonded: boolean;
    serving_key: string;
    ad_commitment: string;
  } | null;
  /** Its `/providers` entry when live-verified, else `null`. */
  live: Provider | null;
  /** Its settled volume (`null` figures until the history is synced). */
  settled: {
    total: {
      amount: Decimal;
      tokens: Decimal;
      settlements: number;
      epochs: number;
      first_epoch: Decimal | null;
      last_epoch: Decimal | null;
    } | null;
    epochs: EpochVolume[] | null;
    next_cursor: string | null;
  };
  /** The state of its ad commitment. */
  verification: {
    ad_commitment: "verified" | "rejected" | "not_seen";
    reason: string | null;
    message: string | null;
    routers: number;
  };
  /** For a TEE-tier provider: what the indexer verified of its evidence; else `null`. */
  tee: {
    evidence: {
      status: string;
      checked_at: string;
      age_secs: number;
      format: string | null;
      measurement: string | null;
      tcb_status: string | null;
      expires_at: string | null;
      message: string | null;
    } | null;
    approved_measurements: number;
    gpu: { count: number; measurements: string[]; drivers: string[] } | null;
  } | null;
  /** How far the settlement history is. */
  history: HistoryInfo;
  /** The snapshot it was read at. */
  snapshot: SnapshotInfo;
}
