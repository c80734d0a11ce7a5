/**
 * The run-time dependency set: `deno.runtime.json` and `deno.runtime.lock`, what the demo, the
 * indexer, the daemon, the devnet and the container image install. `deno.json` and `deno.lock`
 * stay the development set (tests, benchmarks, tools: test oracles, a browser driver, a
 * compiler, container tooling); Deno installs every package of the lock a program runs with,
 * so the programs run with the smaller pair.
 *
 * The run-time set is derived, never edited by hand beyond the list of names: every import of
 * `deno.runtime.json` is the same specifier as in `deno.json` (names stay the same, so code
 * imports `"viem"` either way), its other settings are `deno.json`'s, and `deno.runtime.lock`
 * is `deno.lock` cut to the packages those imports reach — the same versions and integrity
 * hashes, nothing resolved anew.
 *
 * ```sh
 * deno task runtime-deps           # rewrite deno.runtime.json's specifiers and deno.runtime.lock
 * deno task runtime-deps --check   # exit 1 when either is not what deno.json and deno.lock give
 * ```
 *
 * To add a run-time dependency: add it to `deno.json` as usual (`deno add`), add its name to
 * `deno.runtime.json`'s `imports` (any value), then run `deno task runtime-deps`.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);

/** The run-time config's file name, next to `deno.json`. */
export const RUNTIME_CONFIG = "deno.runtime.json";
/** The run-time lock's file name, next to `deno.lock`. */
export const RUNTIME_LOCK = "deno.runtime.lock";

/** The settings of `deno.json` that the run-time config repeats unchanged. */
export const SHARED_SETTINGS: readonly string[] = ["unstable", "compilerOptions"];

/** The parts of a Deno lock file (version 5) this tool reads and writes. */
export interface DenoLock {
  /** The lock format, `"5"`. */
  version: string;
  /** `npm:name@range` to the resolved version (and peer suffix). */
  specifiers: Record<string, string>;
  /** `name@version[_peer@version…]` to the package's integrity, dependencies, flags. */
  npm: Record<string, NpmEntry>;
  /** The config's own dependencies. */
  workspace: { dependencies: string[] };
  /** Anything else the lock holds (remote modules, JSR), kept when present. */
  [other: string]: unknown;
}

/** One package of a lock's `npm` section. */
export interface NpmEntry {
  /** Its integrity hash. */
  integrity?: string;
  /** Its dependencies: a name (one version in the lock) or `name@version`. */
  dependencies?: string[];
  /** Its optional dependencies, same form. */
  optionalDependencies?: string[];
  /** Other fields (bin, scripts, os, cpu, optionalPeers), copied as they are. */
  [other: string]: unknown;
}

/** Splits a lock key `name@version[_peers]` into its name and version. */
export function parseLockKey(key: string): { name: string; version: string } {
  const match = /^(@?[^@]+)@([^_]+)(?:_.*)?$/.exec(key);
  if (!match) throw new Error(`Cannot read the lock: "${key}" is not name@version`);
  return { name: match[1], version: match[2] };
}

/** The lock key a dependency reference (`name` or `name@version`) points at. */
function resolveReference(lock: DenoLock, reference: string, from: string): string {
  if (lock.npm[reference]) return reference;
  const at = reference.lastIndexOf("@");
  const wanted = at > 0
    ? { name: reference.slice(0, at), version: reference.slice(at + 1) }
    : { name: reference, version: undefined };
  const found = Object.keys(lock.npm).filter((key) => {
    const { name, version } = parseLockKey(key);
    return name === wanted.name && (wanted.version === undefined || version === wanted.version);
  });
  if (found.length !== 1) {
    throw new Error(
      `Cannot read the lock: ${from} depends on "${reference}", which matches ${found.length} ` +
        `packages (${found.join(", ") || "none"}); expected exactly one`,
    );
  }
  return found[0];
}

/** `lock` cut to what `specifiers` (`npm:name@range`) reach, as `deno.runtime.lock`. */
export function cutLock(lock: DenoLock, specifiers: readonly string[]): DenoLock {
  const keep = new Set<string>();
  const pending: string[] = [];
  const specifierMap: Record<string, string> = {};
  for (const specifier of [...new Set(specifiers)].sort()) {
    const resolved = lock.specifiers[specifier];
    if (resolved === undefined) {
      throw new Error(
        `Cannot cut the lock: deno.lock has no "${specifier}"; run \`deno install\` first`,
      );
    }
    specifierMap[specifier] = resolved;
    const name = specifier.slice("npm:".length).replace(/^(@?[^@]+)@.*$/, "$1");
    pending.push(`${name}@${resolved}`);
  }
  while (pending.length > 0) {
    const key = pending.pop()!;
    if (keep.has(key)) continue;
    const entry = lock.npm[key];
    if (!entry) throw new Error(`Cannot cut the lock: deno.lock has no package "${key}"`);
    keep.add(key);
    for (const reference of [...entry.dependencies ?? [], ...entry.optionalDependencies ?? []]) {
      pending.push(resolveReference(lock, reference, key));
    }
  }
  const npm: Record<string, NpmEntry> = {};
  for (const key of Object.keys(lock.npm)) if (keep.has(key)) npm[key] = lock.npm[key];
  return {
    version: lock.version,
    specifiers: specifierMap,
    npm,
    workspace: { dependencies: [...new Set(specifiers)].sort() },
  };
}

/** A config file's JSON. */
type Config = Record<string, unknown> & { imports?: Record<string, string> };

/** What the run-time files should hold, given the development pair and the run-time names. */
export function runtimeFiles(
  devConfig: Config,
  devLock: DenoLock,
  runtimeConfig: Config,
): { config: Config; lock: DenoLock } {
  const devImports = devConfig.imports ?? {};
  const imports: Record<string, string> = {};
  for (const name of Object.keys(runtimeConfig.imports ?? {}).sort()) {
    const specifier = devImports[name];
    if (specifier === undefined) {
      throw new Error(
        `Cannot derive ${RUNTIME_CONFIG}: its import "${name}" is not in deno.json; add it there ` +
          "first (deno add)",
      );
    }
    imports[name] = specifier;
  }
  const config: Config = {
    ...runtimeConfig,
    imports,
    ...Object.fromEntries(SHARED_SETTINGS.map((key) => [key, devConfig[key]])),
  };
  // `npm:/name@version/` (a folder mapping) is locked as `npm:name@version`.
  const specifiers = Object.values(imports).map((value) =>
    value.replace(/^npm:\/?(.+?)\/?$/, "npm:$1")
  );
  return { config, lock: cutLock(devLock, specifiers) };
}

function readJson<T>(name: string): T {
  return JSON.parse(Deno.readTextFileSync(new URL(name, ROOT))) as T;
}

/** Rewrites (or with `--check` compares) the run-time files; returns the exit code. */
export function runtimeDepsMain(args: readonly string[]): number {
  const check = args.includes("--check");
  const wanted = runtimeFiles(
    readJson<Config>("deno.json"),
    readJson<DenoLock>("deno.lock"),
    readJson<Config>(RUNTIME_CONFIG),
  );
  const outputs: [string, string][] = [
    [RUNTIME_CONFIG, `${JSON.stringify(wanted.config, null, 2)}\n`],
    [RUNTIME_LOCK, `${JSON.stringify(wanted.lock, null, 2)}\n`],
  ];
  let stale = 0;
  for (const [name, text] of outputs) {
    const url = new URL(name, ROOT);
    const current = (() => {
      try {
        return Deno.readTextFileSync(url);
      } catch {
        return "";
      }
    })();
    if (current === text) continue;
    if (check) {
      console.error(`runtime-deps: ${name} is not derived from deno.json and deno.lock`);
      stale++;
    } else {
      Deno.writeTextFileSync(url, text);
      console.log(`runtime-deps: wrote ${name}`);
    }
  }
  if (stale > 0) console.error("runtime-deps: run `deno task runtime-deps` and commit the result");
  const count = Object.keys(wanted.lock.npm).length;
  if (!check) console.log(`runtime-deps: ${count} npm packages at run time`);
  return stale > 0 ? 1 : 0;
}

if (import.meta.main) Deno.exit(runtimeDepsMain(Deno.args));
