/**
 * The two charts (emission over epochs, settled volume per epoch), drawn with uPlot, which
 * the build bundles into `dashboard.js` (MIT, its license kept in the bundle and served at
 * `dashboard-licenses.txt`). A chart fits its container's width (phones included) and carries
 * a text summary for screen readers; `clear()` removes it entirely (no numbers in an outage).
 *
 * @module
 */

import uPlot from "uplot";
import type { Browser, DomElement, DomResizeObserver } from "./dom.ts";

/** One line (or bars) of a chart. */
export interface LineSpec {
  /** Its legend label. */
  label: string;
  /** Its colour. */
  color: string;
  /** Draw bars instead of a line. @default {false} */
  bars?: boolean;
  /** Dashed. @default {false} */
  dashed?: boolean;
  /** The right-hand axis instead of the left. @default {false} */
  right?: boolean;
}

/** A chart's layout. */
export interface ChartSpec {
  /** The left axis' label. */
  leftLabel: string;
  /** The right axis' label, when a line uses it. */
  rightLabel?: string;
  /** The lines, in the order of the data after the x values. */
  lines: readonly LineSpec[];
}

const HEIGHT = 220;
const AXIS = "#5b6472";
const GRID = "rgba(128, 128, 128, 0.25)";
const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 2 });

function options(spec: ChartSpec, width: number): uPlot.Options {
  const value = (
    _: uPlot,
    v: number | null,
  ) => (v === null || v === undefined ? "—" : compact.format(v));
  const axis = (label: string, extra: Partial<uPlot.Axis> = {}): uPlot.Axis => ({
    label,
    stroke: AXIS,
    grid: { stroke: GRID, width: 1 },
    ticks: { stroke: GRID, width: 1 },
    values: (_, splits) => splits.map((v) => compact.format(v)),
    size: 56,
    ...extra,
  });
  const axes = [
    axis("Epoch", { size: 40, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] }),
    axis(spec.leftLabel),
  ];
  if (spec.rightLabel) {
    axes.push(axis(spec.rightLabel, { scale: "right", side: 1, grid: { show: false } }));
  }
  return {
    width,
    height: HEIGHT,
    scales: { x: { time: false }, y: {}, right: {} },
    cursor: { drag: { x: false, y: false } },
    legend: { show: true },
    axes,
    series: [
      { label: "Epoch", value: (_, v) => (v === null || v === undefined ? "—" : String(v)) },
      ...spec.lines.map((line): uPlot.Series => ({
        label: line.label,
        stroke: line.color,
        width: 2,
        scale: line.right ? "right" : "y",
        dash: line.dashed ? [6, 4] : undefined,
        fill: line.bars ? line.color : undefined,
        paths: line.bars ? uPlot.paths.bars!({ size: [0.7, 48] }) : undefined,
        points: { show: false },
        spanGaps: false,
        value,
      })),
    ],
  };
}

/** A chart in a container, redrawn with new data on every refresh. */
export class Chart {
  readonly #container: DomElement;
  readonly #spec: ChartSpec;
  readonly #browser: Browser;
  #plot: uPlot | null = null;
  #resize: DomResizeObserver | null = null;

  /** A chart of `spec` in `container` (drawn on the first {@linkcode draw}). */
  constructor(container: DomElement, spec: ChartSpec, browser: Browser) {
    this.#container = container;
    this.#spec = spec;
    this.#browser = browser;
  }

  /** Draws `data` (x values first, then each line's) and sets the text summary. */
  draw(data: (number | null)[][], summary: string): void {
    this.#container.setAttribute("aria-label", summary);
    if (this.#plot) {
      this.#plot.setData(data as uPlot.AlignedData);
      return;
    }
    const width = Math.max(200, this.#container.clientWidth);
    this.#plot = new uPlot(
      options(this.#spec, width),
      data as uPlot.AlignedData,
      // The DOM's element type is not in this program's library (see dom.ts).
      this.#container as unknown as ConstructorParameters<typeof uPlot>[2],
    );
    // The container is an image with a text summary (role="img"); the legend's table repeats
    // the lines' names for the eye only.
    for (const legend of this.#plot.root.querySelectorAll(".u-legend")) {
      legend.setAttribute("aria-hidden", "true");
    }
    this.#resize = this.#browser.observeResize(() => {
      const w = Math.max(200, this.#container.clientWidth);
      if (this.#plot && Math.abs(this.#plot.width - w) > 1) {
        this.#plot.setSize({ width: w, height: HEIGHT });
      }
    });
    this.#resize.observe(this.#container);
  }

  /** Removes the chart and its summary. */
  clear(): void {
    this.#resize?.disconnect();
    this.#resize = null;
    this.#plot?.destroy();
    this.#plot = null;
    this.#container.replaceChildren();
    this.#container.setAttribute("aria-label", "");
  }
}
