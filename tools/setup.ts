/**
 * Installs the external tools that the tests, the benchmarks and the devnet need, and finds
 * them again afterwards.
 *
 * Only one tool is outside Deno's own dependency graph: the `anvil` local chain. It ships as
 * a native binary inside the npm package `@foundry-rs/anvil` and its per-platform packages,
 * which Deno's npm resolver cannot install (optional platform dependencies), so we install it
 * with `npm` into `.tools/` (git-ignored). The install is pinned and idempotent: a second run
 * only checks the binary's version. `solc` needs no step here: it is a plain npm dependency.
 *
 * Run it as `deno task setup`; `deno task test`, `bench`, `devnet` and `demo` run it first.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The pinned version of the `@foundry-rs/anvil` npm package. */
export const ANVIL_VERSION = "1.7.1";

/** Directory (relative to the project root) that holds tools installed by this script. */
const TOOLS_DIR = fileURLToPath(new URL("../.tools/", import.meta.url));

/** Environment variable that points at an `anvil` binary to use instead of the pinned one. */
export const ANVIL_BIN_ENV = "NET_ANVIL_BIN";

/**
 * Returns the path of the `anvil` binary: `$NET_ANVIL_BIN` when set, otherwise the pinned
 * binary installed by {@linkcode ensureAnvil}.
 *
 * @throws {Error} when no binary is installed; the message says how to install it.
 */
export function anvilBinary(): string {
  const override = Deno.env.get(ANVIL_BIN_ENV);
  if (override) return override;
  const found = findInstalledAnvil();
  if (!found) {
    throw new Error(
      `Cannot find the anvil binary: nothing installed under ${TOOLS_DIR}\n` +
        "Run `deno task setup` (or any of `deno task test|bench|devnet|demo`), " +
        `or point ${ANVIL_BIN_ENV} at an anvil binary.`,
    );
  }
  return found;
}

function findInstalledAnvil(): string | undefined {
  const scope = join(TOOLS_DIR, "node_modules", "@foundry-rs");
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(scope)];
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (!entry.name.startsWith("anvil-")) continue;
    const exe = Deno.build.os === "windows" ? "anvil.exe" : "anvil";
    const bin = join(scope, entry.name, "bin", exe);
    try {
      if (Deno.statSync(bin).isFile) return bin;
    } catch {
      // not this platform's package
    }
  }
  return undefined;
}

async function versionOf(bin: string): Promise<string | undefined> {
  try {
    const out = await new Deno.Command(bin, {
      args: ["--version"],
      stdout: "piped",
      stderr: "null",
    })
      .output();
    if (!out.success) return undefined;
    return new TextDecoder().decode(out.stdout).match(/Version:\s*([0-9][^\s]*)/)?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Installs the pinned `anvil` with npm into `.tools/` unless it is already there, and returns
 * the binary's path. When `$NET_ANVIL_BIN` is set, only checks that it runs.
 *
 * @throws {Error} when npm is missing or the installed binary does not run.
 */
export async function ensureAnvil(log: (line: string) => void = console.error): Promise<string> {
  const override = Deno.env.get(ANVIL_BIN_ENV);
  if (override) {
    if (!(await versionOf(override))) {
      throw new Error(`Cannot run ${ANVIL_BIN_ENV}=${override}: it did not print an anvil version`);
    }
    return override;
  }
  const existing = findInstalledAnvil();
  if (existing && (await versionOf(existing)) === ANVIL_VERSION) return existing;

  log(`setup: installing anvil ${ANVIL_VERSION} with npm into ${TOOLS_DIR}`);
  await Deno.mkdir(TOOLS_DIR, { recursive: true });
  const manifest = {
    name: "net-consumer-tools",
    private: true,
    description: "Tools installed by tools/setup.ts; safe to delete",
    dependencies: { "@foundry-rs/anvil": ANVIL_VERSION },
  };
  await Deno.writeTextFile(join(TOOLS_DIR, "package.json"), JSON.stringify(manifest, null, 2));
  const npm = Deno.build.os === "windows" ? "npm.cmd" : "npm";
  let status: Deno.CommandStatus;
  try {
    status = await new Deno.Command(npm, {
      // The binary lives in the platform package; the wrapper's postinstall is not needed.
      args: ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
      cwd: TOOLS_DIR,
      stdout: "inherit",
      stderr: "inherit",
    }).spawn().status;
  } catch (cause) {
    throw new Error(
      "Cannot install anvil: `npm` was not found on PATH\n" +
        `Install Node.js and npm, or point ${ANVIL_BIN_ENV} at an anvil binary.`,
      { cause },
    );
  }
  if (!status.success) {
    throw new Error(`Cannot install anvil: npm install exited with code ${status.code}`);
  }
  const bin = findInstalledAnvil();
  const version = bin && (await versionOf(bin));
  if (!bin || version !== ANVIL_VERSION) {
    throw new Error(
      `Cannot use the installed anvil: expected version ${ANVIL_VERSION}, found ${
        version ?? "no runnable binary"
      } (platform ${Deno.build.os}/${Deno.build.arch})`,
    );
  }
  log(`setup: anvil ${version} ready at ${bin}`);
  return bin;
}

if (import.meta.main) {
  try {
    await ensureAnvil();
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    Deno.exit(1);
  }
}
