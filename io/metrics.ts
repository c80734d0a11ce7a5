/**
 * Prometheus metrics: a registry of counters, gauges and histograms with labels, exposed in the
 * text exposition format 0.0.4 (`# HELP`, `# TYPE`, escaping, `_bucket{le=…}`, `_sum`,
 * `_count`). The format and the arithmetic are `prom-client`'s (it runs on Deno unchanged);
 * this module adds what a service needs to stay safe to scrape:
 *
 * - **Bounded label sets.** A label may list the values it takes (`values`): any other value is
 *   recorded as `other`. Each metric keeps at most `maxSeries` label combinations (default 200):
 *   past that, new ones are all recorded under one series whose labels are `other`. A client can
 *   never grow the registry by sending odd paths or headers.
 * - **Names that follow the conventions**, checked when declared: `snake_case`, a counter ends in
 *   `_total` and nothing else does, no reserved label names (`le`, `__…`).
 * - **Its own registry**, never prom-client's global one, and no Node-only default metrics:
 *   {@linkcode MetricsRegistry.processMetrics} adds the few process gauges Deno can answer.
 *
 * @example
 * ```ts
 * import { MetricsRegistry } from "./metrics.ts";
 *
 * const metrics = new MetricsRegistry({ prefix: "net_indexer_" });
 * const refreshes = metrics.counter({
 *   name: "refreshes_total",
 *   help: "Snapshot refreshes by result.",
 *   labels: ["result"],
 *   values: { result: ["ok", "failed"] },
 * });
 * refreshes.inc({ result: "ok" });
 * refreshes.inc({ result: "a value nobody declared" }); // counted as result="other"
 * const text = await metrics.text();
 * console.assert(text.includes('net_indexer_refreshes_total{result="ok"} 1'));
 * console.assert(text.includes('net_indexer_refreshes_total{result="other"} 1'));
 * ```
 *
 * @module
 */

import client from "prom-client";

/** The media type of the text exposition format. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Buckets for request and operation latencies, in seconds (5 ms to 30 s). */
export const LATENCY_BUCKETS: readonly number[] = Object.freeze([
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
]);

/** The label value recorded in place of an undeclared value or past `maxSeries`. */
export const OTHER = "other";

/** Label values by label name. */
export type Labels<L extends string> = Readonly<Record<L, string | number>>;

/** What every metric is declared with. */
export interface MetricOptions<L extends string> {
  /** Its name after the registry's prefix, `snake_case` with its unit (`_seconds`, `_bytes`). */
  name: string;
  /** One line: what it measures. */
  help: string;
  /**
   * Its label names.
   *
   * @default {[]}
   */
  labels?: readonly L[];
  /**
   * For some labels, every value they take; another value is recorded as `other`.
   *
   * @default {{}}
   */
  values?: Partial<Readonly<Record<L, readonly string[]>>>;
  /**
   * Most label combinations kept; past it, new ones are recorded with every label `other`.
   *
   * @default {200}
   */
  maxSeries?: number;
}

/** Options of a gauge. */
export interface GaugeOptions<L extends string> extends MetricOptions<L> {
  /**
   * Sets the gauge's value(s) just before each scrape (e.g. the snapshot's age).
   *
   * @default {undefined}
   */
  collect?: (gauge: Gauge<L>) => void | Promise<void>;
}

/** Options of a histogram. */
export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  /**
   * The upper bounds of its buckets, ascending (`+Inf` is added).
   *
   * @default {LATENCY_BUCKETS}
   */
  buckets?: readonly number[];
}

/** A counter: only goes up. */
export interface Counter<L extends string> {
  /** Adds `value` (default 1, at least 0) to the series of `labels`. */
  inc(labels?: Labels<L>, value?: number): void;
}

/** A gauge: a value that goes up and down. */
export interface Gauge<L extends string> {
  /** Sets the series of `labels` to `value`. */
  set(labels: Labels<L>, value: number): void;
  /** Adds `value` (default 1). */
  inc(labels?: Labels<L>, value?: number): void;
  /** Subtracts `value` (default 1). */
  dec(labels?: Labels<L>, value?: number): void;
  /**
   * Forgets every series (a labelled gauge then shows none until set again; one without labels
   * shows 0), e.g. in `collect` before setting the series that exist now.
   */
  reset(): void;
}

/** A histogram: counts observations into buckets, with their sum and count. */
export interface Histogram<L extends string> {
  /** Records one observation (seconds, bytes, ...) in the series of `labels`. */
  observe(labels: Labels<L>, value: number): void;
  /** Starts timing; the returned function observes the seconds elapsed and returns them. */
  startTimer(labels?: Labels<L>): () => number;
}

/** Options of {@linkcode MetricsRegistry}. */
export interface MetricsRegistryOptions {
  /**
   * Prepended to every name, e.g. `net_indexer_`.
   *
   * @default {""}
   */
  prefix?: string;
  /**
   * The clock for timers, milliseconds.
   *
   * @default {() => performance.now()}
   */
  now?: () => number;
}

const METRIC_NAME = /^[a-z_][a-z0-9_]*$/;
const LABEL_NAME = /^[a-z_][a-z0-9_]*$/;

/** Maps label values into the declared, bounded set. */
class LabelGuard<L extends string> {
  readonly #names: readonly L[];
  readonly #allowed: Map<L, ReadonlySet<string>>;
  readonly #series = new Set<string>();
  readonly #max: number;

  constructor(name: string, options: MetricOptions<L>) {
    this.#names = options.labels ?? [];
    this.#max = options.maxSeries ?? 200;
    if (!Number.isSafeInteger(this.#max) || this.#max < 1) {
      throw new RangeError(
        `Cannot declare metric ${name}: maxSeries must be a positive integer, found ${this.#max}`,
      );
    }
    for (const label of this.#names) {
      if (!LABEL_NAME.test(label) || label.startsWith("__") || label === "le") {
        throw new RangeError(
          `Cannot declare metric ${name}: label ${JSON.stringify(label)} is not a valid ` +
            "label name (snake_case, not le, not starting with __)",
        );
      }
    }
    this.#allowed = new Map(
      Object.entries(options.values ?? {}).map(([label, values]) => {
        if (!this.#names.includes(label as L)) {
          throw new RangeError(
            `Cannot declare metric ${name}: values are given for ${label}, which is not one of ` +
              `its labels (${this.#names.join(", ") || "none"})`,
          );
        }
        return [label as L, new Set(values as readonly string[])];
      }),
    );
  }

  /** The labels to record: each value checked against its set, the series count bounded. */
  map(labels: Labels<L> | undefined): Record<string, string> {
    const out: Record<string, string> = {};
    for (const name of this.#names) {
      const value = String(labels?.[name] ?? "");
      const allowed = this.#allowed.get(name);
      out[name] = allowed && !allowed.has(value) ? OTHER : value;
    }
    if (this.#names.length === 0) return out;
    const key = this.#names.map((name) => out[name]).join("\u0000");
    if (this.#series.has(key)) return out;
    if (this.#series.size < this.#max) {
      this.#series.add(key);
      return out;
    }
    return Object.fromEntries(this.#names.map((name) => [name, OTHER]));
  }
}

/**
 * A registry of metrics, rendered in the Prometheus text format by {@linkcode text}.
 */
export class MetricsRegistry {
  readonly #registry = new client.Registry();
  readonly #prefix: string;
  readonly #now: () => number;

  /** An empty registry. */
  constructor(options: MetricsRegistryOptions = {}) {
    this.#prefix = options.prefix ?? "";
    this.#now = options.now ?? (() => performance.now());
    if (this.#prefix && !/^[a-z_][a-z0-9_]*_$/.test(this.#prefix)) {
      throw new RangeError(
        `Cannot create a metrics registry: the prefix ${JSON.stringify(this.#prefix)} must be ` +
          "snake_case ending with _ (e.g. net_indexer_)",
      );
    }
  }

  /** The media type of {@linkcode text}'s answer. */
  get contentType(): string {
    return METRICS_CONTENT_TYPE;
  }

  #declare(kind: "counter" | "gauge" | "histogram", name: string, help: string): string {
    const full = this.#prefix + name;
    if (!help.trim()) {
      throw new RangeError(
        `Cannot declare metric ${full}: its help is empty; say what it measures`,
      );
    }
    if (!METRIC_NAME.test(full)) {
      throw new RangeError(
        `Cannot declare metric ${JSON.stringify(full)}: expected snake_case ([a-z_][a-z0-9_]*)`,
      );
    }
    const total = full.endsWith("_total");
    if (kind === "counter" && !total) {
      throw new RangeError(`Cannot declare counter ${full}: a counter's name ends with _total`);
    }
    if (kind !== "counter" && total) {
      throw new RangeError(`Cannot declare ${kind} ${full}: only counters end with _total`);
    }
    if (this.#registry.getSingleMetric(full)) {
      throw new RangeError(`Cannot declare metric ${full}: it is declared already`);
    }
    return full;
  }

  /** Declares a counter. */
  counter<L extends string = never>(options: MetricOptions<L>): Counter<L> {
    const name = this.#declare("counter", options.name, options.help);
    const guard = new LabelGuard(name, options);
    const metric: client.Counter<string> = new client.Counter<string>({
      name,
      help: options.help,
      labelNames: options.labels ?? [],
      registers: [this.#registry],
    });
    return {
      inc(labels, value = 1) {
        if (!(value >= 0)) {
          throw new RangeError(`Cannot add ${value} to counter ${name}: expected at least 0`);
        }
        metric.inc(guard.map(labels), value);
      },
    };
  }

  /** Declares a gauge. */
  gauge<L extends string = never>(options: GaugeOptions<L>): Gauge<L> {
    const name = this.#declare("gauge", options.name, options.help);
    const guard = new LabelGuard(name, options);
    const collect = options.collect;
    const gauge: Gauge<L> = {
      set: (labels, value) => metric.set(guard.map(labels), value),
      inc: (labels, value = 1) => metric.inc(guard.map(labels), value),
      dec: (labels, value = 1) => metric.dec(guard.map(labels), value),
      reset: () => metric.reset(),
    };
    const metric: client.Gauge<string> = new client.Gauge<string>({
      name,
      help: options.help,
      labelNames: options.labels ?? [],
      registers: [this.#registry],
      collect: collect ? () => collect(gauge) : undefined,
    });
    return gauge;
  }

  /** Declares a histogram. */
  histogram<L extends string = never>(options: HistogramOptions<L>): Histogram<L> {
    const name = this.#declare("histogram", options.name, options.help);
    const guard = new LabelGuard(name, options);
    const buckets = [...(options.buckets ?? LATENCY_BUCKETS)];
    if (
      buckets.length === 0 || buckets.some((b, i) => !Number.isFinite(b) || b <= buckets[i - 1])
    ) {
      throw new RangeError(
        `Cannot declare histogram ${name}: buckets must be finite and ascending, found ${buckets}`,
      );
    }
    const metric: client.Histogram<string> = new client.Histogram<string>({
      name,
      help: options.help,
      labelNames: options.labels ?? [],
      buckets,
      registers: [this.#registry],
    });
    const now = this.#now;
    return {
      observe: (labels, value) => metric.observe(guard.map(labels), value),
      startTimer(labels) {
        const start = now();
        return () => {
          const seconds = (now() - start) / 1000;
          metric.observe(guard.map(labels), seconds);
          return seconds;
        };
      },
    };
  }

  /**
   * Adds the process gauges Deno can answer: `process_start_time_seconds`,
   * `process_resident_memory_bytes`, `process_heap_bytes` (V8's used heap). Unprefixed, as
   * Prometheus names them.
   */
  processMetrics(): void {
    const startSeconds = Math.round(Date.now() / 1000 - performance.now() / 1000);
    for (
      const [name, help, read] of [
        [
          "process_start_time_seconds",
          "Start time of the process, Unix seconds.",
          () => startSeconds,
        ],
        [
          "process_resident_memory_bytes",
          "Resident memory size, bytes.",
          () => Deno.memoryUsage().rss,
        ],
        ["process_heap_bytes", "V8 heap in use, bytes.", () => Deno.memoryUsage().heapUsed],
      ] as const
    ) {
      if (this.#registry.getSingleMetric(name)) continue;
      new client.Gauge({
        name,
        help,
        registers: [this.#registry],
        collect() {
          this.set(read());
        },
      });
    }
  }

  /** Every metric in the text exposition format 0.0.4. */
  async text(): Promise<string> {
    return await this.#registry.metrics();
  }
}
