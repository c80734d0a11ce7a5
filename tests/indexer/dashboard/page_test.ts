/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against a fake
 * indexer on loopback that serves today's real bodies plus `/epochs` and paginated lists: the
 * page loads offline without console errors, every number equals the API's, the charts draw,
 * the tables page, an outage (503) takes every number off the page and the page recovers, and
 * an indexer without `/epochs` or pagination still works. Saves `docs/dashboard.png`.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { launchBrowser } from "../../_browser.ts";
import { startFakeIndexer } from "./_fake_indexer.ts";
import { formatTokens } from "../../../indexer/dashboard/src/format.ts";
import { assertPageMatches, drawnPixels, rowKeys, unexpectedErrors } from "./_page.ts";

const SCREENSHOT = fileURLToPath(new URL("../../../docs/dashboard.png", import.meta.url));
const WAIT = { timeout: 20_000 };

/** The API's paths and the page's assets: every request the page may make. */
const KNOWN =
  /^\/(|dashboard\.(js|css|svg)\?v=[\w-]{16}|health|stats|(epochs|models|providers)\?.*)$/;

/** Waits until `condition` holds (a refresh happened), at most 20 s. */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT.timeout;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("Timed out waiting for the page to refresh");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function addresses(providers: unknown[]): string[] {
  return providers.map((p) => (p as { provider: string }).provider);
}

Deno.test("the page shows the API's numbers, draws its charts and pages its tables", async () => {
  await using fake = startFakeIndexer();
  await using browser = await launchBrowser({ viewport: { width: 1100, height: 900 } });
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  const truth = await fake.truth();

  const values = await assertPageMatches(page, truth);
  const statsFields = new Set(values.filter((v) => v.source === "stats").map((v) => v.field));
  for (
    const field of [
      "providers.live_verified",
      "providers.bonded",
      "validators",
      "staked_security",
      "routers.reachable",
      "tee_measurements.length",
      "capacity.max_concurrency",
      "settlements.amount",
      "emission.total_emitted",
      "emission.cap",
      "emission.current_epoch",
      "emission.current_epoch_reward",
      "emission.schedule.halving_interval",
      "snapshot.block_number",
    ]
  ) assert.ok(statsFields.has(field), `the page does not show stats.${field}`);
  // One amount checked by hand: 116,055.494975597845961118 tokens, shown to two decimals.
  assert.equal(truth.stats.staked_security, "116055494975597845961118");
  assert.ok(values.some((v) => v.field === "staked_security" && v.text === "116,055.49"));

  // Tables: all models on one page; the providers' first page, then the second.
  assert.deepEqual(
    await rowKeys(page, "models"),
    truth.models.map((m) => (m as { model: string }).model),
  );
  const all = addresses(truth.providers);
  assert.equal(all.length, 33);
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(0, 25));
  assert.equal(await page.textContent("#providers-page"), "Rows 1–25");
  const sparks = await page.locator("#providers-body svg.spark polyline").count();
  assert.equal(sparks, 25, "every provider row has a sparkline");

  // Charts: uPlot draws on canvases.
  for (const chart of ["#emission-chart", "#volume-chart"]) {
    const pixels = await drawnPixels(page, chart);
    assert.ok(pixels.length > 0 && pixels.every((n) => n > 500), `${chart} drew ${pixels}`);
    assert.match(await page.getAttribute(chart, "aria-label") ?? "", /epoch/);
  }
  // The top of the page (summary, emission, charts, models, the first providers): docs/dashboard.md.
  await page.screenshot({
    path: SCREENSHOT,
    fullPage: true,
    clip: { x: 0, y: 0, width: 1100, height: 2000 },
  });

  await page.click("#providers-next");
  await page.waitForSelector(`#providers-page:text-is("Rows 26–33")`, WAIT);
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(25));
  assert.ok(fake.requests().some((path) => /^\/providers\?limit=25&cursor=/.test(path)));
  await assertPageMatches(page, truth);
  await page.click("#providers-previous");
  await page.waitForSelector(`#providers-page:text-is("Rows 1–25")`, WAIT);

  assert.deepEqual(browser.consoleErrors(), []);
  assert.deepEqual(browser.offLoopbackRequests(), []);
  const unknown = fake.requests().filter((path) => !KNOWN.test(path));
  assert.deepEqual(unknown, [], "the page asked for paths the indexer does not serve");
});

Deno.test("a 503 takes every number off the page and says what is unreachable; then it recovers", async () => {
  await using fake = startFakeIndexer();
  await using browser = await launchBrowser();
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);

  fake.setAvailable(false);
  await page.waitForSelector("#outage:not([hidden])", WAIT);
  const banner = await page.textContent("#outage") ?? "";
  assert.match(banner, /chain_unreachable/);
  assert.match(banner, /Cannot reach the chain at http:\/\/127\.0\.0\.1:8545: connection refused/);
  for (const path of ["/stats", "/models", "/providers", "/epochs"]) {
    assert.ok(banner.includes(path), `the banner does not name ${path}: ${banner}`);
  }
  assert.equal(await page.locator("[data-field]").count(), 0, "a number is left on the page");
  assert.equal(
    await page.locator("canvas, svg.spark, #models-body tr, #providers-body tr").count(),
    0,
  );
  const main = await page.locator("main").innerText();
  assert.doesNotMatch(main, /\d/, `digits left in the page: ${JSON.stringify(main)}`);
  assert.doesNotMatch(await page.locator("#status").innerText(), /\d/);

  // Back, with another snapshot: every number is the new one.
  fake.nextSnapshot();
  await page.waitForSelector("#outage", { state: "hidden", ...WAIT });
  await page.waitForSelector("#providers-body tr", WAIT);
  const truth = await fake.truth();
  await assertPageMatches(page, truth);
  assert.deepEqual(await rowKeys(page, "providers"), addresses(truth.providers).slice(0, 25));
  assert.ok((await drawnPixels(page, "#volume-chart")).every((n) => n > 500));

  assert.deepEqual(unexpectedErrors(browser.consoleErrors(), [503]), []);
  assert.deepEqual(browser.offLoopbackRequests(), []);
});

Deno.test("today's indexer: no /epochs (its section hidden) and whole lists paged in the page", async () => {
  await using fake = startFakeIndexer({ epochs: false, paginate: false });
  await using browser = await launchBrowser();
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  const truth = await fake.truth();
  await assertPageMatches(page, truth);
  assert.equal(await page.isHidden("#volume-section"), true);
  assert.equal(await page.isVisible("#emission-chart canvas"), true, "emission comes from /stats");

  const all = addresses(truth.providers);
  assert.equal(await page.textContent("#providers-page"), "Rows 1–25 of 33");
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(0, 25));
  await page.click("#providers-next");
  await page.waitForSelector(`#providers-page:text-is("Rows 26–33 of 33")`, WAIT);
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(25));
  // A refresh keeps the page the reader is on.
  const asked = fake.requests().filter((path) => path === "/stats").length;
  await until(() => fake.requests().filter((path) => path === "/stats").length > asked + 1);
  assert.deepEqual(await rowKeys(page, "providers"), all.slice(25));

  assert.deepEqual(unexpectedErrors(browser.consoleErrors(), [404]), []);
  assert.deepEqual(browser.offLoopbackRequests(), []);
});

Deno.test("a list without histories: the sparklines come from /providers/{address}", async () => {
  await using fake = startFakeIndexer({ listHistory: false });
  await using browser = await launchBrowser();
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body svg.spark", WAIT);
  const truth = await fake.truth();
  const first = truth.providers[0] as {
    provider: string;
    settled: { epochs: { amount: string }[] };
  };
  const label = await page.locator(`#providers-body tr[data-key="${first.provider}"] svg.spark`)
    .getAttribute("aria-label");
  const amounts = first.settled.epochs.map((e) => formatTokens(e.amount));
  assert.equal(
    label?.split(": ")[1].split(", ").map((part) => part.split(" ")[2]).join(),
    amounts.join(),
  );
  assert.equal(await page.locator("#providers-body svg.spark").count(), 25);
  const details = fake.requests().filter((path) => path.startsWith("/providers/0x"));
  assert.equal(details.length >= 25, true, `${details.length} history requests`);
  assert.deepEqual(browser.consoleErrors(), []);
  assert.deepEqual(browser.offLoopbackRequests(), []);
});
