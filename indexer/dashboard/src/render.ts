/**
 * Writes the page's data into the DOM, and takes it out again. Every number becomes
 * `<span data-field data-value data-format title>text</span>` (see `model.ts`), so "no numbers"
 * during an outage is checkable: no such span remains, and the tables, figures and charts are
 * empty. Text is always set as text, never parsed as HTML.
 *
 * @module
 */

import type { Failure } from "./api.ts";
import { byId, type DomButton, type DomDocument, type DomElement, h } from "./dom.ts";
import type { Column, Figure, Part } from "./model.ts";
import type { PageView } from "./pager.ts";
import { sparkline } from "./sparkline.ts";

/** One value or text as DOM nodes. */
export function partNode(document: DomDocument, part: Part): DomElement | string {
  if (typeof part === "string") return part;
  const attributes: Record<string, string> = {
    "data-field": part.field,
    "data-value": part.value,
    "data-format": part.format,
  };
  if (part.title) attributes.title = part.title;
  return h(document, "span", attributes, part.text);
}

/** Fills a `<dl>` with figures, each a `<div>` of its `<dt>` label and `<dd>` values. */
export function renderFigures(
  list: DomElement,
  figures: readonly Figure[],
  document: DomDocument,
): void {
  list.replaceChildren(
    ...figures.map((figure) =>
      h(
        document,
        "div",
        { "data-figure": figure.key },
        h(document, "dt", {}, figure.label),
        h(document, "dd", {}, ...figure.parts.map((part) => partNode(document, part))),
      )
    ),
  );
}

/** Writes a table's header row into its `<thead>` (`<th scope="col">`). */
export function renderHeader<T>(
  head: DomElement,
  columns: readonly Column<T>[],
  document: DomDocument,
): void {
  head.replaceChildren(
    h(
      document,
      "tr",
      {},
      ...columns.map((column) =>
        h(document, "th", { scope: "col", class: column.numeric ? "num" : "" }, column.header)
      ),
    ),
  );
}

/** A table body's rows; the first column is the row's header (`<th scope="row">`). */
export function tableRows<T>(
  document: DomDocument,
  columns: readonly Column<T>[],
  rows: readonly T[],
  key: (row: T) => string,
): DomElement[] {
  return rows.map((row) =>
    h(
      document,
      "tr",
      { "data-key": key(row) },
      ...columns.map((column, i) => {
        const tag = i === 0 ? "th" : "td";
        const attributes: Record<string, string> = i === 0 ? { scope: "row" } : {};
        if (column.numeric) attributes.class = "num";
        const parts = column.cell(row);
        const nodes = parts.map((part) => partNode(document, part));
        const cell = column.link
          ? h(document, tag, attributes, h(document, "a", { href: column.link(row) }, ...nodes))
          : h(document, tag, attributes, ...nodes);
        // A sparkline column's cell has text only when it says why there is no line.
        if (column.spark && parts.length === 0) {
          const spark = column.spark(row);
          cell.append(sparkline(document, spark?.values ?? null, spark?.label ?? ""));
        }
        return cell;
      }),
    )
  );
}

/** The controls under a paged table. */
export interface PagerControls {
  /** "Previous page". */
  previous: DomButton;
  /** "Next page". */
  next: DomButton;
  /** Which rows are shown. */
  label: DomElement;
}

/** The pager controls of the table `name` (`#name-previous`, `#name-next`, `#name-page`). */
export function pagerControls(document: DomDocument, name: string): PagerControls {
  return {
    previous: byId<DomButton>(document, `${name}-previous`),
    next: byId<DomButton>(document, `${name}-next`),
    label: byId(document, `${name}-page`),
  };
}

/** Shows a page's position in the pager controls. */
export function renderPager(controls: PagerControls, page: PageView<unknown>): void {
  controls.previous.disabled = !page.hasPrevious;
  controls.next.disabled = !page.hasNext;
  controls.label.textContent = `Rows ${page.label}`;
}

/** Clears the pager controls (no numbers during an outage). */
export function clearPager(controls: PagerControls): void {
  controls.previous.disabled = true;
  controls.next.disabled = true;
  controls.label.textContent = "";
}

/** Failures grouped by what went wrong: `[paths, code, message]`, in first-seen order. */
export function groupFailures(failures: readonly Failure[]): [string[], string, string][] {
  const groups = new Map<string, [string[], string, string]>();
  for (const failure of failures) {
    const path = `/${failure.path.split("?")[0]}`;
    const key = `${failure.code}\n${failure.message}`;
    const group = groups.get(key) ?? [[], failure.code, failure.message];
    if (!group[0].includes(path)) group[0].push(path);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** Fills the outage banner: what is unreachable, in the indexer's words. */
export function renderOutage(
  banner: DomElement,
  failures: readonly Failure[],
  retryInSecs: number,
  document: DomDocument,
): void {
  const items = groupFailures(failures).map(([paths, code, message]) =>
    h(
      document,
      "li",
      { "data-code": code },
      ...paths.flatMap((path, i) => [i > 0 ? ", " : "", h(document, "code", {}, path)]),
      ": ",
      h(document, "code", { class: "code" }, code),
      ` — ${message}`,
    )
  );
  banner.replaceChildren(
    h(document, "h2", {}, "The indexer cannot serve the network's data now"),
    h(document, "p", {}, "No numbers are shown until it can. What failed:"),
    h(document, "ul", {}, ...items),
    h(document, "p", { class: "muted" }, `Trying again in ${Math.ceil(retryInSecs)} s.`),
  );
  banner.hidden = false;
}

/** Hides the outage banner. */
export function clearOutage(banner: DomElement): void {
  banner.hidden = true;
  banner.replaceChildren();
}
