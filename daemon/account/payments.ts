/**
 * How the daemon pays (`docs/daemon.md`, "Money"): for each attempt at a provider, before
 * anything is sealed, {@linkcode DaemonPayments.authorize} computes the request's worst case at
 * the provider's ad prices (`chain/cost.ts`), refuses it with `402 budget_exceeded` when a spend
 * cap (the daemon's, the API key's) has less left, signs a voucher (`chain/voucher.ts`) that
 * raises the total signed to the provider by exactly that worst case over what the daemon
 * already owes it, and records the attempt in the ledger (`ledger.ts`) — then the request is
 * sealed with the voucher inside. The returned {@linkcode PaymentTicket} records the attempt's
 * cost once it is known: from the reply's usage, 0 when the provider refused it, or from the
 * provider's bill ({@linkcode BillLookup}) when the reply ended early; until then the attempt
 * counts at its worst case.
 *
 * The voucher's total for a provider is `known costs + worst cases not yet known + this
 * request's worst case`, so a provider is never authorized more than the daemon may owe it.
 *
 * @module
 */

import type { Address } from "viem";
import {
  billId,
  formatCost,
  usageCost,
  type VoucherSigner,
  voucherToJson,
  worstCaseCost,
} from "../../chain/mod.ts";
import {
  type AttemptPayments,
  type BillLookup,
  DaemonError,
  type PaymentAttempt,
  type PaymentTicket,
  type Tier,
} from "../core/mod.ts";
import type { Ledger } from "./ledger.ts";
import { formatSpendCap, periodOf, type SpendCap } from "./spend_cap.ts";

/** The header a sealed request carries its voucher in (`docs/protocol.md` §9). */
export const VOUCHER_HEADER = "net-voucher";

/** Spend caps. */
export interface SpendCaps {
  /** The daemon's cap (`--max-spend`), over every key. */
  readonly daemon?: SpendCap | null;
  /** Per API key name. */
  readonly keys?: ReadonlyMap<string, SpendCap>;
}

/** Options of {@linkcode DaemonPayments}. */
export interface DaemonPaymentsOptions {
  /** Signs the vouchers (the consumer key, for the network's Escrow). */
  signer: VoucherSigner;
  /** The ledger. */
  ledger: Ledger;
  /** The caps. @default {none} */
  caps?: SpendCaps;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Looks bills up; without it, an attempt whose reply ended early stays at its worst case. */
  lookup?: BillLookup;
  /** Delays between lookups of one bill, in ms; the last repeats. @default {[500, 2000, 10000, 60000]} */
  lookupDelaysMs?: readonly number[];
  /** Receives one-line notes. @default {() => {}} */
  log?: (line: string) => void;
  /** Called with each recorded cost (for `/metrics`). @default {() => {}} */
  onCost?: (cost: bigint, tier: Tier) => void;
  /** Called with each `budget_exceeded` refusal (for `/metrics`). @default {() => {}} */
  onBudgetRefused?: (scope: "daemon" | "key") => void;
}

/**
 * What a `budget_exceeded` refusal says, in its OpenAI error body (`budget`); amounts are
 * decimal strings in the chain's smallest unit.
 */
export interface BudgetRefusal {
  /** `daemon` or `key`. */
  readonly scope: "daemon" | "key";
  /** The key's name, for a key's cap. */
  readonly key?: string;
  /** Spent in the period so far (worst cases of unfinished requests included). */
  readonly spent: string;
  /** The cap. */
  readonly cap: string;
  /** The cap as it was given, `AMOUNT/PERIOD` in the whole unit. */
  readonly max_spend: string;
  /** The period. */
  readonly period: string;
  /** When the period resets (RFC 3339). */
  readonly resets_at: string;
  /** The worst case of the refused request. */
  readonly needed: string;
}

/** The daemon's payments: caps, vouchers and the ledger, per attempt. */
export class DaemonPayments implements AttemptPayments {
  readonly #options: DaemonPaymentsOptions;
  readonly #clock: () => Date;
  readonly #lookups = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #abort = new AbortController();

  /** Creates the payments; attempts the ledger left unfinished are looked up (`resume`). */
  constructor(options: DaemonPaymentsOptions) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
  }

  /** The consumer's address. */
  get address(): Address {
    return this.#options.signer.address;
  }

  /** The caps. */
  get caps(): SpendCaps {
    return this.#options.caps ?? {};
  }

  /** The ledger. */
  get ledger(): Ledger {
    return this.#options.ledger;
  }

  /**
   * Pays for one attempt: checks the caps, signs the voucher, records the attempt. Nothing here
   * waits, so concurrent attempts see each other's worst cases.
   *
   * @throws {DaemonError} `budget_exceeded` (402) when a cap has less left than the worst case.
   */
  authorize(attempt: PaymentAttempt): PaymentTicket {
    const { ledger } = this.#options;
    const worst = worstCaseCost(attempt.prices, {
      requestBytes: attempt.requestBytes,
      maxTokens: attempt.maxTokens,
      contextLength: attempt.contextLength,
      inputOnly: attempt.kind === "embeddings",
    });
    const now = this.#clock();
    this.#checkCap(this.caps.daemon ?? null, worst, now, undefined);
    this.#checkCap(this.caps.keys?.get(attempt.key) ?? null, worst, now, attempt.key);
    const provider = attempt.provider.toLowerCase() as Address;
    const state = ledger.provider(provider);
    const voucher = this.#options.signer.sign({
      provider,
      cumulative: state.final + state.pending + worst,
      seq: state.seq + 1n,
    });
    const id = billId(voucher.signature);
    ledger.open({
      id,
      at: now,
      provider,
      model: attempt.model,
      tier: attempt.tier,
      key: attempt.key,
      seq: voucher.seq,
      cumulative: voucher.cumulative,
      worst,
    });
    let done = false;
    // A cost that cannot be written (the ledger closed, the disk full) is logged; the reply
    // it belongs to goes on.
    const record = (cost: bigint, usage: { promptTokens: number; completionTokens: number }) => {
      if (done) return;
      done = true;
      try {
        if (ledger.settle(id, { cost, ...usage, source: cost === 0n ? "refused" : "reply" })) {
          this.#options.onCost?.(cost < worst ? cost : worst, attempt.tier);
        }
      } catch (error) {
        this.#options.log?.(
          `daemon: the cost of ${id} was not recorded: ${(error as Error).message}`,
        );
      }
    };
    return {
      header: [VOUCHER_HEADER, JSON.stringify(voucherToJson(voucher))],
      id,
      worst,
      prices: attempt.prices,
      cost: (usage) => {
        const cost = usageCost(attempt.prices, usage);
        return cost < worst ? cost : worst;
      },
      paid: (usage) => {
        const cost = usageCost(attempt.prices, usage);
        const capped = cost < worst ? cost : worst;
        if (capped === 0n) {
          // Recorded as a reply's cost, not a refusal, even when it is 0.
          if (!done) {
            done = true;
            try {
              ledger.settle(id, { cost: 0n, ...usage, source: "reply" });
            } catch (error) {
              this.#options.log?.(`daemon: the cost of ${id} was not recorded: ${error}`);
            }
          }
        } else record(capped, usage);
        return capped;
      },
      refused: () => record(0n, { promptTokens: 0, completionTokens: 0 }),
      unknown: () => {
        if (done) return;
        done = true;
        this.#scheduleLookup(id, 0);
      },
    };
  }

  /** Looks up the bills of every attempt the ledger holds unfinished (after a restart). */
  resume(): void {
    for (const entry of this.#options.ledger.pending()) {
      if (!this.#lookups.has(entry.id)) this.#scheduleLookup(entry.id, 0);
    }
  }

  /** Attempts whose bill is being looked up now. */
  get lookingUp(): number {
    return this.#lookups.size;
  }

  /** Stops the lookups and the signer's preparation of nonces. */
  close(): void {
    this.#options.signer.close();
    this.#abort.abort();
    for (const timer of this.#lookups.values()) clearTimeout(timer);
    this.#lookups.clear();
  }

  #checkCap(cap: SpendCap | null, worst: bigint, now: Date, key: string | undefined): void {
    if (!cap) return;
    const { start, resetsAt } = periodOf(cap.period, now);
    const spent = this.#options.ledger.spentSince(start, key);
    if (spent + worst <= cap.amount) return;
    const budget: BudgetRefusal = {
      scope: key === undefined ? "daemon" : "key",
      ...(key === undefined ? {} : { key }),
      spent: String(spent),
      cap: String(cap.amount),
      max_spend: formatSpendCap(cap),
      period: cap.period,
      resets_at: resetsAt.toISOString(),
      needed: String(worst),
    };
    this.#options.onBudgetRefused?.(budget.scope);
    throw new DaemonError(
      "budget_exceeded",
      `Spend cap ${formatSpendCap(cap)} ${
        key === undefined ? "of the daemon" : `of API key ${key}`
      } reached: ${formatCost(spent)} spent this ${cap.period}, this request may cost up to ` +
        `${formatCost(worst)}; it resets at ${budget.resets_at}`,
      { data: { budget } },
    );
  }

  #scheduleLookup(id: string, attempt: number): void {
    const lookup = this.#options.lookup;
    if (!lookup || this.#abort.signal.aborted) return;
    const delays = this.#options.lookupDelaysMs ?? [500, 2000, 10_000, 60_000];
    const delay = delays[Math.min(attempt, delays.length - 1)];
    const timer = setTimeout(async () => {
      this.#lookups.delete(id);
      const entry = this.#options.ledger.pendingEntry(id);
      if (!entry) return;
      try {
        const bill = await lookup(entry, this.#abort.signal);
        if (bill === "running") return this.#scheduleLookup(id, attempt);
        const found = bill === "unknown"
          ? { cost: 0n, promptTokens: 0, completionTokens: 0 }
          : bill;
        if (this.#options.ledger.settle(id, { ...found, source: "bill" })) {
          this.#options.onCost?.(found.cost < entry.worst ? found.cost : entry.worst, entry.tier);
        }
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        this.#options.log?.(
          `daemon: the bill ${id} of provider ${entry.provider} could not be looked up ` +
            `(${(error as Error).message?.split("\n")[0]}); trying again`,
        );
        this.#scheduleLookup(id, attempt + 1);
      }
    }, delay);
    this.#lookups.set(id, timer);
  }
}
