/**
 * The PostgreSQL store on a real server (`tests/_postgres.ts`): the shared suite, plus what
 * only a server has — several processes on one database, one writer at a time, takeover when
 * the writer's connection dies, and connection failures.
 */

import assert from "node:assert/strict";
import pg from "pg";
import {
  type HistoryStore,
  SCHEMA_VERSION,
  type StoreLocation,
} from "../../../indexer/store/mod.ts";
import { waitFor } from "../../_wait.ts";
import { startPostgres } from "../../_postgres.ts";
import { SyntheticChain } from "./_chain.ts";
import { assertConfirmed } from "./_helpers.ts";
import { spawnChild } from "./_spawn.ts";
import { open, rejectsWith, storeSuite, type SuiteBackend } from "./_suite.ts";

const chain = new SyntheticChain({ seed: 3 });

function urlOf(location: StoreLocation): string {
  if (!("databaseUrl" in location)) throw new Error("not a PostgreSQL location");
  return location.databaseUrl;
}

async function rawSql(url: string, statement: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(statement)).rows;
  } finally {
    await client.end();
  }
}

/** Polls `tryBecomeWriter` until it succeeds (the server notices a dead client at once). */
async function takeOver(store: HistoryStore): Promise<void> {
  await waitFor(
    "the writer lock to be free",
    async () => (await store.tryBecomeWriter()) || undefined,
    { everyMs: 50 },
  );
}

type Server = Awaited<ReturnType<typeof startPostgres>>;

/** Several processes and stores on one database: one writer, takeover, rebuild rules. */
async function writerCases(t: Deno.TestContext, server: Server, backend: SuiteBackend) {
  await t.step(
    "one writer per database: the next takes over when the writer is killed",
    async () => {
      const location = await backend.fresh();
      await using holder = spawnChild("hold", location);
      await holder.waitFor(/^ready writer=true$/);
      await using second = await open(location);
      await using third = await open(location);
      assert.equal(second.backend, "postgres");
      assert.equal(second.writer, false);
      assert.equal(third.writer, false);
      await rejectsWith(
        second.commitChunk(chain.chunk(100n, 110n, 200n, 5)),
        "not_writer",
        /is not the writer/,
      );
      await rejectsWith(second.reconcile(chain.canonical(200n)), "not_writer");
      await rejectsWith(second.reset(), "not_writer");
      assert.equal(await second.tryBecomeWriter(), false);
      assert.equal((await second.state()).cursor.nextBlock, 100n, "a replica still reads");
      await holder.kill();
      await takeOver(second);
      assert.equal(second.writer, true);
      assert.equal(await third.tryBecomeWriter(), false, "exactly one writer");
      await second.commitChunk(chain.chunk(100n, 150n, 200n, 5));
      assert.equal(await second.tryBecomeWriter(), true, "asking again keeps the lock");
      await assertConfirmed(third, chain.range(100n, 150n));
    },
  );

  await t.step(
    "a writer whose connection is terminated fails its next commit; another takes over",
    async () => {
      const location = await backend.fresh();
      await using first = await open(location);
      await using second = await open(location);
      assert.deepEqual([first.writer, second.writer], [true, false]);
      await first.commitChunk(chain.chunk(100n, 120n, 200n, 5));
      const database = new URL(urlOf(location)).pathname.slice(1);
      const killed = await server.sql(
        `SELECT pg_terminate_backend(l.pid) AS done FROM pg_locks l JOIN pg_database d ON d.oid = l.database
       WHERE l.locktype = 'advisory' AND l.granted AND d.datname = $1`,
        [database],
      );
      assert.deepEqual(killed, [{ done: true }]);
      await rejectsWith(
        first.commitChunk(chain.chunk(121n, 130n, 200n, 5)),
        "failed",
        /Cannot commit the chunk/,
      );
      assert.equal(first.writer, false);
      await takeOver(second);
      await second.commitChunk(chain.chunk(121n, 130n, 200n, 5));
      await assertConfirmed(second, chain.range(100n, 130n));
    },
  );

  await t.step("a rebuild needs the writer lock", async () => {
    const location = await backend.fresh();
    await using writer = await open(location);
    await writer.commitChunk(chain.chunk(100n, 120n, 200n, 5));
    await rejectsWith(
      open(location, { rebuild: "always" }),
      "locked",
      /Cannot rebuild .* another process holds the writer lock/,
    );
    await rejectsWith(open(location, { chainId: 5, rebuild: "if_unusable" }), "locked");
    await assertConfirmed(writer, chain.range(100n, 120n));
  });
}

/** Migrations under a running writer, schemas side by side, connection failures. */
async function serverCases(t: Deno.TestContext, server: Server, backend: SuiteBackend) {
  await t.step("a newer process migrated the store: the old writer stops writing", async () => {
    const location = await backend.fresh();
    await using writer = await open(location);
    await rawSql(
      urlOf(location),
      `UPDATE net_history.meta SET schema_version = ${SCHEMA_VERSION + 1}`,
    );
    await rejectsWith(
      writer.commitChunk(chain.chunk(100n, 120n, 200n, 5)),
      "newer_schema",
      new RegExp(
        `now at schema version ${SCHEMA_VERSION + 1}, this code writes version ${SCHEMA_VERSION}`,
      ),
    );
  });

  await t.step("stores in two schemas of one database are independent", async () => {
    const location = await backend.fresh();
    await using a = await open(location, { schema: "history_a" });
    await using b = await open(location, { schema: "history_b", chainId: 10 });
    assert.deepEqual([a.writer, b.writer], [true, true]);
    await a.commitChunk(chain.chunk(100n, 140n, 200n, 5));
    await assertConfirmed(b, []);
    await assertConfirmed(a, chain.range(100n, 140n));
    const tables = await rawSql(
      urlOf(location),
      "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'",
    );
    assert.deepEqual(tables, [{ n: 0 }], "nothing outside the store's schema");
  });

  await t.step(
    "an unreachable server or a bad URL is a clear error without the password",
    async () => {
      const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (closed.addr as Deno.NetAddr).port;
      closed.close();
      const error = await rejectsWith(
        open({ databaseUrl: `postgres://indexer:s3cret@127.0.0.1:${port}/history` }),
        "unreachable",
        new RegExp(
          `Cannot open the history store at postgres://indexer:\\*\\*\\*@127\\.0\\.0\\.1:${port}/history: connect ECONNREFUSED`,
        ),
      );
      assert.doesNotMatch(error.message, /s3cret/);
      await rejectsWith(
        open({ databaseUrl: "mysql://u:p@localhost/db" }),
        "unreachable",
        /scheme is mysql:, expected postgres: or postgresql:/,
      );
      await rejectsWith(
        open({ databaseUrl: "not a url" }),
        "unreachable",
        /database URL is malformed/,
      );
      const missing = server.url.replace(/\/postgres$/, "/no_such_db");
      await rejectsWith(
        open({ databaseUrl: missing }),
        "unreachable",
        /database "no_such_db" does not exist/,
      );
    },
  );
}

Deno.test("PostgreSQL store", async (t) => {
  await using server = await startPostgres();
  const backend: SuiteBackend = {
    fresh: async () => ({ databaseUrl: await server.createDatabase() }),
    raw: async (location, statement) => void await rawSql(urlOf(location), statement),
  };
  await t.step("the shared store suite", (t) => storeSuite(t, backend));
  await writerCases(t, server, backend);
  await serverCases(t, server, backend);
});
