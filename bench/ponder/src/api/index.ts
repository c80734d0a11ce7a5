// GET /totals: the whole settled volume, read from the app's tables (the bench's "full answer").
import { db } from "ponder:api";
import { bucket } from "ponder:schema";
import { Hono } from "hono";

const app = new Hono();
app.get("/totals", async (c) => {
  const rows = await db.select().from(bucket);
  let amount = 0n;
  let tokens = 0n;
  let settlements = 0;
  for (const row of rows) {
    amount += row.amount;
    tokens += row.tokens;
    settlements += row.settlements;
  }
  return c.json({ amount: String(amount), tokens: String(tokens), settlements });
});
export default app;
