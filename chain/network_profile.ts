/**
 * Network profiles: everything a program needs to know to join one network, in one place — its
 * chain id, JSON-RPC endpoint(s), the four contract addresses (Registry and Staking anchor the
 * daemon's trust in providers; the indexer also reads Emission and Escrow), the block they were
 * deployed at (where the indexer's settlement scan starts) and the bootstrap gateways.
 *
 * The project ships one: {@linkcode DEVNET_PROFILE}, the reference network that
 * `deno task devnet --ports fixed` starts on this machine (a fresh anvil chain, on which dev
 * account 0 always deploys the contracts at the same addresses). Others are JSON files: the
 * devnet writes its own (`<state-dir>/network.json`, whatever its ports), and an operator of
 * another network publishes one. {@linkcode resolveNetworkProfile} takes a built-in name or a
 * file path; single variables (`NET_EVM_RPC_URL`, `NET_EVM_REGISTRY`, …) still override single
 * fields, in the programs that read them.
 *
 * The file format (`version` 1), strict: unknown or repeated keys are refused.
 *
 * ```json
 * {
 *   "version": 1,
 *   "network": "devnet",
 *   "chain_id": 31337,
 *   "rpc_urls": ["http://127.0.0.1:8545"],
 *   "contracts": {
 *     "registry": "0x5fbdb2315678afecb367f032d93f642f64180aa3",
 *     "staking": "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
 *     "emission": "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
 *     "escrow": "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9"
 *   },
 *   "deployed_at_block": 1,
 *   "gateways": ["http://127.0.0.1:8701", "http://127.0.0.1:8702"]
 * }
 * ```
 *
 * @example
 * ```ts
 * import { networkProfileJson, parseNetworkProfile, resolveNetworkProfile } from "./network_profile.ts";
 *
 * const devnet = resolveNetworkProfile("devnet");
 * console.assert(devnet.chainId === 31337 && devnet.gateways.length === 2);
 * const copy = parseNetworkProfile(JSON.stringify(networkProfileJson(devnet)), "a copy");
 * console.assert(copy.contracts.registry === devnet.contracts.registry);
 * ```
 *
 * @module
 */

import { abbreviate, ReasonError } from "../errors.ts";
import { duplicateKey } from "../io/strict_json.ts";
import type { ChainContracts } from "./types.ts";

/** One network, as programs join it. */
export interface NetworkProfile {
  /** Its name, e.g. `devnet` (letters, digits, `.`, `_`, `-`). */
  readonly name: string;
  /** The chain id every RPC endpoint must serve. */
  readonly chainId: number;
  /** JSON-RPC endpoints (`http:`/`https:`), tried in order. At least one. */
  readonly rpcUrls: readonly string[];
  /** The four contracts, lower case. */
  readonly contracts: Readonly<ChainContracts>;
  /** The block the contracts were deployed at (the indexer's settlement scan starts there). */
  readonly deployedAtBlock: bigint;
  /** Bootstrap gateways (`http:`/`https:` base URLs). */
  readonly gateways: readonly string[];
  /** Where the profile came from: `built-in` or the file's path. */
  readonly source: string;
}

/** The JSON form of a profile (a profile file's content). */
export interface NetworkProfileJson {
  /** Format version: 1. */
  version: 1;
  /** The network's name. */
  network: string;
  /** The chain id. */
  chain_id: number;
  /** JSON-RPC endpoints. */
  rpc_urls: string[];
  /** The four contract addresses. */
  contracts: { registry: string; staking: string; emission: string; escrow: string };
  /** The block the contracts were deployed at. */
  deployed_at_block: number;
  /** Bootstrap gateways. */
  gateways: string[];
}

/** Why a profile was refused. */
export type NetworkProfileFailure =
  /** No built-in network has that name, and no file has that path. */
  | "not_found"
  /** The file could not be read. */
  | "unreadable"
  /** The file is not a valid profile (the message names the field). */
  | "invalid";

/** Thrown by {@linkcode resolveNetworkProfile} and {@linkcode parseNetworkProfile}. */
export class NetworkProfileError extends ReasonError<NetworkProfileFailure> {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "NetworkProfileError" as const;
}

/**
 * The reference network as `deno task devnet --ports fixed` (and `deno task demo`) start it on
 * this machine: anvil's chain id, anvil on port 8545, the addresses dev account 0 deploys the
 * contracts at on a fresh chain (`tests/devnet/network_profile_test.ts` proves them), and its
 * two gateways on 8701 and 8702.
 */
export const DEVNET_PROFILE: NetworkProfile = Object.freeze({
  name: "devnet",
  chainId: 31337,
  rpcUrls: Object.freeze(["http://127.0.0.1:8545"]),
  contracts: Object.freeze({
    registry: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
    staking: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
    emission: "0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0",
    escrow: "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9",
  }),
  deployedAtBlock: 1n,
  gateways: Object.freeze(["http://127.0.0.1:8701", "http://127.0.0.1:8702"]),
  source: "built-in",
});

/** The networks compiled in, by name. */
export const BUILTIN_NETWORKS: Readonly<Record<string, NetworkProfile>> = Object.freeze({
  devnet: DEVNET_PROFILE,
});

/** The network used when none is selected. */
export const DEFAULT_NETWORK = "devnet";

/** Largest profile file read, bytes. */
const MAX_PROFILE_BYTES = 64 * 1024;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const KEYS = [
  "version",
  "network",
  "chain_id",
  "rpc_urls",
  "contracts",
  "deployed_at_block",
  "gateways",
];
const CONTRACT_KEYS = ["registry", "staking", "emission", "escrow"] as const;

/** Options of {@linkcode resolveNetworkProfile}. */
export interface ResolveNetworkProfileOptions {
  /** Reads a file as text. @default {Deno.readTextFileSync} */
  readFile?: (path: string) => string;
}

/**
 * Returns the profile a `--network` value names: a built-in network's name (`devnet`), or the
 * path of a profile file (anything with a `/` or `\`, or ending in `.json`).
 *
 * @throws {NetworkProfileError} `not_found`, `unreadable` or `invalid`, naming the value.
 */
export function resolveNetworkProfile(
  value: string,
  options: ResolveNetworkProfileOptions = {},
): NetworkProfile {
  const builtin = Object.hasOwn(BUILTIN_NETWORKS, value) ? BUILTIN_NETWORKS[value] : undefined;
  if (builtin) return builtin;
  if (!/[\\/]/.test(value) && !value.endsWith(".json")) {
    throw new NetworkProfileError(
      "not_found",
      `Cannot use network ${JSON.stringify(abbreviate(value, 80))}: no built-in network has ` +
        `that name (built in: ${Object.keys(BUILTIN_NETWORKS).join(", ")}); a profile file is ` +
        "given by its path, e.g. ./network.json",
    );
  }
  let text: string;
  try {
    text = (options.readFile ?? Deno.readTextFileSync)(value);
  } catch (cause) {
    const missing = cause instanceof Deno.errors.NotFound;
    throw new NetworkProfileError(
      missing ? "not_found" : "unreadable",
      `Cannot read network profile ${value}: ${
        missing ? "no such file" : cause instanceof Error ? cause.message : String(cause)
      }`,
      { cause },
    );
  }
  return parseNetworkProfile(text, value);
}

function invalid(source: string, what: string): never {
  throw new NetworkProfileError("invalid", `Cannot use network profile ${source}: ${what}`);
}

function shown(value: unknown): string {
  return abbreviate(JSON.stringify(value) ?? String(value), 80);
}

function httpUrl(value: unknown, field: string, source: string): string {
  let url: URL | undefined;
  try {
    url = typeof value === "string" ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    invalid(source, `${field} is ${shown(value)}; expected an http: or https: URL`);
  }
  return value as string;
}

function urlList(value: unknown, field: string, source: string, min: number): string[] {
  if (!Array.isArray(value) || value.length < min || value.length > 64) {
    invalid(source, `${field} is ${shown(value)}; expected a list of ${min} to 64 URLs`);
  }
  return value.map((item, i) => httpUrl(item, `${field}[${i}]`, source));
}

/**
 * Reads a profile file's text (`source` names it in errors).
 *
 * @throws {NetworkProfileError} `invalid`, naming the field, what was found and what is expected.
 */
export function parseNetworkProfile(text: string, source: string): NetworkProfile {
  if (text.length > MAX_PROFILE_BYTES) {
    invalid(source, `it is ${text.length} bytes; a profile is at most ${MAX_PROFILE_BYTES}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    invalid(source, `not JSON (${cause instanceof Error ? cause.message : cause})`);
  }
  const repeated = duplicateKey(text);
  if (repeated !== undefined) invalid(source, `the key ${JSON.stringify(repeated)} is repeated`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    invalid(source, "expected a JSON object");
  }
  const record = value as Record<string, unknown>;
  const unknown = Object.keys(record).find((key) => !KEYS.includes(key));
  if (unknown !== undefined) invalid(source, `unknown field ${JSON.stringify(unknown)}`);
  if (record.version !== 1) invalid(source, `version is ${shown(record.version)}; expected 1`);
  const name = record.network;
  if (typeof name !== "string" || !NAME.test(name)) {
    invalid(source, `network is ${shown(name)}; expected a name of letters, digits, . _ -`);
  }
  const chainId = record.chain_id;
  if (typeof chainId !== "number" || !Number.isSafeInteger(chainId) || chainId < 1) {
    invalid(source, `chain_id is ${shown(chainId)}; expected a positive integer`);
  }
  const contracts = record.contracts as Record<string, unknown>;
  if (typeof contracts !== "object" || contracts === null || Array.isArray(contracts)) {
    invalid(source, "contracts must be an object with registry, staking, emission and escrow");
  }
  const extra = Object.keys(contracts).find((key) =>
    !(CONTRACT_KEYS as readonly string[]).includes(key)
  );
  if (extra !== undefined) invalid(source, `unknown contract ${JSON.stringify(extra)}`);
  const addresses = {} as Record<keyof ChainContracts, `0x${string}`>;
  for (const key of CONTRACT_KEYS) {
    const address = contracts[key];
    if (typeof address !== "string" || !ADDRESS.test(address)) {
      invalid(source, `contracts.${key} is ${shown(address)}; expected 0x and 40 hex digits`);
    }
    addresses[key] = address.toLowerCase() as `0x${string}`;
  }
  const block = record.deployed_at_block ?? 0;
  if (typeof block !== "number" || !Number.isSafeInteger(block) || block < 0) {
    invalid(source, `deployed_at_block is ${shown(block)}; expected a block number`);
  }
  return Object.freeze({
    name,
    chainId,
    rpcUrls: Object.freeze(urlList(record.rpc_urls, "rpc_urls", source, 1)),
    contracts: Object.freeze(addresses),
    deployedAtBlock: BigInt(block),
    gateways: Object.freeze(urlList(record.gateways ?? [], "gateways", source, 0)),
    source,
  });
}

/** The JSON form of a profile, as a profile file holds it. */
export function networkProfileJson(profile: NetworkProfile): NetworkProfileJson {
  return {
    version: 1,
    network: profile.name,
    chain_id: profile.chainId,
    rpc_urls: [...profile.rpcUrls],
    contracts: { ...profile.contracts },
    deployed_at_block: Number(profile.deployedAtBlock),
    gateways: [...profile.gateways],
  };
}
