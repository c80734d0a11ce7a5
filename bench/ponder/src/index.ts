// One Settled event: add it to its provider's epoch.
import { ponder } from "ponder:registry";
import { bucket } from "ponder:schema";

ponder.on("Escrow:Settled", async ({ event, context }) => {
  const { provider, epoch, amount, tokens } = event.args;
  await context.db
    .insert(bucket)
    .values({ provider, epoch, amount, tokens, settlements: 1 })
    .onConflictDoUpdate((row) => ({
      amount: row.amount + amount,
      tokens: row.tokens + tokens,
      settlements: row.settlements + 1,
    }));
});
