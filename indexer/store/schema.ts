/**
 * The store's schema, as an append-only list of migrations. Both backends run exactly these
 * statements (PGlite is PostgreSQL).
 *
 * Rules (`docs/store.md`):
 * - A shipped migration is never edited; a change is a new migration at the end, with the next
 *   version. {@linkcode SCHEMA_VERSION} is the last one's version.
 * - Each migration runs in one transaction together with the `meta.schema_version` update, so a
 *   store is always at exactly one version.
 * - `meta.schema_version` keeps its name and type forever: it is how a store tells its version
 *   to any code, older or newer.
 * - A store at a higher version than the code's is refused (`newer_schema`), never downgraded.
 *
 * Every table lives in one PostgreSQL schema (`net_history` by default), so one database can
 * hold several stores side by side (and nothing else in it is touched).
 *
 * @module
 */

/** One step of the schema. */
export interface Migration {
  /** The version the store is at after this step (1, 2, …). */
  version: number;
  /** What it does, in a few words. */
  description: string;
  /** The statements, one per string, run in order. */
  statements: (schema: string) => string[];
}

/** `numeric(78,0)`: any uint256, exactly; a sum over 10^78 − 1 fails loudly. */
const U256 = "numeric(78,0) NOT NULL CHECK (VALUE_COL >= 0)";

function u256(column: string): string {
  return `${column} ${U256.replace("VALUE_COL", column)}`;
}

const ADDRESS = "text NOT NULL CHECK (provider ~ '^0x[0-9a-f]{40}$')";
const CONSUMER = "text NOT NULL CHECK (consumer ~ '^0x[0-9a-f]{40}$')";

/** The migrations, in order. Append only. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "meta, cursor, confirmed buckets and totals, unconfirmed window",
    statements: (s) => [
      `CREATE TABLE ${s}.meta (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        schema_version integer NOT NULL,
        chain_id bigint NOT NULL CHECK (chain_id > 0),
        escrow text NOT NULL CHECK (escrow ~ '^0x[0-9a-f]{40}$'),
        scan_from_block bigint NOT NULL CHECK (scan_from_block >= 0),
        created_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE TABLE ${s}.cursor (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        next_block bigint NOT NULL CHECK (next_block >= 0),
        last_block bigint,
        last_hash text,
        confirmed_block bigint,
        confirmed_hash text,
        head_block bigint,
        chunk_size integer NOT NULL CHECK (chunk_size > 0),
        updated_at timestamptz,
        CHECK ((last_block IS NULL) = (last_hash IS NULL)),
        CHECK ((confirmed_block IS NULL) = (confirmed_hash IS NULL)),
        CHECK (last_block IS NULL OR last_block + 1 = next_block),
        CHECK (confirmed_block IS NULL OR confirmed_block <= last_block)
      )`,
      `CREATE TABLE ${s}.buckets (
        provider ${ADDRESS},
        ${u256("epoch")},
        ${u256("amount")},
        ${u256("tokens")},
        settlements bigint NOT NULL CHECK (settlements > 0),
        PRIMARY KEY (provider, epoch)
      )`,
      `CREATE INDEX buckets_by_epoch ON ${s}.buckets (epoch, provider)`,
      `CREATE TABLE ${s}.epoch_totals (
        ${u256("epoch")} PRIMARY KEY,
        ${u256("amount")},
        ${u256("tokens")},
        settlements bigint NOT NULL CHECK (settlements > 0),
        providers integer NOT NULL CHECK (providers >= 0)
      )`,
      `CREATE TABLE ${s}.provider_totals (
        provider ${ADDRESS} PRIMARY KEY,
        ${u256("amount")},
        ${u256("tokens")},
        settlements bigint NOT NULL CHECK (settlements > 0),
        epochs integer NOT NULL CHECK (epochs >= 0),
        ${u256("first_epoch")},
        ${u256("last_epoch")}
      )`,
      `CREATE TABLE ${s}.window_blocks (
        block bigint PRIMARY KEY,
        hash text NOT NULL CHECK (hash ~ '^0x[0-9a-f]{64}$')
      )`,
      `CREATE TABLE ${s}.window_deltas (
        block bigint NOT NULL REFERENCES ${s}.window_blocks (block),
        provider ${ADDRESS},
        ${u256("epoch")},
        ${u256("amount")},
        ${u256("tokens")},
        settlements bigint NOT NULL CHECK (settlements > 0),
        PRIMARY KEY (block, provider, epoch)
      )`,
    ],
  },
  {
    version: 2,
    description: "volume paid by consumers' vouchers and paying consumers per epoch (rescans)",
    statements: (s) => [
      `ALTER TABLE ${s}.epoch_totals
        ADD COLUMN ${u256("signed_amount").replace("NOT NULL", "NOT NULL DEFAULT 0")},
        ADD COLUMN signed_settlements bigint NOT NULL DEFAULT 0 CHECK (signed_settlements >= 0),
        ADD COLUMN consumers integer NOT NULL DEFAULT 0 CHECK (consumers >= 0)`,
      `CREATE TABLE ${s}.consumer_buckets (
        consumer ${CONSUMER},
        ${u256("epoch")},
        ${u256("amount")},
        settlements bigint NOT NULL CHECK (settlements > 0),
        PRIMARY KEY (epoch, consumer)
      )`,
      `CREATE TABLE ${s}.window_consumer_deltas (
        block bigint NOT NULL REFERENCES ${s}.window_blocks (block),
        consumer ${CONSUMER},
        ${u256("epoch")},
        ${u256("amount")},
        settlements bigint NOT NULL CHECK (settlements > 0),
        PRIMARY KEY (block, consumer, epoch)
      )`,
      // What was counted before was read without its consumers: scan the history again.
      `DELETE FROM ${s}.window_deltas`,
      `DELETE FROM ${s}.window_blocks`,
      `DELETE FROM ${s}.buckets`,
      `DELETE FROM ${s}.epoch_totals`,
      `DELETE FROM ${s}.provider_totals`,
      `UPDATE ${s}.cursor SET next_block = (SELECT scan_from_block FROM ${s}.meta),
        last_block = NULL, last_hash = NULL, confirmed_block = NULL, confirmed_hash = NULL,
        head_block = NULL, updated_at = now()`,
    ],
  },
];

/** The schema version this code writes and reads: the last migration's. */
export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1].version;
