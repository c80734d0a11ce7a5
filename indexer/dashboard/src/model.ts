/**
 * What the page shows, as data: the API's bodies turned into labelled figures and table
 * columns whose every number carries the field it came from, its exact value and its format.
 * The renderer writes them into the DOM with `data-field`, `data-value` and `data-format`, which
 * is also how the browser test compares the page with the API. Pure: no DOM here.
 *
 * @module
 */

import {
  exactTokens,
  formatCount,
  formatDuration,
  formatRate,
  formatReputation,
  formatTokens,
  formatUnixTime,
  shortAddress,
  tokensTitle,
} from "./format.ts";
import { volumeSeries } from "./series.ts";
import type { EpochVolume, Model, Provider, Stats } from "./types.ts";

/** How a value is written. */
export type Format =
  | "tokens"
  | "price"
  | "count"
  | "reputation"
  | "rate"
  | "duration"
  | "time"
  | "address"
  | "text";

/** One value on the page: where it came from, its exact value, its text and hover text. */
export interface Value {
  /** Its path in the body it came from, e.g. `providers.live_verified`. */
  field: string;
  /** The API's value as text (`null` for a JSON null). */
  value: string;
  /** How it is written. */
  format: Format;
  /** What the page shows. */
  text: string;
  /** The hover text (the exact amount for tokens), or `""`. */
  title: string;
}

/** Text and values, in reading order. */
export type Part = string | Value;

/** A labelled figure of the summary or the emission section. */
export interface Figure {
  /** A stable id. */
  key: string;
  /** What it is. */
  label: string;
  /** The figure. */
  parts: Part[];
}

/** A sparkline: values oldest first, and the same as text for screen readers. */
export interface Spark {
  /** The values to draw. */
  values: number[];
  /** What they are, in words and exact numbers. */
  label: string;
}

/** A table column. */
export interface Column<T> {
  /** The header. */
  header: string;
  /** Whether the column holds numbers (right-aligned). */
  numeric: boolean;
  /** The cell of a row. */
  cell: (row: T) => Part[];
  /** For a sparkline column: the values to draw (oldest first) and their text, or `null`. */
  spark?: (row: T) => Spark | null;
  /** Where the cell links to (a page of the row), if anywhere. */
  link?: (row: T) => string;
}

/** The text of `value` in `format` (the renderer's and the tests' one definition). */
export function formatValue(format: Format, value: string): string {
  if (value === "null") return "—";
  switch (format) {
    case "tokens":
    case "price":
      return formatTokens(value);
    case "count":
      return formatCount(value);
    case "reputation":
      return formatReputation(Number(value));
    case "rate":
      return formatRate(Number(value));
    case "duration":
      return formatDuration(value);
    case "time":
      return formatUnixTime(value);
    case "address":
      return shortAddress(value);
    case "text":
      return value;
  }
}

function titleOf(format: Format, value: string): string {
  if (value === "null") return "";
  if (format === "tokens") return tokensTitle(value);
  if (format === "price") return `${exactTokens(value)} tokens per 1M tokens (${value} units)`;
  if (format === "address") return value;
  return "";
}

/** The value at `field` of `body` (a dotted path; `.length` of an array works). */
export function lookup(body: unknown, field: string): unknown {
  let at: unknown = body;
  for (const key of field.split(".")) {
    if (at === null || at === undefined) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** `field` of `body` as a {@linkcode Value}. */
export function valueOf(body: unknown, field: string, format: Format): Value {
  const raw = lookup(body, field);
  const value = raw === null || raw === undefined ? "null" : String(raw);
  return { field, value, format, text: formatValue(format, value), title: titleOf(format, value) };
}

/** What a settlement figure the history has not caught up with says, instead of a number. */
export const NOT_SYNCED = "not yet synced";

/** The network summary. */
export function summaryFigures(stats: Stats): Figure[] {
  const v = (field: string, format: Format = "count") => valueOf(stats, field, format);
  const settled: Part[] = stats.settlements.amount === null
    ? [`${NOT_SYNCED}: the settlement history is catching up`]
    : [
      v("settlements.amount", "tokens"),
      " tokens in ",
      v("settlements.count"),
      " settlements",
    ];
  return [
    {
      key: "providers",
      label: "Providers live-verified",
      parts: [
        v("providers.live_verified"),
        " of ",
        v("providers.bonded"),
        " bonded (",
        v("providers.registered"),
        " registered)",
      ],
    },
    { key: "validators", label: "Validators", parts: [v("validators")] },
    {
      key: "staked",
      label: "Staked security",
      parts: [v("staked_security", "tokens"), " tokens"],
    },
    {
      key: "routers",
      label: "Routers reachable",
      parts: [v("routers.reachable"), " of ", v("routers.total")],
    },
    {
      key: "tee",
      label: "Approved TEE measurements",
      parts: [v("tee_measurements.length")],
    },
    {
      key: "capacity",
      label: "Capacity (concurrent requests)",
      parts: [
        v("capacity.available_concurrency"),
        " free of ",
        v("capacity.max_concurrency"),
      ],
    },
    { key: "models", label: "Models served", parts: [v("models")] },
    { key: "settled", label: "Settled volume", parts: settled },
    { key: "signed", label: "Paid by consumers' signatures", parts: signedParts(stats) },
  ];
}

/** The volume consumers' vouchers paid, and how many consumers paid this epoch. */
function signedParts(stats: Stats): Part[] {
  const s = stats.settlements;
  if (s.amount === null || s.signed_amount === undefined || s.signed_amount === null) {
    return [`${NOT_SYNCED}: the settlement history is catching up`];
  }
  const v = (field: string, format: Format = "count") => valueOf(stats, field, format);
  return [
    v("settlements.signed_amount", "tokens"),
    " tokens in ",
    v("settlements.signed_count"),
    " settlements; ",
    v("settlements.paying_consumers"),
    " paying consumers this epoch",
  ];
}

/** Emission: emitted against the cap, the current epoch and its reward, the schedule. */
export function emissionFigures(stats: Stats): Figure[] {
  const v = (field: string, format: Format = "count") =>
    valueOf(stats, `emission.${field}`, format);
  return [
    {
      key: "emitted",
      label: "Emitted",
      parts: [v("total_emitted", "tokens"), " of ", v("cap", "tokens"), " tokens"],
    },
    { key: "epoch", label: "Current epoch", parts: [v("current_epoch")] },
    {
      key: "reward",
      label: "Reward of this epoch",
      parts: [v("current_epoch_reward", "tokens"), " tokens"],
    },
    { key: "emitted_epochs", label: "Epochs emitted", parts: [v("emitted_epochs")] },
    {
      key: "schedule",
      label: "Schedule",
      parts: [
        "halving every ",
        v("schedule.halving_interval"),
        " epochs from ",
        v("schedule.initial_reward", "tokens"),
        " tokens; epochs of ",
        v("schedule.epoch_length", "duration"),
        " since ",
        v("schedule.genesis_time", "time"),
      ],
    },
  ];
}

/** A reputation, or {@linkcode NOT_SYNCED} for a `null` one while the history is not synced. */
function reputationCell(row: Model | Provider, synced: boolean): Part[] {
  return row.reputation === null && !synced
    ? [NOT_SYNCED]
    : [valueOf(row, "reputation", "reputation")];
}

/** The models table (`synced`: whether the history is, so a `null` reputation is explained). */
export function modelColumns(synced = true): Column<Model>[] {
  return MODEL_COLUMNS.map((column) =>
    column.header === "Reputation" ? { ...column, cell: (m) => reputationCell(m, synced) } : column
  );
}

/** The models table's columns when the history is synced. */
export const MODEL_COLUMNS: readonly Column<Model>[] = [
  { header: "Model", numeric: false, cell: (m) => [valueOf(m, "model", "text")] },
  {
    header: "Input per 1M tokens",
    numeric: true,
    cell: (m) => [valueOf(m, "cheapest_price.input", "price")],
  },
  {
    header: "Output per 1M tokens",
    numeric: true,
    cell: (m) => [valueOf(m, "cheapest_price.output", "price")],
  },
  {
    header: "Providers",
    numeric: true,
    cell: (m) => [
      valueOf(m, "providers", "count"),
      " (",
      valueOf(m, "tiers.verified", "count"),
      " verified, ",
      valueOf(m, "tiers.tee", "count"),
      " TEE)",
    ],
  },
  { header: "Reputation", numeric: true, cell: (m) => [valueOf(m, "reputation", "reputation")] },
  { header: "Tokens/s", numeric: true, cell: (m) => [valueOf(m, "tokens_per_sec", "rate")] },
  { header: "Context", numeric: true, cell: (m) => [valueOf(m, "context_length", "count")] },
];

/** The per-epoch settled amounts of a provider's history, oldest first, or `null`. */
export function providerHistory(provider: Provider): EpochVolume[] | null {
  const epochs = provider.settled?.epochs;
  return Array.isArray(epochs) ? epochs : null;
}

/** Most epochs a sparkline shows (the latest). */
export const SPARK_EPOCHS = 16;

function isEpochVolume(row: unknown): row is EpochVolume {
  const r = row as EpochVolume;
  return typeof r === "object" && r !== null && typeof r.epoch === "string" &&
    typeof r.amount === "string";
}

/**
 * The per-epoch history in an answer of `GET /providers/{address}` (`settled.epochs`: only the
 * epochs the provider was paid in, in either order): its latest {@linkcode SPARK_EPOCHS} epochs
 * oldest first, the epochs between them without a settlement filled in with zeros; `null` when
 * it has none (`settled.epochs` is `null` until the history is synced).
 */
export function historyOf(body: unknown): EpochVolume[] | null {
  const rows = lookup(body, "settled.epochs");
  if (!Array.isArray(rows) || !rows.every(isEpochVolume)) return null;
  const byEpoch = new Map(rows.map((row) => [BigInt(row.epoch), row]));
  if (byEpoch.size === 0) return [];
  const last = [...byEpoch.keys()].reduce((a, b) => (a > b ? a : b));
  const out: EpochVolume[] = [];
  for (let epoch = last; epoch >= 0n && out.length < SPARK_EPOCHS; epoch--) {
    out.push(
      byEpoch.get(epoch) ??
        { epoch: String(epoch), amount: "0", tokens: "0", settlements: 0 },
    );
  }
  return out.reverse();
}

/** Whether a list row lacks its history (so `/providers/{address}` is asked for it). */
export function lacksHistory(provider: Provider): boolean {
  return provider.settled !== null && !Array.isArray(provider.settled?.epochs);
}

/** The sparkline of a per-epoch history: settled amounts in tokens, oldest first. */
export function sparkOf(history: readonly EpochVolume[] | null): Spark | null {
  if (!history || history.length === 0) return null;
  const series = volumeSeries(history);
  const sorted = [...history].sort((a, b) => Number(BigInt(a.epoch) - BigInt(b.epoch)));
  return {
    values: series.amount,
    label: "Settled per epoch, in tokens: " +
      sorted.map((e) => `epoch ${e.epoch} ${formatTokens(e.amount)}`).join(", "),
  };
}

/**
 * The providers table (the sparkline column is filled from `history`; `synced`: whether the
 * settlement history is, so `null` figures say {@linkcode NOT_SYNCED}).
 */
export function providerColumns(
  history: (provider: Provider) => readonly EpochVolume[] | null,
  synced = true,
): Column<Provider>[] {
  return [
    {
      header: "Provider",
      numeric: false,
      cell: (p) => [valueOf(p, "provider", "address")],
      link: (p) => `#/providers/${p.provider}`,
    },
    { header: "Tier", numeric: false, cell: (p) => [valueOf(p, "tier", "text")] },
    { header: "Stake (tokens)", numeric: true, cell: (p) => [valueOf(p, "stake", "tokens")] },
    {
      header: "Capacity",
      numeric: true,
      cell: (p) => [
        valueOf(p, "capacity.available_concurrency", "count"),
        " of ",
        valueOf(p, "capacity.max_concurrency", "count"),
      ],
    },
    {
      header: "Tokens/s",
      numeric: true,
      cell: (p) => [valueOf(p, "metrics.tokens_per_sec", "rate")],
    },
    { header: "Reputation", numeric: true, cell: (p) => reputationCell(p, synced) },
    {
      header: "Settled per epoch",
      numeric: false,
      cell: (p) => (p.settled === null ? [NOT_SYNCED] : []),
      spark: (p) => (p.settled === null ? null : sparkOf(history(p))),
    },
    {
      header: "Settled in all (tokens)",
      numeric: true,
      cell: (p) =>
        p.settled === null ? [NOT_SYNCED] : [valueOf(p, "settled.total.amount", "tokens")],
    },
  ];
}
