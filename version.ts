/**
 * The version of `@net/consumer`, the same as `deno.json`'s (a test keeps them equal). The
 * daemon reports it on `GET /api/version`.
 *
 * @module
 */

/** The package version. */
export const VERSION = "0.1.0";
