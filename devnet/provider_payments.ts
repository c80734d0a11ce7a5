/**
 * The devnet provider's till (`docs/protocol.md` §9): it admits a sealed request only with a
 * voucher that pays for it, keeps what each consumer owes, and hands out what to redeem on chain.
 *
 * Per consumer it keeps: the best voucher seen (highest `cumulative`), what was charged for the
 * requests served (`charged`), the worst cases of the requests being served (`held`), what the
 * Escrow already paid (`settled`, read from the chain the first time the consumer is seen), and
 * the voucher numbers already used. A request is admitted when, and only when:
 *
 * 1. it carries a voucher (`net-voucher`), well formed, for this provider, signed by its
 *    consumer for this Escrow (`chain/voucher.ts`) — else `payment_required` / `invalid_voucher`;
 * 2. its `seq` was not used before (`voucher_replayed`) and is not too far below the highest seen
 *    (`voucher_stale`);
 * 3. the vouchers cover it: `max(best, this) ≥ max(charged, settled) + held + worst case` —
 *    else `voucher_insufficient` (a voucher signed for a lower price, or an old one reused);
 * 4. the consumer's available deposit covers what is not paid yet: `charged − settled + held +
 *    worst case ≤ available` (read from the chain, cached for `accountTtlMs`, read again before
 *    refusing, reads of one consumer coalesced) —
 *    else `insufficient_deposit`.
 *
 * Each refusal is a sealed `402` with its code. An admitted request holds its worst case until it
 * ends; then it is charged what it cost at the ad's prices, never more than its worst case. Every
 * request's final bill is kept (by the id `keccak256(signature)[0..16]`) for the requester to
 * look up, e.g. after it went away mid-stream (`GET /v1/generation`).
 *
 * @module
 */

import type { Address } from "viem";
import {
  billId,
  parseVoucher,
  type SignedVoucher,
  type VoucherDomain,
  VoucherError,
  VoucherVerifier,
} from "../chain/mod.ts";

/** Why a request was refused payment: its sealed `error.code` (status 402). */
export type PaymentRefusalCode =
  | "payment_required"
  | "invalid_voucher"
  | "voucher_replayed"
  | "voucher_stale"
  | "voucher_insufficient"
  | "insufficient_deposit"
  /** The consumer's account could not be read from the chain now (a sealed 503: ask later). */
  | "account_unavailable";

/** Every {@linkcode PaymentRefusalCode}, for tables and tests. */
export const PAYMENT_REFUSAL_CODES: readonly PaymentRefusalCode[] = Object.freeze([
  "payment_required",
  "invalid_voucher",
  "voucher_replayed",
  "voucher_stale",
  "voucher_insufficient",
  "insufficient_deposit",
  "account_unavailable",
]);

/** A refusal: the sealed status is 402 (503 for `account_unavailable`). */
export interface PaymentRefusal {
  /** Refused. */
  readonly ok: false;
  /** Why. */
  readonly code: PaymentRefusalCode;
  /** What failed, what was found, what was expected. */
  readonly message: string;
}

/** An admitted request's hold on its consumer's account. */
export interface PaymentHold {
  /** Admitted. */
  readonly ok: true;
  /** The consumer paying. */
  readonly consumer: Address;
  /** The request's bill id: the first 16 bytes of `keccak256(signature)`, hex without `0x`. */
  readonly id: string;
  /** The most it is charged. */
  readonly worst: bigint;
  /**
   * Ends the hold: charges `amount` (at most the worst case) for `tokens` tokens. Only the
   * first call counts.
   */
  charge(amount: bigint, usage: BillUsage): void;
}

/** The tokens of a bill. */
export interface BillUsage {
  /** Prompt tokens. */
  readonly promptTokens: number;
  /** Completion tokens. */
  readonly completionTokens: number;
}

/** A request's final bill, as `GET /v1/generation` answers it. */
export interface Bill extends BillUsage {
  /** The bill id. */
  readonly id: string;
  /** What it was charged (smallest unit). */
  readonly cost: bigint;
  /** When it ended (ms since the epoch). */
  readonly at: number;
}

/** What the chain says of a consumer, as the till needs it. */
export interface ConsumerAccountReading {
  /** The deposit new spending can count on (`Escrow.accountOf(consumer).available`). */
  readonly available: bigint;
  /** What the Escrow already paid this provider (`Escrow.settledOf(consumer, provider)`). */
  readonly settled: bigint;
}

/** One redemption to send (`Escrow.redeemVouchers`). */
export interface VoucherClaim {
  /** The best voucher of the consumer. */
  readonly voucher: SignedVoucher;
  /** The new total paid by the consumer (at most `voucher.cumulative`). */
  readonly total: bigint;
  /** Tokens served since the last redemption. */
  readonly tokens: bigint;
}

/** Options of {@linkcode ProviderTill}. */
export interface ProviderTillOptions {
  /** This provider's address. */
  provider: Address;
  /** The Escrow's EIP-712 domain. */
  domain: VoucherDomain;
  /** Reads a consumer's account from the chain. */
  readAccount: (consumer: Address) => Promise<ConsumerAccountReading>;
  /** How long a deposit read is trusted before a request needs a fresh one, in ms. @default {2000} */
  accountTtlMs?: number;
  /** How far below the highest `seq` seen a new voucher's may be. @default {4096} */
  seqWindow?: number;
  /** Bills kept for lookup, at most. @default {100000} */
  maxBills?: number;
  /** The clock, in ms. @default {Date.now} */
  now?: () => number;
}

interface ConsumerState {
  best: SignedVoucher | null;
  charged: bigint;
  held: bigint;
  settled: bigint;
  tokens: bigint;
  highest: bigint;
  used: Set<bigint>;
  available: bigint;
  readAt: number;
  /** The number of the read it holds (reads are numbered as they start). */
  read: number;
}

export { billId };

/** The name of the inner request header that carries the voucher. */
export const VOUCHER_HEADER = "net-voucher";

/** A provider's accounts with its consumers. */
export class ProviderTill {
  readonly #options: ProviderTillOptions;
  readonly #provider: Address;
  readonly #verifier: VoucherVerifier;
  readonly #now: () => number;
  readonly #consumers = new Map<Address, ConsumerState>();
  readonly #loading = new Map<Address, Promise<ConsumerState>>();
  readonly #bills = new Map<string, Bill>();
  readonly #running = new Set<string>();
  /** Reads of the chain started so far. */
  #reads = 0;

  /** Creates a till with no consumers. */
  constructor(options: ProviderTillOptions) {
    this.#options = options;
    this.#provider = options.provider.toLowerCase() as Address;
    this.#verifier = new VoucherVerifier(options.domain);
    this.#now = options.now ?? Date.now;
  }

  /**
   * Decides whether a request that may cost up to `worst` is paid for by the voucher in its
   * `net-voucher` header (`null` when it has none).
   */
  async admit(header: string | null, worst: bigint): Promise<PaymentHold | PaymentRefusal> {
    if (header === null) {
      return refuse("payment_required", "The request carries no voucher (net-voucher header)");
    }
    let voucher: SignedVoucher;
    try {
      voucher = parseVoucher(header);
      if (voucher.provider !== this.#provider) {
        return refuse(
          "invalid_voucher",
          `The voucher is for provider ${voucher.provider}; this is provider ${this.#provider}`,
        );
      }
      this.#verifier.verify(voucher);
    } catch (error) {
      if (error instanceof VoucherError) return refuse("invalid_voucher", error.shortMessage);
      throw error;
    }
    // Reads numbered above this one started after the request did.
    const started = this.#reads;
    let state: ConsumerState;
    let verdict: PaymentRefusal | undefined;
    try {
      state = await this.#state(voucher.consumer);
      verdict = this.#check(state, voucher, worst);
      if (verdict?.code === "insufficient_deposit" && state.read <= started) {
        // Refuse only on a read made for this request: the consumer may just have topped up.
        state = await this.#refresh(voucher.consumer, started);
        verdict = this.#check(state, voucher, worst);
      }
    } catch (error) {
      return refuse(
        "account_unavailable",
        `The Escrow account of ${voucher.consumer} cannot be read now: ${
          (error as Error)?.message?.split("\n")[0]
        }`,
      );
    }
    if (verdict) return verdict;
    return this.#hold(state, voucher, worst);
  }

  /** A request's final bill while it is kept, `"running"` while it is served. */
  bill(id: string): Bill | "running" | undefined {
    return this.#bills.get(id) ?? (this.#running.has(id) ? "running" : undefined);
  }

  /** What to redeem now: per consumer owing more than the Escrow paid, its best voucher. */
  claims(): VoucherClaim[] {
    const claims: VoucherClaim[] = [];
    for (const state of this.#consumers.values()) {
      if (!state.best) continue;
      const owed = state.charged < state.best.cumulative ? state.charged : state.best.cumulative;
      if (owed > state.settled) {
        claims.push({ voucher: state.best, total: owed, tokens: state.tokens });
      }
    }
    return claims;
  }

  /** Records that a claim was paid on chain. */
  paid(claim: VoucherClaim): void {
    const state = this.#consumers.get(claim.voucher.consumer);
    if (!state || claim.total <= state.settled) return;
    state.settled = claim.total;
    state.tokens = state.tokens > claim.tokens ? state.tokens - claim.tokens : 0n;
  }

  /** The till's view of a consumer, for tests and logs. */
  account(consumer: Address):
    | Readonly<
      { charged: bigint; held: bigint; settled: bigint; best: bigint | null }
    >
    | undefined {
    const state = this.#consumers.get(consumer.toLowerCase() as Address);
    return state && {
      charged: state.charged,
      held: state.held,
      settled: state.settled,
      best: state.best?.cumulative ?? null,
    };
  }

  /** The refusal the voucher earns now, or `undefined` when it pays for the request. */
  #check(state: ConsumerState, voucher: SignedVoucher, worst: bigint): PaymentRefusal | undefined {
    const window = BigInt(this.#options.seqWindow ?? 4096);
    // Stale first: numbers below the window may still be in `used` (it is pruned in batches).
    if (voucher.seq + window <= state.highest) {
      return refuse(
        "voucher_stale",
        `Voucher ${voucher.seq} is more than ${window} below the highest seen (${state.highest})`,
      );
    }
    if (state.used.has(voucher.seq)) {
      return refuse("voucher_replayed", `Voucher ${voucher.seq} of this consumer was already used`);
    }
    const base = state.charged > state.settled ? state.charged : state.settled;
    const best = state.best && state.best.cumulative > voucher.cumulative
      ? state.best.cumulative
      : voucher.cumulative;
    const needed = base + state.held + worst;
    if (best < needed) {
      return refuse(
        "voucher_insufficient",
        `The vouchers cover ${best} in total; this request needs ${needed} (${base} owed, ` +
          `${state.held} held for requests being served, ${worst} for this one at worst)`,
      );
    }
    const exposure = base - state.settled + state.held + worst;
    if (exposure > state.available) {
      return refuse(
        "insufficient_deposit",
        `Consumer ${voucher.consumer} has ${state.available} available in the Escrow; ` +
          `${exposure} is needed (${worst} for this request at worst)`,
      );
    }
    return undefined;
  }

  #hold(state: ConsumerState, voucher: SignedVoucher, worst: bigint): PaymentHold {
    state.used.add(voucher.seq);
    if (voucher.seq > state.highest) state.highest = voucher.seq;
    const window = this.#options.seqWindow ?? 4096;
    // Numbers below the window are refused as stale before `used` is asked: they are dropped
    // in batches (once it holds twice the window), not on every request.
    if (state.used.size > 2 * window) {
      const below = state.highest - BigInt(window);
      for (const seq of state.used) if (seq <= below) state.used.delete(seq);
    }
    if (!state.best || voucher.cumulative > state.best.cumulative) state.best = voucher;
    state.held += worst;
    const id = billId(voucher.signature);
    this.#running.add(id);
    let open = true;
    return {
      ok: true,
      consumer: voucher.consumer,
      id,
      worst,
      charge: (amount, usage) => {
        if (!open) return;
        open = false;
        const cost = amount < worst ? (amount < 0n ? 0n : amount) : worst;
        state.held -= worst;
        state.charged += cost;
        state.tokens += BigInt(usage.promptTokens + usage.completionTokens);
        this.#running.delete(id);
        this.#keepBill({ id, cost, ...usage, at: this.#now() });
      },
    };
  }

  #keepBill(bill: Bill): void {
    const max = this.#options.maxBills ?? 100_000;
    this.#bills.delete(bill.id);
    this.#bills.set(bill.id, bill);
    while (this.#bills.size > max) this.#bills.delete(this.#bills.keys().next().value!);
  }

  /** The consumer's state, read from the chain the first time (and when the read is old). */
  async #state(consumer: Address): Promise<ConsumerState> {
    const known = this.#consumers.get(consumer);
    const ttl = this.#options.accountTtlMs ?? 2000;
    if (known && this.#now() - known.readAt < ttl) return known;
    return await this.#refresh(consumer);
  }

  /**
   * Reads the consumer's account again (one read at a time per consumer); with `after`, the
   * state of a read numbered above it (one in flight that started earlier is waited for, then
   * another made).
   */
  async #refresh(consumer: Address, after = -1): Promise<ConsumerState> {
    let loading = this.#loading.get(consumer);
    if (loading && after >= 0) {
      const state = await loading;
      if (state.read > after) return state;
      loading = this.#loading.get(consumer);
    }
    if (!loading) {
      const read = ++this.#reads;
      loading = (async () => {
        const reading = await this.#options.readAccount(consumer);
        const state = this.#consumers.get(consumer) ?? {
          best: null,
          charged: 0n,
          held: 0n,
          settled: 0n,
          tokens: 0n,
          highest: 0n,
          used: new Set<bigint>(),
          available: 0n,
          readAt: 0,
          read: 0,
        };
        // The chain's total only grows; a redemption in flight may not show yet.
        if (reading.settled > state.settled) state.settled = reading.settled;
        state.available = reading.available;
        state.readAt = this.#now();
        state.read = read;
        this.#consumers.set(consumer, state);
        return state;
      })().finally(() => this.#loading.delete(consumer));
      this.#loading.set(consumer, loading);
    }
    return await loading;
  }
}

function refuse(code: PaymentRefusalCode, message: string): PaymentRefusal {
  return { ok: false, code, message };
}
