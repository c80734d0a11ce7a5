/**
 * Waiting on a state, the way every test waits: poll until the state is there, never against a
 * time budget that a busy machine can exhaust. A wait ends early only on a failure it can see
 * (a process that exited, an answer that can never change), and otherwise after a guard of
 * minutes against a test that would hang — far beyond what any state takes under load.
 *
 * @example
 * ```ts ignore
 * import { waitFor } from "./_wait.ts";
 *
 * const body = await waitFor("the indexer to serve", async () => {
 *   const response = await fetch(`${url}/health`);
 *   const health = await response.json();
 *   return response.status === 200 ? health : undefined;
 * }, { failed: () => exited ? `the indexer exited:\n${stderr()}` : undefined });
 * ```
 *
 * @module
 */

/**
 * The guard against a hang, milliseconds: ten minutes, far beyond what any state of the suite
 * takes on a busy machine. For waits that take a timeout (Playwright's `{ timeout }`), pass this.
 */
export const HANG_AFTER_MS = 600_000;

/** Options of {@linkcode waitFor}. */
export interface WaitOptions {
  /**
   * Pause between two checks, milliseconds.
   *
   * @default {100}
   */
  everyMs?: number;
  /** Says why the state can no longer come (then the wait fails at once), or `undefined`. */
  failed?: () => string | undefined;
  /**
   * The guard against a hang, milliseconds: not a budget for the state (which may take as
   * long as the machine needs), only the point where the test is declared stuck.
   *
   * @default {HANG_AFTER_MS}
   */
  hangAfterMs?: number;
}

/** Polls `check` until it returns a value other than `undefined`, and returns that value. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  options: WaitOptions = {},
): Promise<T> {
  const hangAfterMs = options.hangAfterMs ?? HANG_AFTER_MS;
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    const failure = options.failed?.();
    if (failure !== undefined) throw new Error(`Cannot wait for ${what}: ${failure}`);
    if (Date.now() - started > hangAfterMs) {
      throw new Error(`Stuck: ${what} did not happen in ${hangAfterMs / 60_000} minutes`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 100));
  }
}
