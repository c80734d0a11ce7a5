/**
 * The indexer's configuration from its command line and environment, parsed by a pure
 * function: flags win over environment variables, which win over defaults. A missing or
 * malformed value stops start-up with a message that names the flag or variable, shows the
 * value and says what was expected.
 *
 * | flag                       | environment                   | default                     |
 * | -------------------------- | ----------------------------- | --------------------------- |
 * | `--bind <host:port>`       | `NET_STATS_BIND`              | `127.0.0.1:8088`            |
 * | `--refresh-secs <n>`       | `NET_STATS_REFRESH_SECS`      | `30`                        |
 * | `--stale-after-secs <n>`   | `NET_STATS_STALE_AFTER_SECS`  | twice the refresh interval  |
 * | `--router-timeout-ms <n>`  | `NET_STATS_ROUTER_TIMEOUT_MS` | `5000`                      |
 * | `--scan-from-block <n>`    | `NET_STATS_SCAN_FROM_BLOCK`   | `0`                         |
 * | `--confirmations <n>`      | `NET_STATS_CONFIRMATIONS`     | `12`                        |
 * | —                          | `NET_EVM_RPC_URL`             | `http://127.0.0.1:8545`     |
 * | —                          | `NET_EVM_ESCROW`              | required                    |
 * | —                          | `NET_EVM_STAKING`             | required                    |
 * | —                          | `NET_EVM_EMISSION`            | required                    |
 * | —                          | `NET_EVM_REGISTRY`            | required                    |
 * | —                          | `NET_EVM_MULTICALL`           | unset: deployless multicall |
 * | `--help`, `-h`             |                               |                             |
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

import { type BindAddress, type BindAddressError, parseBindAddress } from "../io/bind_address.ts";
import { parseArgs } from "node:util";
import type { Address } from "viem";
import type { ChainContracts } from "../chain/types.ts";
import { abbreviate } from "../errors.ts";
import { IndexerConfigError } from "./errors.ts";

/** The default listen address. */
export const DEFAULT_STATS_BIND = "127.0.0.1:8088";
/** The default refresh interval, in seconds. */
export const DEFAULT_REFRESH_SECS = 30;
/** The default RPC endpoint. */
export const DEFAULT_RPC_URL = "http://127.0.0.1:8545";
/** The default time allowed for one router's `GET /v1/ads`, in milliseconds. */
export const DEFAULT_ROUTER_TIMEOUT_MS = 5_000;
/** The default confirmation depth of the settlement scan, in blocks. */
export const DEFAULT_CONFIRMATIONS = 12;

/** The `--help` text. */
export const INDEXER_HELP: string =
  `net-consumer indexer: a read-only HTTP service that reports what the
network can serve (GET /stats /models /providers /health). Every listed provider's
live ad is checked against its on-chain ad commitment; when the chain or the routers
are unreachable it answers 503, never stale numbers.

Usage: deno run -A indexer/main.ts [options]     (or: deno task indexer [options])

Options (each also read from the environment variable shown; a flag wins):
  --bind <host:port>         Listen address. [NET_STATS_BIND] Default: ${DEFAULT_STATS_BIND}
                             Use port 0 for any free port.
  --refresh-secs <n>         Snapshot refresh interval in seconds, 1 to 86400.
                             [NET_STATS_REFRESH_SECS] Default: ${DEFAULT_REFRESH_SECS}
  --stale-after-secs <n>     A snapshot older than this is refused with 503 (the refresh
                             loop is stuck); at least the refresh interval.
                             [NET_STATS_STALE_AFTER_SECS] Default: twice the refresh interval.
  --router-timeout-ms <n>    Time allowed for one router's GET /v1/ads, 100 to 600000.
                             [NET_STATS_ROUTER_TIMEOUT_MS] Default: ${DEFAULT_ROUTER_TIMEOUT_MS}
  --scan-from-block <n>      First block of the settlement scan (the Escrow's deployment
                             block). [NET_STATS_SCAN_FROM_BLOCK] Default: 0
  --confirmations <n>        Settlements count once this many blocks deep, 0 to 10000.
                             [NET_STATS_CONFIRMATIONS] Default: ${DEFAULT_CONFIRMATIONS}
  -h, --help                 Print this text.

Environment only:
  NET_EVM_RPC_URL            Any EVM JSON-RPC endpoint (http: or https:).
                             Default: ${DEFAULT_RPC_URL}
  NET_EVM_ESCROW             Escrow contract address (settled volume).           Required.
  NET_EVM_STAKING            Canonical Staking contract address (stake).         Required.
  NET_EVM_EMISSION           Emission contract address (schedule and totals).    Required.
  NET_EVM_REGISTRY           Registry contract address (providers, validators,   Required.
                             routers, approved TEE measurements).
  NET_EVM_MULTICALL          A Multicall3-compatible contract on the chain.
                             Default: unset (reads use viem's deployless multicall).

Endpoints (JSON, Access-Control-Allow-Origin: *): GET /stats, /models, /providers, /health.
See docs/indexer.md for every field and the error rules.
`;

export type { BindAddress };

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
  /** The JSON-RPC endpoint. */
  readonly rpcUrl: string;
  /** The four contract addresses, lower case. */
  readonly contracts: ChainContracts;
  /** A Multicall3-compatible contract, or `null` for deployless multicall. */
  readonly multicall: Address | null;
}

/** The result of {@linkcode parseIndexerConfig}: the help text was asked for, or a config. */
export type ParsedIndexerArgs =
  | { readonly help: true; readonly text: string }
  | { readonly help: false; readonly config: IndexerConfig };

type Source = { name: string; value: string };
/** The environment the configuration is read from. */
export type Env = Readonly<Record<string, string | undefined>>;

function show(value: string): string {
  return JSON.stringify(abbreviate(value, 100));
}

function parseBind(source: Source): BindAddress {
  try {
    return parseBindAddress(source.value);
  } catch (error) {
    throw new IndexerConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: ${
        (error as BindAddressError).shortMessage
      }; ` +
        `expected host:port such as ${DEFAULT_STATS_BIND} or [::1]:8088`,
    );
  }
}

function parseInteger(source: Source, min: number, max: number, unit: string): number {
  if (
    !/^\d{1,15}$/.test(source.value) || Number(source.value) < min || Number(source.value) > max
  ) {
    throw new IndexerConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: expected a whole number of ${unit} ` +
        `from ${min} to ${max}`,
    );
  }
  return Number(source.value);
}

function parseBlock(source: Source): bigint {
  if (!/^(0|[1-9][0-9]{0,19})$/.test(source.value)) {
    throw new IndexerConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: expected a block number (a whole ` +
        "number such as 0 or 1234567)",
    );
  }
  return BigInt(source.value);
}

function parseRpcUrl(source: Source): string {
  let url: URL | undefined;
  try {
    url = new URL(source.value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new IndexerConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: expected an http: or https: URL such ` +
        `as ${DEFAULT_RPC_URL}`,
    );
  }
  return source.value;
}

function parseAddress(source: Source): Address {
  if (!/^0x[0-9a-fA-F]{40}$/.test(source.value)) {
    throw new IndexerConfigError(
      source.name,
      `Cannot use ${source.name} ${show(source.value)}: expected a contract address, 0x and ` +
        "40 hex digits",
    );
  }
  return source.value.toLowerCase() as Address;
}

const REQUIRED = [
  ["NET_EVM_ESCROW", "escrow"],
  ["NET_EVM_STAKING", "staking"],
  ["NET_EVM_EMISSION", "emission"],
  ["NET_EVM_REGISTRY", "registry"],
] as const;

function contractAddresses(env: Env): ChainContracts {
  const missing = REQUIRED.filter(([name]) => (env[name] ?? "").trim() === "");
  if (missing.length > 0) {
    const names = missing.map(([name]) => name);
    throw new IndexerConfigError(
      names[0],
      `Cannot start the indexer: ${names.join(", ")} ${
        names.length === 1 ? "is" : "are"
      } not set; expected the ${missing.map(([, what]) => what).join(", ")} contract address${
        names.length === 1 ? "" : "es"
      } (0x and 40 hex digits)`,
    );
  }
  const address = (name: string) => parseAddress({ name, value: env[name]!.trim() });
  return {
    escrow: address("NET_EVM_ESCROW"),
    staking: address("NET_EVM_STAKING"),
    emission: address("NET_EVM_EMISSION"),
    registry: address("NET_EVM_REGISTRY"),
  };
}

/**
 * Parses the indexer's flags and environment. Flags win over environment variables; an empty
 * environment variable counts as unset.
 *
 * @throws {IndexerConfigError} naming the flag or variable, the value and what was expected.
 */
export function parseIndexerConfig(args: readonly string[], env: Env): ParsedIndexerArgs {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        bind: { type: "string" },
        "refresh-secs": { type: "string" },
        "stale-after-secs": { type: "string" },
        "router-timeout-ms": { type: "string" },
        "scan-from-block": { type: "string" },
        confirmations: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }).values;
  } catch (cause) {
    throw new IndexerConfigError(
      "arguments",
      `Cannot parse the command line: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (values.help) return { help: true, text: INDEXER_HELP };

  const pick = (flag: string, variable: string): Source | undefined => {
    const fromFlag = values[flag];
    if (typeof fromFlag === "string") return { name: `--${flag}`, value: fromFlag.trim() };
    const fromEnv = env[variable];
    if (fromEnv !== undefined && fromEnv.trim() !== "") {
      return { name: variable, value: fromEnv.trim() };
    }
    return undefined;
  };

  const bindSource = pick("bind", "NET_STATS_BIND");
  const refreshSource = pick("refresh-secs", "NET_STATS_REFRESH_SECS");
  const staleSource = pick("stale-after-secs", "NET_STATS_STALE_AFTER_SECS");
  const timeoutSource = pick("router-timeout-ms", "NET_STATS_ROUTER_TIMEOUT_MS");
  const fromSource = pick("scan-from-block", "NET_STATS_SCAN_FROM_BLOCK");
  const depthSource = pick("confirmations", "NET_STATS_CONFIRMATIONS");
  const rpcValue = env.NET_EVM_RPC_URL?.trim();

  const bind = bindSource ? parseBind(bindSource) : parseBind({
    name: "default",
    value: DEFAULT_STATS_BIND,
  });
  const refreshSecs = refreshSource
    ? parseInteger(refreshSource, 1, 86_400, "seconds")
    : DEFAULT_REFRESH_SECS;
  const staleAfterSecs = staleSource
    ? parseInteger(staleSource, 1, 2 * 86_400, "seconds")
    : 2 * refreshSecs;
  if (staleAfterSecs < refreshSecs) {
    throw new IndexerConfigError(
      staleSource!.name,
      `Cannot use ${staleSource!.name} ${staleAfterSecs}: it is shorter than the refresh ` +
        `interval (${refreshSecs} s), so every snapshot would be refused before the next one; ` +
        `expected at least ${refreshSecs}`,
    );
  }
  const rpcUrl = rpcValue
    ? parseRpcUrl({ name: "NET_EVM_RPC_URL", value: rpcValue })
    : DEFAULT_RPC_URL;
  const multicallValue = env.NET_EVM_MULTICALL?.trim();
  return {
    help: false,
    config: {
      bind,
      refreshSecs,
      staleAfterSecs,
      routerTimeoutMs: timeoutSource
        ? parseInteger(timeoutSource, 100, 600_000, "milliseconds")
        : DEFAULT_ROUTER_TIMEOUT_MS,
      scanFromBlock: fromSource ? parseBlock(fromSource) : 0n,
      confirmations: depthSource
        ? parseInteger(depthSource, 0, 10_000, "blocks")
        : DEFAULT_CONFIRMATIONS,
      rpcUrl,
      contracts: contractAddresses(env),
      multicall: multicallValue
        ? parseAddress({ name: "NET_EVM_MULTICALL", value: multicallValue })
        : null,
    },
  };
}
