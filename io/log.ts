/**
 * Structured logs for both services: a logger with levels and fields, written as today's human
 * lines or as JSON lines (`--log-format human|json`).
 *
 * ```
 * human: indexer: not serving: the chain is unreachable block=4321 routers=3
 * json:  {"time":"2030-03-17T05:15:00.000Z","level":"warn","message":"not serving: the chain is unreachable","logger":"indexer","block":4321,"routers":3}
 * ```
 *
 * **It cannot log a request or a reply.** Fields are typed scalars (string, number, boolean,
 * bigint, null); at run time anything else (an object, a `Request`, an array) is written as
 * `[omitted: object]`. Field names that usually carry content (`body`, `prompt`, `messages`,
 * `content`, ...) are refused the same way. Strings are cut at 256 characters (a message at
 * 2,000), so a body pasted into a message stays a fragment. In the human format, a field's line
 * breaks and control characters are escaped, and a message's line breaks start a line indented
 * by four spaces, so neither can forge a log line (a record always starts at column 0).
 *
 * An error passed to `warn` or `error` is described by its name, message, `code` or `reason`,
 * cause chain and (at level `error`) stack frames — never its other properties.
 *
 * @example
 * ```ts
 * import { createLogger } from "./log.ts";
 *
 * const lines: string[] = [];
 * const log = createLogger({
 *   format: "json",
 *   name: "indexer",
 *   clock: () => new Date("2030-03-17T05:15:00Z"),
 *   write: (line) => lines.push(line),
 * });
 * log.info("indexer: first snapshot", { block: 4321n, live_verified: 33 });
 * console.assert(
 *   lines[0] ===
 *     '{"time":"2030-03-17T05:15:00.000Z","level":"info","message":"first snapshot",' +
 *       '"logger":"indexer","block":"4321","live_verified":33}',
 * );
 * ```
 *
 * @module
 */

/** How important a line is. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** The levels, least important first. */
export const LOG_LEVELS: readonly LogLevel[] = Object.freeze(["debug", "info", "warn", "error"]);

/** How lines are written: today's human lines, or JSON lines. */
export type LogFormat = "human" | "json";

/** The formats, for a `--log-format` setting. */
export const LOG_FORMATS: readonly LogFormat[] = Object.freeze(["human", "json"]);

/** A field's value: a scalar, never an object. */
export type LogValue = string | number | boolean | bigint | null;

/** A line's fields: `snake_case` names to scalars. */
export type LogFields = Readonly<Record<string, LogValue>>;

/** What a line may carry besides its message: its level, fields and an error. */
export interface LogEntry {
  /** Its level. @default {the sink's own (a logger's `sink()`: `warn`)} */
  level?: LogLevel;
  /** Its fields. */
  fields?: LogFields;
  /** An error to describe. */
  error?: unknown;
}

/**
 * The shape a component's `log` option takes: a message, and optionally its level, fields and
 * error. A plain `(message) => void` is one (tests collect lines with it); a logger's
 * {@linkcode Logger.sink} writes each line at its level.
 */
export type LogSink = (message: string, entry?: LogEntry) => void;

/** A logger. */
export interface Logger {
  /** Writes a `debug` line (only when the level is `debug`). */
  debug(message: string, fields?: LogFields): void;
  /** Writes an `info` line. */
  info(message: string, fields?: LogFields): void;
  /** Writes a `warn` line, with an error's description when given. */
  warn(message: string, fields?: LogFields, error?: unknown): void;
  /** Writes an `error` line, with an error's description and stack when given. */
  error(message: string, fields?: LogFields, error?: unknown): void;
  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger;
  /**
   * The services' error-log shape, `(message, error?) => void` (the `log` option of the
   * handlers): writes at level `error`.
   */
  errorLogger(): (message: string, error?: unknown) => void;
  /** The services' line-log shape, `(message) => void` (the refresher's `log`). */
  lineLogger(level?: LogLevel): (message: string) => void;
  /** A {@linkcode LogSink}: each line at its entry's level (`fallback` when it has none). */
  sink(fallback?: LogLevel): LogSink;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /**
   * How lines are written.
   *
   * @default {"human"}
   */
  format?: LogFormat;
  /**
   * The least important level written.
   *
   * @default {"info"}
   */
  level?: LogLevel;
  /**
   * The program (`indexer`, `daemon`): the JSON lines' `logger` field, and a leading
   * `<name>: ` is taken off their message (the human lines keep today's text).
   *
   * @default {undefined}
   */
  name?: string;
  /**
   * Writes one line (without its newline).
   *
   * @default {each line to stderr}
   */
  write?: (line: string, level: LogLevel) => void;
  /**
   * The clock of the JSON lines' `time`.
   *
   * @default {() => new Date()}
   */
  clock?: () => Date;
}

/** Longest string field, characters. */
export const MAX_FIELD_CHARS = 256;
/** Longest message, characters. */
export const MAX_MESSAGE_CHARS = 2000;

/** Field names that usually carry request or reply content: never written. */
export const CONTENT_FIELDS: ReadonlySet<string> = new Set([
  "body",
  "request_body",
  "response_body",
  "reply",
  "prompt",
  "messages",
  "content",
  "completion",
  "choices",
  "text",
]);

const RESERVED = new Set(["time", "level", "message", "logger"]);
const FIELD_NAME = /^[a-z_][a-z0-9_]*$/;

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(${text.length - max} more characters)`;
}

/** A field's value as it may be written, whatever was passed at run time. */
function safeValue(value: unknown): LogValue {
  switch (typeof value) {
    case "string":
      return cut(value, MAX_FIELD_CHARS);
    case "number":
    case "boolean":
    case "bigint":
      return value;
    default:
      return value === null ? null : `[omitted: ${Array.isArray(value) ? "array" : typeof value}]`;
  }
}

/** A field name as written: `snake_case` and not one of the line's own keys. */
function fieldName(name: string): string {
  if (!FIELD_NAME.test(name)) return `field_${name.toLowerCase().replace(/[^a-z0-9_]/g, "_")}`;
  return RESERVED.has(name) ? `field_${name}` : name;
}

/** The fields as written: names checked, content names refused, values scalars. */
function safeFields(fields: LogFields | undefined): [string, LogValue][] {
  if (!fields) return [];
  return Object.entries(fields).map(([name, value]) => [
    fieldName(name),
    CONTENT_FIELDS.has(name.toLowerCase()) ? "[omitted: content field]" : safeValue(value),
  ]);
}

/** An error's description as scalar fields: name, message, code or reason, causes, stack. */
export function errorFields(error: unknown, withStack: boolean): [string, LogValue][] {
  if (!(error instanceof Error)) {
    return [["error_message", cut(String(error), MAX_FIELD_CHARS * 4)]];
  }
  const out: [string, LogValue][] = [
    ["error_name", error.name],
    ["error_message", cut(error.message, MAX_FIELD_CHARS * 4)],
  ];
  const coded = error as { code?: unknown; reason?: unknown };
  const code = typeof coded.code === "string" ? coded.code : coded.reason;
  if (typeof code === "string") out.push(["error_code", cut(code, MAX_FIELD_CHARS)]);
  const causes: string[] = [];
  for (let cause = error.cause, depth = 0; cause !== undefined && depth < 5; depth++) {
    causes.push(cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause));
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  if (causes.length > 0) out.push(["error_cause", cut(causes.join(" <- "), MAX_FIELD_CHARS * 4)]);
  if (withStack && error.stack) {
    const frames = error.stack.split("\n").filter((line) => /^\s+at /.test(line));
    if (frames.length > 0) out.push(["error_stack", frames.map((f) => f.trim()).join("\n")]);
  }
  return out;
}

/** Escapes line breaks and control characters (human lines stay one line each). */
function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}

function humanValue(value: LogValue): string {
  if (typeof value !== "string") return String(value);
  return value === "" || /[\s"=]/.test(value) ? JSON.stringify(value) : oneLine(value);
}

/**
 * A message as written in a human line: its own line breaks become real ones, each following
 * line indented by four spaces (like the stack frames), so a multi-line message (a start-up
 * error with its usage) reads as written while no line of it can pass for a new record; every
 * other control character is escaped.
 */
function humanMessage(message: string): string {
  return message.split(/\r?\n/).map(oneLine).join("\n    ");
}

function humanLine(message: string, fields: [string, LogValue][]): string {
  let line = humanMessage(message);
  let stack = "";
  const error = new Map(fields.filter(([k]) => k.startsWith("error_")));
  for (const [key, value] of fields) {
    if (!key.startsWith("error_")) line += ` ${key}=${humanValue(value)}`;
  }
  if (error.size > 0) {
    const name = error.get("error_name");
    line += `: ${name ? `${name}: ` : ""}${oneLine(String(error.get("error_message")))}`;
    if (error.has("error_code")) line += ` (${oneLine(String(error.get("error_code")))})`;
    if (error.has("error_cause")) {
      line += `; caused by ${oneLine(String(error.get("error_cause")))}`;
    }
    const frames = error.get("error_stack");
    if (typeof frames === "string") {
      stack = frames.split("\n").map((f) => `\n    ${oneLine(f)}`).join("");
    }
  }
  return line + stack;
}

function jsonLine(
  time: Date,
  level: LogLevel,
  message: string,
  fields: [string, LogValue][],
): string {
  const record: Record<string, unknown> = { time: time.toISOString(), level, message };
  for (const [key, value] of fields) {
    record[key] = typeof value === "bigint" ? value.toString() : value;
  }
  return JSON.stringify(record);
}

const encoder = new TextEncoder();

/** Writes `line` and a newline to `file`, whole. */
function writeLine(file: { writeSync(p: Uint8Array): number }, line: string): void {
  const bytes = encoder.encode(`${line}\n`);
  for (let written = 0; written < bytes.length;) {
    written += file.writeSync(bytes.subarray(written));
  }
}

function writeStderr(line: string): void {
  writeLine(Deno.stderr, line);
}

/** Creates a logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? "human";
  if (!LOG_FORMATS.includes(format)) {
    throw new RangeError(
      `Cannot create a logger: the format ${JSON.stringify(format)} is not one of ${
        LOG_FORMATS.join(", ")
      }`,
    );
  }
  const threshold = LOG_LEVELS.indexOf(options.level ?? "info");
  if (threshold < 0) {
    throw new RangeError(
      `Cannot create a logger: the level ${JSON.stringify(options.level)} is not one of ${
        LOG_LEVELS.join(", ")
      }`,
    );
  }
  const write = options.write ?? writeStderr;
  const clock = options.clock ?? (() => new Date());
  const prefix = options.name ? `${options.name}: ` : "";
  const base: [string, LogValue][] = options.name ? [["logger", options.name]] : [];

  const make = (bound: [string, LogValue][]): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields, error?: unknown) => {
      if (LOG_LEVELS.indexOf(level) < threshold) return;
      const text = cut(String(message), MAX_MESSAGE_CHARS);
      const all = [...bound, ...safeFields(fields)];
      if (error !== undefined) all.push(...errorFields(error, level === "error"));
      const line = format === "human"
        ? humanLine(text, all.filter(([k]) => k !== "logger"))
        : jsonLine(
          clock(),
          level,
          prefix && text.startsWith(prefix) ? text.slice(prefix.length) : text,
          [
            ...base,
            ...all,
          ],
        );
      write(line, level);
    };
    return {
      debug: (message, fields) => emit("debug", message, fields),
      info: (message, fields) => emit("info", message, fields),
      warn: (message, fields, error) => emit("warn", message, fields, error),
      error: (message, fields, error) => emit("error", message, fields, error),
      with: (fields) => make([...bound, ...safeFields(fields)]),
      errorLogger: () => (message, error) => emit("error", message, undefined, error),
      lineLogger: (level = "warn") => (message) => emit(level, message),
      sink: (fallback = "warn") => (message, entry) =>
        emit(entry?.level ?? fallback, message, entry?.fields, entry?.error),
    };
  };
  return make([]);
}

/** A program's two loggers: `out` for its announcements (stdout), `err` for the rest (stderr). */
export interface ProgramLogs {
  /** Announcements (listening on, stopping): stdout. */
  out: Logger;
  /** Everything else: stderr. */
  err: Logger;
}

/** The loggers of the program `name` (`indexer`, `daemon`) in `format`. */
export function programLogs(format: LogFormat, name: string): ProgramLogs {
  return {
    out: createLogger({
      format,
      name,
      write: (line) => writeLine(Deno.stdout, line),
    }),
    err: createLogger({ format, name }),
  };
}

/**
 * The format asked for before a program's settings could be read (to report their errors in
 * it): the last `--log-format` flag's value, else the environment variable `variable`, else
 * `human`.
 */
export function logFormatHint(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  variable: string,
): LogFormat {
  let value = env[variable]?.trim();
  for (const [i, arg] of args.entries()) {
    if (arg === "--log-format") value = args[i + 1];
    else if (arg.startsWith("--log-format=")) value = arg.slice("--log-format=".length);
  }
  return LOG_FORMATS.find((format) => format === value) ?? "human";
}
