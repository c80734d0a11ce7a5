/**
 * The one seam between the store and its two backends: plain parameterized SQL (`$1`, `$2`, …)
 * on one database session. Both backends are PostgreSQL (PGlite embedded, a server over `pg`),
 * so the store's SQL is the same text for both.
 *
 * Conventions that keep the drivers' type conversions out of the way: every parameter is a
 * string (or `null`) and every selected column is cast to `text` in SQL, so a row is always
 * `Record<string, string | null>` whatever the driver would have made of a `numeric`.
 *
 * @module
 */

/** A parameter: always text (numbers and bigints are passed as decimal strings). */
export type SqlParam = string | null;

/** A row: every column selected as text. */
export type SqlRow = Record<string, string | null>;

/** Runs one statement and returns its rows. */
export type SqlQuery = (text: string, params?: readonly SqlParam[]) => Promise<SqlRow[]>;

/** One database session of a backend. */
export interface SqlSession {
  /** Runs one statement outside any transaction (waits for a running one). */
  query: SqlQuery;
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * Transactions and queries on one session never interleave.
   */
  transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T>;
  /** Ends the session. */
  close(): Promise<void>;
}

/** A tiny FIFO mutex: the session's statements run one at a time. */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();

  /** Runs `work` after everything queued before it. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(work);
    this.#tail = result.then(() => {}, () => {});
    return result;
  }
}
