/**
 * How the dashboard writes numbers, exactly: token amounts are uint256 decimal strings in the
 * smallest unit (18 decimals), so they are formatted with `bigint` arithmetic, never through a
 * float. Pure functions, shared by the page and its tests.
 *
 * @example
 * ```ts
 * import { exactTokens, formatTokens } from "./format.ts";
 *
 * console.assert(formatTokens("1234567890000000000000") === "1,234.57");
 * console.assert(exactTokens("1234567890000000000000") === "1234.56789");
 * console.assert(formatTokens("120000000000000") === "0.00012");
 * ```
 *
 * @module
 */

/** Decimals of the network's token. */
export const TOKEN_DECIMALS = 18;

/** Significant digits shown for an amount below one token. */
const SMALL_SIGNIFICANT = 4;
/** Fraction digits shown for an amount of one token or more. */
const LARGE_FRACTION = 2;

const DECIMAL = /^(0|[1-9][0-9]*)$/;

function parseUnits(value: string): bigint {
  if (!DECIMAL.test(value)) {
    throw new RangeError(
      `Cannot format ${JSON.stringify(value)}: expected an unsigned decimal integer`,
    );
  }
  return BigInt(value);
}

/** `1234567` → `1,234,567`. */
function groupThousands(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Splits `units / 10^decimals` into its integer and fraction digits (fraction padded). */
function split(units: bigint, decimals: number): [string, string] {
  const scale = 10n ** BigInt(decimals);
  return [(units / scale).toString(), (units % scale).toString().padStart(decimals, "0")];
}

/**
 * The exact value in whole tokens, without grouping or trailing zeros:
 * `"1500000000000000001"` → `"1.500000000000000001"`.
 *
 * @throws {RangeError} when `value` is not an unsigned decimal integer.
 */
export function exactTokens(value: string, decimals: number = TOKEN_DECIMALS): string {
  const [whole, fraction] = split(parseUnits(value), decimals);
  const trimmed = fraction.replace(/0+$/, "");
  return trimmed ? `${whole}.${trimmed}` : whole;
}

/**
 * The value in whole tokens for display, rounded half up: two decimals from one token up
 * (`1,234.57`), four significant digits below one (`0.0001235`), trailing zeros dropped, `0`
 * for zero. The exact value is {@linkcode exactTokens}.
 *
 * @throws {RangeError} when `value` is not an unsigned decimal integer.
 */
export function formatTokens(value: string, decimals: number = TOKEN_DECIMALS): string {
  const units = parseUnits(value);
  if (units === 0n) return "0";
  const scale = 10n ** BigInt(decimals);
  let digits = LARGE_FRACTION;
  if (units < scale) {
    const leadingZeros = decimals - units.toString().length;
    digits = Math.min(decimals, leadingZeros + SMALL_SIGNIFICANT);
  }
  const step = 10n ** BigInt(decimals - digits);
  const rounded = (units + step / 2n) / step; // half up, in units of 10^-digits tokens
  const [whole, fraction] = split(rounded, digits);
  const trimmed = fraction.replace(/0+$/, "");
  return groupThousands(whole) + (trimmed ? `.${trimmed}` : "");
}

/**
 * The hover text of an amount: the exact value in tokens and in the smallest unit,
 * e.g. `1.5 tokens (1500000000000000000 units)`.
 */
export function tokensTitle(value: string, decimals: number = TOKEN_DECIMALS): string {
  return `${exactTokens(value, decimals)} tokens (${value} units)`;
}

/** A whole number with thousands separators: `12345` → `12,345`. */
export function formatCount(value: number | string): string {
  const digits = typeof value === "number" ? Math.trunc(value).toString() : value;
  return digits.startsWith("-") ? `-${groupThousands(digits.slice(1))}` : groupThousands(digits);
}

/** A reputation in `[0, 1]` with two decimals, or `—` when there is none. */
export function formatReputation(value: number | null): string {
  return value === null ? "—" : value.toFixed(2);
}

/** Tokens per second with one decimal: `41.25` → `41.3`. */
export function formatRate(value: number): string {
  return value.toFixed(1);
}

/**
 * The share `part / whole` in percent with one decimal, exact up to the last digit
 * (`bigint`), e.g. `"1"`, `"3"` → `33.3 %`; `—` when `whole` is zero.
 */
export function formatShare(part: string, whole: string): string {
  const total = parseUnits(whole);
  if (total === 0n) return "—";
  const tenths = (parseUnits(part) * 1000n + total / 2n) / total;
  return `${tenths / 10n}.${tenths % 10n} %`;
}

/** `0x1234…abcd`: an address shortened for a table cell (the full one goes in its title). */
export function shortAddress(address: string): string {
  return address.length > 12 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address;
}

/** A duration in seconds in the largest whole unit: `3600` → `1 h`, `90` → `90 s`. */
export function formatDuration(secondsText: string): string {
  const seconds = parseUnits(secondsText);
  const units: [bigint, string][] = [[86400n, "d"], [3600n, "h"], [60n, "min"]];
  for (const [size, name] of units) {
    if (seconds >= size && seconds % size === 0n) {
      return `${formatCount((seconds / size).toString())} ${name}`;
    }
  }
  return `${formatCount(seconds.toString())} s`;
}

/** A Unix time in seconds as an RFC 3339 UTC text without milliseconds. */
export function formatUnixTime(secondsText: string): string {
  const ms = Number(parseUnits(secondsText)) * 1000;
  return new Date(ms).toISOString().replace(".000Z", "Z");
}

/**
 * An amount as a float number of tokens, for charts only (their axes are approximate by
 * nature; every number written as text is exact).
 */
export function tokensAsNumber(value: string, decimals: number = TOKEN_DECIMALS): number {
  const [whole, fraction] = split(parseUnits(value), decimals);
  return Number(`${whole}.${fraction}`);
}
