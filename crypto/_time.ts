/**
 * Checks of the time inputs that enter a security check (private). A freshness check compares
 * numbers: with an Invalid Date (`NaN`) or a `NaN`/`Infinity` bound every comparison is false and
 * the check silently passes. These values come from the caller (its clock, its configuration),
 * so a bad one is a programming or configuration error: it is refused with a `TypeError` or a
 * `RangeError` naming the value, never treated as "no limit".
 *
 * @module
 */

/**
 * Returns `now` when it is a valid `Date`.
 *
 * @throws {TypeError} for anything else, an Invalid Date included.
 */
export function checkNow(now: unknown, where: string): Date {
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new TypeError(
      `${where}: "now" must be a valid Date, found ${
        now instanceof Date ? "an Invalid Date" : String(now)
      }`,
    );
  }
  return now;
}

/**
 * Returns `value` when it is a positive safe integer (a number of seconds).
 *
 * @throws {TypeError} when it is not a number; {@linkcode RangeError} when it is `NaN`, not
 * finite, not an integer, or not positive.
 */
export function checkPositiveSeconds(value: unknown, name: string, where: string): number {
  if (typeof value !== "number") {
    throw new TypeError(`${where}: ${name} must be a number of seconds, found ${typeof value}`);
  }
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(
      `${where}: ${name} must be a positive integer number of seconds, found ${value}`,
    );
  }
  return value;
}
