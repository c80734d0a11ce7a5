/**
 * `deno task devnet` and `deno task demo` document their settings as `--help` prints them:
 * `docs/devnet.md` carries each help text verbatim, so the page cannot drift from the flags.
 */

import assert from "node:assert/strict";
import { DEMO_SETTINGS } from "../../devnet/demo.ts";
import { DEVNET_SETTINGS } from "../../devnet/main.ts";

const page = await Deno.readTextFile(new URL("../../docs/devnet.md", import.meta.url));

for (const [name, settings] of [["devnet", DEVNET_SETTINGS], ["demo", DEMO_SETTINGS]] as const) {
  Deno.test(`docs/devnet.md shows \`deno task ${name} --help\` as it prints`, () => {
    const help = settings.help().trimEnd();
    assert.ok(
      page.includes("```\n" + help + "\n```"),
      `docs/devnet.md lacks the current --help of deno task ${name}:\n${help}`,
    );
  });
}
