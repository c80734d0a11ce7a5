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

/**
 * Asserts that every value on the page equals its field in the API's bodies, is written in
 * its format, and (for token amounts) carries the exact amount in its hover text.
 * Returns the values, for further checks.
 */
export async function assertPageMatches(page: Page, truth: Truth): Promise<ShownValue[]> {
  const values = await shownValues(page);
  assert.ok(values.length > 0, "the page shows no values");
  const rowsOf = {
    models: new Map(truth.models.map((m) => [(m as { model: string }).model, m])),
    providers: new Map(truth.providers.map((p) => [(p as { provider: string }).provider, p])),
  };
  for (const shown of values) {
    const body = shown.source === "stats" ? truth.stats : rowsOf[shown.source].get(shown.key);
    assert.ok(body, `the page shows a ${shown.source} row ${shown.key} the API does not list`);
    const where = `${shown.source}${shown.key ? `[${shown.key}]` : ""}.${shown.field}`;
    assert.equal(shown.value, apiValue(body, shown.field), `${where}: value`);
    assert.equal(shown.text, formatValue(shown.format, shown.value), `${where}: text`);
    if ((shown.format === "tokens") && shown.value !== "null") {
      assert.equal(shown.title, tokensTitle(shown.value), `${where}: exact value on hover`);
    }
  }
  return values;
}

/** The API answers a page received: the newest of each, and how many refreshes it made. */
export interface PageAnswers {
  /** The newest `/stats`, `/models` and `/providers` answers (200), once it had one of each. */
  latest(): Truth | undefined;
  /** How many `/stats` answers (200 or not) it has received: one per refresh. */
  refreshes(): number;
}

/** Records the answers `page` receives from the API at `origin`; call it before loading. */
export function recordAnswers(page: Page, origin: string): PageAnswers {
  const bodies = new Map<string, unknown>();
  let refreshes = 0;
  page.on("response", async (response) => {
    const url = new URL(response.url());
    if (url.origin !== origin || !["/stats", "/models", "/providers"].includes(url.pathname)) {
      return;
    }
    if (url.pathname === "/stats") refreshes++;
    if (response.status() !== 200) return;
    const body = await response.json().catch(() => undefined);
    if (body !== undefined) bodies.set(url.pathname, body);
  });
  return {
    latest() {
      const stats = bodies.get("/stats") as Record<string, unknown> | undefined;
      const models = bodies.get("/models") as { models: unknown[] } | undefined;
      const providers = bodies.get("/providers") as { providers: unknown[] } | undefined;
      if (!stats || !models || !providers) return undefined;
      return { stats, models: models.models, providers: providers.providers };
    },
    refreshes: () => refreshes,
  };
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
