/**
 * The indexer's configuration from its command line and environment, declared once with the
 * settings module (`settings/`): the parser, the typed values and `--help` come from the
 * declarations. Flags win over environment variables, which win over defaults; an empty (or
 * blank) variable counts as unset. A missing or malformed value stops start-up with a
 * `SettingError` that names the flag or variable, shows the value and says what was expected.
 *
 * | flag                       | environment                   | default                     |
 * | -------------------------- | ----------------------------- | --------------------------- |
 * | `--network <name\|file>`   | `NET_NETWORK`                 | unset                       |
 * | `--bind <host:port>`       | `NET_STATS_BIND`              | `127.0.0.1:8088`            |
 * | `--refresh-secs <n>`       | `NET_STATS_REFRESH_SECS`      | `30`                        |
 * | `--stale-after-secs <n>`   | `NET_STATS_STALE_AFTER_SECS`  | twice the refresh interval  |
 * | `--router-timeout-ms <n>`  | `NET_STATS_ROUTER_TIMEOUT_MS` | `5000`                      |
 * | `--scan-from-block <n>`    | `NET_STATS_SCAN_FROM_BLOCK`   | `0` (profile: its block)    |
 * | `--confirmations <n>`      | `NET_STATS_CONFIRMATIONS`     | `12`                        |
 * | `--data-dir <dir>`         | `NET_STATS_DATA_DIR`          | the per-user data directory |
 * | `--database-url <url>`     | `NET_STATS_DATABASE_URL`      | unset: the embedded store   |
 * | `--rebuild-history`        | `NET_STATS_REBUILD_HISTORY`   | off                         |
 * | `--log-format human\|json` | `NET_STATS_LOG_FORMAT`        | `human`                     |
 * | `--rpc-url <url>` (repeat) | `NET_EVM_RPC_URL` (a list)    | `http://127.0.0.1:8545`     |
 * | `--rpc-max-rps <n>`        | `NET_EVM_RPC_MAX_RPS`         | unset: no budget            |
 * | —                          | `NET_EVM_ESCROW`              | required (or the profile's) |
 * | —                          | `NET_EVM_STAKING`             | required (or the profile's) |
 * | —                          | `NET_EVM_EMISSION`            | required (or the profile's) |
 * | —                          | `NET_EVM_REGISTRY`            | required (or the profile's) |
 * | —                          | `NET_EVM_MULTICALL`           | unset: deployless multicall |
 * | `--help`, `-h`             |                               |                             |
 *
 * With `--network` (a built-in name such as `devnet`, or a profile file,
 * `chain/network_profile.ts`), the RPC URL, the four contracts, the scan's first block and the
 * chain id come from the profile, and each variable overrides its one field (the chain id is
 * then enforced only while the RPC URL is the profile's). Beyond each value's own kind:
 * `--stale-after-secs` is at least `--refresh-secs`, and every missing contract address is
 * named at once.
 *
 * @example
 * ```ts
 * import { parseIndexerConfig } from "./config.ts";
 *
 * const parsed = parseIndexerConfig(["--refresh-secs", "10"], {
 *   NET_EVM_ESCROW: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
 *   NET_EVM_STAKING: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
 *   NET_EVM_EMISSION: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
 *   NET_EVM_REGISTRY: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
 * });
 * if (parsed.help) throw new Error("unexpected");
 * console.assert(parsed.config.refreshSecs === 10 && parsed.config.staleAfterSecs === 20);
 * ```
 *
 * @module
 */

import type { Address } from "viem";
import {
  type NetworkProfile,
  NetworkProfileError,
  resolveNetworkProfile,
} from "../chain/network_profile.ts";
import type { ChainContracts } from "../chain/types.ts";
import { redactRpcUrl } from "../chain/client_endpoints.ts";
import type { BindAddress } from "../io/bind_address.ts";
import { LOG_FORMATS, type LogFormat } from "../io/log.ts";
import {
  address,
  bindAddress,
  blockNumber,
  choice,
  defineSettings,
  integer,
  type Kind,
  list,
  rpcUrl,
  SettingError,
  text,
  toggle,
  url,
} from "../settings/mod.ts";

export type { BindAddress };

/** A contract address (the settings kind, worded for the indexer). */
function contract(): Kind<Address> {
  return { ...address(), expected: "a contract address, 0x and 40 hex digits" };
}

const CONTRACTS = {
  escrow: "NET_EVM_ESCROW",
  staking: "NET_EVM_STAKING",
  emission: "NET_EVM_EMISSION",
  registry: "NET_EVM_REGISTRY",
} as const;

const SETTINGS = defineSettings({
  summary: [
    "net-consumer indexer: a read-only HTTP service that reports what the",
    "network can serve (GET /stats /models /providers /health). Every listed provider's",
    "live ad is checked against its on-chain ad commitment; when the chain or the routers",
    "are unreachable it answers 503, never stale numbers. The settlement history is kept",
    "in a store (embedded, or PostgreSQL shared by replicas) and resumes after a restart.",
  ].join("\n"),
  usage: "Usage: deno run -A indexer/main.ts [options]     (or: deno task indexer [options])",
  epilogue: [
    "Endpoints (JSON, Access-Control-Allow-Origin: *): GET /stats, /models, /providers,",
    "/providers/{address}, /epochs, /health, and /openapi.json (their OpenAPI 3.1 document);",
    "GET / is the dashboard page, GET /metrics the Prometheus metrics.",
    "See docs/indexer.md for every field, the caching and the error rules.",
  ].join("\n"),
}, {
  network: {
    flag: "network",
    env: "NET_NETWORK",
    kind: text("<name|file>"),
    defaultText: "unset: the NET_EVM_* variables name the chain and the contracts.",
    help: "The network to index: a built-in name (devnet) or a profile file; it gives the RPC " +
      "URL, the chain id, the four contracts and the first block to scan, and each variable " +
      "below overrides its one field.",
  },
  bind: {
    flag: "bind",
    env: "NET_STATS_BIND",
    kind: bindAddress(),
    default: "127.0.0.1:8088",
    help: "Listen address ([::1]:8088 for IPv6). Use port 0 for any free port.",
  },
  refreshSecs: {
    flag: "refresh-secs",
    env: "NET_STATS_REFRESH_SECS",
    kind: integer({ min: 1, max: 86_400, unit: "seconds" }),
    default: "30",
    help: "Snapshot refresh interval in seconds, 1 to 86400.",
  },
  staleAfterSecs: {
    flag: "stale-after-secs",
    env: "NET_STATS_STALE_AFTER_SECS",
    kind: integer({ min: 1, max: 2 * 86_400, unit: "seconds" }),
    defaultText: "twice the refresh interval.",
    help: "A snapshot older than this is refused with 503 (the refresh loop is stuck); " +
      "at least the refresh interval.",
  },
  routerTimeoutMs: {
    flag: "router-timeout-ms",
    env: "NET_STATS_ROUTER_TIMEOUT_MS",
    kind: integer({ min: 100, max: 600_000, unit: "milliseconds" }),
    default: "5000",
    help: "Time allowed for one router's GET /v1/ads, 100 to 600000.",
  },
  scanFromBlock: {
    flag: "scan-from-block",
    env: "NET_STATS_SCAN_FROM_BLOCK",
    kind: blockNumber(),
    defaultText: "0, or the profile's deployment block.",
    help: "First block of the settlement scan (the Escrow's deployment block).",
  },
  confirmations: {
    flag: "confirmations",
    env: "NET_STATS_CONFIRMATIONS",
    kind: integer({ min: 0, max: 10_000, unit: "blocks" }),
    default: "12",
    help: "Settlements count once this many blocks deep, 0 to 10000.",
  },
  dataDir: {
    flag: "data-dir",
    env: "NET_STATS_DATA_DIR",
    kind: text("<dir>"),
    defaultText: "the per-user data directory ($XDG_DATA_HOME/net/indexer, else " +
      "~/.local/share/net/indexer; created on first start).",
    help: "Where the embedded settlement-history store keeps its files (one process per " +
      "directory).",
  },
  databaseUrl: {
    flag: "database-url",
    env: "NET_STATS_DATABASE_URL",
    kind: {
      ...url({ schemes: ["postgres:", "postgresql:"], allowCredentials: true }),
      expected: "a postgres: or postgresql: URL such as postgres://indexer@127.0.0.1:5432/net",
    },
    defaultText: "unset (the embedded store in --data-dir).",
    help: "Keep the settlement history in this PostgreSQL database instead; replicas " +
      "pointed at the same database share it (one writes, all serve).",
  },
  rebuildHistory: {
    flag: "rebuild-history",
    env: "NET_STATS_REBUILD_HISTORY",
    kind: toggle(),
    defaultText: "off.",
    help: "Discard the stored settlement history at start (also a corrupt one, one from a " +
      "newer version or of another chain) and scan it again from --scan-from-block.",
  },
  logFormat: {
    flag: "log-format",
    env: "NET_STATS_LOG_FORMAT",
    kind: choice(LOG_FORMATS),
    default: "human",
    help: "How log lines are written on stderr: human (one line of text each) or json (one " +
      "JSON object a line: time, level, message, logger, fields).",
  },
  rpcUrls: {
    flag: "rpc-url",
    env: "NET_EVM_RPC_URL",
    kind: { ...list(rpcUrl()), placeholder: "<url>" },
    repeatable: true,
    defaultText: "the profile's, else http://127.0.0.1:8545.",
    help: "An EVM JSON-RPC endpoint (http: or https:); repeat the flag (or give the variable " +
      "a comma-separated list) for several: reads are spread over them and fail over, each " +
      "one's chain id is checked, and a snapshot is always read at one block.",
  },
  rpcMaxRps: {
    flag: "rpc-max-rps",
    env: "NET_EVM_RPC_MAX_RPS",
    kind: integer({ min: 1, max: 100_000, unit: "calls per second" }),
    defaultText: "unset (no budget).",
    help: "Most JSON-RPC calls per second to each endpoint (a batch counts each call), to " +
      "stay under a free tier's limit; a 429's Retry-After is honoured per endpoint anyway.",
  },
  escrow: {
    env: CONTRACTS.escrow,
    kind: contract(),
    defaultText: "required, unless --network gives it.",
    help: "Escrow contract address (settled volume).",
  },
  staking: {
    env: CONTRACTS.staking,
    kind: contract(),
    defaultText: "required, unless --network gives it.",
    help: "Canonical Staking contract address (stake).",
  },
  emission: {
    env: CONTRACTS.emission,
    kind: contract(),
    defaultText: "required, unless --network gives it.",
    help: "Emission contract address (schedule and totals).",
  },
  registry: {
    env: CONTRACTS.registry,
    kind: contract(),
    defaultText: "required, unless --network gives it.",
    help: "Registry contract address (providers, validators, routers, approved TEE measurements).",
  },
  multicall: {
    env: "NET_EVM_MULTICALL",
    kind: contract(),
    defaultText: "unset (reads use viem's deployless multicall).",
    help: "A Multicall3-compatible contract on the chain.",
  },
});

/** The `--help` text, generated from the declarations. */
export const INDEXER_HELP: string = SETTINGS.help();

/** The indexer's configuration. */
export interface IndexerConfig {
  /** Listen address. */
  readonly bind: BindAddress;
  /** Snapshot refresh interval, seconds. */
  readonly refreshSecs: number;
  /** Snapshots older than this many seconds are refused (503). */
  readonly staleAfterSecs: number;
  /** Time allowed for one router's `GET /v1/ads`, milliseconds. */
  readonly routerTimeoutMs: number;
  /** First block of the settlement scan. */
  readonly scanFromBlock: bigint;
  /** Confirmation depth of the settlement scan. */
  readonly confirmations: number;
  /** The first JSON-RPC endpoint (of `rpcUrls`). */
  readonly rpcUrl: string;
  /** The JSON-RPC endpoints, in the order given (at least one). */
  readonly rpcUrls: readonly string[];
  /** Most JSON-RPC calls per second to each endpoint, or `null` for no budget. */
  readonly rpcMaxRps: number | null;
  /** The chain id the endpoint must serve (the profile's), or `null` for any. */
  readonly chainId: number | null;
  /** The network profile's name and where it came from, or `null` without one. */
  readonly network: { readonly name: string; readonly source: string } | null;
  /** The four contract addresses, lower case. */
  readonly contracts: ChainContracts;
  /** A Multicall3-compatible contract, or `null` for deployless multicall. */
  readonly multicall: Address | null;
  /** The embedded store's data directory, or `null` for the per-user default. */
  readonly dataDir: string | null;
  /** The PostgreSQL database of the history, or `null` for the embedded store. */
  readonly databaseUrl: string | null;
  /** Whether to discard the stored history at start and scan it again. */
  readonly rebuildHistory: boolean;
  /** How log lines are written: `human` or `json`. */
  readonly logFormat: LogFormat;
}

/** The result of {@linkcode parseIndexerConfig}: the help text was asked for, or a config. */
export type ParsedIndexerArgs =
  | { readonly help: true; readonly text: string }
  | { readonly help: false; readonly config: IndexerConfig };

/** Every contract variable that is not set (nor given by a profile), named at once. */
function missingContracts(
  env: Readonly<Record<string, string | undefined>>,
): SettingError | undefined {
  const missing = Object.entries(CONTRACTS).filter(([, name]) => (env[name] ?? "").trim() === "");
  if (missing.length === 0) return undefined;
  const names = missing.map(([, name]) => name);
  const one = names.length === 1;
  return new SettingError(
    names[0],
    `Cannot start the indexer: ${names.join(", ")} ${one ? "is" : "are"} not set; expected ` +
      `the ${missing.map(([what]) => what).join(", ")} contract address${one ? "" : "es"} ` +
      "(0x and 40 hex digits), or a network profile with --network",
  );
}

function profileOf(value: string, setting: string): NetworkProfile {
  try {
    return resolveNetworkProfile(value);
  } catch (error) {
    if (!(error instanceof NetworkProfileError)) throw error;
    throw new SettingError(setting, error.shortMessage, { cause: error });
  }
}

/**
 * Parses the indexer's flags and environment. Flags win over environment variables; an empty
 * or blank environment variable counts as unset.
 *
 * @throws {SettingError} naming the flag or variable, the value and what was expected.
 */
export function parseIndexerConfig(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedIndexerArgs {
  let parsed;
  try {
    parsed = SETTINGS.parse(args, env);
  } catch (error) {
    if (
      error instanceof SettingError &&
      (error.setting === "--database-url" || error.setting === "NET_STATS_DATABASE_URL")
    ) {
      // The value is shown in the message: never its password.
      throw new SettingError(error.setting, withoutPasswords(error.message));
    }
    throw error;
  }
  if (parsed.help) return parsed;
  const { values, sources } = parsed;
  const profile = values.network === undefined
    ? undefined
    : profileOf(values.network, sources.network.name);
  const contracts = {
    escrow: values.escrow ?? profile?.contracts.escrow,
    staking: values.staking ?? profile?.contracts.staking,
    emission: values.emission ?? profile?.contracts.emission,
    registry: values.registry ?? profile?.contracts.registry,
  };
  if (Object.values(contracts).some((address) => address === undefined)) {
    throw missingContracts(env)!;
  }
  const staleAfterSecs = values.staleAfterSecs ?? 2 * values.refreshSecs;
  if (staleAfterSecs < values.refreshSecs) {
    const name = sources.staleAfterSecs.name;
    throw new SettingError(
      name,
      `Cannot use ${name} "${staleAfterSecs}": it is shorter than the refresh interval ` +
        `(${values.refreshSecs} s), so every snapshot would be refused before the next one; ` +
        `expected at least ${values.refreshSecs}`,
    );
  }
  const rpcUrls = values.rpcUrls?.length
    ? [...values.rpcUrls]
    : profile
    ? [...profile.rpcUrls]
    : ["http://127.0.0.1:8545"];
  const twice = rpcUrls.find((url, i) => rpcUrls.indexOf(url) !== i);
  if (twice !== undefined) {
    const name = sources.rpcUrls.name;
    throw new SettingError(
      name,
      `Cannot use ${name}: the endpoint ${redactRpcUrl(twice)} is listed twice; expected each once`,
    );
  }
  return {
    help: false,
    config: {
      bind: values.bind,
      refreshSecs: values.refreshSecs,
      staleAfterSecs,
      routerTimeoutMs: values.routerTimeoutMs,
      scanFromBlock: values.scanFromBlock ?? profile?.deployedAtBlock ?? 0n,
      confirmations: values.confirmations,
      rpcUrl: rpcUrls[0],
      rpcUrls,
      rpcMaxRps: values.rpcMaxRps ?? null,
      chainId: profile && values.rpcUrls === undefined ? profile.chainId : null,
      network: profile ? { name: profile.name, source: profile.source } : null,
      contracts: contracts as ChainContracts,
      multicall: values.multicall ?? null,
      dataDir: values.dataDir ?? null,
      databaseUrl: values.databaseUrl ?? null,
      rebuildHistory: values.rebuildHistory ?? false,
      logFormat: values.logFormat,
    },
  };
}

/** `scheme://user:password@` → `scheme://user:***@` everywhere in `text`. */
function withoutPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@\s"]*:)[^@\s"]*@/gi, "$1***@");
}
