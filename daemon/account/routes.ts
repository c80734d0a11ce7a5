/**
 * The account's endpoints, declared once with their schemas (OpenAI dialect: under `/v1`):
 *
 * - `GET /v1/account`: the consumer's address, its Escrow deposit, what is reserved and what is
 *   available, read from the chain now (`503 chain_unreachable` when it cannot be read), the
 *   worst cases of the attempts whose cost is not known yet, and each spend cap's period.
 * - `GET /v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD`: what the ledger recorded over those UTC days
 *   (default: the last 30, today included), in total and by day, model, provider and API key.
 *
 * Amounts are decimal strings in the chain's smallest unit (`docs/protocol.md` §0).
 *
 * @module
 */

import { defineRoute, json, type Route, z } from "../../http/mod.ts";
import { DaemonError } from "../core/mod.ts";
import { answers } from "../surface/mod.ts";
import type { DaemonAccount } from "./daemon_account.ts";
import { dayOf, type UsageRow } from "./ledger.ts";

const AMOUNT = z.string().regex(/^(0|[1-9][0-9]*)$/).openapi({
  description: "A decimal string in the chain's smallest unit (wei).",
});
const DAY = z.string().regex(/^\d{4}-\d{2}-\d{2}$/).openapi({ description: "A UTC day." });

const ACCOUNT = z.strictObject({
  address: z.string().openapi({ description: "The consumer's address (its key signs vouchers)." }),
  escrow: z.string(),
  chain_id: z.number().int(),
  block: AMOUNT.openapi({ description: "The block the account was read at." }),
  deposit: AMOUNT.openapi({ description: "Everything the Escrow holds for the consumer." }),
  reserved: AMOUNT.openapi({
    description: "The part asked to be withdrawn: still payable to providers until withdrawn.",
  }),
  available: AMOUNT.openapi({ description: "`deposit − reserved`: what requests can spend." }),
  withdrawal_unlocks_at: z.string().nullable(),
  pending: AMOUNT.openapi({
    description: "Worst cases of the attempts whose cost is not known yet (being served, or " +
      "whose bill is being looked up).",
  }),
  caps: z.array(z.strictObject({
    scope: z.string().openapi({ description: "`daemon`, or `key:<name>`." }),
    max_spend: z.string(),
    cap: AMOUNT,
    spent: AMOUNT,
    resets_at: z.string(),
  })),
}).openapi("Account");

const TOTALS = {
  requests: z.number().int(),
  cost: AMOUNT,
  pending: AMOUNT,
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
};

const USAGE = z.strictObject({
  from: DAY,
  to: DAY,
  total: z.strictObject(TOTALS),
  by_day: z.array(z.strictObject({ day: DAY, ...TOTALS })),
  by_model: z.array(z.strictObject({ model: z.string(), ...TOTALS })),
  by_provider: z.array(z.strictObject({ provider: z.string(), ...TOTALS })),
  by_key: z.array(z.strictObject({ key: z.string(), ...TOTALS })),
}).openapi("Usage");

/** The account's routes. */
export function accountRoutes(account: DaemonAccount, clock: () => Date): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/account",
      summary: "The consumer's address and Escrow account, read from the chain, and its caps",
      tags: ["account"],
      responses: answers("openai", "local", {
        description: "The account.",
        content: json(ACCOUNT),
      }, { 503: "`chain_unreachable`: the chain (or the daemon's key) cannot be read now." }),
      handler: async (c) => c.json(await account.view()),
    }),
    defineRoute({
      method: "get",
      path: "/v1/usage",
      summary: "What the daemon spent, from its ledger: totals by day, model, provider and API key",
      tags: ["account"],
      query: z.object({ from: DAY.optional(), to: DAY.optional() }),
      responses: answers("openai", "local", {
        description: "The usage.",
        content: json(USAGE),
      }, { 400: "`invalid_request_error`: a bad `from` or `to`." }),
      handler: async (c, { query }) => {
        const today = dayOf(clock());
        const to = query.to ?? today;
        const from = query.from ?? dayOf(new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000));
        if (
          Number.isNaN(Date.parse(`${from}T00:00:00Z`)) ||
          Number.isNaN(Date.parse(`${to}T00:00:00Z`)) || from > to
        ) {
          throw new DaemonError(
            "invalid_request_error",
            `Cannot report usage from ${from} to ${to}: expected two UTC days, from ≤ to`,
            { param: from > to ? "from" : "to" },
          );
        }
        return c.json(usageReport(from, to, await account.usage(from, to)));
      },
    }),
  ];
}

/** The totals of a group of ledger rows, as `GET /v1/usage` shows them. */
export interface UsageTotals {
  /** Attempts paid for. */
  requests: number;
  /** Known costs, decimal (smallest unit). */
  cost: string;
  /** Worst cases of attempts whose cost is not known yet, decimal. */
  pending: string;
  /** Prompt tokens. */
  prompt_tokens: number;
  /** Completion tokens. */
  completion_tokens: number;
}

/** The `GET /v1/usage` body. */
export interface UsageReport {
  /** First day. */
  from: string;
  /** Last day. */
  to: string;
  /** Everything. */
  total: UsageTotals;
  /** Per day. */
  by_day: ({ day: string } & UsageTotals)[];
  /** Per model. */
  by_model: ({ model: string } & UsageTotals)[];
  /** Per provider. */
  by_provider: ({ provider: string } & UsageTotals)[];
  /** Per API key name. */
  by_key: ({ key: string } & UsageTotals)[];
}

type Totals = {
  requests: number;
  cost: bigint;
  pending: bigint;
  prompt_tokens: number;
  completion_tokens: number;
};

/** The `GET /v1/usage` body of `rows`. */
export function usageReport(from: string, to: string, rows: readonly UsageRow[]): UsageReport {
  const total = empty();
  const groups = {
    day: new Map<string, Totals>(),
    model: new Map<string, Totals>(),
    provider: new Map<string, Totals>(),
    key: new Map<string, Totals>(),
  };
  for (const row of rows) {
    add(total, row);
    for (const [name, map] of Object.entries(groups)) {
      const value = row[name as keyof typeof groups];
      const totals = map.get(value) ?? empty();
      add(totals, row);
      map.set(value, totals);
    }
  }
  const list = <K extends string>(name: K, map: Map<string, Totals>) =>
    [...map].sort(([a], [b]) => (a < b ? -1 : 1)).map(([value, t]) =>
      ({ [name]: value, ...text(t) }) as { [k in K]: string } & UsageTotals
    );
  return {
    from,
    to,
    total: text(total),
    by_day: list("day", groups.day),
    by_model: list("model", groups.model),
    by_provider: list("provider", groups.provider),
    by_key: list("key", groups.key),
  };
}

function empty(): Totals {
  return { requests: 0, cost: 0n, pending: 0n, prompt_tokens: 0, completion_tokens: 0 };
}

function add(totals: Totals, row: UsageRow): void {
  totals.requests += row.requests;
  totals.cost += row.cost;
  totals.pending += row.pending;
  totals.prompt_tokens += row.promptTokens;
  totals.completion_tokens += row.completionTokens;
}

function text(t: Totals): UsageTotals {
  return {
    requests: t.requests,
    cost: String(t.cost),
    pending: String(t.pending),
    prompt_tokens: t.prompt_tokens,
    completion_tokens: t.completion_tokens,
  };
}
