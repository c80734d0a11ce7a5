/**
 * The daemon's spend ledger: every paid attempt, durably, in `<data-dir>/ledger/` — one JSON
 * object per line, appended to a file per UTC month (`2026-05.jsonl`, mode 0600). No prompt or
 * reply content is ever written: only who was paid, for which model, by which API key, with
 * which voucher, and what it cost.
 *
 * - An **open** record is written *before* the request is sealed: its bill id (the provider's
 *   `GET /v1/generation` id), the provider, model, tier and API key name, the voucher's `seq`
 *   and `cumulative`, and the request's worst case. Until its cost is known it counts at its
 *   worst case (for spend caps, and for the next voucher's total).
 * - A **cost** record finishes it, once: from the reply's usage, 0 for a request the provider
 *   refused, or from the provider's bill when the reply ended early. A cost record for an entry
 *   that is already finished is never written, and one read back for a finished or unknown
 *   entry is ignored: an entry is counted once.
 *
 * **Durability.** Each record is one `write` of one line to a file opened for appending, done
 * before the call returns: a process killed at any point (kill -9) loses no record it wrote and
 * cannot leave half a record behind a later one. The files are flushed to the disk
 * (`fdatasync`) every second and on close, so a power loss loses at most the last second. A
 * last line cut short (a crash of the machine mid-write) is dropped when the ledger is opened
 * again, and the file truncated to its last whole line.
 *
 * @module
 */

import { join } from "node:path";
import type { Address } from "viem";
import { NetError } from "../../errors.ts";
import type { Tier } from "../core/mod.ts";

/** Thrown when the ledger cannot be read or written. */
export class LedgerError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "LedgerError" as const;
}

/** What is known of an attempt when it is paid for. */
export interface LedgerOpen {
  /** The bill id (32 hex digits). */
  readonly id: string;
  /** When it was authorized. */
  readonly at: Date;
  /** The provider paid (lower case). */
  readonly provider: Address;
  /** `maker/model`. */
  readonly model: string;
  /** The tier. */
  readonly tier: Tier;
  /** The API key's name (`local` without a key). */
  readonly key: string;
  /** The voucher's number. */
  readonly seq: bigint;
  /** The voucher's total. */
  readonly cumulative: bigint;
  /** The request's worst case. */
  readonly worst: bigint;
}

/** How an attempt's cost became known. */
export type CostSource = "reply" | "refused" | "bill";

/** An attempt's cost. */
export interface LedgerCost {
  /** What it cost, in the chain's smallest unit. */
  readonly cost: bigint;
  /** Prompt tokens. */
  readonly promptTokens: number;
  /** Completion tokens. */
  readonly completionTokens: number;
  /** Where it came from. */
  readonly source: CostSource;
}

/** An attempt whose cost is not known yet. */
export interface PendingEntry extends LedgerOpen {}

/** A provider's voucher state, as the ledger holds it. */
export interface ProviderTotals {
  /** The highest voucher number used. */
  seq: bigint;
  /** The highest total signed. */
  signed: bigint;
  /** The costs known. */
  final: bigint;
  /** The worst cases of the attempts whose cost is not known. */
  pending: bigint;
}

/** One row of usage: what was spent, per day, model, provider and key. */
export interface UsageRow {
  /** The UTC day, `YYYY-MM-DD`. */
  readonly day: string;
  /** `maker/model`. */
  readonly model: string;
  /** The provider. */
  readonly provider: string;
  /** The API key's name. */
  readonly key: string;
  /** Attempts paid for. */
  requests: number;
  /** Known costs. */
  cost: bigint;
  /** Worst cases of the attempts whose cost is not known yet. */
  pending: bigint;
  /** Prompt tokens of the known costs. */
  promptTokens: number;
  /** Completion tokens of the known costs. */
  completionTokens: number;
}

/** Options of {@linkcode Ledger.open}. */
export interface LedgerOptions {
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** How often written records are flushed to the disk, in ms. @default {1000} */
  syncIntervalMs?: number;
  /** Receives warnings (a dropped torn line). @default {console.warn} */
  log?: (message: string) => void;
}

const encoder = new TextEncoder();
const DECIMAL = /^(0|[1-9][0-9]{0,77})$/;

/** The spend ledger of one data directory. */
export class Ledger {
  readonly #dir: string;
  readonly #clock: () => Date;
  readonly #pending = new Map<string, PendingEntry>();
  readonly #providers = new Map<string, ProviderTotals>();
  readonly #rows = new Map<string, UsageRow>();
  /** Spent (known + pending worst) per `day` and per `day|key`. */
  readonly #byDay = new Map<string, bigint>();
  readonly #byDayKey = new Map<string, bigint>();
  #file: Deno.FsFile | undefined;
  #month = "";
  #dirty = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  private constructor(dir: string, options: LedgerOptions) {
    this.#dir = dir;
    this.#clock = options.clock ?? (() => new Date());
  }

  /**
   * Opens (creating when missing, mode 0700) the ledger in `dir` and reads every record back.
   *
   * @throws {LedgerError} for a record that cannot be read (other than a torn last line).
   */
  static async open(dir: string, options: LedgerOptions = {}): Promise<Ledger> {
    const ledger = new Ledger(dir, options);
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const names: string[] = [];
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && /^\d{4}-\d{2}\.jsonl$/.test(entry.name)) names.push(entry.name);
    }
    names.sort();
    const log = options.log ?? ((message) => console.warn(message));
    for (const name of names) await ledger.#load(join(dir, name), log);
    const interval = options.syncIntervalMs ?? 1000;
    ledger.#timer = setInterval(() => ledger.#sync(), interval);
    Deno.unrefTimer(ledger.#timer);
    return ledger;
  }

  /** Records an attempt before it is sent; it counts at its worst case until its cost is known. */
  open(entry: LedgerOpen): void {
    this.#append({
      t: "open",
      id: entry.id,
      at: entry.at.toISOString(),
      provider: entry.provider,
      model: entry.model,
      tier: entry.tier,
      key: entry.key,
      seq: String(entry.seq),
      cumulative: String(entry.cumulative),
      worst: String(entry.worst),
    });
    this.#applyOpen(entry);
  }

  /**
   * Records the cost of a pending attempt. Returns `false` (and writes nothing) when the entry
   * is not pending: unknown, or already finished.
   */
  settle(id: string, cost: LedgerCost): boolean {
    const entry = this.#pending.get(id);
    if (!entry) return false;
    const capped = cost.cost > entry.worst ? entry.worst : cost.cost;
    this.#append({
      t: "cost",
      id,
      at: this.#clock().toISOString(),
      cost: String(capped),
      prompt_tokens: cost.promptTokens,
      completion_tokens: cost.completionTokens,
      source: cost.source,
    });
    this.#applyCost(id, { ...cost, cost: capped });
    return true;
  }

  /** The attempt `id` while its cost is not known, else `undefined`. */
  pendingEntry(id: string): PendingEntry | undefined {
    return this.#pending.get(id);
  }

  /** The attempts whose cost is not known yet, oldest first. */
  pending(): PendingEntry[] {
    return [...this.#pending.values()];
  }

  /** The voucher state with `provider`. */
  provider(provider: string): Readonly<ProviderTotals> {
    return this.#providers.get(provider.toLowerCase()) ??
      { seq: 0n, signed: 0n, final: 0n, pending: 0n };
  }

  /** Spent (known costs, and worst cases of pending attempts) from the day `from` on, by `key` or all. */
  spentSince(from: Date, key?: string): bigint {
    const today = dayOf(this.#clock());
    let total = 0n;
    for (let day = dayOf(from); day <= today; day = nextDay(day)) {
      total += (key === undefined ? this.#byDay.get(day) : this.#byDayKey.get(`${day}|${key}`)) ??
        0n;
    }
    return total;
  }

  /** The usage rows of the days `from` to `to` (inclusive, `YYYY-MM-DD`), in key order. */
  usage(from: string, to: string): UsageRow[] {
    return [...this.#rows.values()].filter((row) => row.day >= from && row.day <= to)
      .sort((a, b) => (rowKey(a) < rowKey(b) ? -1 : 1));
  }

  /** Flushes what was written and closes the file; later writes are refused. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    if (this.#file) {
      if (this.#dirty) await this.#file.syncData().catch(() => {});
      this.#file.close();
      this.#file = undefined;
    }
  }

  #sync(): void {
    if (!this.#dirty || !this.#file) return;
    this.#dirty = false;
    this.#file.syncData().catch(() => {
      this.#dirty = true;
    });
  }

  /** Appends one record as one write of one line. */
  #append(record: Record<string, unknown>): void {
    if (this.#closed) throw new LedgerError("Cannot write to the ledger: it is closed");
    const at = this.#clock();
    const month = at.toISOString().slice(0, 7);
    if (month !== this.#month || !this.#file) {
      this.#file?.close();
      this.#file = Deno.openSync(join(this.#dir, `${month}.jsonl`), {
        append: true,
        create: true,
        mode: 0o600,
      });
      this.#month = month;
    }
    const bytes = encoder.encode(`${JSON.stringify(record)}\n`);
    let written = 0;
    while (written < bytes.length) written += this.#file.writeSync(bytes.subarray(written));
    this.#dirty = true;
  }

  #applyOpen(entry: LedgerOpen): void {
    this.#pending.set(entry.id, entry);
    const p = this.#providerTotals(entry.provider);
    if (entry.seq > p.seq) p.seq = entry.seq;
    if (entry.cumulative > p.signed) p.signed = entry.cumulative;
    p.pending += entry.worst;
    const row = this.#row(entry);
    row.requests++;
    row.pending += entry.worst;
    this.#addSpent(dayOf(entry.at), entry.key, entry.worst);
  }

  #applyCost(id: string, cost: LedgerCost): void {
    const entry = this.#pending.get(id);
    if (!entry) return;
    this.#pending.delete(id);
    const p = this.#providerTotals(entry.provider);
    p.pending -= entry.worst;
    p.final += cost.cost;
    const row = this.#row(entry);
    row.pending -= entry.worst;
    row.cost += cost.cost;
    row.promptTokens += cost.promptTokens;
    row.completionTokens += cost.completionTokens;
    this.#addSpent(dayOf(entry.at), entry.key, cost.cost - entry.worst);
  }

  #addSpent(day: string, key: string, delta: bigint): void {
    this.#byDay.set(day, (this.#byDay.get(day) ?? 0n) + delta);
    this.#byDayKey.set(`${day}|${key}`, (this.#byDayKey.get(`${day}|${key}`) ?? 0n) + delta);
  }

  #providerTotals(provider: string): ProviderTotals {
    let p = this.#providers.get(provider);
    if (!p) this.#providers.set(provider, p = { seq: 0n, signed: 0n, final: 0n, pending: 0n });
    return p;
  }

  #row(entry: LedgerOpen): UsageRow {
    const key = `${dayOf(entry.at)}|${entry.model}|${entry.provider}|${entry.key}`;
    let row = this.#rows.get(key);
    if (!row) {
      row = {
        day: dayOf(entry.at),
        model: entry.model,
        provider: entry.provider,
        key: entry.key,
        requests: 0,
        cost: 0n,
        pending: 0n,
        promptTokens: 0,
        completionTokens: 0,
      };
      this.#rows.set(key, row);
    }
    return row;
  }

  /** Reads one month's file back; a torn last line is dropped (and cut off the file). */
  async #load(path: string, log: (message: string) => void): Promise<void> {
    const text = new TextDecoder().decode(await Deno.readFile(path));
    const lines = text.split("\n");
    const torn = lines.pop()!; // "" when the file ends with a whole line
    lines.forEach((body, i) => {
      let record: unknown;
      try {
        record = JSON.parse(body);
      } catch {
        record = undefined;
      }
      if (typeof record !== "object" || record === null) {
        throw new LedgerError(`Cannot read the ledger ${path}: line ${i + 1} is not a record`);
      }
      this.#replay(record as Record<string, unknown>, `${path}:${i + 1}`);
    });
    if (torn !== "") {
      // A last line cut short by a crash of the machine: drop it.
      log(`daemon: the ledger ${path} ends with a torn record (line ${lines.length + 1}); dropped`);
      await Deno.truncate(path, encoder.encode(text).length - encoder.encode(torn).length);
    }
  }

  #replay(record: Record<string, unknown>, where: string): void {
    const bad = (what: string): never => {
      throw new LedgerError(`Cannot read the ledger at ${where}: ${what}`);
    };
    const big = (name: string) => {
      const value = record[name];
      if (typeof value !== "string" || !DECIMAL.test(value)) bad(`${name} is not a decimal`);
      return BigInt(value as string);
    };
    const text = (name: string) => {
      const value = record[name];
      if (typeof value !== "string" || value.length === 0) bad(`${name} is missing`);
      return value as string;
    };
    const count = (name: string) => {
      const value = record[name];
      if (!Number.isSafeInteger(value) || (value as number) < 0) bad(`${name} is not a count`);
      return value as number;
    };
    if (record.t === "open") {
      const at = new Date(text("at"));
      if (Number.isNaN(at.getTime())) bad("at is not a time");
      const tier = text("tier");
      if (tier !== "verified" && tier !== "tee") bad(`tier is ${tier}`);
      this.#applyOpen({
        id: text("id"),
        at,
        provider: text("provider").toLowerCase() as Address,
        model: text("model"),
        tier: tier as Tier,
        key: text("key"),
        seq: big("seq"),
        cumulative: big("cumulative"),
        worst: big("worst"),
      });
    } else if (record.t === "cost") {
      const source = text("source");
      if (source !== "reply" && source !== "refused" && source !== "bill") {
        bad(`source is ${source}`);
      }
      this.#applyCost(text("id"), {
        cost: big("cost"),
        promptTokens: count("prompt_tokens"),
        completionTokens: count("completion_tokens"),
        source: source as CostSource,
      });
    } else {
      bad(`t is ${JSON.stringify(record.t)}, expected "open" or "cost"`);
    }
  }
}

/** The UTC day of an instant, `YYYY-MM-DD`. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

function nextDay(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + 1);
  return dayOf(date);
}

function rowKey(row: UsageRow): string {
  return `${row.day}|${row.model}|${row.provider}|${row.key}`;
}
