/**
 * The template of a new embedded store: an empty PGlite data directory (PostgreSQL's `initdb`
 * and the store's settings), made once per PGlite version and kept as a tarball in a cache
 * directory, then unpacked into each new store (PGlite's `loadDataDir`).
 *
 * `initdb` inside PGlite is seconds of CPU and hundreds of MiB of WebAssembly memory (measured:
 * 6.7 s and 766 MiB peak on a data directory on disk, 3.9 s and 682 MiB in memory); unpacking
 * the template is about a second and 309 MiB (through PGlite's `loadDataDir`; written by
 * `_untar.ts` now, less). A first-ever run makes the template (`initdb` in
 * memory, then the settings), saves it, and unpacks it like any later run; a template that is
 * missing, unreadable, corrupt or made by another PostgreSQL is made again, and a cache
 * directory that cannot be written only costs the next run its `initdb` again.
 *
 * Runs in the store's process (`_embedded_engine.ts`, `_embedded_process.ts`).
 *
 * @module
 */

import { PGlite } from "@electric-sql/pglite";
import { join } from "node:path";
import { templateFile } from "./_template_dir.ts";
import { untar } from "./_untar.ts";

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

/** Makes a template in memory: `initdb`, the settings, a checkpoint, the tarball. */
async function makeTemplate(onOutput: (text: string) => boolean): Promise<Blob> {
  const db = await PGlite.create({ onStderr: onOutput, onStdout: onOutput });
  try {
    for (const statement of [...SETTINGS, ...MEMORY_SETTINGS]) await db.query(statement);
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
 * Unpacks the tarball `tar` into the new data directory `pgdata` and checks PostgreSQL starts on
 * it. Written by `_untar.ts`, not PGlite's `loadDataDir`, which copies the whole tarball into its
 * WebAssembly memory (the creating process peaked at 325 MiB; `docs/decisions.md`).
 */
async function unpack(
  pgdata: string,
  tar: Uint8Array,
  onOutput: (text: string) => boolean,
): Promise<void> {
  await Deno.mkdir(pgdata, { recursive: true, mode: 0o700 });
  await untar(tar, pgdata);
  const db = await PGlite.create(pgdata, { onStderr: onOutput, onStdout: onOutput });
  try {
    const { rows } = await db.query<{ shared_buffers: string }>("SHOW shared_buffers");
    if (rows[0]?.shared_buffers !== "4MB") {
      throw new Error(`the template's shared_buffers is ${rows[0]?.shared_buffers}, expected 4MB`);
    }
  } finally {
    await db.close();
  }
}

/** The tarball inside a gzip file; throws when the gzip stream is damaged or not a tarball. */
async function gunzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const tar = new Uint8Array(await new Response(stream).arrayBuffer());
  if (tar.length === 0 || tar.length % 512 !== 0) {
    throw new Error(`the template holds ${tar.length} bytes, expected a tarball`);
  }
  return tar;
}

/** How a new data directory was made. */
export type Made = "from the cached template" | "initdb";

/**
 * Makes the new data directory `pgdata` (which must not exist) from the template in
 * `templateDir`, making and saving the template first when it is missing or unusable.
 * `templateDir` undefined: no cache, `initdb` every time.
 */
export async function createFromTemplate(
  pgdata: string,
  templateDir: string | undefined,
  onOutput: (text: string) => boolean,
): Promise<Made> {
  const file = templateDir === undefined ? undefined : await templateFile(templateDir);
  if (file !== undefined) {
    const bytes = await Deno.readFile(file).catch(() => undefined);
    if (bytes !== undefined) {
      try {
        // Unzipped here: a damaged gzip stream fails inside PGlite's untar as a rejection
        // nothing catches, which ends the process.
        await unpack(pgdata, await gunzip(bytes), onOutput);
        return "from the cached template";
      } catch {
        // Corrupt, truncated or made by another PostgreSQL: made again below.
        await Deno.remove(pgdata, { recursive: true }).catch(() => {});
        await Deno.remove(file).catch(() => {});
      }
    }
  }
  const template = await makeTemplate(onOutput);
  // A cache that cannot be written costs the next new store its initdb, nothing else.
  if (file !== undefined) await saveTemplate(file, template).catch(() => {});
  await unpack(pgdata, await gunzip(new Uint8Array(await template.arrayBuffer())), onOutput);
  return "initdb";
}
