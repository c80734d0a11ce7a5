/**
 * The reference network on one machine: a real anvil chain with the four contracts deployed
 * and registered state, providers of both tiers, routers, gateways that gossip, and the
 * background work a live network does (blocks keep coming, served usage is settled to the
 * Escrow, finished epochs are emitted). Everything listens on loopback by default; in a
 * container it listens on every interface (`hostname: "0.0.0.0"`) and advertises the
 * container's name (`publicHost`), so other containers can reach the URLs registered on chain.
 * It starts its own anvil, or deploys onto an existing dev chain (`rpcUrl`).
 *
 * `deno task devnet` runs it (`devnet/main.ts`); tests start it with ephemeral ports.
 *
 * @example
 * ```ts ignore
 * import { startDevnet } from "./network.ts";
 * await using devnet = await startDevnet({ ports: "ephemeral" });
 * console.log(devnet.gateways.map((g) => g.url));
 * ```
 *
 * @module
 */

import { resolve } from "node:path";
import type { ChainContracts } from "../chain/mod.ts";
import { type NetworkProfile, networkProfileJson } from "../chain/network_profile.ts";
import type { GatewaySet } from "../daemon/mod.ts";
import { writeFileAtomic } from "../io/atomic_write.ts";
import { Loops, Teardown } from "./_lifecycle.ts";
import { advertisedHost } from "./_listen.ts";
import {
  deployDevnet,
  type DevnetChain,
  emitFinishedEpochs,
  mineBlock,
  registerDevnet,
  settleUsage,
  startChain,
} from "./_onchain.ts";
import {
  DEVNET_PORTS,
  type DevnetGateways,
  type DevnetProviderInfo,
  refreshGateways,
  startGateways,
  startProviders,
  startRouters,
} from "./_servers.ts";
import type { Deployment } from "./deploy.ts";
import {
  depositFor,
  fundProviders,
  redeemClaims,
  tillClient,
  tillOptions,
  type VoucherChain,
} from "./_payments.ts";
import { EchoEngine, type InferenceEngine } from "./engine.ts";
import type { ReceiptSigningKey } from "../crypto/mod.ts";
import type { Attester } from "./provider.ts";
import { UpstreamEngine } from "./upstream_engine.ts";

export { DEVNET_PORTS, type DevnetProviderInfo } from "./_servers.ts";

/** Options of {@linkcode startDevnet}. */
export interface DevnetOptions {
  /**
   * `fixed`: the well-known ports of {@linkcode DEVNET_PORTS} (anvil on 8545, gateways on
   * 8701…, which are the daemon's bootstrap gateways). `ephemeral`: free ports (tests).
   *
   * @default {"ephemeral"}
   */
  ports?: "fixed" | "ephemeral";
  /** Live providers in the verified tier. @default {2} */
  verifiedProviders?: number;
  /** Live providers in the TEE tier (they answer `mock` attestations). @default {1} */
  teeProviders?: number;
  /** Registered, bonded providers that no router carries (bonded but not live). @default {2} */
  offlineProviders?: number;
  /** Registered providers staked below the bond minimum. @default {1} */
  underbondedProviders?: number;
  /** Routers. @default {2} */
  routers?: number;
  /** Gateways; each starts knowing only the next one (gossip does the rest). @default {2} */
  gateways?: number;
  /** Forward inference to this OpenAI-compatible server instead of the built-in dev model. */
  upstream?: string;
  /** API key for the upstream. */
  upstreamApiKey?: string;
  /** Pause between generated tokens of the dev model, in ms. @default {15} */
  tokenDelayMs?: number;
  /** Epoch length of the Emission contract, in seconds. @default {60} */
  epochSeconds?: number;
  /** How often served usage is settled to the Escrow, in ms. @default {10000} */
  settleIntervalMs?: number;
  /**
   * How consumers pay. `vouchers`: every sealed request must carry a voucher its consumer
   * signed, and each provider redeems its vouchers at the Escrow (`docs/protocol.md` §9).
   * `settler`: requests are free at the provider, and the trusted settler charges the devnet's
   * consumer account for all served usage (the path kept for tooling).
   *
   * @default {"settler"}
   */
  payments?: "vouchers" | "settler";
  /** How often an empty block is mined (so settlements gain confirmations), in ms. @default {1000} */
  blockIntervalMs?: number;
  /** How often gateways poll routers and gossip, in ms. @default {2000} */
  refreshIntervalMs?: number;
  /**
   * The engine of live provider `index` (tests: a failing one, say), instead of the dev model or
   * `upstream`. @default {engineFor(options)}
   */
  engine?: (label: string, index: number) => InferenceEngine;
  /** Produces attestations for TEE provider `index` (tests). @default {mock bundles} */
  attester?: (index: number) => Attester;
  /**
   * The key that signs TEE provider `index`'s receipts; `null` signs none (tests of a daemon
   * refusing such replies). @default {its serving key}
   */
  receiptKey?: (index: number) => ReceiptSigningKey | null | undefined;
  /**
   * Directory for `devnet.env` and the network profile `network.json` (both written on start,
   * removed on stop).
   */
  stateDir?: string;
  /** Progress lines. @default {() => {}} */
  log?: (line: string) => void;
  /** Path of the anvil binary. @default {anvilBinary()} */
  anvilBinary?: string;
  /**
   * Start anvil in its own process group ({@linkcode AnvilOptions.detached}): a Ctrl-C in the
   * terminal then reaches only the program, which stops the chain last, after everything that
   * reads it. For programs that stop the devnet on SIGINT (`deno task demo|devnet`).
   *
   * @default {false}
   */
  detachChain?: boolean;
  /**
   * Use this existing dev chain (an anvil, or any node with anvil's funded test accounts and
   * `evm_mine`) instead of starting anvil. The chain is left running on stop. On a chain that
   * is not fresh the contract addresses differ from a fresh deployment's.
   *
   * @default {undefined: start anvil}
   */
  rpcUrl?: string;
  /**
   * Address every server of the devnet (and the anvil it starts) listens on: `0.0.0.0`
   * serves other hosts, e.g. other containers.
   *
   * @default {"127.0.0.1"}
   */
  hostname?: string;
  /**
   * Host name in every URL the devnet advertises: provider endpoints in the ads, router URLs
   * on chain, gateway URLs, `NET_EVM_RPC_URL` (e.g. `devnet`, the compose service name).
   *
   * @default {hostname, or "127.0.0.1" when hostname is 0.0.0.0 or ::}
   */
  publicHost?: string;
}

/** A running devnet. */
export interface Devnet extends AsyncDisposable {
  /** JSON-RPC URL of the chain, as advertised (its host is the public host). */
  readonly rpcUrl: string;
  /** Chain id. */
  readonly chainId: number;
  /** Contract addresses. */
  readonly contracts: ChainContracts;
  /** Block of the first deployment (scan settlement logs from here). */
  readonly fromBlock: bigint;
  /** Live providers. */
  readonly providers: readonly DevnetProviderInfo[];
  /** Router base URLs (also registered on chain). */
  readonly routers: readonly string[];
  /** Gateway base URLs. */
  readonly gateways: readonly string[];
  /** The known peers of each gateway, in the order of {@linkcode gateways}. */
  readonly gatewayPeers: readonly GatewaySet[];
  /** Every `NET_*` variable the indexer and the daemon need (also written to `devnet.env`). */
  readonly env: Readonly<Record<string, string>>;
  /**
   * The network profile of this devnet (`chain/network_profile.ts`): its chain, contracts,
   * deployment block and gateways, as advertised.
   */
  readonly profile: NetworkProfile;
  /**
   * Where the profile was written (`<stateDir>/network.json`, also `NET_NETWORK` in `env`), or
   * `null` without a state directory.
   */
  readonly profilePath: string | null;
  /** How consumers pay (`DevnetOptions.payments`). */
  readonly payments: "vouchers" | "settler";
  /** Settles the usage served so far, now (the background loop does it periodically). */
  settleNow(): Promise<void>;
  /** Deposits `amount` (wei) into the Escrow for `consumer`, from the devnet's consumer account. */
  fundConsumer(consumer: `0x${string}`, amount: bigint): Promise<void>;
  /**
   * Stops the background work (blocks, settlements, emission, gateway refresh) and waits for
   * the rounds under way; the servers and the chain keep running. A program that started
   * others on this devnet calls it first, stops them, then {@linkcode Devnet.stop}.
   */
  stopBackground(): Promise<void>;
  /** Stops everything (the background work first, the chain last); idempotent. */
  stop(): Promise<void>;
}

/** What each live provider gets for gas when it redeems its own vouchers (100 ether). */
const PROVIDER_GAS = 100n * 10n ** 18n;

/** The engine of every provider: the upstream server, or the built-in dev model. */
function engineFor(options: DevnetOptions): (label: string) => InferenceEngine {
  return (label) =>
    options.upstream
      ? new UpstreamEngine(options.upstream, { apiKey: options.upstreamApiKey })
      : new EchoEngine({ tokenDelayMs: options.tokenDelayMs ?? 15, servedBy: label });
}

/** Every `NET_*` variable the indexer and the daemon need to use the devnet. */
function devnetEnv(
  chain: DevnetChain,
  deployment: Deployment,
  urls: { gateways: readonly string[]; routers: readonly string[]; providers: readonly string[] },
): Record<string, string> {
  const { registry, staking, emission, escrow } = deployment.contracts;
  return {
    NET_EVM_RPC_URL: chain.publicRpcUrl,
    NET_EVM_REGISTRY: registry,
    NET_EVM_STAKING: staking,
    NET_EVM_EMISSION: emission,
    NET_EVM_ESCROW: escrow,
    NET_STATS_SCAN_FROM_BLOCK: deployment.fromBlock.toString(),
    // The daemon's gateway: with fixed ports its bootstrap list finds them anyway; with
    // ephemeral ones this is how a daemon started from this file reaches the network.
    NET_GATEWAY: urls.gateways[0],
    NET_DEVNET_GATEWAYS: urls.gateways.join(","),
    NET_DEVNET_ROUTERS: urls.routers.join(","),
    NET_DEVNET_PROVIDERS: urls.providers.join(","),
  };
}

/** The devnet's network profile: what `--network <file>` gives the daemon and the indexer. */
function devnetProfile(
  chain: DevnetChain,
  deployment: Deployment,
  gateways: readonly string[],
): NetworkProfile {
  return {
    name: "devnet",
    chainId: chain.chainId,
    rpcUrls: [chain.publicRpcUrl],
    contracts: deployment.contracts,
    deployedAtBlock: deployment.fromBlock,
    gateways,
    source: "the running devnet",
  };
}

/** Writes `<stateDir>/network.json`, removed by the teardown after everything else. */
async function writeProfileFile(
  stateDir: string,
  profile: NetworkProfile,
  teardown: Teardown,
): Promise<string> {
  const path = resolve(stateDir, "network.json");
  await writeFileAtomic(path, JSON.stringify(networkProfileJson(profile), null, 2) + "\n", {
    mode: 0o644,
  });
  teardown.addLast(() => Deno.remove(path).catch(() => {}));
  return path;
}

/** Writes `<stateDir>/devnet.env`, removed by the teardown after everything else. */
async function writeEnvFile(
  stateDir: string,
  env: Record<string, string>,
  teardown: Teardown,
): Promise<string> {
  const path = `${stateDir.replace(/\/+$/, "")}/devnet.env`;
  const text = "# Written by `deno task devnet`; removed when it stops.\n" +
    Object.entries(env).map(([k, v]) => `${k}=${v}`).join("\n") + "\n";
  await writeFileAtomic(path, text);
  teardown.addLast(() => Deno.remove(path).catch(() => {}));
  return path;
}

/** Starts the background work: blocks, settlements, emission, gateway refresh. */
function startLoops(
  loops: Loops,
  options: DevnetOptions,
  work: {
    chain: DevnetChain;
    epochSeconds: number;
    settle: () => Promise<void>;
    emit: () => Promise<void>;
  },
  refresh: () => Promise<void>,
): void {
  loops.every(options.blockIntervalMs ?? 1000, "block heartbeat", () => mineBlock(work.chain));
  loops.every(options.settleIntervalMs ?? 10_000, "settlement", work.settle);
  loops.every(work.epochSeconds * 1000, "emission", work.emit);
  loops.every(options.refreshIntervalMs ?? 2000, "gateway refresh", refresh);
}

/** Starts the reference network. Everything started is stopped again if a step fails. */
export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const log = options.log ?? (() => {});
  const teardown = new Teardown(log);
  const loops = new Loops(log);
  // The background work first (no round may touch a chain or server being stopped), then
  // everything started, last first: the chain after what uses it.
  const stop = async () => {
    await loops.stop();
    await teardown.run();
  };
  try {
    // 1. The chain: our own anvil, or an existing dev chain; the contracts.
    const hostname = options.hostname ?? "127.0.0.1";
    const publicHost = advertisedHost(hostname, options.publicHost);
    const fixed = options.ports === "fixed";
    const chain = await startChain(
      {
        rpcUrl: options.rpcUrl,
        port: fixed ? DEVNET_PORTS.anvil : 0,
        hostname,
        publicHost,
        anvilBinary: options.anvilBinary,
        detached: options.detachChain,
      },
      teardown,
      log,
    );
    const epochSeconds = options.epochSeconds ?? 60;
    const deployment = await deployDevnet(chain.owner, BigInt(epochSeconds));
    const { registry, staking } = deployment.contracts;
    log(`contracts deployed: registry ${registry}, staking ${staking}`);
    const payments = options.payments ?? "settler";
    const vouchers: VoucherChain = {
      chainUrl: chain.chainUrl,
      chainId: chain.chainId,
      escrow: deployment.contracts.escrow,
    };
    const reader = payments === "vouchers" ? await tillClient(vouchers) : undefined;

    // 2. Live providers and the routers that carry them, each on its own port.
    const serve = { fixed, hostname, publicHost, teardown, log };
    const providers = await startProviders({
      verified: options.verifiedProviders ?? 2,
      tee: options.teeProviders ?? 1,
      engine: options.engine ?? engineFor(options),
      attester: options.attester,
      payments: reader && ((address) => tillOptions(reader, vouchers, address)),
      receiptKey: options.receiptKey,
    }, serve);
    const routerUrls = startRouters(options.routers ?? 2, providers, serve).map((r) => r.url);

    // 3. On-chain registration of everything, with providers that are not live.
    const offline = options.offlineProviders ?? 2;
    const underbonded = options.underbondedProviders ?? 1;
    const registered = await registerDevnet(chain, deployment, providers, {
      offline,
      underbonded,
      routerUrls,
    });
    log(
      `registered ${providers.length} live, ${offline} offline and ${underbonded} ` +
        `under-bonded providers, ${registered.validators} validators, ` +
        `${routerUrls.length} routers`,
    );

    // 4. Gateways, then the background work of a live network.
    if (payments === "vouchers") await fundProviders(chain.owner, providers, PROVIDER_GAS);
    const gateways: DevnetGateways = await startGateways(options.gateways ?? 2, routerUrls, serve);
    let settling = Promise.resolve();
    const settleOnce = async () => {
      if (payments === "vouchers") {
        const paid = await redeemClaims(vouchers, providers, log);
        if (paid > 0) log(`providers redeemed ${paid} voucher(s)`);
        return;
      }
      const settled = await settleUsage(chain, deployment, providers);
      if (settled > 0) log(`settled usage of ${settled} provider(s)`);
    };
    // One settlement at a time, whether the loop or a caller asks for it.
    const settleNow = () => settling = settling.catch(() => {}).then(settleOnce);
    startLoops(loops, options, {
      chain,
      epochSeconds,
      settle: settleNow,
      emit: () => emitFinishedEpochs(chain, deployment),
    }, () => refreshGateways(gateways));

    // 5. The network profile and the environment the indexer and the daemon need.
    const gatewayUrls = gateways.servers.map((g) => g.url);
    const profile = devnetProfile(chain, deployment, gatewayUrls);
    const env = devnetEnv(chain, deployment, {
      gateways: gatewayUrls,
      routers: routerUrls,
      providers: providers.map((p) => p.url),
    });
    let profilePath: string | null = null;
    if (options.stateDir) {
      profilePath = await writeProfileFile(options.stateDir, profile, teardown);
      env.NET_NETWORK = profilePath;
      log(`wrote ${profilePath}`);
      log(`wrote ${await writeEnvFile(options.stateDir, env, teardown)}`);
    }

    return {
      rpcUrl: chain.publicRpcUrl,
      chainId: chain.chainId,
      contracts: deployment.contracts,
      fromBlock: deployment.fromBlock,
      providers,
      routers: routerUrls,
      gateways: gatewayUrls,
      gatewayPeers: gateways.peers,
      env,
      profile,
      profilePath,
      payments,
      settleNow,
      fundConsumer: (consumer, amount) =>
        depositFor(chain.consumer, deployment.contracts.escrow, consumer, amount),
      stopBackground: () => loops.stop(),
      stop,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
