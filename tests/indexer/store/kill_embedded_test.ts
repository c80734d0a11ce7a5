/** `kill -9` of a writer of the embedded store, at random points (`_kill.ts`). */

import assert from "node:assert/strict";
import { killRepeatedly } from "./_kill.ts";

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
