/**
 * The consumer's money (`docs/daemon.md`, "Money"): the consumer key ({@linkcode resolveConsumerKey}),
 * the durable spend ledger ({@linkcode Ledger}), spend caps ({@linkcode parseSpendCap}), and
 * {@linkcode DaemonPayments}, which the network backend asks to pay for each attempt before it
 * is sealed (a voucher inside the seal, the caps checked, the cost recorded). Uses `core/` and
 * `chain/`.
 *
 * @module
 */

export {
  CONSUMER_KEY_FILE_NAME,
  type ConsumerKey,
  type ConsumerKeySource,
  resolveConsumerKey,
  type ResolveConsumerKeyOptions,
} from "./consumer_key.ts";
export { type AccountView, DaemonAccount, type DaemonAccountOptions } from "./daemon_account.ts";
export { accountRoutes, type UsageReport, usageReport, type UsageTotals } from "./routes.ts";
export {
  type CostSource,
  dayOf,
  Ledger,
  type LedgerCost,
  LedgerError,
  type LedgerOpen,
  type LedgerOptions,
  type PendingEntry,
  type ProviderTotals,
  type UsageRow,
} from "./ledger.ts";
export {
  type BudgetRefusal,
  DaemonPayments,
  type DaemonPaymentsOptions,
  type SpendCaps,
  VOUCHER_HEADER,
} from "./payments.ts";
export {
  formatSpendCap,
  parseSpendCap,
  periodOf,
  SPEND_PERIODS,
  type SpendCap,
  SpendCapError,
  type SpendPeriod,
} from "./spend_cap.ts";
