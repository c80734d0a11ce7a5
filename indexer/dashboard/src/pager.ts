/**
 * Paging through a list endpoint (`/providers`, `/models`). An indexer that paginates answers
 * `?limit=&cursor=` with a page and a `next_cursor` (`null` on the last page): the pager walks
 * the cursors and remembers them to go back. An indexer that does not paginate answers the whole
 * list without `next_cursor`: the pager then cuts it into pages itself. The same page is asked
 * for again on every refresh, so the table stays where the reader left it.
 *
 * @example
 * ```ts
 * import { Pager } from "./pager.ts";
 *
 * const pager = new Pager("providers", 2);
 * console.assert(pager.request() === "providers?limit=2");
 * const page = pager.accept(["a", "b", "c"], {}); // a whole list: paged here
 * console.assert(page.rows.join() === "a,b" && page.hasNext);
 * pager.next();
 * console.assert(pager.accept(["a", "b", "c"], {}).rows.join() === "c");
 * ```
 *
 * @module
 */

import type { PageInfo } from "./types.ts";

/** One page as the table shows it. */
export interface PageView<T> {
  /** The rows of this page. */
  rows: T[];
  /** Whether there is a page before. */
  hasPrevious: boolean;
  /** Whether there is a page after. */
  hasNext: boolean;
  /** The rows shown, e.g. `26–50 of 61` (`of` only when the total is known). */
  label: string;
  /** `server` when the indexer paginates, `client` when the page cuts the whole list. */
  mode: "server" | "client";
}

/** Walks the pages of one list endpoint. */
export class Pager {
  readonly #path: string;
  readonly #size: number;
  #mode: "unknown" | "server" | "client" = "unknown";
  /** `#cursors[i]`: the cursor of page `i` (`null` for the first) in server mode. */
  #cursors: (string | null)[] = [null];
  #page = 0;
  #nextCursor: string | null = null;
  #total = 0;

  /** A pager over `path` (e.g. `providers`) with `pageSize` rows a page. */
  constructor(path: string, pageSize: number) {
    if (!Number.isSafeInteger(pageSize) || pageSize < 1) {
      throw new RangeError(
        `Cannot page ${path}: pageSize must be a positive integer, found ${pageSize}`,
      );
    }
    this.#path = path;
    this.#size = pageSize;
  }

  /** The rows a page holds. */
  get pageSize(): number {
    return this.#size;
  }

  /** The relative URL of the current page. */
  request(): string {
    const cursor = this.#mode === "server" ? this.#cursors[this.#page] : null;
    const query = `limit=${this.#size}` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "");
    return `${this.#path}?${query}`;
  }

  /** Takes the answer to {@linkcode request}: its items and its pagination fields. */
  accept<T>(items: readonly T[], info: PageInfo): PageView<T> {
    const paginated = Object.hasOwn(info, "next_cursor");
    const mode = paginated ? "server" : "client";
    if (this.#mode !== "unknown" && this.#mode !== mode) this.reset();
    this.#mode = mode;
    if (mode === "server") {
      this.#nextCursor = info.next_cursor ?? null;
      const first = this.#page * this.#size;
      return {
        rows: [...items],
        hasPrevious: this.#page > 0,
        hasNext: this.#nextCursor !== null,
        label: items.length === 0 ? "no rows" : `${first + 1}–${first + items.length}`,
        mode,
      };
    }
    this.#total = items.length;
    const lastPage = Math.max(0, Math.ceil(this.#total / this.#size) - 1);
    this.#page = Math.min(this.#page, lastPage);
    const first = this.#page * this.#size;
    const rows = items.slice(first, first + this.#size);
    return {
      rows,
      hasPrevious: this.#page > 0,
      hasNext: first + this.#size < this.#total,
      label: rows.length === 0
        ? "no rows"
        : `${first + 1}–${first + rows.length} of ${this.#total}`,
      mode,
    };
  }

  /** Moves to the next page (after an answer said there is one). */
  next(): void {
    if (this.#mode === "server") {
      if (this.#nextCursor === null) return;
      this.#cursors[this.#page + 1] = this.#nextCursor;
      this.#cursors.length = this.#page + 2;
    } else if ((this.#page + 1) * this.#size >= this.#total) {
      return;
    }
    this.#page++;
  }

  /** Moves to the previous page. */
  previous(): void {
    if (this.#page > 0) this.#page--;
  }

  /** Back to the first page (e.g. after the indexer refused a cursor). */
  reset(): void {
    this.#page = 0;
    this.#cursors = [null];
    this.#nextCursor = null;
  }
}
