/**
 * `defaultDataDir`: where the embedded history store lives when the operator names no
 * directory — a per-user data directory, following each platform's convention.
 *
 * @module
 */

import { join } from "node:path";

/** Options of {@linkcode defaultDataDir}. */
export interface DefaultDataDirOptions {
  /**
   * Reads an environment variable.
   *
   * @default {(name) => Deno.env.get(name)}
   */
  env?: (name: string) => string | undefined;
  /**
   * The operating system.
   *
   * @default {Deno.build.os}
   */
  os?: typeof Deno.build.os;
}

/**
 * The default data directory of the indexer's history store:
 * `$XDG_DATA_HOME/net/indexer` (else `~/.local/share/net/indexer`) on Linux and other Unix
 * systems, `~/Library/Application Support/net/indexer` on macOS, `%LOCALAPPDATA%\net\indexer`
 * on Windows. Falls back to `./.net-indexer` when no home directory is known.
 *
 * @example
 * ```ts
 * import { defaultDataDir } from "./data_dir.ts";
 *
 * const dir = defaultDataDir({ os: "linux", env: (n) => (n === "HOME" ? "/home/ada" : undefined) });
 * console.assert(dir === "/home/ada/.local/share/net/indexer");
 * ```
 */
export function defaultDataDir(options: DefaultDataDirOptions = {}): string {
  const env = options.env ?? ((name: string) => Deno.env.get(name));
  const os = options.os ?? Deno.build.os;
  const get = (name: string) => {
    const value = env(name);
    return value ? value : undefined;
  };
  if (os === "windows") {
    const base = get("LOCALAPPDATA") ?? get("APPDATA");
    return base ? join(base, "net", "indexer") : join(".", ".net-indexer");
  }
  const home = get("HOME");
  if (os === "darwin" && home) {
    return join(home, "Library", "Application Support", "net", "indexer");
  }
  const xdg = get("XDG_DATA_HOME");
  if (xdg) return join(xdg, "net", "indexer");
  return home ? join(home, ".local", "share", "net", "indexer") : join(".", ".net-indexer");
}
