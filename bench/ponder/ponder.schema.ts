// The same figures the indexer keeps: settled amount, tokens and settlements per provider per epoch.
import { onchainTable, primaryKey } from "ponder";

export const bucket = onchainTable("bucket", (t) => ({
  provider: t.hex().notNull(),
  epoch: t.bigint().notNull(),
  amount: t.bigint().notNull(),
  tokens: t.bigint().notNull(),
  settlements: t.integer().notNull(),
}), (table) => ({ pk: primaryKey({ columns: [table.provider, table.epoch] }) }));
