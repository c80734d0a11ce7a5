/**
 * A sparkline: a provider's settled amount per epoch as a small inline SVG line, with a text
 * alternative that lists the values. Drawn by hand (a few points do not need a chart library).
 *
 * @module
 */

import { type DomDocument, type DomElement, h } from "./dom.ts";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 96;
const HEIGHT = 24;
const PAD = 2;

/** The SVG `points` of `values` in a `width` × `height` box (a flat line when all are equal). */
export function sparkPoints(values: readonly number[], width = WIDTH, height = HEIGHT): string {
  const max = Math.max(...values);
  const min = Math.min(...values, 0);
  const span = max - min || 1;
  const step = values.length > 1 ? (width - 2 * PAD) / (values.length - 1) : 0;
  return values.map((value, i) => {
    const x = PAD + i * step;
    const y = height - PAD - ((value - min) / span) * (height - 2 * PAD);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  }).join(" ");
}

/**
 * The sparkline of `values` (oldest first), labelled for screen readers with `label`; `—`
 * when there is no history.
 */
export function sparkline(
  document: DomDocument,
  values: readonly number[] | null,
  label: string,
): DomElement {
  if (!values || values.length === 0) {
    return h(document, "span", { class: "muted", title: "No settlement history" }, "—");
  }
  const svg = document.createElementNS(SVG, "svg");
  for (
    const [name, value] of Object.entries({
      class: "spark",
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      width: `${WIDTH}`,
      height: `${HEIGHT}`,
      role: "img",
      "aria-label": label,
    })
  ) svg.setAttribute(name, value);
  const title = document.createElementNS(SVG, "title");
  title.textContent = label;
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", sparkPoints(values));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "currentColor");
  line.setAttribute("stroke-width", "1.5");
  svg.append(title, line);
  return svg;
}
