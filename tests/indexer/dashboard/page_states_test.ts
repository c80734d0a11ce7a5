/**
 * The dashboard in a real browser against the real indexer service over a planned network of
 * 60 providers (`_fake_indexer.ts`): what a small live devnet does not show. The tables page
 * through the indexer's cursors; while the settlement history is not synced the page says
 * "not yet synced" wherever a settlement figure would be, and never shows a zero for one; the
 * sparklines, when the list does not carry them, come from `/providers/{address}` and show the
 * latest epochs; a 503 takes every number off the page and the next snapshot brings them back.
 */

import assert from "node:assert/strict";
import { launchBrowser } from "../../_browser.ts";
import { HANG_AFTER_MS } from "../../_wait.ts";
import { type FakeIndexer, startFakeIndexer } from "./_fake_indexer.ts";
import { formatTokens } from "../../../indexer/dashboard/src/format.ts";
import {
  assertPageShows,
  drawnPixels,
  rowKeys,
  shownValues,
  type Truth,
  unexpectedErrors,
} from "./_page.ts";
import type { Page } from "playwright-core";
import { okJson } from "../../_http.ts";

/** Waits on the page's states, never against a budget a busy machine can exhaust. */
const WAIT = { timeout: HANG_AFTER_MS };

/** Asserts the page shows `truth`, once it has drawn its latest answers (it refreshes itself). */
function assertShows(page: Page, fake: FakeIndexer, truth: Truth): Promise<Truth> {
  const refreshes = () => fake.requests().filter((path) => path === "/stats").length;
  return assertPageShows(page, () => truth, refreshes);
}

function addresses(providers: unknown[]): string[] {
  return providers.map((p) => (p as { provider: string }).provider);
}

Deno.test("the tables page through the indexer's cursors, and stay on the page on refresh", async () => {
  await using fake = startFakeIndexer();
  await using browser = await launchBrowser({ viewport: { width: 1100, height: 900 } });
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  const truth = await fake.truth();
  await assertShows(page, fake, truth);
  // One amount checked by hand: 116,055.494975597845961118 tokens, shown to two decimals.
  assert.equal(truth.stats.staked_security, "116055494975597845961118");
  const values = await shownValues(page);
  assert.ok(values.some((v) => v.field === "staked_security" && v.text === "116,055.49"));

  const all = addresses(truth.providers);
  assert.equal(all.length, 33);
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(0, 25));
  assert.equal(await page.textContent("#providers-page"), "Rows 1–25");
  await page.click("#providers-next");
  await page.waitForSelector(`#providers-page:text-is("Rows 26–33")`, WAIT);
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(25));
  assert.ok(fake.requests().includes(`/providers?limit=25&cursor=${all[24]}`));
  await assertShows(page, fake, truth);
  // A refresh keeps the page the reader is on.
  const asked = fake.requests().filter((path) => path === "/stats").length;
  while (fake.requests().filter((path) => path === "/stats").length < asked + 2) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(25));
  await page.click("#providers-previous");
  await page.waitForSelector(`#providers-page:text-is("Rows 1–25")`, WAIT);
  assert.deepEqual(browser.consoleErrors(), []);
  assert.deepEqual(browser.offLoopbackRequests(), []);
});

Deno.test("while the history is not synced the page says so, and shows no settlement zero", async () => {
  await using fake = startFakeIndexer({ synced: false });
  await using browser = await launchBrowser();
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  const truth = await fake.truth();
  assert.equal((truth.stats.settlements as { amount: unknown }).amount, null);
  await assertShows(page, fake, truth);
  const settled = await page.textContent(`[data-figure="settled"] dd`);
  assert.match(settled ?? "", /^not yet synced/);
  assert.match(await page.textContent("#status") ?? "", /Settlement figures not yet synced/);
  // The volume chart is not drawn with zeros: the section says why.
  assert.equal(await page.isVisible("#volume-note"), true);
  assert.match(await page.textContent("#volume-note") ?? "", /not yet synced/);
  assert.deepEqual(await drawnPixels(page, "#volume-chart"), []);
  // The emission chart needs no history.
  assert.ok((await drawnPixels(page, "#emission-chart")).every((n) => n > 500));
  // Each provider row: its settled columns and reputation say it; no sparkline.
  const rows = await page.locator("#providers-body tr").count();
  assert.equal(await page.locator("#providers-body svg.spark").count(), 0);
  const cells = await page.locator("#providers-body td").allTextContents();
  assert.equal(cells.filter((text) => text === "not yet synced").length, rows * 3);
  for (const value of await shownValues(page)) {
    if (/settle|reputation/.test(value.field) && value.field !== "settlements.scanned_to_block") {
      assert.fail(`a settlement figure is shown while not synced: ${value.field} ${value.text}`);
    }
  }
  assert.deepEqual(browser.consoleErrors(), []);
});

Deno.test("a list without histories: the sparklines come from /providers/{address}, the latest epochs", async () => {
  await using fake = startFakeIndexer({ listHistory: false });
  await using browser = await launchBrowser();
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body svg.spark", WAIT);
  const details = fake.requests().filter((path) => path.startsWith("/providers/0x"));
  assert.ok(details.length >= 25, `${details.length} history requests`);
  assert.ok(details.every((path) => path.endsWith("?order=desc&limit=16")), details[0]);
  // The first provider's whole history, straight from the API (oldest first, paid epochs only).
  const first = addresses((await fake.truth()).providers)[0];
  const detail = await okJson(fetch(`${fake.url}/providers/${first}?limit=1000`));
  const paid = detail.settled.epochs as { epoch: string; amount: string }[];
  const latest = Number(paid.at(-1)!.epoch);
  const byEpoch = new Map(paid.map((e) => [Number(e.epoch), e.amount]));
  const expected = [];
  for (let epoch = Math.max(0, latest - 15); epoch <= latest; epoch++) {
    expected.push(`epoch ${epoch} ${formatTokens(byEpoch.get(epoch) ?? "0")}`);
  }
  const label = await page.locator(`#providers-body tr[data-key="${first}"] svg.spark`)
    .getAttribute("aria-label");
  assert.equal(label, `Settled per epoch, in tokens: ${expected.join(", ")}`);
  assert.deepEqual(browser.consoleErrors(), []);
});

Deno.test("a 503 takes every number off the page; the next snapshot brings the new ones", async () => {
  await using fake = startFakeIndexer();
  await using browser = await launchBrowser();
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  fake.setAvailable(false);
  await page.waitForSelector("#outage:not([hidden])", WAIT);
  assert.match(
    await page.textContent("#outage") ?? "",
    /Cannot reach the chain at http:\/\/127\.0\.0\.1:8545: connection refused/,
  );
  assert.equal(await page.locator("[data-field]").count(), 0, "a number is left on the page");
  assert.doesNotMatch(await page.locator("main").innerText(), /\d/);
  fake.nextSnapshot();
  fake.setAvailable(true);
  await page.waitForSelector("#outage", { state: "hidden", ...WAIT });
  await page.waitForSelector("#providers-body tr", WAIT);
  const truth = await fake.truth();
  await assertShows(page, fake, truth);
  assert.deepEqual(await rowKeys(page, "providers"), addresses(truth.providers).slice(0, 25));
  assert.deepEqual(unexpectedErrors(browser.consoleErrors(), [503]), []);
});
