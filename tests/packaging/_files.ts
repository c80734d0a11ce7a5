/**
 * Readers for the packaging files, for the static tests: the `Dockerfile` as instructions
 * (continuations joined, comments dropped, `ARG` defaults resolved), `compose.yaml` parsed
 * with the npm `yaml` package (merge keys on, as Compose does), Compose's `${VAR:-default}`
 * interpolation, the health-check command of both, and the tasks of `deno.json`.
 *
 * @module
 */

import { parse } from "yaml";

/** The project root. */
export const ROOT: URL = new URL("../../", import.meta.url);

/** Reads a file of the project as text. */
export function readText(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

/** Whether a path of the project exists. */
export function exists(path: string): boolean {
  try {
    Deno.statSync(new URL(path, ROOT));
    return true;
  } catch {
    return false;
  }
}

/** One Dockerfile instruction. */
export interface Instruction {
  /** Upper-case keyword, e.g. `COPY`. */
  keyword: string;
  /** The rest of the line, continuations joined. */
  args: string;
  /** The build stage it belongs to (its `AS` name, or `global` before the first `FROM`). */
  stage: string;
}

/** Parses a Dockerfile into instructions. */
export function parseDockerfile(text: string): Instruction[] {
  const logical: string[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd();
    if (pending === "" && /^\s*#/.test(line)) continue;
    if (pending !== "" && /^\s*#/.test(line)) continue; // comments inside continuations
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " ";
      continue;
    }
    const full = (pending + line).trim();
    pending = "";
    if (full !== "") logical.push(full);
  }
  const out: Instruction[] = [];
  let stage = "global";
  for (const line of logical) {
    const match = /^(\w+)\s+([\s\S]*)$/.exec(line);
    if (!match) throw new Error(`Cannot parse Dockerfile line: ${line}`);
    const keyword = match[1].toUpperCase();
    const args = match[2].replace(/\s+/g, " ").trim();
    if (keyword === "FROM") stage = /\bAS\s+(\S+)$/i.exec(args)?.[1] ?? `stage${out.length}`;
    out.push({ keyword, args, stage });
  }
  return out;
}

/** The `ARG` defaults declared before the first `FROM`, and per stage. */
export function argDefaults(
  instructions: readonly Instruction[],
  stage: string,
): Map<string, string> {
  const values = new Map<string, string>();
  for (const i of instructions) {
    if (i.keyword !== "ARG" || (i.stage !== "global" && i.stage !== stage)) continue;
    const [name, ...rest] = i.args.split("=");
    if (rest.length > 0) values.set(name, rest.join("=").replace(/^"(.*)"$/, "$1"));
  }
  return values;
}

/** Substitutes `${NAME}` and `$NAME` with build arguments. */
export function substituteArgs(text: string, values: ReadonlyMap<string, string>): string {
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, a, b) => values.get(a ?? b) ?? whole);
}

/** An exec-form (JSON array) argument list, e.g. of `CMD ["deno", "run"]`. */
export function execForm(args: string): string[] {
  const parsed = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === "string")) {
    throw new Error(`not an exec-form list: ${args}`);
  }
  return parsed;
}

/** `ENV` values of a stage (both `A=b C=d` and legacy `A b` forms). */
export function envOf(instructions: readonly Instruction[], stage: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const i of instructions) {
    if (i.keyword !== "ENV" || i.stage !== stage) continue;
    const pairs = i.args.match(/(\w+)=("[^"]*"|\S+)/g);
    if (pairs) {
      for (const pair of pairs) {
        const at = pair.indexOf("=");
        env.set(pair.slice(0, at), pair.slice(at + 1).replace(/^"(.*)"$/, "$1"));
      }
    } else {
      const [name, ...value] = i.args.split(" ");
      env.set(name, value.join(" "));
    }
  }
  return env;
}

/** The parsed `compose.yaml`. */
// deno-lint-ignore no-explicit-any
export type Compose = any;

/** Reads `compose.yaml` as Compose does (YAML merge keys resolved). */
export function readCompose(file = "compose.yaml"): Compose {
  return parse(readText(file), { merge: true });
}

/**
 * Compose's interpolation of `${VAR}`, `${VAR:-default}` (default when unset or empty),
 * `${VAR-default}` (default when unset) and `$$`.
 *
 * @throws {Error} for a form this reader does not know (so the test fails instead of lying).
 */
export function interpolate(
  value: string,
  env: Readonly<Record<string, string | undefined>>,
): string {
  return value.replace(/\$\$|\$\{([^}]*)\}|\$(\w+)/g, (whole, braced, bare) => {
    if (whole === "$$") return "$";
    if (bare !== undefined) return env[bare] ?? "";
    const match = /^(\w+)(?:(:?-)(.*))?$/.exec(braced);
    if (!match) throw new Error(`unsupported interpolation ${whole}`);
    const [, name, op, fallback] = match;
    const set = env[name];
    if (op === ":-") return set === undefined || set === "" ? fallback : set;
    if (op === "-") return set === undefined ? fallback : set;
    return set ?? "";
  });
}

/** A service's environment after interpolation with `env` (the shell's variables). */
export function serviceEnv(
  service: Compose,
  env: Readonly<Record<string, string | undefined>> = {},
): Record<string, string> {
  const raw = service.environment ?? {};
  if (Array.isArray(raw)) throw new Error("write environment as a mapping");
  return Object.fromEntries(
    Object.entries(raw).map(([k, v]) => [k, interpolate(String(v ?? ""), env)]),
  );
}

/** The `${VAR:-default}` defaults named in a service's environment. */
export function environmentDefaults(service: Compose): Map<string, string> {
  const out = new Map<string, string>();
  for (const value of Object.values(service.environment ?? {})) {
    for (const match of String(value).matchAll(/\$\{(\w+):-([^}]*)\}/g)) {
      out.set(match[1], match[2]);
    }
  }
  return out;
}

/** A health-check probe: `deno run --no-config --allow-net=<host:port> <script> <url>`. */
export interface Probe {
  /** `--allow-net`'s value, or "" when it allows every host. */
  allowNet: string;
  /** The probe script. */
  script: string;
  /** The URL probed, when the probe names one. */
  url?: URL;
  /** `indexer` or `daemon` (`--indexer`, `--daemon`: the URL comes from the bind variable). */
  service?: "indexer" | "daemon";
  /** The network profile `--profile` reads. */
  profile?: string;
  /** The whole command. */
  argv: string[];
}

/** Reads a health-check command (`["CMD", "deno", "run", …]` or without `CMD`). */
export function parseProbe(test: readonly string[]): Probe {
  const argv = test[0] === "CMD" ? test.slice(1) : [...test];
  const [deno, run, ...rest] = argv;
  if (deno !== "deno" || run !== "run") throw new Error(`not a deno run probe: ${argv.join(" ")}`);
  const scriptAt = rest.findIndex((a) => a.endsWith(".ts"));
  if (scriptAt < 0) throw new Error(`no probe script: ${argv.join(" ")}`);
  const flags = rest.slice(0, scriptAt);
  const after = rest.slice(scriptAt + 1);
  const net = flags.find((f) => f === "--allow-net" || f.startsWith("--allow-net="));
  if (!net) throw new Error(`the probe has no --allow-net: ${argv.join(" ")}`);
  const probe: Probe = {
    allowNet: net.slice("--allow-net=".length),
    script: rest[scriptAt],
    argv,
  };
  if (after[0] === "--indexer" || after[0] === "--daemon") {
    probe.service = after[0].slice(2) as "indexer" | "daemon";
  } else if (after[0] === "--profile") probe.profile = after[1];
  else if (after.length === 1) probe.url = new URL(after[0]);
  else {throw new Error(
      `expected --indexer, --daemon, --profile <file> or <url>: ${argv.join(" ")}`,
    );}
  return probe;
}

/** The tasks of `deno.json`, name → command. */
export function denoTasks(): Map<string, string> {
  const config = JSON.parse(readText("deno.json"));
  return new Map(
    Object.entries(config.tasks as Record<string, string | { command: string }>).map((
      [name, task],
    ) => [name, typeof task === "string" ? task : task.command]),
  );
}

/** The programs `packaging/entrypoint.sh` offers (its `case` branch that runs `deno task`). */
export function entrypointPrograms(): string[] {
  const script = readText("packaging/entrypoint.sh");
  const branch = /^\s*([\w |-]+)\)\s*\n\s*exec deno task "\$service" "\$@"/m.exec(script);
  if (!branch) throw new Error("packaging/entrypoint.sh has no `exec deno task` branch");
  return branch[1].split("|").map((s) => s.trim());
}
