/**
 * Whether a path exists, for the embedded store's two threads (the caller's, which decides
 * whether a store must be created, and the store process's, which creates it).
 *
 * @module
 */

/** Whether `path` exists (a dangling link counts); other failures than "not found" throw. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
