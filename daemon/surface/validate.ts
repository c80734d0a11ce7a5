/**
 * Validating a value against one of the daemon's schemas outside a route (the surfaces'
 * `parse…` functions, which take a raw body), with the refusal the HTTP layer gives inside one:
 * a 400 `invalid_request_error` whose message names the field, what it must be and what was
 * found, and whose `param` is the field.
 *
 * @module
 */

import { describeIssue, HttpRequestError, type z } from "../../http/mod.ts";
import { type DaemonError, toDaemonError } from "../core/mod.ts";

/**
 * Parses `value` with `schema`. `under` names the field `value` sits in (e.g. `options`), so
 * the refusal names `options.seed` rather than `seed`.
 *
 * @throws {DaemonError} `invalid_request_error` naming the first field at fault.
 */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  under?: string,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const { field, message } = under === undefined
    ? describeIssue(first, value)
    : describeIssue({ ...first, path: [under, ...first.path] }, { [under]: value });
  const refusal: DaemonError = toDaemonError(
    new HttpRequestError("invalid_request", `Cannot read the request: ${message}`, { field }),
  );
  throw refusal;
}
