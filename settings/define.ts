/**
 * Settings declared once — flag, environment variable, kind, default and help line — from which
 * come the command-line parser (`node:util` `parseArgs`), the environment reader, the typed
 * values and the `--help` text. A flag wins over its variable, which wins over the default;
 * an empty or blank variable counts as unset. Every bad value is refused with the setting's name, the
 * value and what was expected.
 *
 * @example
 * ```ts
 * import { bindAddress, integer } from "./kinds.ts";
 * import { defineSettings } from "./define.ts";
 *
 * const settings = defineSettings({
 *   usage: "Usage: example [options]",
 *   summary: "An example program.",
 * }, {
 *   bind: { flag: "bind", env: "EXAMPLE_BIND", kind: bindAddress(), default: "127.0.0.1:8088", help: "Listen address." },
 *   refreshSecs: { flag: "refresh-secs", kind: integer({ min: 1 }), default: "30", help: "Refresh interval." },
 * });
 * const parsed = settings.parse(["--refresh-secs", "5"], { EXAMPLE_BIND: "127.0.0.1:0" });
 * if (parsed.help) throw new Error("unexpected");
 * console.assert(parsed.values.refreshSecs === 5 && parsed.values.bind.port === 0);
 * console.assert(settings.help().includes("--refresh-secs <n>"));
 * ```
 *
 * @module
 */

import { parseArgs } from "node:util";
import { abbreviate, NetError } from "../errors.ts";
import type { Kind } from "./kinds.ts";

/** One setting. */
export interface Setting<T> {
  /** The long flag without dashes, e.g. `bind` for `--bind`. */
  flag?: string;
  /** A one-letter short flag. */
  short?: string;
  /** The environment variable, e.g. `NET_DAEMON_BIND`. */
  env?: string;
  /** The kind of value. */
  kind: Kind<T>;
  /** The default, as text (parsed like any value and shown in `--help`). */
  default?: string;
  /** How `--help` describes a default that is computed (e.g. `twice the refresh interval`). */
  defaultText?: string;
  /** Whether the program cannot run without it. @default {false} */
  required?: boolean;
  /**
   * Whether the flag may be given several times (`--rpc-url a --rpc-url b`): each value is read
   * by the kind, which must give a list (`list(…)`), and the lists are joined in order. The
   * environment variable then holds the whole list (comma-separated).
   *
   * @default {false}
   */
  repeatable?: boolean;
  /**
   * Whether an empty value given on the command line (`--allowed-origins=`) is read by the
   * kind (e.g. an empty list) instead of refused. An empty variable still counts as unset.
   *
   * @default {false}
   */
  allowEmpty?: boolean;
  /** What it does (may span lines). */
  help: string;
}

/** Where a value came from: the flag, the variable, or the default. */
export type SettingSource = "flag" | "env" | "default";

/** A parsed value. */
type ValueOf<S> = S extends Setting<infer T>
  ? S extends { default: string } | { required: true } ? T : T | undefined
  : never;

/** The parsed values of a set of settings. */
export type SettingValues<S extends Record<string, Setting<unknown>>> = {
  -readonly [K in keyof S]: ValueOf<S[K]>;
};

/** The result of parsing: `--help` was asked for, or the values with their sources. */
export type ParsedSettings<S extends Record<string, Setting<unknown>>> =
  | { readonly help: true; readonly text: string }
  | {
    readonly help: false;
    readonly values: SettingValues<S>;
    /** Where each value came from, and the name it was given under (`--bind`, `NET_…`). */
    readonly sources: { readonly [K in keyof S]: { from: SettingSource; name: string } };
  };

/** Thrown for a bad command line, a bad value or a missing required setting. */
export class SettingError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "SettingError" as const;
  /** The flag or variable at fault, e.g. `--bind` or `NET_GATEWAY`. */
  readonly setting: string;

  /** Creates the error. */
  constructor(setting: string, shortMessage: string, options: { cause?: unknown } = {}) {
    super(shortMessage, { ...options, hints: ["Run with --help to see every option."] });
    this.setting = setting;
  }
}

/** The program's words around the generated option list. */
export interface ProgramText {
  /** The usage line. */
  usage: string;
  /** What the program does, shown first. */
  summary: string;
  /** Shown last (where to point clients, documents to read). */
  epilogue?: string;
}

/** A declared set of settings. */
export interface Settings<S extends Record<string, Setting<unknown>>> {
  /** The declarations. */
  readonly specs: S;
  /** Parses the command line and the environment. @throws {SettingError} */
  parse(
    args: readonly string[],
    env: Readonly<Record<string, string | undefined>>,
  ): ParsedSettings<S>;
  /** The `--help` text. */
  help(): string;
}

/** Reads one value of a setting, naming it in any error. */
export function readSetting<T>(setting: Setting<T>, name: string, raw: string): T {
  const value = raw.trim();
  if (value === "" && !setting.allowEmpty) {
    throw new SettingError(name, `Cannot use ${name}: the value is empty`);
  }
  const result = setting.kind.schema.safeParse(value);
  if (result.success) return result.data;
  throw new SettingError(
    name,
    `Cannot use ${name} ${JSON.stringify(abbreviate(value, 100))}: ${
      result.error.issues[0].message
    }; expected ${setting.kind.expected}`,
  );
}

const WIDTH = 88;
const COLUMN = 29;

function wrap(text: string, indent: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split("\n")) {
    let line = "";
    for (const word of paragraph.split(" ")) {
      if (line && indent + line.length + 1 + word.length > WIDTH) {
        lines.push(line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    lines.push(line);
  }
  return lines;
}

function helpEntry(setting: Setting<unknown>, label: string): string {
  const notes = [
    setting.flag && setting.env ? `[${setting.env}]` : "",
    setting.required ? "Required." : "",
    setting.default !== undefined || setting.defaultText
      ? `Default: ${setting.defaultText ?? setting.default}`
      : "",
  ].filter(Boolean).join(" ");
  const body = wrap(`${setting.help}${notes ? ` ${notes}` : ""}`, COLUMN);
  const first = label.length + 2 < COLUMN
    ? `  ${label.padEnd(COLUMN - 2)}${body[0]}`
    : `  ${label}\n${" ".repeat(COLUMN)}${body[0]}`;
  return [first, ...body.slice(1).map((line) => `${" ".repeat(COLUMN)}${line}`)].join("\n");
}

function helpText<S extends Record<string, Setting<unknown>>>(text: ProgramText, specs: S): string {
  const all = Object.values(specs);
  const flags = all.filter((s) => s.flag).map((s) =>
    helpEntry(
      s,
      `${s.short ? `-${s.short}, ` : ""}--${s.flag}${
        s.kind.isSwitch ? "" : ` ${s.kind.placeholder}`
      }`,
    )
  );
  const envOnly = all.filter((s) => !s.flag && s.env).map((s) => helpEntry(s, s.env!));
  return [
    text.summary,
    "",
    text.usage,
    "",
    all.some((s) => s.flag && s.env)
      ? "Options (a flag wins over the environment variable shown in brackets):"
      : "Options:",
    ...flags,
    helpEntry(
      { kind: { isSwitch: true } as Kind<boolean>, help: "Print this text." },
      "-h, --help",
    ),
    ...(envOnly.length ? ["", "Environment only:", ...envOnly] : []),
    ...(text.epilogue ? ["", text.epilogue] : []),
    "",
  ].join("\n");
}

/**
 * Declares a program's settings.
 *
 * @throws {RangeError} for two settings with the same flag or variable.
 */
export function defineSettings<S extends Record<string, Setting<unknown>>>(
  text: ProgramText,
  specs: S,
): Settings<S> {
  const flags = new Set<string>(["help"]);
  const envs = new Set<string>();
  for (const spec of Object.values(specs)) {
    if (spec.flag && flags.has(spec.flag)) throw new RangeError(`--${spec.flag} is declared twice`);
    if (spec.env && envs.has(spec.env)) throw new RangeError(`${spec.env} is declared twice`);
    if (spec.flag) flags.add(spec.flag);
    if (spec.env) envs.add(spec.env);
  }
  const help = () => helpText(text, specs);
  const parse = (args: readonly string[], env: Readonly<Record<string, string | undefined>>) => {
    let flagValues: Record<string, string | boolean | string[] | undefined>;
    try {
      flagValues = parseArgs({
        args: [...args],
        strict: true,
        allowPositionals: false,
        options: {
          help: { type: "boolean", short: "h" },
          ...Object.fromEntries(
            Object.values(specs).filter((s) => s.flag).map((s) => [s.flag!, {
              type: s.kind.isSwitch ? "boolean" as const : "string" as const,
              ...(s.short ? { short: s.short } : {}),
              ...(s.repeatable ? { multiple: true } : {}),
            }]),
          ),
        },
      }).values;
    } catch (cause) {
      throw new SettingError(
        "arguments",
        `Cannot parse the command line: ${(cause as Error).message}`,
        {
          cause,
        },
      );
    }
    if (flagValues.help) return { help: true as const, text: help() };
    const values: Record<string, unknown> = {};
    const sources: Record<string, { from: SettingSource; name: string }> = {};
    for (const [key, spec] of Object.entries(specs)) {
      const fromFlag = spec.flag ? flagValues[spec.flag] : undefined;
      const fromEnv = spec.env ? env[spec.env] : undefined;
      if (typeof fromFlag === "boolean") {
        values[key] = fromFlag;
        sources[key] = { from: "flag", name: `--${spec.flag}` };
      } else if (typeof fromFlag === "string") {
        values[key] = readSetting(spec, `--${spec.flag}`, fromFlag);
        sources[key] = { from: "flag", name: `--${spec.flag}` };
      } else if (Array.isArray(fromFlag)) {
        values[key] = fromFlag.flatMap((raw) =>
          readSetting(spec, `--${spec.flag}`, raw) as unknown[]
        );
        sources[key] = { from: "flag", name: `--${spec.flag}` };
      } else if (fromEnv !== undefined && fromEnv.trim() !== "") {
        values[key] = readSetting(spec, spec.env!, fromEnv);
        sources[key] = { from: "env", name: spec.env! };
      } else if (spec.default !== undefined) {
        values[key] = readSetting(
          spec,
          `the default of ${spec.flag ? `--${spec.flag}` : spec.env}`,
          spec.default,
        );
        sources[key] = { from: "default", name: spec.flag ? `--${spec.flag}` : spec.env! };
      } else if (spec.required) {
        const name = spec.flag ? `--${spec.flag}` : spec.env!;
        throw new SettingError(
          name,
          `Cannot start: ${name}${
            spec.flag && spec.env ? ` (or ${spec.env})` : ""
          } is required; expected ${spec.kind.expected}`,
        );
      } else {
        values[key] = undefined;
        sources[key] = { from: "default", name: spec.flag ? `--${spec.flag}` : spec.env! };
      }
    }
    return { help: false as const, values, sources } as ParsedSettings<S>;
  };
  return { specs, parse, help };
}
