/**
 * Access to the public test vectors in `../shared/vectors/` (next to the project root, or
 * `$NET_VECTORS_DIR`). They are read in place, never copied into the project. When the folder
 * is absent, tests registered with {@linkcode vectorTest} are reported as ignored and a
 * visible message says why.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Absolute path of the vectors folder. */
export const VECTORS_DIR: string = Deno.env.get("NET_VECTORS_DIR") ??
  fileURLToPath(new URL("../../shared/vectors/", import.meta.url));

let available: boolean | undefined;
let warned = false;

/** Whether the vectors folder exists. Prints a skip notice the first time it does not. */
export function vectorsAvailable(): boolean {
  if (available === undefined) {
    try {
      available = Deno.statSync(VECTORS_DIR).isDirectory;
    } catch {
      available = false;
    }
  }
  if (!available && !warned) {
    warned = true;
    console.warn(
      `SKIPPED: test vectors not found at ${VECTORS_DIR}; tests that need them are ignored. ` +
        "Put the shared folder next to the project or set NET_VECTORS_DIR.",
    );
  }
  return available;
}

/** Reads a vector file as bytes. */
export function readVectorBytes(relative: string): Uint8Array {
  return Deno.readFileSync(join(VECTORS_DIR, relative));
}

/** Reads a vector file as text. */
export function readVectorText(relative: string): string {
  return Deno.readTextFileSync(join(VECTORS_DIR, relative));
}

/** Reads and parses a JSON vector file. */
export function readVectorJson<T>(relative: string): T {
  return JSON.parse(readVectorText(relative)) as T;
}

/** Registers a test that needs the vectors; it is ignored, visibly, when they are absent. */
export function vectorTest(name: string, fn: (t: Deno.TestContext) => void | Promise<void>): void {
  Deno.test({ name: `${name} [vectors]`, ignore: !vectorsAvailable(), fn });
}
