/**
 * `kill -9` of a writer of the embedded store, at random points (`_kill.ts`), and what it
 * leaves: no store process (`indexer/store/_embedded_process.ts`) outlives its writer.
 */

import assert from "node:assert/strict";
import { waitFor } from "../../_wait.ts";
import { killRepeatedly } from "./_kill.ts";
import { spawnChild } from "./_spawn.ts";
import { alive, storeProcesses } from "./_store_process.ts";
import { open } from "./_suite.ts";

Deno.test("kill -9 of the writer never loses or double-counts a chunk: embedded store", async () => {
  const root = await Deno.makeTempDir({ prefix: "net-store-kill-" });
  try {
    await killRepeatedly(
      { dataDir: `${root}/store` },
      (store) => Promise.resolve(assert.ok(store.writer)),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name: "kill -9 of the writer leaves no store process behind, and the next opener finds it gone",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "net-store-orphan-" });
    const location = { dataDir: `${root}/store` };
    try {
      for (let run = 1; run <= 3; run++) {
        const child = spawnChild("write", location, {
          seed: 5,
          confirmations: 6,
          lastBlock: String(1n << 40n),
          run,
        });
        await child.waitFor(/^committed /);
        const [store] = await waitFor(
          "the writer's store process",
          () => storeProcesses(child.pid).length === 1 ? storeProcesses(child.pid) : undefined,
          { everyMs: 20 },
        );
        await child.kill();
        // The store process reads the end of its input and exits: no orphan keeps PGlite open.
        await waitFor(`store process ${store} exits`, () => !alive(store) || undefined, {
          everyMs: 20,
        });
        await using reopened = await open(location, { confirmations: 6 });
        assert.ok((await reopened.state()).cursor.nextBlock > 100n, `run ${run}: committed blocks`);
      }
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
