/**
 * Where the embedded store's template (`_template.ts`) is cached: the directory when the
 * caller names none, and the file in it. Apart from `_template.ts` so that the caller's thread,
 * which decides them, does not load PGlite.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { SCHEMA_VERSION } from "./schema.ts";

/**
 * The per-user cache directory of templates: `$XDG_CACHE_HOME/net/pglite` (when absolute; else
 * `~/.cache/net/pglite`; `%LOCALAPPDATA%\net\cache\pglite` on Windows), or undefined when no
 * home directory is known (every new store then runs `initdb`).
 */
export function defaultTemplateDir(env: (name: string) => string | undefined): string | undefined {
  const get = (name: string) => env(name) || undefined;
  if (Deno.build.os === "windows") {
    const base = get("LOCALAPPDATA");
    return base ? join(base, "net", "cache", "pglite") : undefined;
  }
  // A relative XDG_CACHE_HOME is ignored, as the XDG specification says.
  const xdg = get("XDG_CACHE_HOME");
  if (xdg && isAbsolute(xdg)) return join(xdg, "net", "pglite");
  const home = get("HOME");
  return home ? join(home, ".cache", "net", "pglite") : undefined;
}

/**
 * The recipe of the template: `initdb`'s arguments and the settings `_template.ts` applies.
 * Bumped when they change, it names the cached template (an older one is then never read), as
 * the schema version does (the template holds the schema).
 */
export const TEMPLATE_RECIPE = 2;

/** The PGlite version this process runs (its package's `version`), or "unknown". */
async function pgliteVersion(): Promise<string> {
  try {
    const entry = new URL(import.meta.resolve("@electric-sql/pglite"));
    for (let dir = new URL("./", entry); dir.pathname !== "/"; dir = new URL("../", dir)) {
      const text = await Deno.readTextFile(new URL("package.json", dir)).catch(() => undefined);
      if (text === undefined) continue;
      const pkg = JSON.parse(text) as { name?: string; version?: string };
      if (pkg.name === "@electric-sql/pglite" && typeof pkg.version === "string") {
        return pkg.version;
      }
    }
  } catch {
    // resolved somewhere without a package.json
  }
  return "unknown";
}

/** The template's file in `dir`, named by the PGlite version, the recipe and the schema version. */
export async function templateFile(dir: string): Promise<string> {
  return join(
    dir,
    `pgdata-${await pgliteVersion()}-r${TEMPLATE_RECIPE}-s${SCHEMA_VERSION}.tgz`,
  );
}
