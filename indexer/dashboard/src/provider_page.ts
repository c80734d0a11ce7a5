/**
 * The provider page, `#/providers/{address}`: one provider's trust and settled volume from
 * `GET /providers/{address}` (every page of its epochs, oldest first, following `next_cursor`
 * for up to {@linkcode MAX_PAGES} pages): its figures (`provider_model.ts`) and a chart of its
 * settled amount and settlements per epoch. A 404 (`unknown_provider`) says the indexer does not
 * know the address; other failures are the page's outage.
 *
 * @module
 */

import { type Answer, getJson } from "./api.ts";
import { Chart } from "./charts.ts";
import { type Browser, byId } from "./dom.ts";
import { formatTokens } from "./format.ts";
import { NOT_SYNCED } from "./model.ts";
import { providerFigures } from "./provider_model.ts";
import { renderFigures } from "./render.ts";
import { volumeSeries } from "./series.ts";
import type { EpochVolume, ProviderDetail } from "./types.ts";

/** Epochs per request. */
const PAGE = 500;
/** Most requests for one provider's epochs. */
const MAX_PAGES = 10;

/** One provider's answer with all its epochs (`settled.epochs` whole, oldest first). */
export async function loadProvider(
  b: Browser,
  address: string,
): Promise<Answer<ProviderDetail>> {
  let first: Answer<ProviderDetail> | undefined;
  const epochs: EpochVolume[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const path: string = `providers/${encodeURIComponent(address)}?order=asc&limit=${PAGE}` +
      (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "");
    const answer: Answer<ProviderDetail> = await getJson<ProviderDetail>(b.fetch, path);
    if (answer.kind !== "ok") return answer;
    first ??= answer;
    epochs.push(...(answer.body.settled.epochs ?? []));
    cursor = answer.body.settled.next_cursor;
    if (!cursor) break;
  }
  if (!first || first.kind !== "ok") return first!;
  const body = first.body;
  return {
    ...first,
    body: {
      ...body,
      settled: {
        ...body.settled,
        epochs: body.settled.epochs === null ? null : epochs,
        next_cursor: null,
      },
    },
  };
}

/** The provider section of the page. */
export class ProviderPage {
  readonly #b: Browser;
  readonly #chart: Chart;

  /** The page over the document's `#provider-*` elements. */
  constructor(b: Browser) {
    this.#b = b;
    this.#chart = new Chart(byId(b.document, "provider-chart"), {
      leftLabel: "Settled (tokens)",
      rightLabel: "Settlements",
      lines: [
        { label: "Settled amount", color: "#0f766e", bars: true },
        { label: "Settlements", color: "#7c3aed", right: true },
      ],
    }, b);
  }

  /** Shows `detail`. */
  render(detail: ProviderDetail): void {
    const doc = this.#b.document;
    byId(doc, "provider-title").textContent = `Provider ${detail.provider}`;
    renderFigures(byId(doc, "provider-figures"), providerFigures(detail), doc);
    const note = byId(doc, "provider-volume-note");
    const epochs = detail.settled.epochs;
    if (epochs === null || epochs.length === 0) {
      this.#chart.clear();
      note.textContent = epochs === null
        ? `Settled volume per epoch: ${NOT_SYNCED}.`
        : "No settlement to this provider yet.";
      note.hidden = false;
      return;
    }
    note.hidden = true;
    note.replaceChildren();
    const series = volumeSeries(epochs);
    const total = detail.settled.total;
    this.#chart.draw(
      [series.epochs, series.amount, series.settlements],
      `Settled to ${detail.provider} per epoch, epochs ${series.epochs[0]} to ${
        series.epochs[series.epochs.length - 1]
      }: ${total ? formatTokens(total.amount) : NOT_SYNCED} tokens in all.`,
    );
  }

  /** Shows that the indexer does not know the address. */
  unknown(address: string, message: string): void {
    const doc = this.#b.document;
    byId(doc, "provider-title").textContent = `Provider ${address}`;
    byId(doc, "provider-figures").replaceChildren();
    this.#chart.clear();
    const note = byId(doc, "provider-volume-note");
    note.textContent = message;
    note.hidden = false;
  }

  /** Removes every number (an outage, or another view). */
  clear(): void {
    const doc = this.#b.document;
    byId(doc, "provider-figures").replaceChildren();
    byId(doc, "provider-volume-note").replaceChildren();
    byId(doc, "provider-volume-note").hidden = true;
    this.#chart.clear();
  }
}
