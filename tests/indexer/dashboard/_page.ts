/**
 * Reading the dashboard back from a real browser: every number the page shows is a
 * `<span data-field data-value data-format>` (`indexer/dashboard/src/model.ts`), so the tests
 * collect them from the DOM and compare each with the field of the API body it names.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { waitFor } from "../../_wait.ts";
import { tokensTitle } from "../../../indexer/dashboard/src/format.ts";
import { type Format, formatValue, lookup } from "../../../indexer/dashboard/src/model.ts";

/** One value as the page shows it. */
export interface ShownValue {
  /** `stats` for the summary, emission and status line; else the table (`models`, `providers`). */
  source: "stats" | "models" | "providers";
  /** The row's key (model id or provider address); `""` outside tables. */
  key: string;
  /** `data-field`. */
  field: string;
  /** `data-value`. */
  value: string;
  /** `data-format`. */
  format: Format;
  /** The text shown. */
  text: string;
  /** The hover text. */
  title: string;
}

/** Every value on the page, in document order. */
export async function shownValues(page: Page): Promise<ShownValue[]> {
  return await page.locator("[data-field]").evaluateAll((elements) =>
    elements.map((el) => {
      const row = el.closest("tr[data-key]");
      const table = el.closest("tbody");
      return {
        source: table ? table.id.replace(/-body$/, "") : "stats",
        key: row ? row.getAttribute("data-key") : "",
        field: el.getAttribute("data-field"),
        value: el.getAttribute("data-value"),
        format: el.getAttribute("data-format"),
        text: el.textContent,
        title: el.getAttribute("title") ?? "",
      };
    })
  );
}

/** The API's value of `field` as the page writes it into `data-value`. */
function apiValue(body: unknown, field: string): string {
  const raw = lookup(body, field);
  assert.notEqual(raw, undefined, `the API has no field ${field}`);
  return raw === null ? "null" : String(raw);
}

/** The API bodies the page is compared with. */
export interface Truth {
  stats: Record<string, unknown>;
  models: unknown[];
  providers: unknown[];
}

type Source = ShownValue["source"];
const SOURCES: readonly Source[] = ["stats", "models", "providers"];

/**
 * Asserts that every value on the page equals its field in the API's bodies, is written in
 * its format, and (for token amounts) carries the exact amount in its hover text.
 * Returns the values, for further checks.
 */
export async function assertPageMatches(page: Page, truth: Truth): Promise<ShownValue[]> {
  const values = await shownValues(page);
  assert.ok(values.length > 0, "the page shows no values");
  for (const source of SOURCES) assertValuesMatch(values, source, truth[source]);
  return values;
}

/** Asserts that the values `values` shows from `source` are those of `body` (its answer). */
function assertValuesMatch(values: ShownValue[], source: Source, body: unknown): void {
  const rows = source === "stats" ? undefined : new Map(
    (body as Record<string, string>[]).map((
      row,
    ) => [row[source === "models" ? "model" : "provider"], row]),
  );
  for (const shown of values.filter((v) => v.source === source)) {
    const row = rows ? rows.get(shown.key) : body;
    assert.ok(row, `the page shows a ${source} row ${shown.key} the API does not list`);
    const where = `${source}${shown.key ? `[${shown.key}]` : ""}.${shown.field}`;
    assert.equal(shown.value, apiValue(row, shown.field), `${where}: value`);
    assert.equal(shown.text, formatValue(shown.format, shown.value), `${where}: text`);
    if ((shown.format === "tokens") && shown.value !== "null") {
      assert.equal(shown.title, tokensTitle(shown.value), `${where}: exact value on hover`);
    }
  }
}

/** The bodies of the answers a page received, oldest first: `/stats`, and the lists' rows. */
export interface Received {
  stats: Record<string, unknown>[];
  models: unknown[][];
  providers: unknown[][];
}

/** The API answers a page received, oldest first (200s only), and how many refreshes it made. */
export interface PageAnswers {
  /** Every `/stats`, `/models` and `/providers` answer (200) received since the last `forget`. */
  received(): Received;
  /** How many `/stats` answers (200 or not) it has received: one per refresh. */
  refreshes(): number;
  /** Drops the answers received so far (the page is to show newer ones). */
  forget(): void;
}

/** Records the answers `page` receives from the API at `origin`; call it before loading. */
export function recordAnswers(page: Page, origin: string): PageAnswers {
  const received: Received = { stats: [], models: [], providers: [] };
  let refreshes = 0;
  page.on("response", async (response) => {
    const url = new URL(response.url());
    const source = url.origin === origin ? url.pathname.slice(1) : "";
    if (source !== "stats" && source !== "models" && source !== "providers") return;
    if (source === "stats") refreshes++;
    if (response.status() !== 200) return;
    const body = await response.json().catch(() => undefined);
    if (body === undefined) return;
    if (source === "stats") received.stats.push(body);
    else received[source].push((body as Record<string, unknown[]>)[source]);
  });
  return {
    received: () => received,
    refreshes: () => refreshes,
    forget() {
      for (const source of SOURCES) received[source].length = 0;
    },
  };
}

/**
 * Waits until every value on the page is that of an answer the page received, one answer per
 * source (a refresh draws one `/stats`, one `/models` and one `/providers` answer), and returns
 * those answers, the newest a source's values match. Not "the newest answer": a refresh
 * superseded before it drew, or answers arriving out of order, leave the page showing an
 * older one, and the recorder reads each body a moment after the page does. Fails with the
 * difference from the newest answer when the page has refreshed four more times and still
 * shows values of no answer it received.
 */
export async function assertPageDrew(page: Page, answers: PageAnswers): Promise<Truth> {
  const from = answers.refreshes();
  let difference = "the page has not had the answers yet";
  return await waitFor("the page to show answers it received", async () => {
    const values = await shownValues(page);
    if (values.length === 0) return void (difference = "the page shows no values");
    const received = answers.received();
    const drawn: Record<string, unknown> = {};
    for (const source of SOURCES) {
      const candidates = [...received[source]].reverse();
      if (candidates.length === 0) return void (difference = `no ${source} answer yet`);
      const errors = candidates.map((body): string | undefined => {
        try {
          assertValuesMatch(values, source, body);
          return undefined;
        } catch (error) {
          return error instanceof Error ? error.message : String(error);
        }
      });
      const match = errors.indexOf(undefined);
      if (match < 0) return void (difference = errors[0]!);
      drawn[source] = candidates[match];
    }
    return drawn as unknown as Truth;
  }, {
    failed: () =>
      answers.refreshes() >= from + 4
        ? `the page refreshed 4 times and still differs from every answer it received: ${difference}`
        : undefined,
  });
}

/**
 * Waits until the page shows `truth` (the page draws what it fetched a moment after the
 * answers arrive, and refreshes on its own), then returns it; fails with the last difference
 * when the page has refreshed four more times (`refreshes` counts them) and still differs.
 */
export async function assertPageShows(
  page: Page,
  truth: () => Promise<Truth | undefined> | Truth | undefined,
  refreshes: () => number,
): Promise<Truth> {
  const from = refreshes();
  let difference = "the page has not had the answers yet";
  return await waitFor("the page to show the API's answers", async () => {
    const expected = await truth();
    if (!expected) return undefined;
    try {
      await assertPageMatches(page, expected);
      return expected;
    } catch (error) {
      difference = error instanceof Error ? error.message : String(error);
      return undefined;
    }
  }, {
    failed: () =>
      refreshes() >= from + 4
        ? `the page refreshed 4 times and still differs: ${difference}`
        : undefined,
  });
}

/** The keys of the rows of a table body (`models` or `providers`), in order. */
export async function rowKeys(page: Page, table: "models" | "providers"): Promise<string[]> {
  return await page.locator(`#${table}-body tr`).evaluateAll((rows) =>
    rows.map((row) => row.getAttribute("data-key") ?? "")
  );
}

/** Drawn (non-transparent) pixels of every canvas under `selector`, per canvas. */
export async function drawnPixels(page: Page, selector: string): Promise<number[]> {
  return await page.locator(`${selector} canvas`).evaluateAll((canvases) =>
    canvases.map((canvas) => {
      const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
      let drawn = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) drawn++;
      return drawn;
    })
  );
}

/** Console errors other than the browser's own "Failed to load resource" for `statuses`. */
export function unexpectedErrors(
  errors: readonly { text: string; url: string }[],
  statuses: readonly number[] = [],
): { text: string; url: string }[] {
  return errors.filter((error) =>
    !statuses.some((status) =>
      error.text.startsWith(
        `Failed to load resource: the server responded with a status of ${status}`,
      )
    )
  );
}

/** Elements outside the page's width, except inside the tables' own scroll regions. */
export async function overflowing(page: Page): Promise<string[]> {
  return await page.locator("body *").evaluateAll((elements) => {
    const width = elements[0].ownerDocument.documentElement.clientWidth;
    return elements
      .filter((el) => !el.closest(".table-wrap") && el.getClientRects().length > 0)
      .filter((el) => {
        const box = el.getBoundingClientRect();
        return box.right > width + 0.5 || box.left < -0.5;
      })
      .map((el) =>
        `${el.tagName.toLowerCase()}#${el.id}.${el.className} ${el.getBoundingClientRect().right}`
      );
  });
}
