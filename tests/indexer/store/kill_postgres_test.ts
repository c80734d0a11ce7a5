/** `kill -9` of a writer of the PostgreSQL store, at random points (`_kill.ts`). */

import { startPostgres } from "../../_postgres.ts";
import { waitFor } from "../../_wait.ts";
import { killRepeatedly } from "./_kill.ts";

Deno.test("kill -9 of the writer never loses or double-counts a chunk: PostgreSQL", async () => {
  await using server = await startPostgres();
  const databaseUrl = await server.createDatabase();
  await killRepeatedly({ databaseUrl }, async (store) => {
    await waitFor(
      "the killed writer's lock to be released",
      async () => (await store.tryBecomeWriter()) || undefined,
      { everyMs: 50 },
    );
  });
});
