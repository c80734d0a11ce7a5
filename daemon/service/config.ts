/**
 * The daemon's configuration from its command line and environment, declared once on the
 * project's settings module (`settings/`), which parses them and generates `--help`: flags win
 * over environment variables, which win over defaults; an empty variable counts as unset. Every
 * bad value is refused with the setting, the value shown and what was expected. `main.ts` calls
 * it with `Deno.args` and `Deno.env.toObject()`.
 *
 * | flag                         | environment                  | default                    |
 * | ---------------------------- | ---------------------------- | -------------------------- |
 * | `--bind <host:port>`         | `NET_DAEMON_BIND`            | `127.0.0.1:11435`          |
 * | `--network <name\|file>`     | `NET_NETWORK`                | `devnet` (built in)        |
 * | `--gateway <url>`            | `NET_GATEWAY`                | unset: discover            |
 * | `--data-dir <dir>`           | `NET_DATA_DIR`               | per user (see below)       |
 * | —                            | `NET_EVM_RPC_URL`            | the profile's              |
 * | —                            | `NET_EVM_REGISTRY`           | the profile's              |
 * | —                            | `NET_EVM_STAKING`            | the profile's              |
 * | —                            | `NET_EVM_ESCROW`             | the profile's              |
 * | `--consumer-key-file <file>` | `NET_CONSUMER_KEY_FILE`      | `<data-dir>/consumer-key`  |
 * | `--max-spend <amount/period>` | `NET_DAEMON_MAX_SPEND`      | unset: no cap              |
 * | `--api-keys-file <file>`     | `NET_DAEMON_API_KEYS_FILE`   | unset                      |
 * | `--chain-grace-secs <n>`     | `NET_CHAIN_GRACE_SECS`       | `600`                      |
 * | `--insecure-gateway-keys`    | `NET_INSECURE_GATEWAY_KEYS`  | off                        |
 * | `--measurements <file>`      | `NET_MEASUREMENTS`           | unset                      |
 * | `--api-key-file <file>`      | `NET_DAEMON_API_KEY_FILE`    | unset                      |
 * | —                            | `NET_DAEMON_API_KEY`         | unset                      |
 * | `--require-api-key`          | `NET_DAEMON_REQUIRE_API_KEY` | off (on beyond loopback)   |
 * | `--allowed-origins <list>`   | `NET_ALLOWED_ORIGINS`        | Ollama's default origins   |
 * | `--allowed-hosts <list>`     | `NET_ALLOWED_HOSTS`          | none                       |
 * | `--max-body-bytes <n>`       | `NET_DAEMON_MAX_BODY_BYTES`  | `4194304` (4 MiB)          |
 * | `--max-queue <n>`            | `NET_DAEMON_MAX_QUEUE`       | `512`                      |
 * | `--queue-timeout-secs <n>`   | `NET_DAEMON_QUEUE_TIMEOUT_SECS` | `120`                   |
 * | `--log-format human\|json`   | `NET_DAEMON_LOG_FORMAT`      | `human`                    |
 * | `--help`, `-h`               |                              |                            |
 *
 * The network profile (`chain/network_profile.ts`) gives the chain (id, RPC URLs), the Registry
 * and Staking addresses and the bootstrap gateways; each `NET_EVM_*` variable overrides its one
 * field. `NET_EVM_RPC_URL` is an `http:` or `https:` URL (what the chain client speaks); when it
 * is set the profile's chain id is not enforced (the contracts are checked instead).
 * `--insecure-gateway-keys` runs without any chain: it cannot be combined with `NET_EVM_*`.
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

import { DEFAULT_NETWORK } from "../../chain/network_profile.ts";
import type { BindAddress } from "../../io/bind_address.ts";
import { hostScope } from "../../io/host_scope.ts";
import { LOG_FORMATS, type LogFormat } from "../../io/log.ts";
import { DEFAULT_MAX_BODY_BYTES } from "../../http/mod.ts";
import {
  address,
  bindAddress,
  choice,
  defineKind,
  defineSettings,
  integer,
  list,
  rpcUrl,
  SettingError,
  text,
  toggle,
} from "../../settings/mod.ts";
import { type AuthConfig, checkApiKey } from "./auth.ts";
import { parseSpendCap, type SpendCap } from "../account/mod.ts";
import { type EvmConfig, networkFor } from "./network_settings.ts";
import { DEFAULT_ALLOWED_ORIGINS, parseOriginPatterns } from "./hygiene.ts";
import { DEFAULT_MAX_QUEUE, DEFAULT_QUEUE_TIMEOUT_MS } from "../network/mod.ts";
import { GatewaySetError, normalizeGatewayUrl } from "../gateway/mod.ts";

/** The default listen address. */
export const DEFAULT_BIND = "127.0.0.1:11435";

/** The name of the daemon's folder inside the per-user data directory. */
export const DATA_DIR_NAME = "net-consumer";

export type { AuthConfig, BindAddress, EvmConfig };

/** The daemon's configuration. */
export interface DaemonConfig {
  /** Listen address. */
  readonly bind: BindAddress;
  /** The pinned gateway URL (normalized, no trailing slash), or `null` to discover. */
  readonly gateway: string | null;
  /** The data directory (holds `gateways.json` and a generated `api-key`). */
  readonly dataDir: string;
  /** The network profile's name and where it came from, or `null` without a chain. */
  readonly network: { readonly name: string; readonly source: string } | null;
  /** The bootstrap gateways (the profile's), normalized. */
  readonly bootstrap: readonly string[];
  /**
   * The chain to read trust roots, commitments, bonds and measurements from. `null` only with
   * `insecureGatewayKeys`.
   */
  readonly evm: EvmConfig | null;
  /**
   * `--insecure-gateway-keys`: no chain at all; verified-tier keys are the ones the gateway
   * lists, and every verdict says so. Never implied.
   */
  readonly insecureGatewayKeys: boolean;
  /**
   * How long on-chain facts stay usable while the chain cannot be read, in seconds (0: never);
   * anything older is refused.
   */
  readonly chainGraceSecs: number;
  /** Who must present the API key. */
  readonly auth: AuthConfig;
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
  /** Most requests waiting for a provider slot at once. */
  readonly maxQueue: number;
  /** Longest wait of a queued request for its first byte, in seconds. */
  readonly queueTimeoutSecs: number;
  /** How log lines are written: `human` or `json`. */
  readonly logFormat: LogFormat;
  /** The consumer key's file (`--consumer-key-file`), or `null`: `<data-dir>/consumer-key`. */
  readonly consumerKeyFile: string | null;
  /** The daemon's spend cap over every key (`--max-spend`), or `null`. */
  readonly maxSpend: SpendCap | null;
}

/** The result of {@linkcode parseDaemonConfig}: the help text was asked for, or a config. */
export type ParsedDaemonArgs =
  | { readonly help: true; readonly text: string }
  | { readonly help: false; readonly config: DaemonConfig };

/** Options of {@linkcode parseDaemonConfig}. */
export interface ParseDaemonConfigOptions {
  /** The operating system, for the per-user data directory. @default {Deno.build.os} */
  os?: typeof Deno.build.os;
}

/** A gateway URL, normalized (`gateway/gateway_url.ts`). */
const gatewayUrl = defineKind(
  "<url>",
  "an http: or https: URL such as http://127.0.0.1:8701",
  (value) => {
    try {
      return normalizeGatewayUrl(value);
    } catch (error) {
      if (!(error instanceof GatewaySetError)) throw error;
      throw new Error(error.problem ?? error.shortMessage);
    }
  },
);

/** A spend cap, `AMOUNT/PERIOD` (`account/spend_cap.ts`). */
const spendCap = defineKind(
  "<amount/period>",
  "an amount in whole units (at most 18 decimals) per day, week or month, such as 0.05/day",
  (value) => parseSpendCap(value),
);

/** An allowed-origin pattern (`hygiene.ts`). */
const originPattern = defineKind(
  "<origin>",
  "*, null, or scheme://host[:port] without a path, with * wildcards, such as " +
    "http://localhost:*",
  (value) => {
    try {
      parseOriginPatterns([value]);
    } catch {
      throw new Error("not an origin pattern");
    }
    return value;
  },
);

const HOSTNAME =
  /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A name accepted in `Host`, without a port, IPv6 in brackets; lower case. */
const hostName = defineKind(
  "<host>",
  "host names or addresses without a port, IPv6 in brackets, such as " +
    "host.docker.internal,[fd00::1]",
  (value) => {
    if (!HOSTNAME.test(value) && !/^\[[0-9A-Fa-f:.]+\]$/.test(value)) {
      throw new Error("not a hostname");
    }
    return value.toLowerCase();
  },
);

const EPILOGUE = `Point clients at it:
  OpenAI SDKs:    OPENAI_BASE_URL=http://127.0.0.1:11435/v1
  Anthropic SDKs: ANTHROPIC_BASE_URL=http://127.0.0.1:11435 (Claude Code too)
  Ollama clients: OLLAMA_HOST=127.0.0.1:11435
  Model ids:      net/<tier>/<maker>/<model>, tier verified or tee (":latest" accepted).`;

/** The daemon's settings, declared once: the parser and `--help` come from them. */
const SETTINGS = defineSettings({
  usage: "Usage: deno run -A daemon/main.ts [options]",
  summary: "net-consumer daemon: a local OpenAI-, Anthropic- and Ollama-compatible server\n" +
    "that seals every request end to end to a provider of the network.",
  epilogue: EPILOGUE,
}, {
  bind: {
    flag: "bind",
    env: "NET_DAEMON_BIND",
    kind: bindAddress(),
    default: DEFAULT_BIND,
    help: "Listen address. Use port 0 for any free port.",
  },
  network: {
    flag: "network",
    env: "NET_NETWORK",
    kind: text("<name|file>"),
    default: DEFAULT_NETWORK,
    help: "The network to join: a built-in name (devnet) or a profile file (JSON: chain id, " +
      "RPC URLs, contracts, bootstrap gateways). Providers' serving keys, ads and bonds are " +
      "checked on its chain.",
  },
  gateway: {
    flag: "gateway",
    env: "NET_GATEWAY",
    kind: gatewayUrl,
    defaultText: "the first reachable of the known set (the profile's gateways, " +
      "gateways.json in the data directory, gossip).",
    help: "Use only this gateway (http: or https: URL).",
  },
  dataDir: {
    flag: "data-dir",
    env: "NET_DATA_DIR",
    kind: text("<dir>"),
    defaultText: `$XDG_DATA_HOME/${DATA_DIR_NAME} or ~/.local/share/${DATA_DIR_NAME} (Linux), ` +
      `~/Library/Application Support/${DATA_DIR_NAME} (macOS), %APPDATA%\\${DATA_DIR_NAME} ` +
      "(Windows).",
    help: "Where gateways.json (and a generated api-key) is kept.",
  },
  chainGraceSecs: {
    flag: "chain-grace-secs",
    env: "NET_CHAIN_GRACE_SECS",
    kind: integer({ min: 0, max: 86_400, unit: "seconds" }),
    default: "600",
    help: "While the chain cannot be read, a provider verified on chain at most this long ago " +
      "is still trusted; older checks are refused (0: never).",
  },
  insecureGatewayKeys: {
    flag: "insecure-gateway-keys",
    env: "NET_INSECURE_GATEWAY_KEYS",
    kind: toggle(),
    default: "false",
    help: "Run without any chain: verified-tier keys are whatever the gateway lists, so a " +
      'malicious gateway can read your prompts. Every verdict says "gateway-listed key".',
  },
  measurements: {
    flag: "measurements",
    env: "NET_MEASUREMENTS",
    kind: text("<file>"),
    help: "JSON file of approved TEE measurement ids (bytes32 hex). Without it and without " +
      "the chain, TEE-tier requests are refused.",
  },
  apiKeyFile: {
    flag: "api-key-file",
    env: "NET_DAEMON_API_KEY_FILE",
    kind: text("<file>"),
    defaultText: "NET_DAEMON_API_KEY, else <data-dir>/api-key (generated on first need).",
    help: "File holding the API key that clients send as Authorization: Bearer <key>.",
  },
  requireApiKey: {
    flag: "require-api-key",
    env: "NET_DAEMON_REQUIRE_API_KEY",
    kind: toggle(),
    default: "false",
    help: "Require the API key on loopback too. Beyond loopback it is always required.",
  },
  allowedOrigins: {
    flag: "allowed-origins",
    env: "NET_ALLOWED_ORIGINS",
    kind: list(originPattern),
    allowEmpty: true,
    default: DEFAULT_ALLOWED_ORIGINS.join(","),
    defaultText: "the origins Ollama allows: http(s)://localhost, 127.0.0.1 and 0.0.0.0 " +
      "(any port), app://*, file://*, tauri://*, vscode-webview://*, vscode-file://*.",
    help: "Comma-separated origins that browser pages may call from, replacing the default: *, " +
      "null, or scheme://host[:port] with * wildcards (e.g. http://localhost:*).",
  },
  allowedHosts: {
    flag: "allowed-hosts",
    env: "NET_ALLOWED_HOSTS",
    kind: list(hostName),
    allowEmpty: true,
    defaultText: "none.",
    help: "Comma-separated extra hostnames accepted in the Host header, besides 127.0.0.1, " +
      "localhost and [::1] (and the --bind address when it is a specific non-loopback one), " +
      "e.g. host.docker.internal for Open WebUI in Docker.",
  },
  maxBodyBytes: {
    flag: "max-body-bytes",
    env: "NET_DAEMON_MAX_BODY_BYTES",
    kind: integer({ min: 1024, unit: "of bytes" }),
    default: String(DEFAULT_MAX_BODY_BYTES),
    help: "Largest accepted request body, in bytes (4194304 is 4 MiB).",
  },
  maxQueue: {
    flag: "max-queue",
    env: "NET_DAEMON_MAX_QUEUE",
    kind: integer({ min: 0, max: 1_000_000, unit: "requests" }),
    default: String(DEFAULT_MAX_QUEUE),
    help: "Most requests that wait for a free provider slot at once (as Ollama queues); one " +
      "more is answered 503 overloaded with Retry-After.",
  },
  queueTimeoutSecs: {
    flag: "queue-timeout-secs",
    env: "NET_DAEMON_QUEUE_TIMEOUT_SECS",
    kind: integer({ min: 1, max: 86_400, unit: "seconds" }),
    default: String(DEFAULT_QUEUE_TIMEOUT_MS / 1000),
    help: "How long a queued request may wait for its first byte before it is answered 503 " +
      "overloaded with Retry-After.",
  },
  logFormat: {
    flag: "log-format",
    env: "NET_DAEMON_LOG_FORMAT",
    kind: choice(LOG_FORMATS),
    default: "human",
    help: "How log lines are written: human (one line of text each) or json (one JSON object " +
      "a line: time, level, message, logger, fields). Prompts and replies are never logged.",
  },
  apiKeysFile: {
    flag: "api-keys-file",
    env: "NET_DAEMON_API_KEYS_FILE",
    kind: text("<file>"),
    help: 'JSON file of named API keys, {"keys": [{"name", "key", "max_spend"?}]}: any of ' +
      "them is accepted, spend is counted per name, and max_spend caps that key's spend.",
  },
  consumerKeyFile: {
    flag: "consumer-key-file",
    env: "NET_CONSUMER_KEY_FILE",
    kind: text("<file>"),
    defaultText: "<data-dir>/consumer-key (generated on first start, mode 0600).",
    help: "File holding the consumer key (0x and 64 hex digits): its address holds the Escrow " +
      "deposit and signs every voucher.",
  },
  maxSpend: {
    flag: "max-spend",
    env: "NET_DAEMON_MAX_SPEND",
    kind: spendCap,
    defaultText: "no cap.",
    help: "Most the daemon may spend per day, week or month (UTC), over every API key, e.g. " +
      "0.05/day; a request whose worst case would exceed what is left is answered 402 " +
      "budget_exceeded before anything is sealed.",
  },
  apiKey: {
    env: "NET_DAEMON_API_KEY",
    kind: text("<key>"),
    help: "The API key itself (at least 16 characters).",
  },
  rpcUrl: {
    env: "NET_EVM_RPC_URL",
    kind: rpcUrl(),
    help: "EVM JSON-RPC endpoint (http: or https:) instead of the profile's. The approved " +
      "measurements, the providers' trust roots and ad commitments (Registry) and their " +
      "bonds (Staking) are read from the chain, and a provider must be bonded to be used.",
  },
  registry: {
    env: "NET_EVM_REGISTRY",
    kind: address(),
    help: "The Registry contract instead of the profile's.",
  },
  staking: {
    env: "NET_EVM_STAKING",
    kind: address(),
    help: "The Staking contract instead of the profile's.",
  },
  escrow: {
    env: "NET_EVM_ESCROW",
    kind: address(),
    help: "The Escrow contract instead of the profile's: the consumer's deposit, and what its " +
      "vouchers are signed for.",
  },
});

/** The `--help` text, generated from the declarations. */
export const DAEMON_HELP: string = SETTINGS.help();

/** Whether a bind address only accepts connections from this machine. */
export function isLoopbackBind(bind: BindAddress): boolean {
  return hostScope(bind.hostname.replace(/^\[(.*)\]$/, "$1")) === "loopback";
}

const UNSPECIFIC = new Set(["0.0.0.0", "::", "127.0.0.1", "localhost", "::1"]);

/** The extra Host names: the explicit ones, plus a specific non-loopback bind address. */
function allowedHostsFor(bind: BindAddress, extra: readonly string[]): string[] {
  const out = [...extra];
  if (!UNSPECIFIC.has(bind.hostname)) {
    const name = bind.hostname.includes(":") ? `[${bind.hostname}]` : bind.hostname;
    if (!out.includes(name)) out.push(name);
  }
  return out;
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
 * @throws {SettingError} when the environment has no home directory to build it from.
 */
export function defaultDataDir(
  env: Readonly<Record<string, string | undefined>>,
  os: typeof Deno.build.os,
): string {
  const get = (name: string) => (env[name] ? env[name] : undefined);
  const missing = (what: string): never => {
    throw new SettingError(
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
 * @throws {SettingError} naming the flag or variable, the value and what was expected.
 */
export function parseDaemonConfig(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  options: ParseDaemonConfigOptions = {},
): ParsedDaemonArgs {
  const parsed = SETTINGS.parse(args, env);
  if (parsed.help) return { help: true, text: parsed.text };
  const { values, sources } = parsed;
  const { network, evm, bootstrap } = networkFor({
    network: values.network,
    rpcUrl: values.rpcUrl,
    registry: values.registry,
    staking: values.staking,
    escrow: values.escrow,
    insecureGatewayKeys: values.insecureGatewayKeys,
    names: {
      network: sources.network.name,
      rpcUrl: sources.rpcUrl.name,
      registry: sources.registry.name,
      staking: sources.staking.name,
      escrow: sources.escrow.name,
      insecureGatewayKeys: sources.insecureGatewayKeys.name,
    },
  });
  return {
    help: false,
    config: {
      bind: values.bind,
      gateway: values.gateway ?? null,
      dataDir: values.dataDir ?? defaultDataDir(env, options.os ?? Deno.build.os),
      network,
      bootstrap,
      evm,
      insecureGatewayKeys: values.insecureGatewayKeys,
      chainGraceSecs: values.chainGraceSecs,
      auth: {
        required: values.requireApiKey || !isLoopbackBind(values.bind),
        apiKey: values.apiKey ? checkApiKey(values.apiKey, "NET_DAEMON_API_KEY") : null,
        apiKeyFile: values.apiKeyFile ?? null,
        apiKeysFile: values.apiKeysFile ?? null,
      },
      measurementsFile: values.measurements ?? null,
      allowedOrigins: values.allowedOrigins ?? [],
      allowedHosts: allowedHostsFor(values.bind, values.allowedHosts ?? []),
      maxBodyBytes: values.maxBodyBytes,
      maxQueue: values.maxQueue,
      queueTimeoutSecs: values.queueTimeoutSecs,
      logFormat: values.logFormat,
      consumerKeyFile: values.consumerKeyFile ?? null,
      maxSpend: values.maxSpend ?? null,
    },
  };
}
