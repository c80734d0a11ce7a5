/**
 * The daemon's configuration from its command line and environment, parsed by a pure
 * function: flags win over environment variables, which win over defaults. Every bad value is
 * refused with the value shown and what was expected. `main.ts` calls it with `Deno.args` and
 * `Deno.env.toObject()`.
 *
 * | flag                         | environment                 | default                     |
 * | ---------------------------- | --------------------------- | --------------------------- |
 * | `--bind <host:port>`         | `NET_DAEMON_BIND`           | `127.0.0.1:11435`           |
 * | `--gateway <url>`            | `NET_GATEWAY`               | unset: discover             |
 * | `--data-dir <dir>`           | `NET_DATA_DIR`              | per user (see below)        |
 * | —                            | `NET_EVM_RPC_URL`           | unset                       |
 * | —                            | `NET_EVM_REGISTRY`          | unset                       |
 * | —                            | `NET_EVM_STAKING`           | unset                       |
 * | `--measurements <file>`      | `NET_MEASUREMENTS`          | unset                       |
 * | `--allowed-origins <list>`   | `NET_ALLOWED_ORIGINS`       | none                        |
 * | `--allowed-hosts <list>`     | `NET_ALLOWED_HOSTS`         | none                        |
 * | `--max-body-bytes <n>`       | `NET_DAEMON_MAX_BODY_BYTES` | `4194304` (4 MiB)           |
 * | `--help`, `-h`               |                             |                             |
 *
 * The per-user data directory is `$XDG_DATA_HOME/net-consumer` (else
 * `~/.local/share/net-consumer`) on Linux and other Unix systems,
 * `~/Library/Application Support/net-consumer` on macOS, and `%APPDATA%\net-consumer` on
 * Windows.
 *
 * @example
 * ```ts
 * import { parseDaemonConfig } from "./config.ts";
 *
 * const parsed = parseDaemonConfig(["--bind", "127.0.0.1:0"], { HOME: "/home/ada" }, {
 *   os: "linux",
 * });
 * if (parsed.help) throw new Error("unexpected");
 * console.assert(parsed.config.bind.port === 0);
 * console.assert(parsed.config.dataDir === "/home/ada/.local/share/net-consumer");
 * ```
 *
 * @module
 */

import { type GatewaySetError, normalizeGatewayUrl } from "./gateway_set.ts";
import { type BindAddress, type BindAddressError, parseBindAddress } from "../io/bind_address.ts";
import { parseArgs } from "node:util";
import { abbreviate, NetError } from "../errors.ts";
import { DEFAULT_MAX_BODY_BYTES } from "./handler.ts";
import { OriginPatternError, parseOriginPatterns } from "./hygiene.ts";

/** The default listen address. */
export const DEFAULT_BIND = "127.0.0.1:11435";

/** The name of the daemon's folder inside the per-user data directory. */
export const DATA_DIR_NAME = "net-consumer";

/** The `--help` text. */
export const DAEMON_HELP: string =
  `net-consumer daemon: a local OpenAI- and Ollama-compatible server that
seals every request end to end to a provider of the network.

Usage: deno run -A daemon/main.ts [options]

Options (each also read from the environment variable shown; a flag wins):
  --bind <host:port>         Listen address. [NET_DAEMON_BIND] Default: ${DEFAULT_BIND}
                             Use port 0 for any free port.
  --gateway <url>            Use only this gateway (http: or https: URL). [NET_GATEWAY]
                             Default: the first reachable of the known set (compiled-in list,
                             gateways.json in the data directory, gossip).
  --data-dir <dir>           Where gateways.json is kept. [NET_DATA_DIR]
                             Default: $XDG_DATA_HOME/${DATA_DIR_NAME} or ~/.local/share/${DATA_DIR_NAME}
                             (Linux), ~/Library/Application Support/${DATA_DIR_NAME} (macOS),
                             %APPDATA%\\${DATA_DIR_NAME} (Windows).
  --measurements <file>      JSON file of approved TEE measurement ids (bytes32 hex).
                             [NET_MEASUREMENTS] Without it and without the chain, TEE-tier
                             requests are refused.
  --allowed-origins <list>   Comma-separated origins that browser pages may call from:
                             *, null, or scheme://host[:port] with * wildcards
                             (e.g. http://localhost:*). [NET_ALLOWED_ORIGINS] Default: none.
  --allowed-hosts <list>     Comma-separated extra hostnames accepted in the Host header,
                             besides 127.0.0.1, localhost and [::1] (and the --bind
                             address when it is a specific non-loopback one), e.g.
                             host.docker.internal for Open WebUI in Docker.
                             [NET_ALLOWED_HOSTS] Default: none.
  --max-body-bytes <n>       Largest accepted request body. [NET_DAEMON_MAX_BODY_BYTES]
                             Default: ${DEFAULT_MAX_BODY_BYTES} (4 MiB).
  -h, --help                 Print this text.

Environment only:
  NET_EVM_RPC_URL            EVM JSON-RPC endpoint; with NET_EVM_REGISTRY and
  NET_EVM_REGISTRY           NET_EVM_STAKING, the approved measurements, the providers'
  NET_EVM_STAKING            trust roots and ad commitments (Registry) and their bonds
                             (Staking) are read from the chain, and a provider must be
                             bonded to be used. Set all three or none.

Point clients at it:
  OpenAI SDKs:    OPENAI_BASE_URL=http://127.0.0.1:11435/v1
  Ollama clients: OLLAMA_HOST=127.0.0.1:11435
  Model ids:      net/<tier>/<maker>/<model>, tier verified or tee (":latest" accepted).
`;

export type { BindAddress };

/** The chain the daemon reads trust roots and measurements from. */
export interface EvmConfig {
  /** JSON-RPC endpoint URL. */
  readonly rpcUrl: string;
  /** The Registry contract address, lower case. */
  readonly registry: `0x${string}`;
  /** The Staking contract address, lower case (a provider must be bonded). */
  readonly staking: `0x${string}`;
}

/** The daemon's configuration. */
export interface DaemonConfig {
  /** Listen address. */
  readonly bind: BindAddress;
  /** The pinned gateway URL (normalized, no trailing slash), or `null` to discover. */
  readonly gateway: string | null;
  /** The data directory (holds `gateways.json`). */
  readonly dataDir: string;
  /** The chain to read, or `null`. */
  readonly evm: EvmConfig | null;
  /** Path of the approved-measurements file, or `null`. */
  readonly measurementsFile: string | null;
  /** Allowed browser origin patterns. */
  readonly allowedOrigins: readonly string[];
  /**
   * Extra hostnames (no port; IPv6 in brackets) accepted in `Host` besides the loopback
   * names: `--allowed-hosts`, plus the bind address when it is a specific non-loopback one.
   * Pass them to the handler's `hostnames`.
   */
  readonly allowedHosts: readonly string[];
  /** Largest accepted request body, bytes. */
  readonly maxBodyBytes: number;
}

/** The result of {@linkcode parseDaemonConfig}: the help text was asked for, or a config. */
export type ParsedDaemonArgs =
  | { readonly help: true; readonly text: string }
  | { readonly help: false; readonly config: DaemonConfig };

/** Thrown by {@linkcode parseDaemonConfig} for any bad flag or environment value. */
export class DaemonConfigError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "DaemonConfigError" as const;
  /** The flag or variable at fault, e.g. `--bind` or `NET_GATEWAY`. */
  readonly setting: string;

  /** Creates the error. */
  constructor(setting: string, shortMessage: string, options: { cause?: unknown } = {}) {
    super(shortMessage, { ...options, hints: ["Run with --help to see every option."] });
    this.setting = setting;
  }
}

/** Options of {@linkcode parseDaemonConfig}. */
export interface ParseDaemonConfigOptions {
  /** The operating system, for the per-user data directory. @default {Deno.build.os} */
  os?: typeof Deno.build.os;
}

type Source = { name: string; value: string };

function show(value: string): string {
  return JSON.stringify(abbreviate(value, 100));
}

function parseBind(source: Source): BindAddress {
  try {
    return parseBindAddress(source.value);
  } catch (error) {
    throw new DaemonConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: ${
        (error as BindAddressError).shortMessage
      }; ` +
        `expected host:port such as ${DEFAULT_BIND} or [::1]:11435`,
    );
  }
}

function parseGateway(source: Source): string {
  try {
    return normalizeGatewayUrl(source.value);
  } catch (error) {
    throw new DaemonConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: ${(error as GatewaySetError).problem}; ` +
        "expected an http: or https: URL such as http://127.0.0.1:8701",
    );
  }
}

function parseRpcUrl(source: Source): string {
  let url: URL | undefined;
  try {
    url = new URL(source.value);
  } catch {
    url = undefined;
  }
  if (!url || !["http:", "https:", "ws:", "wss:"].includes(url.protocol)) {
    throw new DaemonConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: expected an http(s): or ws(s): URL ` +
        "such as http://127.0.0.1:8545",
    );
  }
  return source.value;
}

function parseAddress(source: Source): `0x${string}` {
  if (!/^0x[0-9a-fA-F]{40}$/.test(source.value)) {
    throw new DaemonConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: expected a 20-byte address, 0x and 40 ` +
        "hex digits",
    );
  }
  return source.value.toLowerCase() as `0x${string}`;
}

function parseOrigins(source: Source): string[] {
  const list = source.value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  try {
    parseOriginPatterns(list);
  } catch (cause) {
    if (!(cause instanceof OriginPatternError)) throw cause;
    throw new DaemonConfigError(source.name, `Cannot use ${source.name}: ${cause.shortMessage}`, {
      cause,
    });
  }
  return list;
}

const HOSTNAME =
  /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

function parseHosts(source: Source): string[] {
  const list = source.value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  for (const host of list) {
    if (!HOSTNAME.test(host) && !/^\[[0-9A-Fa-f:.]+\]$/.test(host)) {
      throw new DaemonConfigError(
        source.name,
        `Cannot use ${source.name}: ${show(host)} is not a hostname; expected names or ` +
          "addresses without a port, IPv6 in brackets, e.g. host.docker.internal,[fd00::1]",
      );
    }
  }
  return list.map((h) => h.toLowerCase());
}

const UNSPECIFIC = new Set(["0.0.0.0", "::", "127.0.0.1", "localhost", "::1"]);

/** The extra Host names: the explicit ones, plus a specific non-loopback bind address. */
function allowedHostsFor(bind: BindAddress, extra: string[]): string[] {
  const out = [...extra];
  if (!UNSPECIFIC.has(bind.hostname)) {
    const name = bind.hostname.includes(":") ? `[${bind.hostname}]` : bind.hostname;
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

function parseByteCount(source: Source): number {
  if (!/^\d{1,10}$/.test(source.value) || Number(source.value) < 1024) {
    throw new DaemonConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: expected a whole number of bytes, at ` +
        "least 1024",
    );
  }
  return Number(source.value);
}

function isAbsolute(path: string, os: typeof Deno.build.os): boolean {
  return os === "windows" ? /^([A-Za-z]:[\\/]|\\\\)/.test(path) : path.startsWith("/");
}

function join(os: typeof Deno.build.os, ...parts: string[]): string {
  const sep = os === "windows" ? "\\" : "/";
  return parts.map((part, i) => (i === 0 ? part.replace(/[\\/]+$/, "") : part)).join(sep);
}

/**
 * The per-user data directory for `os`: `%APPDATA%\net-consumer` (Windows),
 * `~/Library/Application Support/net-consumer` (macOS), `$XDG_DATA_HOME/net-consumer` or
 * `~/.local/share/net-consumer` (others; a relative `XDG_DATA_HOME` is ignored, as the XDG
 * specification says).
 *
 * @throws {DaemonConfigError} when the environment has no home directory to build it from.
 */
export function defaultDataDir(
  env: Readonly<Record<string, string | undefined>>,
  os: typeof Deno.build.os,
): string {
  const get = (name: string) => (env[name] ? env[name] : undefined);
  const missing = (what: string): never => {
    throw new DaemonConfigError(
      "--data-dir",
      `Cannot find a per-user data directory: ${what} is not set to an absolute path; pass ` +
        "--data-dir or set NET_DATA_DIR",
    );
  };
  if (os === "windows") {
    const appData = get("APPDATA");
    return appData && isAbsolute(appData, os)
      ? join(os, appData, DATA_DIR_NAME)
      : missing("APPDATA");
  }
  const home = get("HOME");
  if (os === "darwin") {
    return home && isAbsolute(home, os)
      ? join(os, home, "Library", "Application Support", DATA_DIR_NAME)
      : missing("HOME");
  }
  const xdg = get("XDG_DATA_HOME");
  if (xdg && isAbsolute(xdg, os)) return join(os, xdg, DATA_DIR_NAME);
  return home && isAbsolute(home, os)
    ? join(os, home, ".local", "share", DATA_DIR_NAME)
    : missing("HOME (or XDG_DATA_HOME)");
}

/**
 * Parses the daemon's flags and environment. Flags win over environment variables; an empty
 * environment variable counts as unset.
 *
 * @throws {DaemonConfigError} naming the flag or variable, the value and what was expected.
 */
export function parseDaemonConfig(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  options: ParseDaemonConfigOptions = {},
): ParsedDaemonArgs {
  const os = options.os ?? Deno.build.os;
  let values: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        bind: { type: "string" },
        gateway: { type: "string" },
        "data-dir": { type: "string" },
        measurements: { type: "string" },
        "allowed-origins": { type: "string" },
        "allowed-hosts": { type: "string" },
        "max-body-bytes": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
    values = parsed.values;
  } catch (cause) {
    throw new DaemonConfigError(
      "arguments",
      `Cannot parse the command line: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (values.help) return { help: true, text: DAEMON_HELP };

  const pick = (flag: string, variable: string): Source | undefined => {
    const fromFlag = values[flag];
    if (typeof fromFlag === "string") return { name: `--${flag}`, value: fromFlag };
    const fromEnv = env[variable];
    if (fromEnv !== undefined && fromEnv !== "") return { name: variable, value: fromEnv };
    return undefined;
  };
  const nonEmpty = (source: Source | undefined): Source | undefined => {
    if (source && source.value.trim() === "") {
      throw new DaemonConfigError(source.name, `Cannot use ${source.name}: the value is empty`);
    }
    return source;
  };

  const bindSource = nonEmpty(pick("bind", "NET_DAEMON_BIND"));
  const bind = parseBind(bindSource ?? { name: "default", value: DEFAULT_BIND });
  const gatewaySource = nonEmpty(pick("gateway", "NET_GATEWAY"));
  const dataDirSource = nonEmpty(pick("data-dir", "NET_DATA_DIR"));
  const dataDir = dataDirSource ? dataDirSource.value : defaultDataDir(env, os);
  const measurements = nonEmpty(pick("measurements", "NET_MEASUREMENTS"));
  const originsSource = pick("allowed-origins", "NET_ALLOWED_ORIGINS");
  const hostsSource = pick("allowed-hosts", "NET_ALLOWED_HOSTS");
  const maxBodySource = nonEmpty(pick("max-body-bytes", "NET_DAEMON_MAX_BODY_BYTES"));

  const evmNames = ["NET_EVM_RPC_URL", "NET_EVM_REGISTRY", "NET_EVM_STAKING"] as const;
  const evmSources = evmNames.map((name) => env[name] ? { name, value: env[name]! } : null);
  const [rpc, registry, staking] = evmSources;
  const missing = evmNames.filter((_, i) => evmSources[i] === null);
  if (missing.length > 0 && missing.length < evmNames.length) {
    const set = evmNames.filter((_, i) => evmSources[i] !== null);
    throw new DaemonConfigError(
      missing[0],
      `Cannot read the chain: ${set.join(" and ")} ${set.length === 1 ? "is" : "are"} set but ${
        missing.join(" and ")
      } ${missing.length === 1 ? "is" : "are"} not; set all three or none`,
    );
  }

  return {
    help: false,
    config: {
      bind,
      gateway: gatewaySource ? parseGateway(gatewaySource) : null,
      dataDir,
      evm: rpc && registry && staking
        ? {
          rpcUrl: parseRpcUrl(rpc),
          registry: parseAddress(registry),
          staking: parseAddress(staking),
        }
        : null,
      measurementsFile: measurements ? measurements.value : null,
      allowedOrigins: originsSource ? parseOrigins(originsSource) : [],
      allowedHosts: allowedHostsFor(bind, hostsSource ? parseHosts(hostsSource) : []),
      maxBodyBytes: maxBodySource ? parseByteCount(maxBodySource) : DEFAULT_MAX_BODY_BYTES,
    },
  };
}
