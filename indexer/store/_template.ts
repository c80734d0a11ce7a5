/**
 * The template of a new embedded store: a PGlite data directory holding the store's settings and
 * its empty schema (`TEMPLATE_SCHEMA`, renamed to the store's own when it is opened,
 * `_migrate.ts`), made once per PGlite version, recipe and schema version and kept as a tarball
 * in a cache directory, then unpacked into each new store (`_untar.ts`).
 *
 * `initdb` inside PGlite is seconds of CPU and hundreds of MiB of WebAssembly memory (measured:
 * 6.7 s and 766 MiB peak on a data directory on disk, 3.9 s and 682 MiB in memory); unpacking
 * the template takes tens of milliseconds. A first-ever run makes the template (`initdb` in
 * memory, then the settings and the schema), saves it, and unpacks it like any later run; a
 * template that is missing, unreadable or corrupt is made again, one that PostgreSQL cannot start
 * on is made again by the caller (`_embedded_engine.ts`), and a cache directory that cannot be
 * written only costs the next run its `initdb` again.
 *
 * The template is kept small, since every new store writes all of it (measured: 39 MiB in 972
 * files took 0.3–0.6 s to write, 12 MiB in 375 files 0.08 s): {@linkcode INITDB_ARGS}, and the
 * two template databases dropped (a store never runs `CREATE DATABASE`, the only user of them).
 *
 * Runs in the store's process (`_embedded_engine.ts`, `_embedded_process.ts`).
 *
 * @module
 */

import { PGlite } from "@electric-sql/pglite";
import { join } from "node:path";
import { schemaStatements, TEMPLATE_SCHEMA } from "./_migrate.ts";
import { templateFile } from "./_template_dir.ts";
import { untarStream } from "./_untar.ts";

/**
 * `initdb`'s arguments: WAL segments of 1 MiB instead of 16 (each new store writes the current
 * one, and a checkpoint keeps the ones `initdb` preallocated), and while `initdb` runs, at most
 * 2–4 MiB of WAL kept (it preallocates none beyond that); the store's own WAL sizes
 * ({@linkcode SETTINGS}) override these from its first start on.
 */
const INITDB_ARGS = ["--wal-segsize=1", "-c", "min_wal_size=2MB", "-c", "max_wal_size=4MB"];

/**
 * The store's settings, applied once in the template (PostgreSQL reads them at each start).
 * Bump `TEMPLATE_RECIPE` (`_template_dir.ts`) when they change: it names the cached template.
 *
 * - `min_wal_size`/`max_wal_size`: keep 32–64 MiB of WAL after a checkpoint instead of
 *   80 MiB–1 GiB.
 * - {@linkcode MEMORY_SETTINGS}.
 */
const SETTINGS = [
  "ALTER SYSTEM SET min_wal_size = '32MB'",
  "ALTER SYSTEM SET max_wal_size = '64MB'",
];

/**
 * PostgreSQL's memory, set small: its shared buffers are resident for as long as the process
 * runs, and the store's work — chunks of settlements written once, a few thousand buckets read
 * — does not need 128 MiB of them (measured: 4 MiB costs no throughput and 40 MiB less
 * resident memory). Also applied to stores made before these settings.
 */
export const MEMORY_SETTINGS: readonly string[] = [
  "ALTER SYSTEM SET shared_buffers = '4MB'",
  "ALTER SYSTEM SET wal_buffers = '256kB'",
];

/** The two template databases' drop (PGlite opens `postgres`; a store creates no database). */
const DROP_TEMPLATE_DATABASES = [
  "ALTER DATABASE template0 IS_TEMPLATE false",
  "ALTER DATABASE template1 IS_TEMPLATE false",
  "DROP DATABASE template0",
  "DROP DATABASE template1",
];

/**
 * Makes a template in memory: `initdb`, the settings, the template databases dropped, the
 * store's schema, a checkpoint, the tarball.
 */
async function makeTemplate(onOutput: (text: string) => boolean): Promise<Blob> {
  const db = await PGlite.create({
    initDbStartParams: INITDB_ARGS,
    onStderr: onOutput,
    onStdout: onOutput,
  });
  try {
    for (const statement of [...SETTINGS, ...MEMORY_SETTINGS, ...DROP_TEMPLATE_DATABASES]) {
      await db.query(statement);
    }
    await db.transaction(async (tx) => {
      for (const statement of schemaStatements(TEMPLATE_SCHEMA)) await tx.query(statement);
    });
    await db.exec("CHECKPOINT");
    return await db.dumpDataDir("gzip");
  } finally {
    await db.close();
  }
}

/** Writes `template` as `file`, atomically (a temporary file renamed into place). */
async function saveTemplate(file: string, template: Blob): Promise<void> {
  const dir = join(file, "..");
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = await Deno.makeTempFile({ dir, prefix: ".pgdata-", suffix: ".tmp" });
  try {
    await Deno.writeFile(temp, new Uint8Array(await template.arrayBuffer()));
    await Deno.rename(temp, file);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}

/**
 * Unpacks the gzipped tarball `gz` into the new data directory `pgdata`, as it is unzipped: never
 * more than a chunk held (the whole 12 MiB tarball at once stayed in the store process's
 * allocator). Written by `_untar.ts`, not PGlite's `loadDataDir`, which copies the whole tarball
 * into its WebAssembly memory (the creating process peaked at 325 MiB; `docs/decisions.md`).
 * Whether PostgreSQL starts on it is found by starting it (`_embedded_engine.ts`).
 *
 * @throws when the stream is not gzip, is damaged or cut, or is not a ustar archive.
 */
async function unpack(pgdata: string, gz: ReadableStream<BufferSource>): Promise<void> {
  await Deno.mkdir(pgdata, { recursive: true, mode: 0o700 });
  await untarStream(gz.pipeThrough(new DecompressionStream("gzip")), pgdata);
}

/** How a new data directory was made. */
export type Made = "from the cached template" | "initdb";

/**
 * Makes the new data directory `pgdata` (which must not exist) from the template in
 * `templateDir`, making and saving the template first when it is missing or unusable, or when
 * `remake` (PostgreSQL could not start on a store unpacked from it). `templateDir` undefined:
 * no cache, `initdb` every time.
 */
export async function createFromTemplate(
  pgdata: string,
  templateDir: string | undefined,
  onOutput: (text: string) => boolean,
  remake = false,
): Promise<Made> {
  const file = templateDir === undefined ? undefined : await templateFile(templateDir);
  if (file !== undefined && remake) await Deno.remove(file).catch(() => {});
  if (file !== undefined && !remake) {
    const cached = await Deno.open(file).catch(() => undefined);
    if (cached !== undefined) {
      try {
        await unpack(pgdata, cached.readable);
        return "from the cached template";
      } catch {
        // Corrupt or truncated: made again below.
        await Deno.remove(pgdata, { recursive: true }).catch(() => {});
        await Deno.remove(file).catch(() => {});
      }
    }
  }
  const template = await makeTemplate(onOutput);
  // A cache that cannot be written costs the next new store its initdb, nothing else.
  if (file !== undefined) await saveTemplate(file, template).catch(() => {});
  await unpack(pgdata, template.stream());
  return "initdb";
}
