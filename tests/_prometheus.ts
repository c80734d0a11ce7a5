/**
 * An independent parser of the Prometheus text exposition format 0.0.4, written from the format's
 * description (not from the exporter's code), for tests of any service's `GET /metrics`. It is
 * strict: a line it cannot read, a sample before its family's `# TYPE`, a family split in two, a
 * repeated series, a histogram whose buckets are not cumulative or lack `+Inf`, or a counter
 * without `_total` fail with the line's number.
 *
 * @example
 * ```ts ignore
 * import { parsePrometheusText, sampleValue } from "./_prometheus.ts";
 *
 * const families = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
 * assert.equal(sampleValue(families, "net_http_requests_total", { route: "/stats" }), 3);
 * ```
 *
 * @module
 */

/** One sample line. */
export interface Sample {
  /** The sample's name (`x_bucket`, `x_sum`, ... for a histogram `x`). */
  name: string;
  /** Its labels. */
  labels: Record<string, string>;
  /** Its value (`NaN`, `±Infinity` included). */
  value: number;
}

/** A metric family: its `# HELP`, `# TYPE` and samples. */
export interface Family {
  /** The family's name. */
  name: string;
  /** The help text, unescaped. */
  help: string;
  /** `counter`, `gauge`, `histogram`, `summary` or `untyped`. */
  type: string;
  /** Its samples, in order. */
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function unescape(text: string, quotes: boolean): string {
  return text.replace(/\\(.)/g, (_, c: string) => {
    if (c === "n") return "\n";
    if (c === "\\") return "\\";
    if (c === '"' && quotes) return '"';
    throw new SyntaxError(`unknown escape \\${c}`);
  });
}

function parseValue(text: string): number {
  if (text === "+Inf" || text === "Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) {
    throw new SyntaxError(`${JSON.stringify(text)} is not a number`);
  }
  return Number(text);
}

/** Reads `{a="1",b="x\"y"}` from the start of `text`; returns the labels and the rest. */
function parseLabels(text: string): [Record<string, string>, string] {
  const labels: Record<string, string> = {};
  let rest = text.slice(1);
  for (;;) {
    rest = rest.trimStart();
    if (rest.startsWith("}")) return [labels, rest.slice(1)];
    const name = LABEL.exec(rest)?.[0];
    if (!name) throw new SyntaxError(`a label name is expected at ${JSON.stringify(rest)}`);
    rest = rest.slice(name.length).trimStart();
    if (!rest.startsWith('="')) throw new SyntaxError(`="…" is expected after label ${name}`);
    rest = rest.slice(2);
    let end = 0;
    while (end < rest.length && rest[end] !== '"') end += rest[end] === "\\" ? 2 : 1;
    if (end >= rest.length) throw new SyntaxError(`the value of label ${name} is not closed`);
    if (Object.hasOwn(labels, name)) throw new SyntaxError(`label ${name} appears twice`);
    labels[name] = unescape(rest.slice(0, end), true);
    rest = rest.slice(end + 1).trimStart();
    if (rest.startsWith(",")) rest = rest.slice(1);
    else if (!rest.startsWith("}")) throw new SyntaxError(`, or } is expected after label ${name}`);
  }
}

function parseSample(line: string): Sample {
  const name = NAME.exec(line)?.[0];
  if (!name) throw new SyntaxError("a metric name is expected");
  let rest = line.slice(name.length);
  let labels: Record<string, string> = {};
  if (rest.startsWith("{")) [labels, rest] = parseLabels(rest);
  const fields = rest.trim().split(/\s+/);
  if (fields.length < 1 || fields.length > 2 || fields[0] === "") {
    throw new SyntaxError("a value (and an optional timestamp) is expected after the name");
  }
  if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1])) {
    throw new SyntaxError(`${JSON.stringify(fields[1])} is not a timestamp`);
  }
  return { name, labels, value: parseValue(fields[0]) };
}

/** The family a sample belongs to: `x_bucket`, `x_sum`, `x_count` belong to histogram `x`. */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  const family = families.get(base);
  return family && (family.type === "histogram" || family.type === "summary") ? family : undefined;
}

function checkHistogram(family: Family): void {
  const series = new Map<string, Sample[]>();
  const key = (labels: Record<string, string>) =>
    JSON.stringify(Object.entries(labels).filter(([k]) => k !== "le").sort());
  for (const sample of family.samples) {
    const list = series.get(key(sample.labels)) ?? [];
    list.push(sample);
    series.set(key(sample.labels), list);
  }
  for (const [labels, samples] of series) {
    const buckets = samples.filter((s) => s.name === `${family.name}_bucket`);
    const count = samples.find((s) => s.name === `${family.name}_count`);
    const sum = samples.find((s) => s.name === `${family.name}_sum`);
    const where = `histogram ${family.name} ${labels}`;
    if (!count || !sum) throw new SyntaxError(`${where} lacks _sum or _count`);
    const bounds = buckets.map((b) => parseValue(b.labels.le ?? "missing"));
    if (bounds.at(-1) !== Infinity) throw new SyntaxError(`${where} has no le="+Inf" bucket`);
    for (let i = 1; i < buckets.length; i++) {
      if (!(bounds[i] > bounds[i - 1]) || buckets[i].value < buckets[i - 1].value) {
        throw new SyntaxError(`${where}: buckets are not ascending and cumulative`);
      }
    }
    if (buckets.at(-1)!.value !== count.value) {
      throw new SyntaxError(`${where}: the +Inf bucket (${buckets.at(-1)!.value}) is not _count`);
    }
  }
}

/**
 * Parses a whole exposition.
 *
 * @throws {SyntaxError} naming the line that breaks the format.
 */
export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const closed = new Set<string>();
  const seen = new Set<string>();
  let current: Family | undefined;
  const lines = text.split("\n");
  if (lines.at(-1) !== "") throw new SyntaxError("the exposition does not end with a newline");
  lines.forEach((line, index) => {
    try {
      if (line.trim() === "") return;
      const meta = /^#\s*(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (meta) {
        const [, kind, name, rest = ""] = meta;
        if (!NAME.test(name) || NAME.exec(name)![0] !== name) {
          throw new SyntaxError(`${name} is not a metric name`);
        }
        let family = families.get(name);
        if (!family) {
          if (closed.has(name)) throw new SyntaxError(`family ${name} is split`);
          family = { name, help: "", type: "untyped", samples: [] };
          families.set(name, family);
        }
        if (current && current !== family) closed.add(current.name);
        current = family;
        if (kind === "HELP") family.help = unescape(rest, false);
        else {
          if (!TYPES.has(rest)) throw new SyntaxError(`unknown type ${rest}`);
          if (family.samples.length > 0) throw new SyntaxError(`# TYPE ${name} after its samples`);
          family.type = rest;
        }
        return;
      }
      if (line.startsWith("#")) return;
      const sample = parseSample(line);
      const family = familyOf(sample.name, families);
      if (!family) throw new SyntaxError(`sample ${sample.name} has no # TYPE before it`);
      if (family !== current) throw new SyntaxError(`family ${family.name} is split`);
      const id = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
      if (seen.has(id)) throw new SyntaxError(`series ${id} appears twice`);
      seen.add(id);
      family.samples.push(sample);
    } catch (error) {
      throw new SyntaxError(
        `line ${index + 1} ${JSON.stringify(line)}: ${(error as Error).message}`,
      );
    }
  });
  for (const family of families.values()) {
    if (family.type === "histogram") checkHistogram(family);
    if (family.type === "counter" && !family.name.endsWith("_total")) {
      throw new SyntaxError(`counter ${family.name} does not end with _total`);
    }
  }
  return families;
}

/**
 * The value of the one sample named `name` whose labels include `labels`; `undefined` when
 * none does.
 *
 * @throws {Error} when several do.
 */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const family = familyOf(name, families);
  const matching = (family?.samples ?? []).filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  if (matching.length > 1) {
    throw new Error(`${matching.length} samples of ${name} match ${JSON.stringify(labels)}`);
  }
  return matching[0]?.value;
}
