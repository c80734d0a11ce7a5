/**
 * Atomic file writes: the new content goes to a temporary file next to the target, is flushed
 * to disk, and then renamed over the target, so a reader sees either the old file or the new
 * one — never a half-written file, even if the process dies mid-write.
 *
 * No debris: a write that fails removes its temporary file; a process killed mid-write cannot,
 * so a program removes what an earlier run left with {@linkcode removeStaleTemporaryFiles}
 * when it starts (temporary files are named `.<name>.<12 hex digits>.tmp`, next to the target).
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { NetError } from "../errors.ts";

/** Thrown when a file cannot be written atomically. */
export class AtomicWriteError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "AtomicWriteError" as const;
}

/** Options of {@linkcode writeFileAtomic}. */
export interface AtomicWriteOptions {
  /**
   * Permission bits of the new file (POSIX only).
   *
   * @default {0o600}
   */
  mode?: number;
  /**
   * Create the parent directory when it is missing.
   *
   * @default {true}
   */
  createDir?: boolean;
}

const SUFFIX_DIGITS = 12;

/** The temporary file of one write of `path`: `.<name>.<12 hex digits>.tmp` beside it. */
function temporaryPath(path: string): string {
  const suffix = crypto.getRandomValues(new Uint8Array(SUFFIX_DIGITS / 2)).reduce(
    (text, byte) => text + byte.toString(16).padStart(2, "0"),
    "",
  );
  return join(dirname(path), `.${basename(path)}.${suffix}.tmp`);
}

/**
 * Writes `data` to `path` atomically (temporary file in the same directory, fsync, rename,
 * then an fsync of the directory where the platform allows it). When any step fails, the
 * temporary file is removed and the old file, if any, is left as it was.
 *
 * @example
 * ```ts
 * import { writeFileAtomic } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * await writeFileAtomic(`${dir}/state.json`, '{"ok":true}');
 * console.assert(Deno.readTextFileSync(`${dir}/state.json`) === '{"ok":true}');
 * ```
 *
 * @throws {AtomicWriteError} naming the path and the underlying cause.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const dir = dirname(path);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const temp = temporaryPath(path);
  try {
    if (options.createDir ?? true) await Deno.mkdir(dir, { recursive: true });
    const file = await Deno.open(temp, {
      write: true,
      createNew: true,
      mode: options.mode ?? 0o600,
    });
    try {
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.rename(temp, path);
  } catch (cause) {
    await Deno.remove(temp).catch(() => {});
    throw new AtomicWriteError(`Cannot write ${path}: ${describe(cause)}`, { cause });
  }
  await syncDirectory(dir);
}

/** Makes the rename itself durable (POSIX); best effort, a no-op where directories cannot be opened. */
async function syncDirectory(dir: string): Promise<void> {
  if (Deno.build.os === "windows") return;
  try {
    const handle = await Deno.open(dir, { read: true });
    try {
      await handle.sync();
    } finally {
      handle.close();
    }
  } catch {
    // Not every file system lets a directory be synced; the rename is atomic either way.
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Removes the temporary files that writes of `path` left behind when their process was killed
 * (`.<name>.<12 hex digits>.tmp` in the same directory). Call it when a program starts, before
 * it writes `path` again: a write in flight in another process at that moment would lose its
 * temporary file and fail (and say so), never corrupt `path`. A missing directory is not an
 * error.
 *
 * @example
 * ```ts
 * import { removeStaleTemporaryFiles, writeFileAtomic } from "./atomic_write.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/.state.json.0123456789ab.tmp`, "{\"half");
 * const removed = await removeStaleTemporaryFiles(`${dir}/state.json`);
 * console.assert(removed.length === 1);
 * ```
 *
 * @returns the paths removed.
 * @throws {AtomicWriteError} when the directory cannot be read or a stale file not removed.
 */
export async function removeStaleTemporaryFiles(path: string): Promise<string[]> {
  const dir = dirname(path);
  const pattern = new RegExp(
    `^\\.${escapeRegExp(basename(path))}\\.[0-9a-f]{${SUFFIX_DIGITS}}\\.tmp$`,
  );
  const removed: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !pattern.test(entry.name)) continue;
      const stale = join(dir, entry.name);
      try {
        await Deno.remove(stale);
        removed.push(stale);
      } catch (cause) {
        if (cause instanceof Deno.errors.NotFound) continue; // someone else removed it
        throw cause;
      }
    }
  } catch (cause) {
    if (cause instanceof Deno.errors.NotFound) return removed;
    throw new AtomicWriteError(
      `Cannot remove the temporary files of ${path}: ${describe(cause)}`,
      { cause },
    );
  }
  return removed;
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
