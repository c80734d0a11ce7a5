/**
 * The daemon's network from its settings: the selected profile (`chain/network_profile.ts`),
 * each `NET_EVM_*` variable overriding its one field, or no chain at all with
 * `--insecure-gateway-keys` (which then cannot be combined with those variables); and
 * {@linkcode EvmConfig}, the chain the daemon's configuration names. Used by `config.ts`.
 *
 * @module
 */

import {
  type NetworkProfile,
  NetworkProfileError,
  resolveNetworkProfile,
} from "../../chain/network_profile.ts";
import { SettingError } from "../../settings/mod.ts";
import { GatewaySetError, normalizeGatewayUrl } from "../gateway/mod.ts";

/** The chain the daemon reads trust roots and measurements from. */
export interface EvmConfig {
  /** JSON-RPC endpoint URLs (`http:` or `https:`), tried in order. */
  readonly rpcUrls: readonly string[];
  /**
   * The chain id the endpoint must serve: the profile's, or `null` when `NET_EVM_RPC_URL`
   * replaced the profile's endpoints (then any chain whose contracts check out is used).
   */
  readonly chainId: number | null;
  /** The Registry contract address, lower case. */
  readonly registry: `0x${string}`;
  /** The Staking contract address, lower case (a provider must be bonded). */
  readonly staking: `0x${string}`;
  /**
   * The Escrow (lower case): the consumer's deposit, and the EIP-712 domain its vouchers are
   * signed for. `null`: the daemon pays nothing (providers that require payment refuse it).
   */
  readonly escrow: `0x${string}` | null;
}

/** The settings that decide the network, with the names they were given under. */
export interface NetworkSettings {
  /** `--network`: a built-in name or a profile file. */
  network: string;
  /** `NET_EVM_RPC_URL`, when set. */
  rpcUrl?: string;
  /** `NET_EVM_REGISTRY`, when set. */
  registry?: `0x${string}`;
  /** `NET_EVM_STAKING`, when set. */
  staking?: `0x${string}`;
  /** `NET_EVM_ESCROW`, when set. */
  escrow?: `0x${string}`;
  /** `--insecure-gateway-keys`. */
  insecureGatewayKeys: boolean;
  /** How each was given (`--network`, `NET_NETWORK`, …), for messages. */
  names: Record<
    "network" | "rpcUrl" | "registry" | "staking" | "escrow" | "insecureGatewayKeys",
    string
  >;
}

/** What the daemon's configuration takes from the network. */
export interface NetworkChoice {
  /** The profile's name and source, or `null` without a chain. */
  network: { readonly name: string; readonly source: string } | null;
  /** The chain to anchor trust on, or `null` without one. */
  evm: EvmConfig | null;
  /** The profile's gateways, normalized. */
  bootstrap: string[];
}

/**
 * The network the settings select.
 *
 * @throws {SettingError} for an unknown or malformed profile, a gateway in it that can never be
 * one, or `--insecure-gateway-keys` together with a `NET_EVM_*` variable.
 */
export function networkFor(settings: NetworkSettings): NetworkChoice {
  const { names } = settings;
  const overridden = (["rpcUrl", "registry", "staking", "escrow"] as const).filter((k) =>
    settings[k]
  );
  const profile = profileOf(settings.network, names.network);
  const bootstrap = bootstrapOf(profile.gateways, names.network);
  if (settings.insecureGatewayKeys) {
    if (overridden.length > 0) {
      const name = names[overridden[0]];
      throw new SettingError(
        name,
        `Cannot use ${names.insecureGatewayKeys} with ${name}: it runs without any chain; ` +
          "unset one of them",
      );
    }
    return { network: null, evm: null, bootstrap };
  }
  return {
    network: { name: profile.name, source: profile.source },
    evm: {
      rpcUrls: settings.rpcUrl ? [settings.rpcUrl] : profile.rpcUrls,
      chainId: settings.rpcUrl ? null : profile.chainId,
      registry: settings.registry ?? profile.contracts.registry,
      staking: settings.staking ?? profile.contracts.staking,
      escrow: settings.escrow ?? profile.contracts.escrow,
    },
    bootstrap,
  };
}

function profileOf(value: string, setting: string): NetworkProfile {
  try {
    return resolveNetworkProfile(value);
  } catch (error) {
    if (!(error instanceof NetworkProfileError)) throw error;
    throw new SettingError(setting, error.shortMessage, { cause: error });
  }
}

/** The profile's gateways, normalized; a bad one is a configuration error naming the profile. */
function bootstrapOf(gateways: readonly string[], where: string): string[] {
  return gateways.map((url) => {
    try {
      return normalizeGatewayUrl(url);
    } catch (error) {
      if (!(error instanceof GatewaySetError)) throw error;
      throw new SettingError(where, `Cannot use the network's gateway: ${error.shortMessage}`);
    }
  });
}
