/**
 * The dashboard page's program: it asks the indexer for `/stats`, a page of `/models` and of
 * `/providers`, and `/epochs` (newest first), and shows them — again whenever the indexer's
 * change stream (`/events`, `live.ts`) says something changed, or every `refresh_secs` (read
 * from `/health`) when the indexer has no stream. `#/providers/{address}` is one provider's page
 * (`provider_page.ts`): its trust and its settled volume over the epochs. When the indexer answers 503 (or does not answer) the page says what is unreachable, in
 * the indexer's words, and shows no numbers at all until it can again. Settlement figures the
 * indexer's history has not caught up with (`null`) are said to be "not yet synced", never
 * shown as zero. An endpoint the indexer does not serve (404) hides its section. Bundled with
 * uPlot into `dashboard.js` by `tools/dashboard.ts`.
 *
 * @module
 */

import { type Answer, type Failure, failuresOf, getJson } from "./api.ts";
import { Chart } from "./charts.ts";
import { type Browser, browser, byId, type DomElement } from "./dom.ts";
import { formatCount, formatShare, formatTokens } from "./format.ts";
import {
  emissionFigures,
  historyOf,
  lacksHistory,
  MODEL_COLUMNS,
  modelColumns,
  NOT_SYNCED,
  providerColumns,
  providerHistory,
  SPARK_EPOCHS,
  summaryFigures,
  valueOf,
} from "./model.ts";
import { Live } from "./live.ts";
import { Pager } from "./pager.ts";
import { loadProvider, ProviderPage } from "./provider_page.ts";
import { providerRoute } from "./provider_model.ts";
import {
  clearOutage,
  clearPager,
  type PagerControls,
  pagerControls,
  partNode,
  renderFigures,
  renderHeader,
  renderOutage,
  renderPager,
  tableRows,
} from "./render.ts";
import { emissionSeries, rewardsOf, syncedVolume, volumeSeries } from "./series.ts";
import type {
  Epoch,
  EpochVolume,
  Health,
  Model,
  PageInfo,
  Provider,
  ProviderDetail,
  Stats,
} from "./types.ts";

/** `value` safe inside a double-quoted CSS attribute selector. */
const CSS_ESCAPE = (value: string) => value.replace(/["\\]/g, "\\$&");

/** Seconds between refreshes until `/health` has said. */
const DEFAULT_REFRESH_SECS = 30;
/** Rows per table page. */
const PAGE_SIZE = 25;
/** `/epochs` is read newest first in pages of this many, at most `EPOCH_PAGES` pages. */
const EPOCH_PAGE_SIZE = 100;
const EPOCH_PAGES = 10;
/** Concurrent `/providers/{address}` requests. */
const HISTORY_CONCURRENCY = 4;

type ListBody = PageInfo & Record<string, unknown>;
type Section = "summary" | "emission" | "volume" | "models" | "providers";
const SECTIONS: readonly Section[] = ["summary", "emission", "volume", "models", "providers"];

/** One paged table: its pager, its DOM and how to read its rows. */
interface Table<T> {
  name: "models" | "providers";
  pager: Pager;
  controls: PagerControls;
  body: DomElement;
  key: (row: T) => string;
}

/**
 * The latest epochs of `/epochs` (newest first, following `next_cursor` for up to
 * `EPOCH_PAGES` pages), oldest first.
 */
async function loadEpochs(b: Browser): Promise<Answer<Epoch[]>> {
  const epochs: Epoch[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < EPOCH_PAGES; page++) {
    const path: string = `epochs?order=desc&limit=${EPOCH_PAGE_SIZE}` +
      (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "");
    const answer = await getJson<ListBody>(b.fetch, path);
    if (answer.kind !== "ok") return answer;
    const rows = answer.body.epochs;
    if (!Array.isArray(rows)) return unreadable(path, "it has no epochs list");
    epochs.push(...rows as Epoch[]);
    cursor = answer.body.next_cursor ?? null;
    if (!cursor) break;
  }
  return { kind: "ok", path: "epochs", status: 200, body: epochs.reverse() };
}

function unreadable(path: string, why: string): Failure {
  return {
    kind: "failed",
    path,
    status: 200,
    code: "unreadable_answer",
    message: `The indexer's answer to /${path} cannot be shown: ${why}`,
    retryAfterSecs: null,
  };
}

/** The page. */
class Dashboard {
  readonly #b: Browser;
  readonly #models: Table<Model>;
  readonly #providers: Table<Provider>;
  readonly #emissionChart: Chart;
  readonly #volumeChart: Chart;
  /** Histories read from `/providers/{address}` for the rows shown. */
  readonly #histories = new Map<string, EpochVolume[]>();
  /** Whether `/providers/{address}` is served (a 404 says not). */
  #historyServed = true;
  readonly #provider: ProviderPage;
  readonly #live: Live;
  #refreshSecs = DEFAULT_REFRESH_SECS;
  /** The freshness bound `/health` reports: a shown snapshot is read again when it passes. */
  #staleAfterSecs = 2 * DEFAULT_REFRESH_SECS;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #generation = 0;

  constructor(b: Browser) {
    this.#b = b;
    const doc = b.document;
    const table = <T>(name: "models" | "providers", key: (row: T) => string): Table<T> => ({
      name,
      pager: new Pager(name, PAGE_SIZE),
      controls: pagerControls(doc, name),
      body: byId(doc, `${name}-body`),
      key,
    });
    this.#models = table<Model>("models", (m) => m.model);
    this.#providers = table<Provider>("providers", (p) => p.provider);
    renderHeader(byId(doc, "models-head"), MODEL_COLUMNS, doc);
    renderHeader(byId(doc, "providers-head"), providerColumns(() => null), doc);
    this.#emissionChart = new Chart(byId(doc, "emission-chart"), {
      leftLabel: "Total (tokens)",
      rightLabel: "Per epoch (tokens)",
      lines: [
        { label: "Emitted", color: "#1d4ed8" },
        { label: "Scheduled", color: "#1d4ed8", dashed: true },
        { label: "Reward per epoch", color: "#b45309", right: true },
      ],
    }, b);
    this.#volumeChart = new Chart(byId(doc, "volume-chart"), {
      leftLabel: "Settled (tokens)",
      rightLabel: "Settlements",
      lines: [
        { label: "Settled amount", color: "#0f766e", bars: true },
        { label: "Settlements", color: "#7c3aed", right: true },
      ],
    }, b);
    for (const t of [this.#models, this.#providers] as Table<unknown>[]) {
      t.controls.previous.addEventListener("click", () => this.#turn(t, () => t.pager.previous()));
      t.controls.next.addEventListener("click", () => this.#turn(t, () => t.pager.next()));
    }
    this.#provider = new ProviderPage(b);
    b.onWindow("hashchange", () => void this.refresh());
    this.#live = new Live(b, () => this.refresh(), (mode) => {
      const main = byId(doc, "main");
      main.dataset.live = mode;
      main.setAttribute("data-live", mode);
      if (mode === "polling") this.#schedule(this.#refreshSecs);
    });
    this.#live.connect();
  }

  /** Reads everything the current view shows, now. */
  async refresh(): Promise<void> {
    clearTimeout(this.#timer);
    const generation = ++this.#generation;
    const address = providerRoute(this.#b.location.hash);
    if (address) return await this.#refreshProvider(address, generation);
    byId(this.#b.document, "provider-section").hidden = true;
    this.#provider.clear();
    const [health, stats, models, providers, epochs] = await Promise.all([
      getJson<Health>(this.#b.fetch, "health", { dataStatuses: [200, 503] }),
      getJson<Stats>(this.#b.fetch, "stats"),
      this.#page(this.#models),
      this.#page(this.#providers),
      loadEpochs(this.#b),
    ]);
    if (generation !== this.#generation) return;
    this.#readHealth(health);
    const failures = failuresOf([stats, models, providers, epochs, health]);
    if (failures.length > 0) return this.#outage(failures);
    try {
      this.#render(stats, models, providers, epochs, health);
    } catch (error) {
      return this.#outage([unreadable("stats", (error as Error).message)]);
    }
    this.#next(stats.kind === "ok" ? stats.body.snapshot.taken_at : null);
  }

  #readHealth(health: Answer<Health>): void {
    if (health.kind !== "ok") return;
    if (Number.isSafeInteger(health.body.refresh_secs)) {
      this.#refreshSecs = Math.max(1, health.body.refresh_secs);
    }
    if (Number.isSafeInteger(health.body.stale_after_secs)) {
      this.#staleAfterSecs = Math.max(1, health.body.stale_after_secs!);
    }
  }

  /**
   * The next read: on the interval while polling; with the change stream open, only when the
   * shown snapshot passes its freshness bound (the stream says when anything else changes).
   */
  #next(takenAt: string | null): void {
    if (!this.#live.open) return this.#schedule(this.#refreshSecs);
    const taken = takenAt === null ? NaN : Date.parse(takenAt);
    const left = Number.isNaN(taken)
      ? this.#staleAfterSecs
      : (taken + this.#staleAfterSecs * 1000 - Date.now()) / 1000 + 1;
    this.#schedule(Math.max(1, left));
  }

  /** The provider page: its answer and `/health`. */
  async #refreshProvider(address: string, generation: number): Promise<void> {
    const doc = this.#b.document;
    const [health, detail] = await Promise.all([
      getJson<Health>(this.#b.fetch, "health", { dataStatuses: [200, 503] }),
      loadProvider(this.#b, address),
    ]);
    if (generation !== this.#generation) return;
    this.#readHealth(health);
    for (const section of SECTIONS) byId(doc, `${section}-section`).hidden = true;
    if (detail.kind === "absent") {
      clearOutage(byId(doc, "outage"));
      byId(doc, "provider-section").hidden = false;
      this.#provider.unknown(
        address,
        detail.message ?? `The indexer does not know the provider ${address}`,
      );
      return this.#next(null);
    }
    const failures = failuresOf([detail, health]);
    if (failures.length > 0) return this.#outage(failures);
    if (detail.kind !== "ok") return this.#next(null);
    clearOutage(byId(doc, "outage"));
    byId(doc, "provider-section").hidden = false;
    try {
      this.#provider.render(detail.body as ProviderDetail);
    } catch (error) {
      return this.#outage([unreadable(`providers/${address}`, (error as Error).message)]);
    }
    const snapshot = detail.body.snapshot;
    byId(doc, "status").replaceChildren(
      "Snapshot of block ",
      partNode(doc, valueOf(detail.body, "snapshot.block_number", "count")),
      ", taken at ",
      partNode(doc, valueOf(detail.body, "snapshot.taken_at", "text")),
      this.#live.open
        ? "; updated as the indexer changes."
        : `; refreshes every ${this.#refreshSecs} s.`,
    );
    this.#next(snapshot.taken_at);
  }

  /** One page of a table; a refused cursor (400) starts it over from the first page. */
  async #page<T>(table: Table<T>): Promise<Answer<ListBody>> {
    let answer = await getJson<ListBody>(this.#b.fetch, table.pager.request());
    if (answer.kind === "failed" && answer.status === 400) {
      table.pager.reset();
      answer = await getJson<ListBody>(this.#b.fetch, table.pager.request());
    }
    if (answer.kind === "ok" && !Array.isArray(answer.body[table.name])) {
      return unreadable(table.name, `it has no ${table.name} list`);
    }
    if (answer.kind === "ok" && table.name === "providers") {
      await this.#loadHistories(answer.body.providers as Provider[]);
    }
    return answer;
  }

  /**
   * The sparklines' histories when the list does not carry them: `/providers/{address}` for
   * each row shown (a few at a time). A 404 means this indexer does not serve it: not asked
   * again; other failures leave the sparkline empty (the lists' own answers decide outages).
   */
  async #loadHistories(rows: readonly Provider[]): Promise<void> {
    this.#histories.clear();
    const missing = rows.filter(lacksHistory);
    for (let i = 0; i < missing.length && this.#historyServed; i += HISTORY_CONCURRENCY) {
      await Promise.all(
        missing.slice(i, i + HISTORY_CONCURRENCY).map(async (row) => {
          // Newest first: the sparkline shows the latest epochs.
          const path = `providers/${
            encodeURIComponent(row.provider)
          }?order=desc&limit=${SPARK_EPOCHS}`;
          const answer = await getJson<unknown>(this.#b.fetch, path);
          if (answer.kind === "absent") this.#historyServed = false;
          const history = answer.kind === "ok" ? historyOf(answer.body) : null;
          if (history) this.#histories.set(row.provider, history);
        }),
      );
    }
  }

  /** Moves a table to another page and shows it. */
  async #turn<T>(table: Table<T>, move: () => void): Promise<void> {
    move();
    const generation = this.#generation;
    const answer = await this.#page(table);
    if (generation !== this.#generation) return;
    if (answer.kind === "failed") return this.#outage([answer]);
    if (answer.kind === "ok") this.#renderTable(table, answer.body);
  }

  #render(
    stats: Answer<Stats>,
    models: Answer<ListBody>,
    providers: Answer<ListBody>,
    epochs: Answer<Epoch[]>,
    health: Answer<Health>,
  ): void {
    const doc = this.#b.document;
    clearOutage(byId(doc, "outage"));
    const shown = new Set<Section>();
    if (stats.kind === "ok") {
      this.#renderStats(stats.body, epochs.kind === "ok" ? epochs.body : []);
      shown.add("summary").add("emission");
    }
    if (epochs.kind === "ok" && epochs.body.length > 0) {
      this.#renderVolume(epochs.body);
      shown.add("volume");
    }
    if (models.kind === "ok") {
      this.#renderTable(this.#models, models.body);
      shown.add("models");
    }
    if (providers.kind === "ok") {
      this.#renderTable(this.#providers, providers.body);
      shown.add("providers");
    }
    for (const section of SECTIONS) byId(doc, `${section}-section`).hidden = !shown.has(section);
    this.#renderStatus(stats.kind === "ok" ? stats.body : null, health);
  }

  #renderStats(stats: Stats, epochs: readonly Epoch[]): void {
    const doc = this.#b.document;
    renderFigures(byId(doc, "summary"), summaryFigures(stats), doc);
    renderFigures(byId(doc, "emission"), emissionFigures(stats), doc);
    const { total_emitted: emitted, cap } = stats.emission;
    const share = formatShare(emitted, cap);
    const bar = byId(doc, "emission-bar");
    bar.hidden = false;
    bar.setAttribute("aria-label", `${share} of the cap emitted`);
    byId(doc, "emission-bar-fill").style.setProperty(
      "width",
      cap === "0" ? "0%" : `${Number((BigInt(emitted) * 10000n) / BigInt(cap)) / 100}%`,
    );
    byId(doc, "emission-share").textContent = `${share} of the cap emitted`;
    const series = emissionSeries(stats, rewardsOf(epochs));
    this.#emissionChart.draw(
      [series.epochs, series.emitted, series.scheduled, series.reward],
      `Emission over epochs 0 to ${stats.emission.current_epoch}: ${
        formatTokens(emitted)
      } tokens emitted so far of a cap of ${formatTokens(cap)}; the reward halves every ${
        formatCount(stats.emission.schedule.halving_interval)
      } epochs.`,
    );
  }

  /** The settled-volume chart, or "not yet synced" while the figures are `null`. */
  #renderVolume(rows: readonly Epoch[]): void {
    const note = byId(this.#b.document, "volume-note");
    const epochs = syncedVolume(rows);
    if (!epochs) {
      this.#volumeChart.clear();
      note.textContent = `Settled volume per epoch: ${NOT_SYNCED}. The indexer's settlement ` +
        "history is catching up with the chain; the chart is drawn once it has.";
      note.hidden = false;
      return;
    }
    note.hidden = true;
    note.replaceChildren();
    const series = volumeSeries(epochs);
    const top = epochs.reduce((a, b) => (BigInt(b.amount) > BigInt(a.amount) ? b : a));
    this.#volumeChart.draw(
      [series.epochs, series.amount, series.settlements],
      `Settled volume per epoch, epochs ${series.epochs[0]} to ${
        series.epochs[series.epochs.length - 1]
      }; the largest is ${formatTokens(top.amount)} tokens in epoch ${top.epoch}.`,
    );
  }

  #renderTable<T>(table: Table<T>, body: ListBody): void {
    const doc = this.#b.document;
    const rows = body[table.name] as T[];
    const page = table.pager.accept(rows, body);
    const synced = body.history?.synced ?? true;
    const columns = table.name === "models" ? modelColumns(synced) : providerColumns(
      (p: Provider) => providerHistory(p) ?? this.#histories.get(p.provider) ?? null,
      synced,
    );
    // A refresh replaces the rows: a row's link that had the keyboard focus keeps it.
    const focused = doc.activeElement && table.body.contains(doc.activeElement)
      ? doc.activeElement.getAttribute("href")
      : null;
    table.body.replaceChildren(
      ...tableRows(doc, columns as never, page.rows as never[], table.key as never),
    );
    if (focused) table.body.querySelector(`a[href="${CSS_ESCAPE(focused)}"]`)?.focus();
    renderPager(table.controls, page);
  }

  #renderStatus(stats: Stats | null, health: Answer<Health>): void {
    const doc = this.#b.document;
    const status = byId(doc, "status");
    if (!stats) {
      status.replaceChildren(`Refreshes every ${this.#refreshSecs} s.`);
      return;
    }
    const span = (field: string, format: "count" | "text") =>
      partNode(doc, valueOf(stats, field, format));
    status.replaceChildren(
      "Snapshot of block ",
      span("snapshot.block_number", "count"),
      ", taken at ",
      span("snapshot.taken_at", "text"),
      this.#live.open
        ? "; updated as the indexer changes"
        : `; refreshes every ${this.#refreshSecs} s`,
      health.kind === "ok" && health.body.status !== "ok"
        ? ` (indexer: ${health.body.status})`
        : "",
      ".",
      ...this.#historyStatus(stats),
    );
  }

  /** The settlement history's state, when it has not caught up: what it has counted so far. */
  #historyStatus(stats: Stats): (string | DomElement)[] {
    if (stats.settlements.synced !== false) return [];
    const parts: (string | DomElement)[] = [` Settlement figures ${NOT_SYNCED}`];
    if (stats.settlements.scanned_to_block !== null) {
      parts.push(
        ": the history has counted blocks up to ",
        partNode(this.#b.document, valueOf(stats, "settlements.scanned_to_block", "count")),
      );
    }
    parts.push(".");
    return parts;
  }

  /** Shows what failed and takes every number off the page. */
  #outage(failures: readonly Failure[]): void {
    const doc = this.#b.document;
    this.#provider.clear();
    byId(doc, "provider-section").hidden = true;
    this.#emissionChart.clear();
    this.#volumeChart.clear();
    byId(doc, "volume-note").replaceChildren();
    byId(doc, "volume-note").hidden = true;
    for (const id of ["summary", "emission", "models-body", "providers-body", "status"]) {
      byId(doc, id).replaceChildren();
    }
    byId(doc, "emission-share").replaceChildren();
    byId(doc, "emission-bar").hidden = true;
    clearPager(this.#models.controls);
    clearPager(this.#providers.controls);
    for (const section of SECTIONS) byId(doc, `${section}-section`).hidden = true;
    const retries = failures.map((f) => f.retryAfterSecs ?? this.#refreshSecs);
    const retryIn = Math.max(1, Math.min(this.#refreshSecs, ...retries));
    renderOutage(byId(doc, "outage"), failures, retryIn, doc);
    this.#schedule(retryIn);
  }

  #schedule(secs: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.refresh(), secs * 1000);
  }
}

const dashboard = new Dashboard(browser());
void dashboard.refresh();
