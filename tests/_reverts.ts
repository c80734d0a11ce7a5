/**
 * Asserts that a contract write reverts with a given custom error (decoded by viem during
 * gas estimation).
 *
 * @module
 */

import assert from "node:assert/strict";

/** Resolves when `promise` rejects with the custom error `errorName`. */
export async function reverts(promise: Promise<unknown>, errorName: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    let current = error as { data?: { errorName?: string }; cause?: unknown } | undefined;
    for (let depth = 0; current && depth < 10; depth++) {
      if (current.data?.errorName === errorName) return true;
      current = current.cause as typeof current;
    }
    assert.fail(`expected revert ${errorName}, got: ${(error as Error).message?.split("\n")[0]}`);
  });
}
