/**
 * The dashboard on a phone and for keyboard and screen-reader users, in a real browser: at
 * 375 × 800 nothing overflows horizontally (wide tables scroll inside their own region); tables
 * have captions and scoped headers, charts a text alternative, controls names; keyboard focus is
 * visible; text has at least WCAG AA contrast (4.5:1) in the light and the dark scheme.
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { launchBrowser } from "../../_browser.ts";
import { startFakeIndexer } from "./_fake_indexer.ts";
import { overflowing } from "./_page.ts";

const WAIT = { timeout: 20_000 };

Deno.test("at 375 × 800 nothing overflows horizontally", async () => {
  await using fake = startFakeIndexer();
  await using browser = await launchBrowser({ viewport: { width: 375, height: 800 } });
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  await page.waitForSelector("#volume-chart canvas", WAIT);
  const widths = await page.locator("html").evaluate((html) => ({
    scroll: html.scrollWidth,
    client: html.clientWidth,
  }));
  assert.ok(
    widths.scroll <= widths.client,
    `the page is ${widths.scroll} px wide on a ${widths.client} px screen`,
  );
  assert.deepEqual(await overflowing(page), []);
  // The wide tables scroll in a region a keyboard can reach.
  const regions = await page.locator(".table-wrap").evaluateAll((wraps) =>
    wraps.map((w) => ({ tabindex: w.getAttribute("tabindex"), role: w.getAttribute("role") }))
  );
  assert.deepEqual(regions, [{ tabindex: "0", role: "region" }, { tabindex: "0", role: "region" }]);
  assert.deepEqual(browser.consoleErrors(), []);
});

Deno.test("tables, charts and controls are named; keyboard focus is visible", async () => {
  await using fake = startFakeIndexer();
  await using browser = await launchBrowser();
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  // The data tables (a chart's legend is part of its image, hidden from screen readers).
  const legends = await page.locator("[role=img] table").evaluateAll((list) =>
    list.map((table) => table.getAttribute("aria-hidden"))
  );
  assert.deepEqual(legends, ["true", "true"]);
  const tables = await page.locator("table:not([role=img] table)").evaluateAll((list) =>
    list.map((table) => ({
      caption: (table.querySelector("caption")?.textContent ?? "").length > 0,
      headScopes: [...table.querySelectorAll("thead th")].every((th) =>
        th.getAttribute("scope") === "col"
      ),
      rowScopes: [...table.querySelectorAll("tbody tr")].every((tr) =>
        tr.firstElementChild?.tagName === "TH" &&
        tr.firstElementChild.getAttribute("scope") === "row"
      ),
    }))
  );
  assert.deepEqual(tables, [
    { caption: true, headScopes: true, rowScopes: true },
    { caption: true, headScopes: true, rowScopes: true },
  ]);
  for (const chart of ["#emission-chart", "#volume-chart"]) {
    assert.equal(await page.getAttribute(chart, "role"), "img");
    assert.ok(
      (await page.getAttribute(chart, "aria-label") ?? "").length > 20,
      `${chart} has no text alternative`,
    );
  }
  const sparkLabel = await page.locator("#providers-body svg.spark").first().getAttribute(
    "aria-label",
  );
  assert.match(sparkLabel ?? "", /^Settled per epoch, in tokens: epoch 0 /);
  assert.equal(await page.getAttribute("html", "lang"), "en");

  // Tab from the top: the skip link first, visibly focused; then on to the pager's button.
  await page.keyboard.press("Tab");
  const skip = await page.locator(":focus").evaluate((el) => {
    const style = el.ownerDocument.defaultView.getComputedStyle(el);
    return {
      text: el.textContent,
      outline: style.outlineStyle,
      width: parseFloat(style.outlineWidth),
      left: el.getBoundingClientRect().left,
    };
  });
  assert.equal(skip.text, "Skip to the data");
  assert.ok(skip.outline !== "none" && skip.width >= 2 && skip.left >= 0, JSON.stringify(skip));
  let focused = "";
  // Past the models' controls and each provider row's link to its page.
  for (let i = 0; i < 40 && focused !== "providers-next"; i++) {
    await page.keyboard.press("Tab");
    focused = await page.locator(":focus").evaluate((el) => el.id);
  }
  assert.equal(focused, "providers-next", "Tab does not reach the providers' next-page button");
  const outline = await page.locator(":focus").evaluate((el) =>
    el.ownerDocument.defaultView.getComputedStyle(el).outlineStyle
  );
  assert.notEqual(outline, "none");
  await page.keyboard.press("Enter");
  await page.waitForSelector(`#providers-page:text-is("Rows 26–33")`, WAIT);
  assert.deepEqual(browser.consoleErrors(), []);
});

/** The lowest contrast ratio of text on the page, with where it is. */
async function lowestContrast(page: Page): Promise<{ ratio: number; where: string }> {
  return await page.locator("body").evaluate((body) => {
    const getComputedStyle = (el: unknown) => body.ownerDocument.defaultView.getComputedStyle(el);
    const rgb = (color: string) => (color.match(/[\d.]+/g) ?? []).map(Number);
    const luminance = ([r, g, b]: number[]) => {
      const c = [r, g, b].map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    };
    // deno-lint-ignore no-explicit-any
    const background = (el: any): number[] => {
      for (; el; el = el.parentElement) {
        const parts = rgb(getComputedStyle(el).backgroundColor);
        if (parts.length === 3 || (parts.length === 4 && parts[3] > 0)) return parts;
      }
      return [255, 255, 255];
    };
    let lowest = { ratio: 21, where: "" };
    const walker = body.ownerDocument.createTreeWalker(body, 4 /* NodeFilter.SHOW_TEXT */);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!el || !node.textContent?.trim() || el.closest("[hidden], .u-legend, .skip")) continue;
      if (el.getClientRects().length === 0) continue;
      const style = getComputedStyle(el);
      const [a, b] = [luminance(rgb(style.color)), luminance(background(el))].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < lowest.ratio) {
        lowest = { ratio, where: `${el.tagName} "${node.textContent.trim().slice(0, 30)}"` };
      }
    }
    return lowest;
  });
}

for (const colorScheme of ["light", "dark"] as const) {
  Deno.test(`text contrast is at least 4.5:1 (${colorScheme} scheme)`, async () => {
    await using fake = startFakeIndexer();
    await using browser = await launchBrowser({ colorScheme });
    const { page } = browser;
    await page.goto(`${fake.url}/`);
    await page.waitForSelector("#providers-body tr", WAIT);
    const lowest = await lowestContrast(page);
    assert.ok(lowest.ratio >= 4.5, `contrast ${lowest.ratio.toFixed(2)}:1 at ${lowest.where}`);
    fake.setAvailable(false);
    await page.waitForSelector("#outage:not([hidden])", WAIT);
    const outage = await lowestContrast(page);
    assert.ok(outage.ratio >= 4.5, `contrast ${outage.ratio.toFixed(2)}:1 at ${outage.where}`);
  });
}
