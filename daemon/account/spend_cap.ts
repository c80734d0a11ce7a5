/**
 * Spend caps: `AMOUNT/PERIOD`, e.g. `0.05/day`, `2/week`, `10/month` — an amount in the chain's
 * whole unit (up to 18 decimals, `chain/cost.ts`'s decimal form) per calendar period in UTC: a
 * day from 00:00, a week from Monday 00:00, a month from its first day. {@linkcode periodOf}
 * gives the period an instant falls in and when it resets.
 *
 * @example
 * ```ts
 * import { parseSpendCap, periodOf } from "./spend_cap.ts";
 *
 * const cap = parseSpendCap("0.5/day");
 * console.assert(cap.amount === 500_000_000_000_000_000n && cap.period === "day");
 * const { start, resetsAt } = periodOf("week", new Date("2026-05-07T12:00:00Z")); // a Thursday
 * console.assert(start.toISOString() === "2026-05-04T00:00:00.000Z");
 * console.assert(resetsAt.toISOString() === "2026-05-11T00:00:00.000Z");
 * ```
 *
 * @module
 */

import { formatCost, parseCost } from "../../chain/cost.ts";
import { NetError } from "../../errors.ts";

/** The periods a cap can have. */
export const SPEND_PERIODS = ["day", "week", "month"] as const;

/** One of {@linkcode SPEND_PERIODS}. */
export type SpendPeriod = (typeof SPEND_PERIODS)[number];

/** A spend cap. */
export interface SpendCap {
  /** Most that may be spent in one period, in the chain's smallest unit. */
  readonly amount: bigint;
  /** The period. */
  readonly period: SpendPeriod;
}

/** Thrown by {@linkcode parseSpendCap} for text that is not `AMOUNT/PERIOD`. */
export class SpendCapError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SpendCapError" as const;
}

/**
 * Reads `AMOUNT/PERIOD`.
 *
 * @throws {SpendCapError} with what was found and what was expected.
 */
export function parseSpendCap(text: string): SpendCap {
  const match = /^([^/]+)\/([a-z]+)$/.exec(text.trim());
  const expected = "expected AMOUNT/PERIOD, an amount in whole units with at most 18 " +
    "decimals and a period of day, week or month, such as 0.05/day";
  if (!match) {
    throw new SpendCapError(
      `Cannot read spend cap ${JSON.stringify(text.slice(0, 60))}: ${expected}`,
    );
  }
  const period = match[2] as SpendPeriod;
  if (!SPEND_PERIODS.includes(period)) {
    throw new SpendCapError(
      `Cannot read spend cap ${JSON.stringify(text.slice(0, 60))}: the period is ` +
        `${JSON.stringify(match[2])}; ${expected}`,
    );
  }
  let amount: bigint;
  try {
    amount = parseCost(match[1]);
  } catch {
    throw new SpendCapError(
      `Cannot read spend cap ${JSON.stringify(text.slice(0, 60))}: the amount is ` +
        `${JSON.stringify(match[1].slice(0, 40))}; ${expected}`,
    );
  }
  return { amount, period };
}

/** The text form of a cap (`0.05/day`). */
export function formatSpendCap(cap: SpendCap): string {
  return `${formatCost(cap.amount)}/${cap.period}`;
}

/** The period `now` falls in: its start and when the next begins (UTC). */
export function periodOf(period: SpendPeriod, now: Date): { start: Date; resetsAt: Date } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  if (period === "day") {
    return { start: new Date(Date.UTC(y, m, d)), resetsAt: new Date(Date.UTC(y, m, d + 1)) };
  }
  if (period === "week") {
    const sinceMonday = (now.getUTCDay() + 6) % 7;
    return {
      start: new Date(Date.UTC(y, m, d - sinceMonday)),
      resetsAt: new Date(Date.UTC(y, m, d - sinceMonday + 7)),
    };
  }
  return { start: new Date(Date.UTC(y, m, 1)), resetsAt: new Date(Date.UTC(y, m + 1, 1)) };
}
