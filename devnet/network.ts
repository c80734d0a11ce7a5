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

import { type Address, type Hex, keccak256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  type ChainContracts,
  emissionAbi,
  escrowAbi,
  registryAbi,
  stakingAbi,
} from "../chain/mod.ts";
import { createGatewayKey, generateKeyPair } from "../crypto/mod.ts";
import { askPeer, GatewaySet } from "../daemon/mod.ts";
import { writeFileAtomic } from "../io/atomic_write.ts";
import { startAnvil } from "./anvil.ts";
import { deployContracts, type DeploymentParams } from "./deploy.ts";
import { RouterDirectory } from "./directory.ts";
import { EchoEngine, type InferenceEngine } from "./engine.ts";
import { createGatewayHandler } from "./gateway.ts";
import { advertisedHost, listen, type Listening } from "./_listen.ts";
import { type Attester, DevnetProvider } from "./provider.ts";
import { createRouterHandler, pollProviders } from "./router.ts";
import { registerRoles } from "./seed.ts";
import { createSigner, devAccounts, type DevnetSigner, sendAndConfirm } from "./signer.ts";
import { UpstreamEngine } from "./upstream_engine.ts";

const ETHER = 10n ** 18n;

/** The fixed ports of `deno task devnet` / `deno task demo`. */
export const DEVNET_PORTS: {
  readonly anvil: number;
  readonly routers: number;
  readonly gateways: number;
  readonly providers: number;
} = Object.freeze({ anvil: 8545, routers: 8601, gateways: 8701, providers: 8801 });

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
  /** How often an empty block is mined (so settlements gain confirmations), in ms. @default {1000} */
  blockIntervalMs?: number;
  /** How often gateways poll routers and gossip, in ms. @default {2000} */
  refreshIntervalMs?: number;
  /** Produces attestations for TEE provider `index` (tests). @default {mock bundles} */
  attester?: (index: number) => Attester;
  /** Directory for `devnet.env` (written on start, removed on stop). */
  stateDir?: string;
  /** Progress lines. @default {() => {}} */
  log?: (line: string) => void;
  /** Path of the anvil binary. @default {anvilBinary()} */
  anvilBinary?: string;
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

/** A live provider of the devnet. */
export interface DevnetProviderInfo {
  /** The provider's Registry address. */
  address: Address;
  /** Its tier. */
  tier: "verified" | "tee";
  /** Where it listens. */
  url: string;
  /** The provider itself (usage, ad). */
  provider: DevnetProvider;
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
  /** Settles the usage served so far, now (the background loop does it periodically). */
  settleNow(): Promise<void>;
  /** Stops everything; idempotent. */
  stop(): Promise<void>;
}

/** Deterministic key for a devnet role (never use outside the devnet). */
function devKey(label: string): Hex {
  return keccak256(stringToBytes(`net-devnet/${label}`));
}

/** The chain id of an existing chain, or an error that names the URL. */
async function existingChainId(rpcUrl: string): Promise<number> {
  let answer: { result?: unknown; error?: { message?: string } };
  try {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(10_000),
    });
    answer = await response.json();
  } catch (cause) {
    throw new Error(
      `Cannot use the chain at ${rpcUrl}: it did not answer eth_chainId (${
        (cause as Error).message
      })`,
      { cause },
    );
  }
  if (typeof answer.result !== "string" || !/^0x[0-9a-f]+$/i.test(answer.result)) {
    throw new Error(
      `Cannot use the chain at ${rpcUrl}: eth_chainId answered ${
        JSON.stringify(answer).slice(0, 200)
      }; expected a hex chain id`,
    );
  }
  return Number(BigInt(answer.result));
}

/** What the devnet's seeding spends from dev accounts 0 (stakes) and 2 (the deposit), at most. */
const SEED_FUNDS = 200_000n * ETHER;

/** Refuses a chain on which the dev accounts cannot pay for the seeding. */
async function requireFunds(signers: DevnetSigner[], rpcUrl: string): Promise<void> {
  for (const signer of signers) {
    const balance = await signer.client.getBalance({ address: signer.account.address });
    if (balance < SEED_FUNDS) {
      throw new Error(
        `Cannot use the chain at ${rpcUrl}: dev account ${signer.account.address} holds ` +
          `${balance / ETHER} ether; expected at least ${SEED_FUNDS / ETHER} (a dev chain whose ` +
          "accounts come from anvil's test mnemonic, e.g. `anvil --balance 1000000`)",
      );
    }
  }
}

/** Starts the reference network. Everything started is stopped again if a step fails. */
export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const log = options.log ?? (() => {});
  const fixed = options.ports === "fixed";
  const port = (base: number, i: number) => (fixed ? base + i : 0);
  const cleanup: (() => Promise<void> | void)[] = [];
  const timers: ReturnType<typeof setInterval>[] = [];
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const timer of timers) clearInterval(timer);
    for (const step of cleanup.reverse()) {
      try {
        await step();
      } catch (error) {
        log(`devnet: while stopping: ${(error as Error).message}`);
      }
    }
  };

  try {
    // 1. The chain: our own anvil, or an existing dev chain.
    const hostname = options.hostname ?? "127.0.0.1";
    const publicHost = advertisedHost(hostname, options.publicHost);
    let chainUrl: string;
    let publicRpcUrl: string;
    let chainId: number;
    if (options.rpcUrl) {
      chainUrl = publicRpcUrl = options.rpcUrl;
      chainId = await existingChainId(options.rpcUrl);
      log(`using the chain at ${options.rpcUrl} (chain ${chainId})`);
    } else {
      const anvil = await startAnvil({
        port: port(DEVNET_PORTS.anvil, 0),
        binary: options.anvilBinary,
        host: hostname,
      });
      cleanup.push(() => anvil.stop());
      chainUrl = anvil.rpcUrl;
      publicRpcUrl = `http://${publicHost}:${anvil.port}`;
      chainId = anvil.chainId;
      log(`anvil ready at ${publicRpcUrl} (chain ${chainId})`);
    }
    const serveOn = (p: number) => ({ port: p, hostname, publicHost });

    const accounts = devAccounts();
    const chain = { chainId };
    const owner = createSigner(chainUrl, accounts.owner, chain);
    const settler = createSigner(chainUrl, accounts.settler, chain);
    const consumer = createSigner(chainUrl, accounts.consumer, chain);
    if (options.rpcUrl) await requireFunds([owner, consumer], options.rpcUrl);
    const epochSeconds = BigInt(options.epochSeconds ?? 60);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const params: DeploymentParams = {
      minProviderBond: 1_000n * ETHER,
      unbondingPeriod: 7n * 86_400n,
      emission: {
        // Two epochs in the past, so the network is past epoch 0 from the start.
        genesisTime: now - 2n * epochSeconds,
        epochLength: epochSeconds,
        initialReward: 1_000n * ETHER,
        halvingInterval: 100n,
        cap: 1_000_000n * ETHER,
      },
    };
    const deployment = await deployContracts(owner, params);
    const { registry, staking, emission, escrow } = deployment.contracts;
    log(`contracts deployed: registry ${registry}, staking ${staking}`);

    // 2. Live providers, each on its own port.
    const engine = (label: string): InferenceEngine =>
      options.upstream
        ? new UpstreamEngine(options.upstream, { apiKey: options.upstreamApiKey })
        : new EchoEngine({ tokenDelayMs: options.tokenDelayMs ?? 15, servedBy: label });
    const tiers: ("verified" | "tee")[] = [
      ...Array(options.verifiedProviders ?? 2).fill("verified"),
      ...Array(options.teeProviders ?? 1).fill("tee"),
    ];
    const providers: DevnetProviderInfo[] = [];
    let teeIndex = 0;
    for (const [i, tier] of tiers.entries()) {
      const account = privateKeyToAccount(devKey(`provider/${i}`));
      const servingKey = privateKeyToAccount(devKey(`provider/${i}/serving`));
      const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
      let handler: (req: Request) => Promise<Response> = () =>
        Promise.resolve(new Response("starting", { status: 503 }));
      const server = listen(
        `provider ${i}`,
        (req) => handler(req),
        serveOn(port(DEVNET_PORTS.providers, i)),
      );
      cleanup.push(() => server.close());
      const address = account.address.toLowerCase() as Address;
      const provider = await DevnetProvider.create({
        provider: address,
        servingKey,
        tier,
        endpoint: server.url,
        engine: engine(`provider ${address.slice(0, 10)}… (${tier})`),
        key,
        attester: tier === "tee" ? options.attester?.(teeIndex++) : undefined,
        log: (m) => log(m),
      });
      handler = provider.handler;
      providers.push({ address, tier, url: server.url, provider });
      log(`provider ${address} (${tier}) at ${server.url}`);
    }

    // 3. Routers: each carries a window of the providers, so they overlap.
    const routerCount = options.routers ?? 2;
    const routers: Listening[] = [];
    for (let r = 0; r < routerCount; r++) {
      const carried = providers.filter((_, i) =>
        routerCount === 1 || i % routerCount === r || (i + 1) % routerCount === r
      );
      const server = listen(
        `router ${r}`,
        createRouterHandler({ source: pollProviders(carried.map((p) => p.url)) }),
        serveOn(port(DEVNET_PORTS.routers, r)),
      );
      cleanup.push(() => server.close());
      routers.push(server);
      log(`router ${r} at ${server.url}, carrying ${carried.length} providers`);
    }

    // 4. On-chain registration: providers (live, offline, under-bonded), stakes, validators,
    //    routers, measurements, the Escrow's settler and a consumer deposit.
    const offline = Array.from({ length: options.offlineProviders ?? 2 }, (_, i) => ({
      address: privateKeyToAccount(devKey(`offline/${i}`)).address.toLowerCase() as Address,
      trustRoot: privateKeyToAccount(devKey(`offline/${i}/serving`)).address,
      commitment: devKey(`offline/${i}/ad`),
      stake: 1_500n * ETHER,
    }));
    const underbonded = Array.from({ length: options.underbondedProviders ?? 1 }, (_, i) => ({
      address: privateKeyToAccount(devKey(`underbonded/${i}`)).address.toLowerCase() as Address,
      trustRoot: privateKeyToAccount(devKey(`underbonded/${i}/serving`)).address,
      commitment: devKey(`underbonded/${i}/ad`),
      stake: 400n * ETHER,
    }));
    await sendAndConfirm(owner, {
      address: registry,
      abi: registryAbi,
      functionName: "registerProviders",
      args: [[
        ...providers.map((p) => ({
          provider: p.address,
          adCommitment: p.provider.commitment,
          trustRoot: p.provider.ad.serving_key,
          tier: p.tier === "tee" ? 1 : 0,
          active: true,
        })),
        ...[...offline, ...underbonded].map((p) => ({
          provider: p.address,
          adCommitment: p.commitment,
          trustRoot: p.trustRoot,
          tier: 0,
          active: true,
        })),
      ]],
    });
    const validators = Array.from(
      { length: 5 },
      (_, i) => privateKeyToAccount(devKey(`validator/${i}`)).address,
    );
    const stakes = [
      ...providers.map((p, i) => ({
        account: p.address,
        amount: (2_000n + 500n * BigInt(i)) * ETHER,
      })),
      ...[...offline, ...underbonded].map((p) => ({ account: p.address, amount: p.stake })),
      ...validators.map((v) => ({ account: v, amount: 10_000n * ETHER })),
    ];
    await sendAndConfirm(owner, {
      address: staking,
      abi: stakingAbi,
      functionName: "stakeForMany",
      args: [stakes.map((s) => s.account), stakes.map((s) => s.amount)],
      value: stakes.reduce((sum, s) => sum + s.amount, 0n),
    });
    await registerRoles(owner, { registry, escrow }, {
      validators,
      routers: routers.map((router, r) => ({
        id: privateKeyToAccount(devKey(`router/${r}`)).address,
        url: router.url,
      })),
      measurements: Array.from({ length: 3 }, (_, m) => devKey(`measurement/${m}`)),
      settler: accounts.settler.address,
    });
    await sendAndConfirm(consumer, {
      address: escrow,
      abi: escrowAbi,
      functionName: "deposit",
      args: [],
      value: 100_000n * ETHER,
    });
    const emitFinished = async () => {
      try {
        await sendAndConfirm(owner, {
          address: emission,
          abi: emissionAbi,
          functionName: "emitFinishedEpochs",
          args: [accounts.owner.address, 1000n],
        });
      } catch (error) {
        // NoFinishedEpoch: nothing to emit yet.
        if (!/NoFinishedEpoch/.test(String(error))) throw error;
      }
    };
    await emitFinished();
    log(
      `registered ${providers.length} live, ${offline.length} offline and ${underbonded.length} ` +
        `under-bonded providers, ${validators.length} validators, ${routers.length} routers`,
    );

    // 5. Gateways: each polls the routers and starts knowing only the next gateway.
    const gatewayCount = options.gateways ?? 2;
    const gateways: Listening[] = [];
    const peers: GatewaySet[] = [];
    const directories: RouterDirectory[] = [];
    const routerUrls = routers.map((r) => r.url);
    for (let g = 0; g < gatewayCount; g++) {
      const directory = new RouterDirectory(routerUrls, { log: (m) => log(m) });
      let handler: (req: Request) => Promise<Response> = () =>
        Promise.resolve(new Response("starting", { status: 503 }));
      const server = listen(
        `gateway ${g}`,
        (req) => handler(req),
        serveOn(port(DEVNET_PORTS.gateways, g)),
      );
      cleanup.push(() => server.close());
      const set = new GatewaySet({ self: server.url });
      handler = createGatewayHandler({ directory, peers: set, self: server.url });
      gateways.push(server);
      peers.push(set);
      directories.push(directory);
    }
    for (let g = 0; g < gatewayCount; g++) {
      if (gatewayCount > 1) peers[g].add(gateways[(g + 1) % gatewayCount].url);
    }
    await Promise.all(directories.map((d) => d.refresh()));
    for (const [g, gateway] of gateways.entries()) {
      log(`gateway ${g} at ${gateway.url}, ${directories[g].entries().length} providers known`);
    }

    // 6. Background work, each loop single-flight.
    const every = (ms: number, name: string, work: () => Promise<unknown>) => {
      let running = false;
      timers.push(setInterval(async () => {
        if (running || stopped) return;
        running = true;
        try {
          await work();
        } catch (error) {
          if (!stopped) log(`devnet: ${name} failed: ${(error as Error).message}`);
        } finally {
          running = false;
        }
      }, ms));
    };
    const mine = (signer: DevnetSigner) => signer.client.request({ method: "evm_mine" as never });
    const settleNow = async () => {
      const items = providers
        .map((p) => ({ p, usage: p.provider.takeUsage() }))
        .filter(({ usage }) => usage.tokens > 0n);
      if (items.length === 0) return;
      try {
        await sendAndConfirm(settler, {
          address: escrow,
          abi: escrowAbi,
          functionName: "settleBatch",
          args: [items.map(({ p, usage }) => ({
            consumer: accounts.consumer.address,
            provider: p.address,
            amount: usage.amount,
            tokens: usage.tokens,
          }))],
        });
      } catch (error) {
        // Not settled: keep the usage for the next round instead of losing it.
        for (const { p, usage } of items) p.provider.restoreUsage(usage);
        throw error;
      }
      log(`settled usage of ${items.length} provider(s)`);
    };
    every(options.blockIntervalMs ?? 1000, "block heartbeat", () => mine(owner));
    every(options.settleIntervalMs ?? 10_000, "settlement", settleNow);
    every(Number(epochSeconds) * 1000, "emission", emitFinished);
    every(options.refreshIntervalMs ?? 2000, "gateway refresh", async () => {
      await Promise.all(directories.map((d) => d.refresh()));
      await Promise.all(peers.map(async (set) => {
        for (const { url } of set.entries()) {
          await askPeer(set, url, { timeoutMs: 1000 }).catch(() => {});
        }
      }));
    });

    // 7. The environment the indexer and the daemon need.
    const env: Record<string, string> = {
      NET_EVM_RPC_URL: publicRpcUrl,
      NET_EVM_REGISTRY: registry,
      NET_EVM_STAKING: staking,
      NET_EVM_EMISSION: emission,
      NET_EVM_ESCROW: escrow,
      NET_STATS_SCAN_FROM_BLOCK: deployment.fromBlock.toString(),
      // The daemon's gateway: with fixed ports its bootstrap list finds them anyway; with
      // ephemeral ones this is how a daemon started from this file reaches the network.
      NET_GATEWAY: gateways[0].url,
      NET_DEVNET_GATEWAYS: gateways.map((g) => g.url).join(","),
      NET_DEVNET_ROUTERS: routerUrls.join(","),
      NET_DEVNET_PROVIDERS: providers.map((p) => p.url).join(","),
    };
    if (options.stateDir) {
      const path = `${options.stateDir.replace(/\/+$/, "")}/devnet.env`;
      const text = "# Written by `deno task devnet`; removed when it stops.\n" +
        Object.entries(env).map(([k, v]) => `${k}=${v}`).join("\n") + "\n";
      await writeFileAtomic(path, text);
      cleanup.unshift(() => Deno.remove(path).catch(() => {}));
      log(`wrote ${path}`);
    }

    return {
      rpcUrl: publicRpcUrl,
      chainId,
      contracts: deployment.contracts,
      fromBlock: deployment.fromBlock,
      providers,
      routers: routerUrls,
      gateways: gateways.map((g) => g.url),
      gatewayPeers: peers,
      env,
      settleNow,
      stop,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
