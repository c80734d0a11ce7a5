/**
 * The daemon's account, put together: the consumer key, the ledger and the caps, loaded once
 * (again on the next request when loading failed), as the network backend's
 * {@linkcode AttemptPayments}; and what `GET /v1/account` and `GET /v1/usage` answer.
 *
 * `GET /v1/account` reads the consumer's Escrow account from the chain at each call (never a
 * remembered or invented figure: the chain unreachable is `503 chain_unreachable`) and adds what
 * only the daemon knows: what it has spent in each cap's period, and the worst cases of the
 * attempts whose cost is not known yet.
 *
 * @module
 */

import type { Address } from "viem";
import {
  type ChainClient,
  readEscrowAccount,
  type VoucherDomain,
  VoucherSigner,
} from "../../chain/mod.ts";
import {
  type AttemptPayments,
  type BillLookup,
  DaemonError,
  type PaymentAttempt,
  type PaymentTicket,
  type Tier,
} from "../core/mod.ts";
import { resolveConsumerKey } from "./consumer_key.ts";
import { Ledger, type UsageRow } from "./ledger.ts";
import { DaemonPayments, type SpendCaps } from "./payments.ts";
import { formatSpendCap, periodOf } from "./spend_cap.ts";
import { join } from "node:path";

/** Nonces the signer keeps prepared (`chain/voucher_nonces.ts`): more than c=1 ever needs. */
const PREPARED_NONCES = 8;

/** Options of {@linkcode DaemonAccount}. */
export interface DaemonAccountOptions {
  /** The data directory (`consumer-key`, `ledger/`). */
  dataDir: string;
  /** `--consumer-key-file`, or `null`. */
  consumerKeyFile: string | null;
  /** The Escrow. */
  escrow: Address;
  /** The chain id, or `null` to take it from the chain. */
  chainId: number | null;
  /** The chain client, connected and checked. */
  getClient: () => Promise<ChainClient>;
  /** The caps (named keys' caps come from their file). */
  caps: () => Promise<SpendCaps>;
  /** Looks bills up at providers (the network backend). */
  lookup: BillLookup;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Notes and warnings. @default {() => {}} */
  log?: (line: string) => void;
  /** Called with each recorded cost. */
  onCost?: (cost: bigint, tier: Tier) => void;
  /** Called with each budget refusal. */
  onBudgetRefused?: (scope: "daemon" | "key") => void;
}

/** The consumer's account as `GET /v1/account` answers it (amounts in the smallest unit). */
export interface AccountView {
  /** The consumer's address. */
  address: string;
  /** The Escrow. */
  escrow: string;
  /** The chain id. */
  chain_id: number;
  /** The block read. */
  block: string;
  /** Everything held in the Escrow. */
  deposit: string;
  /** Asked to be withdrawn (still payable until withdrawn). */
  reserved: string;
  /** What new spending can count on. */
  available: string;
  /** When a requested withdrawal unlocks (RFC 3339), or `null`. */
  withdrawal_unlocks_at: string | null;
  /** Worst cases of the attempts whose cost is not known yet. */
  pending: string;
  /** Each cap: what was spent in its period, and when it resets. */
  caps: { scope: string; max_spend: string; cap: string; spent: string; resets_at: string }[];
}

/** The consumer's account, payments and ledger. */
export class DaemonAccount implements AttemptPayments {
  readonly #options: DaemonAccountOptions;
  readonly #clock: () => Date;
  #loading: Promise<DaemonPayments> | undefined;
  #payments: DaemonPayments | undefined;
  #chainId: number | undefined;

  /** Creates the account; nothing is loaded until {@linkcode prepare}. */
  constructor(options: DaemonAccountOptions) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
  }

  /** Loads the key and the ledger once, and looks up the bills the ledger left open. */
  async prepare(): Promise<void> {
    if (this.#payments) return;
    this.#loading ??= this.#load().catch((error) => {
      this.#loading = undefined;
      throw unreachable(error);
    });
    await this.#loading;
  }

  /** The loaded payments (after {@linkcode prepare}), or `undefined`. */
  get payments(): DaemonPayments | undefined {
    return this.#payments;
  }

  /** {@inheritDoc AttemptPayments.authorize} */
  authorize(attempt: PaymentAttempt): PaymentTicket {
    if (!this.#payments) {
      throw new DaemonError("chain_unreachable", "The daemon's account is not loaded yet");
    }
    return this.#payments.authorize(attempt);
  }

  /**
   * The consumer's account, read from the chain now.
   *
   * @throws {DaemonError} `chain_unreachable` when the chain (or the key, the ledger) cannot be
   * read.
   */
  async view(): Promise<AccountView> {
    let client: ChainClient;
    try {
      await this.prepare();
      client = await this.#options.getClient();
    } catch (error) {
      throw unreachable(error);
    }
    const payments = this.#payments!;
    let account;
    try {
      account = await readEscrowAccount(client, this.#options.escrow, payments.address);
    } catch (error) {
      throw unreachable(error);
    }
    const now = this.#clock();
    const { ledger, caps } = payments;
    const capsView = [];
    const entries: [string, NonNullable<SpendCaps["daemon"]>, string | undefined][] = [];
    if (caps.daemon) entries.push(["daemon", caps.daemon, undefined]);
    for (const [name, cap] of caps.keys ?? []) entries.push([`key:${name}`, cap, name]);
    for (const [scope, cap, key] of entries) {
      const { start, resetsAt } = periodOf(cap.period, now);
      capsView.push({
        scope,
        max_spend: formatSpendCap(cap),
        cap: String(cap.amount),
        spent: String(ledger.spentSince(start, key)),
        resets_at: resetsAt.toISOString(),
      });
    }
    return {
      address: payments.address,
      escrow: this.#options.escrow.toLowerCase(),
      chain_id: client.chain.id,
      block: String(account.block.number),
      deposit: String(account.deposit),
      reserved: String(account.reserved),
      available: String(account.available),
      withdrawal_unlocks_at: account.reserved > 0n
        ? new Date(Number(account.unlockAt) * 1000).toISOString()
        : null,
      pending: String(ledger.pending().reduce((sum, e) => sum + e.worst, 0n)),
      caps: capsView,
    };
  }

  /**
   * The ledger's rows of the days `from`–`to` (`YYYY-MM-DD`).
   *
   * @throws {DaemonError} `chain_unreachable` when the ledger cannot be loaded.
   */
  async usage(from: string, to: string): Promise<UsageRow[]> {
    try {
      await this.prepare();
    } catch (error) {
      throw unreachable(error);
    }
    return this.#payments!.ledger.usage(from, to);
  }

  /** Stops the lookups and closes the ledger. */
  async close(): Promise<void> {
    const payments = this.#payments ?? await this.#loading?.catch(() => undefined);
    payments?.close();
    await payments?.ledger.close();
  }

  async #load(): Promise<DaemonPayments> {
    const options = this.#options;
    const log = options.log ?? (() => {});
    const key = await resolveConsumerKey(
      { file: options.consumerKeyFile, dataDir: options.dataDir },
      { log },
    );
    if (key.generated) log(`daemon: generated a consumer key in ${key.source} (mode 0600)`);
    this.#chainId ??= options.chainId ?? (await options.getClient()).chain.id;
    const domain: VoucherDomain = { chainId: this.#chainId, escrow: options.escrow };
    const ledger = await Ledger.open(join(options.dataDir, "ledger"), { clock: this.#clock, log });
    const caps = await options.caps();
    // Nonces prepared while the daemon waits: a voucher is signed in microseconds on the path.
    const signer = new VoucherSigner(key.privateKey, domain, { preparedNonces: PREPARED_NONCES });
    signer.nonces?.refillLater();
    const payments = new DaemonPayments({
      signer,
      ledger,
      caps,
      clock: this.#clock,
      lookup: options.lookup,
      log,
      onCost: options.onCost,
      onBudgetRefused: options.onBudgetRefused,
    });
    payments.resume();
    this.#payments = payments;
    return payments;
  }
}

function unreachable(error: unknown): DaemonError {
  if (error instanceof DaemonError) return error;
  return new DaemonError(
    "chain_unreachable",
    `Cannot load the consumer's account: ${(error as Error)?.message?.split("\n")[0]}`,
    { cause: error },
  );
}
