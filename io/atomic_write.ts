/**
 * Atomic file writes: the new content goes to a temporary file next to the target, is flushed
 * to disk, and then renamed over the target, so a reader sees either the old file or the new
 * one — never a half-written file, even if the process dies mid-write.
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

/**
 * Writes `data` to `path` atomically (temporary file in the same directory, fsync, rename).
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
  const suffix = crypto.getRandomValues(new Uint8Array(6)).reduce(
    (text, byte) => text + byte.toString(16).padStart(2, "0"),
    "",
  );
  const temp = join(dir, `.${basename(path)}.${suffix}.tmp`);
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
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
