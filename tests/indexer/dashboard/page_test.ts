/**
 * The dashboard against the real thing: Debian's Chromium (through playwright-core) on the page
 * served by `indexer/main.ts`, indexing a real devnet (anvil, contracts, providers, routers)
 * with a settlement history over several epochs. The page loads with no console error and no
 * request leaving loopback; every number it shows equals the API's; the charts and sparklines
 * draw; when the chain (the devnet's anvil) stops, the page says what is unreachable and shows
 * no numbers, and recovers when the chain is back; at 375 px nothing overflows. Takes a
 * screenshot: into `docs/dashboard.png` (shown in the README) with `NET_UPDATE_SCREENSHOT=1`,
 * otherwise into a temporary file (a test run leaves the tree as it found it).
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { launchBrowser } from "../../_browser.ts";
import { HANG_AFTER_MS } from "../../_wait.ts";
import { startLiveNetwork, until } from "../_live.ts";
import {
  assertPageDrew,
  drawnPixels,
  overflowing,
  recordAnswers,
  rowKeys,
  shownValues,
  unexpectedErrors,
} from "./_page.ts";

const DOCS_SCREENSHOT = fileURLToPath(new URL("../../../docs/dashboard.png", import.meta.url));
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Waits on the page's states, never against a budget a busy machine can exhaust. */
const WAIT = { timeout: HANG_AFTER_MS };
/** Every path the page may ask for: its assets and the API's. */
const KNOWN =
  /^\/(|dashboard\.(js|css|svg)\?v=[\w-]{16}|health|stats|events|epochs\?order=desc&limit=100(&cursor=\d+)?|(models|providers)\?limit=25(&cursor=[^&]+)?|providers\/0x[0-9a-f]{40}\?order=desc&limit=16)$/;

Deno.test("the page on a real devnet and indexer: the API's numbers, charts, an outage, a phone", async () => {
  await using live = await startLiveNetwork({
    devnet: { verifiedProviders: 6, teeProviders: 2, offlineProviders: 2, routers: 2 },
    settledEpochs: 8,
  });
  // A freshness bound far above the refresh interval: on a busy machine a snapshot may come
  // late, and the page would then rightly show the 503 (the outage below is the chain's).
  const indexer = await live.startIndexer(["--refresh-secs", "3", "--stale-after-secs", "60"]);
  await until("the indexer to serve, synced", async () => {
    const health = await indexer.get("/health");
    return health.body.serving && health.body.settlements.synced ? true : undefined;
  }, { failed: indexer.failure });
  await using browser = await launchBrowser({ viewport: { width: 1100, height: 900 } });
  const { page } = browser;
  const asked: string[] = [];
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.origin === indexer.url) asked.push(url.pathname + url.search);
  });
  const answers = recordAnswers(page, indexer.url);
  await page.goto(`${indexer.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  await page.waitForSelector("#volume-chart canvas", WAIT);

  // Every number on the page is that of an API answer the page received (a second reader would
  // see the snapshot of its own moment, every three seconds a new one), formatted as it says.
  const truth = await assertPageDrew(page, answers);
  const stats = truth.stats as {
    providers: { live_verified: number };
    settlements: { synced: boolean; amount: string };
  };
  assert.equal(stats.providers.live_verified, 8);
  assert.equal(stats.settlements.synced, true);
  assert.notEqual(stats.settlements.amount, "0");
  const fields = new Set((await shownValues(page)).map((v) => v.field));
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
      "cheapest_price.input",
      "stake",
      "settled.total.amount",
      "snapshot.block_number",
    ]
  ) assert.ok(fields.has(field), `the page does not show ${field}`);
  const addresses = truth.providers.map((p) => (p as { provider: string }).provider);
  assert.deepEqual(await rowKeys(page, "providers"), addresses);

  // The charts draw (uPlot's canvases), and every provider has its sparkline.
  for (const chart of ["#emission-chart", "#volume-chart"]) {
    const pixels = await drawnPixels(page, chart);
    assert.ok(pixels.length > 0 && pixels.every((n) => n > 500), `${chart} drew ${pixels}`);
    assert.match(await page.getAttribute(chart, "aria-label") ?? "", /epoch/);
  }
  assert.equal(await page.locator("#providers-body svg.spark polyline").count(), addresses.length);
  assert.equal(await page.getByText("not yet synced").count(), 0);
  await saveScreenshot(page);

  // A phone: nothing overflows horizontally (wide tables scroll in their own region).
  await page.setViewportSize({ width: 375, height: 800 });
  await page.waitForTimeout(300);
  const widths = await page.locator("html").evaluate((html) => ({
    scroll: html.scrollWidth,
    client: html.clientWidth,
  }));
  assert.ok(widths.scroll <= widths.client, `${widths.scroll} px wide on ${widths.client} px`);
  assert.deepEqual(await overflowing(page), []);
  await page.setViewportSize({ width: 1100, height: 900 });

  // The chain stops: the page says what is unreachable, and shows no numbers at all.
  await live.stopChain();
  await page.waitForSelector("#outage:not([hidden])", WAIT);
  const banner = await page.textContent("#outage") ?? "";
  assert.match(banner, /chain_unreachable/);
  assert.ok(banner.includes(new URL(live.rpcUrl).origin), banner);
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

  // The chain is back: so is every number, the new snapshot's.
  answers.forget();
  await live.startChain();
  await page.waitForSelector("#outage", { state: "hidden", ...WAIT });
  await page.waitForSelector("#providers-body tr", WAIT);
  await assertPageDrew(page, answers);
  assert.ok((await drawnPixels(page, "#volume-chart")).every((n) => n > 500));

  assert.deepEqual(unexpectedErrors(browser.consoleErrors(), [503]), []);
  assert.deepEqual(browser.offLoopbackRequests(), []);
  const unknown = asked.filter((path) => !KNOWN.test(path));
  assert.deepEqual(unknown, [], "the page asked for paths the indexer does not serve");
  assert.equal(await indexer.stop(), 0);
});

/** Saves the page as a PNG: `docs/dashboard.png` when asked to update it, else a temporary file. */
async function saveScreenshot(page: Page): Promise<void> {
  const update = Deno.env.get("NET_UPDATE_SCREENSHOT") === "1";
  const path = update ? DOCS_SCREENSHOT : await Deno.makeTempFile({ suffix: ".png" });
  try {
    await page.screenshot({ path, fullPage: true });
    const png = await Deno.readFile(path);
    assert.deepEqual([...png.subarray(0, 8)], PNG_SIGNATURE, `${path} is not a PNG`);
  } finally {
    if (!update) await Deno.remove(path);
  }
}
