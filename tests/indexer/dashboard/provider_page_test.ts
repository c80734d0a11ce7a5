/**
 * The provider page (`#/providers/{address}`) and the live page, in headless Chromium against
 * the real indexer service over a 60-provider plan (`_fake_indexer.ts`): a provider's row links
 * to its page, which shows its tier, its ad commitment's state, its TEE evidence and its age
 * (and where GPU evidence will be), its stake and its settled volume over the epochs (every
 * number equal to the API's, the chart drawn); an unknown address says so. With the change
 * stream the page reads again on each event and does not poll; without it, it polls.
 */

import assert from "node:assert/strict";
import { launchBrowser } from "../../_browser.ts";
import { formatValue } from "../../../indexer/dashboard/src/model.ts";
import { startFakeIndexer } from "./_fake_indexer.ts";
import { drawnPixels, rowKeys, unexpectedErrors } from "./_page.ts";

const WAIT = { timeout: 20_000 };

/** Every `[data-field]` in the provider section: field → value shown. */
async function providerValues(page: import("playwright-core").Page) {
  return await page.locator("#provider-section [data-field]").evaluateAll((elements) =>
    elements.map((el) => ({
      field: el.getAttribute("data-field")!,
      value: el.getAttribute("data-value")!,
      format: el.getAttribute("data-format")!,
      text: el.textContent ?? "",
    }))
  );
}

function lookup(body: unknown, field: string): string {
  let value = body;
  for (const key of field.split(".")) value = (value as Record<string, unknown>)?.[key];
  return value === null || value === undefined ? "null" : String(value);
}

Deno.test("a provider's page: trust, TEE evidence and its age, stake, settled volume over time", async () => {
  await using fake = startFakeIndexer({ events: true });
  await using browser = await launchBrowser({ viewport: { width: 1100, height: 900 } });
  const { page } = browser;
  await page.goto(`${fake.url}/`);
  await page.waitForSelector("#providers-body tr", WAIT);
  const truth = await fake.truth();
  const tee = (truth.providers as { provider: string; tier: string }[]).find((p) =>
    p.tier === "tee"
  )!;
  const [first] = await rowKeys(page, "providers");

  // The row links to the provider's page.
  await page.click(`#providers-body tr[data-key="${first}"] a`);
  await page.waitForSelector("#provider-section:not([hidden]) [data-field]", WAIT);
  assert.equal(new URL(page.url()).hash, `#/providers/${first}`);
  assert.equal(await page.isVisible("#providers-section"), false);
  const detail = await (await fetch(`${fake.url}/providers/${first}?order=asc&limit=500`)).json();
  for (const shown of await providerValues(page)) {
    assert.equal(shown.value, lookup(detail, shown.field), shown.field);
    assert.equal(shown.text, formatValue(shown.format as never, shown.value), shown.field);
  }
  const fields = new Set((await providerValues(page)).map((v) => v.field));
  for (
    const field of [
      "registry.tier",
      "registry.stake",
      "verification.ad_commitment",
      "verification.routers",
      "settled.total.amount",
      "settled.total.settlements",
    ]
  ) assert.ok(fields.has(field), `the provider page does not show ${field}`);
  assert.match(
    await page.textContent(`#provider-figures [data-figure="commitment"] dd`) ?? "",
    /^verified/,
  );
  // Settled volume over the epochs: the chart is drawn, its summary names the epochs.
  const pixels = await drawnPixels(page, "#provider-chart");
  assert.ok(pixels.length > 0 && pixels.every((n) => n > 500), `drew ${pixels}`);
  assert.match(await page.getAttribute("#provider-chart", "aria-label") ?? "", /per epoch, epochs/);
  // A verified-tier provider has no TEE evidence; its GPU evidence is not applicable.
  if (detail.registry.tier === "verified") {
    assert.match(
      await page.textContent(`#provider-figures [data-figure="tee"] dd`) ?? "",
      /verified tier/,
    );
  }

  // A TEE-tier provider: its evidence, verified five minutes before the snapshot.
  await page.goto(`${fake.url}/#/providers/${tee.provider}`);
  await page.waitForSelector(`#provider-title:text-is("Provider ${tee.provider}")`, WAIT);
  await page.waitForSelector(
    `#provider-figures [data-figure="tee"] [data-field="tee.evidence.status"]`,
    WAIT,
  );
  assert.match(
    await page.textContent(`#provider-figures [data-figure="tee"] dd`) ?? "",
    /^verified: verified, checked 5 min ago \(TDX\)$/,
  );
  assert.equal(
    await page.textContent(`#provider-figures [data-figure="gpu"] dd`),
    "1 GPU verified (driver 550.90.07)",
  );

  // Back to the whole network; an unknown address says the indexer does not know it.
  await page.click(`#provider-section a[href="#/"]`);
  await page.waitForSelector("#providers-section:not([hidden])", WAIT);
  assert.equal(await page.isVisible("#provider-section"), false);
  const nobody = `0x${"9".repeat(40)}`;
  await page.goto(`${fake.url}/#/providers/${nobody}`);
  await page.waitForSelector("#provider-volume-note:not([hidden])", WAIT);
  assert.match(await page.textContent("#provider-volume-note") ?? "", /Unknown provider/);
  assert.equal(await page.locator("#provider-section [data-field]").count(), 0);
  assert.deepEqual(unexpectedErrors(browser.consoleErrors(), [404]), []);
  assert.deepEqual(browser.offLoopbackRequests(), []);
});

Deno.test("the page reads again on each change event and does not poll; without /events it polls", async (t) => {
  await t.step("with the change stream", async () => {
    await using fake = startFakeIndexer({ events: true });
    await using browser = await launchBrowser();
    const { page } = browser;
    await page.goto(`${fake.url}/`);
    await page.waitForSelector(`main[data-live="events"]`, WAIT);
    await page.waitForSelector("#providers-body tr", WAIT);
    const before = fake.requests().filter((p) => p === "/stats").length;
    const block = await page.textContent(`[data-field="staked_security"]`);
    // A new snapshot, announced: the page shows its numbers.
    fake.nextSnapshot();
    const next = await fake.truth();
    fake.events.publish("snapshot", { block_number: "4321" });
    const expected = formatValue("tokens", next.stats.staked_security as string);
    await page.waitForSelector(`[data-field="staked_security"]:text-is("${expected}")`, WAIT);
    assert.notEqual(block, expected);
    // One more read, for the one event, although the indexer's refresh_secs is 1.
    const after = fake.requests().filter((p) => p === "/stats").length;
    assert.equal(after, before + 1, `${after - before} reads of /stats for one event`);
    assert.match(await page.textContent("#status") ?? "", /updated as the indexer changes/);
    assert.equal(fake.requests().filter((p) => p === "/events").length, 1);
  });

  await t.step("without it (an older indexer): polling", async () => {
    await using fake = startFakeIndexer();
    await using browser = await launchBrowser();
    const { page } = browser;
    await page.goto(`${fake.url}/`);
    await page.waitForSelector(`main[data-live="polling"]`, WAIT);
    await page.waitForSelector("#providers-body tr", WAIT);
    fake.nextSnapshot();
    const next = await fake.truth();
    const expected = formatValue("tokens", next.stats.staked_security as string);
    await page.waitForSelector(`[data-field="staked_security"]:text-is("${expected}")`, WAIT);
    assert.match(await page.textContent("#status") ?? "", /refreshes every 1 s/);
    assert.deepEqual(unexpectedErrors(browser.consoleErrors(), [404]), []);
  });
});
