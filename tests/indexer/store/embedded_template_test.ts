/**
 * The embedded store's template (`indexer/store/_template.ts`): a new store is unpacked from
 * an empty PGlite data directory cached once per PGlite version; a template that is missing,
 * corrupt or made by another PostgreSQL is made again (`initdb`), never used.
 */

import assert from "node:assert/strict";
import { openEmbedded } from "../../../indexer/store/_embedded.ts";
import {
  defaultTemplateDir,
  TEMPLATE_RECIPE,
  templateFile,
} from "../../../indexer/store/_template_dir.ts";
import { SCHEMA_VERSION } from "../../../indexer/store/schema.ts";
import { schemaStatements, TEMPLATE_SCHEMA } from "../../../indexer/store/_migrate.ts";
import type { SqlQuery } from "../../../indexer/store/_sql.ts";
import { open, rejectsWith } from "./_suite.ts";

/** The PGlite version `deno.json` pins. */
async function pinnedVersion(): Promise<string> {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../../../deno.json", import.meta.url)),
  );
  const spec: string = config.imports["@electric-sql/pglite"];
  const version = /@electric-sql\/pglite@(\S+)$/.exec(spec)?.[1];
  assert.ok(version, `deno.json pins PGlite as ${spec}`);
  return version;
}

/** Opens and closes a new store in `dataDir`, its template cached in `templateDir`. */
async function create(dataDir: string, templateDir: string): Promise<void> {
  const backend = await openEmbedded(dataDir, { templateDir });
  try {
    const rows = await backend.session.query("SELECT current_setting('shared_buffers') AS b");
    assert.deepEqual(rows, [{ b: "4MB" }]);
  } finally {
    await backend.close();
  }
}

/** The file's identity: a template made again is written anew (renamed into place). */
async function identity(path: string): Promise<string> {
  const info = await Deno.stat(path);
  return `${info.ino}:${info.mtime?.getTime()}:${info.size}`;
}

/** Rewrites the top-level `PG_VERSION` in a gzipped tarball to `version` (same length). */
async function withPgVersion(
  tgz: Uint8Array<ArrayBuffer>,
  version: string,
): Promise<Uint8Array<ArrayBuffer>> {
  const tar = new Uint8Array(
    await new Response(new Blob([tgz]).stream().pipeThrough(new DecompressionStream("gzip")))
      .arrayBuffer(),
  );
  const name = new TextEncoder().encode("/PG_VERSION\0");
  for (let at = 0; at + 512 <= tar.length; at += 512) {
    if (name.every((byte, i) => tar[at + i] === byte)) {
      const old = new TextDecoder().decode(tar.subarray(at + 512, at + 512 + version.length));
      assert.match(old, /^\d+\n$/, `PG_VERSION held ${JSON.stringify(old)}`);
      tar.set(new TextEncoder().encode(version), at + 512);
      return new Uint8Array(
        await new Response(new Blob([tar]).stream().pipeThrough(new CompressionStream("gzip")))
          .arrayBuffer(),
      );
    }
  }
  throw new Error("the template has no /PG_VERSION entry");
}

Deno.test("embedded template: made once per PGlite version, then every new store loads it", async () => {
  const root = await Deno.makeTempDir({ prefix: "net-store-template-" });
  try {
    const templates = `${root}/cache`;
    const file = await templateFile(templates);
    assert.equal(
      file,
      `${templates}/pgdata-${await pinnedVersion()}-r${TEMPLATE_RECIPE}-s${SCHEMA_VERSION}.tgz`,
    );
    await create(`${root}/a`, templates);
    const made = await identity(file);
    await create(`${root}/b`, templates);
    // Loaded, not made again: the same file.
    assert.equal(await identity(file), made);
    const version = (await Deno.readTextFile(`${root}/a/pgdata/PG_VERSION`)).trim();
    assert.equal((await Deno.readTextFile(`${root}/b/pgdata/PG_VERSION`)).trim(), version);
    // A store made from the template is a working store.
    await using store = await open({ dataDir: `${root}/b` });
    assert.equal((await store.state()).cursor.nextBlock, 100n);
    assert.deepEqual(
      [...Deno.readDirSync(templates)].map((e) => e.name),
      [file.split("/").pop()],
      "nothing else is left in the cache (no temporary file)",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("embedded template: a corrupt or mismatched template is made again, never used", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "net-store-template-" });
  try {
    const templates = `${root}/cache`;
    const file = await templateFile(templates);
    await create(`${root}/first`, templates);
    const good = await Deno.readFile(file);
    const cases: [string, Uint8Array<ArrayBuffer>][] = [
      ["not a gzip at all", new TextEncoder().encode("not a tarball\n")],
      ["truncated", good.subarray(0, Math.floor(good.length / 2))],
      ["made by another PostgreSQL (PG_VERSION 99)", await withPgVersion(good, "99\n")],
    ];
    let n = 0;
    for (const [name, bytes] of cases) {
      await t.step(name, async () => {
        await Deno.writeFile(file, bytes);
        const dataDir = `${root}/store-${++n}`;
        await create(dataDir, templates);
        const version = (await Deno.readTextFile(`${dataDir}/pgdata/PG_VERSION`)).trim();
        assert.equal(version, (await Deno.readTextFile(`${root}/first/pgdata/PG_VERSION`)).trim());
        // The bad template was replaced by a good one, which the next store loads.
        const again = await Deno.readFile(file);
        assert.notDeepEqual(again, bytes);
        const replaced = await identity(file);
        await create(`${dataDir}-next`, templates);
        assert.equal(await identity(file), replaced);
        assert.deepEqual(
          [...Deno.readDirSync(dataDir)].map((e) => e.name).sort(),
          ["LOCK", "pgdata"],
        );
      });
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("embedded template: a cache that cannot be written costs initdb, nothing else", async () => {
  const root = await Deno.makeTempDir({ prefix: "net-store-template-" });
  try {
    // A file where the cache directory should be: the template cannot be saved.
    await Deno.writeTextFile(`${root}/cache`, "a file\n");
    await create(`${root}/a`, `${root}/cache`);
    await create(`${root}/b`, `${root}/cache`);
    assert.equal(await Deno.readTextFile(`${root}/cache`), "a file\n");
    assert.ok((await Deno.stat(`${root}/b/pgdata/PG_VERSION`)).isFile);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name: "embedded template: cached per user, following the XDG convention",
  ignore: Deno.build.os === "windows",
  fn() {
    const env = (vars: Record<string, string>) => (name: string) => vars[name];
    const cases: [Record<string, string>, string | undefined][] = [
      [{ HOME: "/home/ada" }, "/home/ada/.cache/net/pglite"],
      [{ HOME: "/home/ada", XDG_CACHE_HOME: "/cache" }, "/cache/net/pglite"],
      [{ HOME: "/home/ada", XDG_CACHE_HOME: "" }, "/home/ada/.cache/net/pglite"],
      [{ HOME: "/home/ada", XDG_CACHE_HOME: "relative" }, "/home/ada/.cache/net/pglite"],
      [{}, undefined],
    ];
    for (const [vars, expected] of cases) {
      assert.equal(defaultTemplateDir(env(vars)), expected, JSON.stringify(vars));
    }
  },
});

/** Schema `schema`'s tables, columns, constraints and indexes, its name taken out. */
async function catalog(query: SqlQuery, schema: string): Promise<string[]> {
  const rows = await query(
    `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' ||
        is_nullable || ' ' || coalesce(column_default, '-') AS line
       FROM information_schema.columns WHERE table_schema = $1
     UNION ALL
     SELECT 'constraint ' || c.conrelid::regclass::text || ' ' || c.conname || ' ' ||
        pg_get_constraintdef(c.oid)
       FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1
     UNION ALL
     SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1
`,
    [schema],
  );
  return rows.map((row) => String(row.line).replaceAll(`${schema}.`, "S.")).sort();
}

Deno.test("embedded template: a new store's schema is the template's, renamed, the same as the migrations make", async () => {
  const root = await Deno.makeTempDir({ prefix: "net-store-template-" });
  try {
    const templates = `${root}/cache`;
    await create(`${root}/a`, templates);
    const unopened = await openEmbedded(`${root}/a`, { templateDir: templates });
    const before = await unopened.session.query(
      "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'net\\_%'",
    ).finally(() => unopened.close());
    assert.deepEqual(before, [{ nspname: TEMPLATE_SCHEMA }], "the template holds the schema");
    // Opened as a store: the template's schema becomes the store's own.
    await (await open({ dataDir: `${root}/a` })).close();
    const backend = await openEmbedded(`${root}/a`, { templateDir: templates });
    try {
      const { query } = backend.session;
      const schemas = await query(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'net\\_%' ORDER BY nspname",
      );
      assert.deepEqual(schemas, [{ nspname: "net_history" }]);
      await backend.session.transaction(async (tx) => {
        for (const statement of schemaStatements("net_fresh")) await tx(statement);
      });
      const made = await catalog(query, "net_fresh");
      assert.ok(made.length > 40, `the migrations made ${made.length} catalog lines`);
      assert.deepEqual(await catalog(query, "net_history"), made);
      // Kept small: one database, WAL segments of 1 MiB.
      assert.deepEqual(await query("SELECT datname FROM pg_database"), [{ datname: "postgres" }]);
      assert.deepEqual(await query("SHOW wal_segment_size"), [{ wal_segment_size: "1MB" }]);
    } finally {
      await backend.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("embedded template: a store may not be given the template's schema name", async () => {
  const root = await Deno.makeTempDir({ prefix: "net-store-template-" });
  try {
    await rejectsWith(
      open({ dataDir: `${root}/a` }, { schema: TEMPLATE_SCHEMA }),
      "invalid_input",
      /schema is "net_template_v\d+", expected .* not starting with pg_ or net_template_/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
