/**
 * Claude Code for the tests that run it (`tests/daemon/service/anthropic_clients_test.ts`): its
 * binary is named by `NET_CLAUDE_CODE_BIN` (370 MB from npm, which the project's dependencies do
 * not carry). Without it the test is skipped — except under `CI=true`, where it runs and fails:
 * the gate (`.ci/run`) installs it, so a gate without it is a broken gate, not a skip.
 *
 * @module
 */

/** The variable naming Claude Code's binary (`docs/testing.md`). */
export const CLAUDE_CODE_BIN_ENV = "NET_CLAUDE_CODE_BIN";

/** Claude Code's binary, when given. */
export const CLAUDE_CODE_BIN: string | undefined = Deno.env.get(CLAUDE_CODE_BIN_ENV);

/** Whether a test of Claude Code is skipped: no binary, and not in the gate. */
export const SKIP_CLAUDE_CODE: boolean = !CLAUDE_CODE_BIN && Deno.env.get("CI") !== "true";

/** The binary, or a failure that says how to get it (in the gate, where it is required). */
export function claudeCodeBin(): string {
  if (CLAUDE_CODE_BIN) return CLAUDE_CODE_BIN;
  throw new Error(
    `CI=true and ${CLAUDE_CODE_BIN_ENV} is not set: expected the path of Claude Code's binary ` +
      "(.ci/run installs @anthropic-ai/claude-code-linux-x64 from npm and sets it)",
  );
}
