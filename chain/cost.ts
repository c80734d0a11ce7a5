/**
 * What a request costs at a provider's signed ad prices (`docs/protocol.md` §9), in exact
 * integer arithmetic in the chain's smallest unit (wei). Prices are per 1,000,000 tokens, so a
 * cost is `⌊(prompt × input + completion × output) / 1,000,000⌋`.
 *
 * - {@linkcode usageCost}: what a reply's usage costs.
 * - {@linkcode worstCaseCost}: the most a request can cost before it is served — what a
 *   consumer's voucher must cover, and what a spend cap reserves. Both sides compute it from the
 *   request alone: the prompt is bounded by the inner request body's length in bytes (every
 *   token of a prompt covers at least one byte of it), the completion by `max_completion_tokens`
 *   or `max_tokens`, else the model's context length; each at most the context length.
 * - {@linkcode maxTokensOf}: the completion bound of a request body.
 * - {@linkcode maxTokensOf}: the completion bound of a request body.
 * - {@linkcode formatCost}: the decimal form, in the chain's whole unit (18 decimals).
 *
 * @example
 * ```ts
 * import { formatCost, usageCost, worstCaseCost } from "./cost.ts";
 *
 * const prices = { input: 150_000n, output: 600_000n };
 * const cost = usageCost(prices, { promptTokens: 10, completionTokens: 20 });
 * console.assert(cost === 13n && formatCost(cost) === "0.000000000000000013");
 * const worst = worstCaseCost(prices, { requestBytes: 120, maxTokens: 20, contextLength: 8192 });
 * console.assert(worst >= cost);
 * ```
 *
 * @module
 */

/** Prices of one model: smallest unit per 1,000,000 tokens. */
export interface TokenPrices {
  /** Per 1M prompt (input) tokens. */
  readonly input: bigint;
  /** Per 1M completion (output) tokens. */
  readonly output: bigint;
}

/** Tokens of a reply's usage. */
export interface TokenCounts {
  /** Prompt (input) tokens. */
  readonly promptTokens: number | bigint;
  /** Completion (output) tokens. */
  readonly completionTokens: number | bigint;
}

/** What bounds a request before it is served. */
export interface RequestBounds {
  /** Length of the inner request body in bytes (the JSON text sent to the provider). */
  readonly requestBytes: number;
  /** `max_completion_tokens`, else `max_tokens`, when the request gives one. */
  readonly maxTokens?: number | null;
  /** The model's context length from the ad. */
  readonly contextLength: number;
  /** The request generates nothing (embeddings): no completion tokens. @default {false} */
  readonly inputOnly?: boolean;
}

const PER = 1_000_000n;

/** The cost of `usage` at `prices`, rounded down. */
export function usageCost(prices: TokenPrices, usage: TokenCounts): bigint {
  const prompt = count("promptTokens", usage.promptTokens);
  const completion = count("completionTokens", usage.completionTokens);
  return (prompt * prices.input + completion * prices.output) / PER;
}

/** The most a request bounded by `bounds` can cost at `prices`. */
export function worstCaseCost(prices: TokenPrices, bounds: RequestBounds): bigint {
  const context = BigInt(positive("contextLength", bounds.contextLength));
  const prompt = min(BigInt(positive("requestBytes", bounds.requestBytes, 0)), context);
  const asked = bounds.maxTokens ?? null;
  const completion = bounds.inputOnly
    ? 0n
    : min(asked === null ? context : BigInt(positive("maxTokens", asked, 0)), context);
  return (prompt * prices.input + completion * prices.output) / PER;
}

/**
 * The completion bound a request body gives: `max_completion_tokens` when it is a non-negative
 * integer, else `max_tokens` when that is one, else `null` (the context length bounds it).
 */
export function maxTokensOf(body: unknown): number | null {
  if (typeof body !== "object" || body === null) return null;
  const fields = body as { max_completion_tokens?: unknown; max_tokens?: unknown };
  return wholeNumber(fields.max_completion_tokens) ?? wholeNumber(fields.max_tokens);
}

function wholeNumber(value: unknown): number | null {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/**
 * The decimal form of an amount in the chain's whole unit (18 decimals), exact, without
 * trailing zeros: `1234n` → `"0.000000000000001234"`, `10n ** 18n` → `"1"`.
 */
export function formatCost(amount: bigint): string {
  if (amount < 0n) throw new RangeError(`Cannot format cost: ${amount} is negative`);
  const whole = amount / 10n ** 18n;
  const fraction = (amount % 10n ** 18n).toString().padStart(18, "0").replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole.toString();
}

/**
 * Reads the decimal form back (at most 18 decimals).
 *
 * @throws {RangeError} for text that is not a non-negative decimal with at most 18 decimals.
 */
export function parseCost(text: string): bigint {
  const match = /^(0|[1-9][0-9]{0,59})(?:\.([0-9]{1,18}))?$/.exec(text);
  if (!match) {
    throw new RangeError(
      `Cannot read cost ${
        JSON.stringify(text.slice(0, 40))
      }: expected a non-negative decimal with at most 18 decimals`,
    );
  }
  return BigInt(match[1]) * 10n ** 18n + BigInt((match[2] ?? "").padEnd(18, "0"));
}

function count(name: string, value: number | bigint): bigint {
  if (typeof value === "bigint") {
    if (value < 0n) throw new RangeError(`Cannot price usage: ${name} is ${value}; expected ≥ 0`);
    return value;
  }
  return BigInt(positive(name, value, 0));
}

function positive(name: string, value: number, least = 1): number {
  if (!Number.isSafeInteger(value) || value < least) {
    throw new RangeError(
      `Cannot price the request: ${name} is ${value}; expected an integer ≥ ${least}`,
    );
  }
  return value;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
