/**
 * Fresh embedded history stores for the indexer tests, without paying PGlite's `initdb` (3–6 s)
 * for each: a template PostgreSQL data directory is made once per test process and copied
 * into every new data directory (the store then creates its schema in it as on a first start).
 * Everything lives under one temporary directory, removed when the process ends.
 *
 * @module
 */

import { PGlite } from "@electric-sql/pglite";

let root: string | undefined;
let template: Promise<string> | undefined;
let counter = 0;

function tempRoot(): string {
  if (!root) {
    const dir = Deno.makeTempDirSync({ prefix: "net-indexer-stores-" });
    root = dir;
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch {
        // already gone
      }
    });
  }
  return root;
}

/** The template `pgdata/`: what the store's first start makes before its schema. */
function makeTemplate(): Promise<string> {
  template ??= (async () => {
    const pgdata = `${tempRoot()}/template-pgdata`;
    const db = await PGlite.create(pgdata);
    await db.query("ALTER SYSTEM SET min_wal_size = '32MB'");
    await db.query("ALTER SYSTEM SET max_wal_size = '64MB'");
    await db.close();
    return pgdata;
  })();
  return template;
}

/**
 * A new, empty data directory (removed with the others when the test module ends): for a
 * program under test that must never reach the user's own data directory.
 */
export function emptyDataDir(): string {
  const dir = `${tempRoot()}/empty-${++counter}`;
  Deno.mkdirSync(dir, { mode: 0o700 });
  return dir;
}

/** A new data directory for an embedded store (its `pgdata/` copied from the template). */
export async function freshDataDir(): Promise<string> {
  const pgdata = await makeTemplate();
  const dir = `${tempRoot()}/store-${++counter}`;
  await Deno.mkdir(dir, { mode: 0o700 });
  const copy = await new Deno.Command("cp", { args: ["-a", pgdata, `${dir}/pgdata`] }).output();
  if (!copy.success) {
    throw new Error(`Cannot copy the template store: ${new TextDecoder().decode(copy.stderr)}`);
  }
  return dir;
}
