/**
 * The devnet's servers: live providers of both tiers, routers that each carry a window of
 * them, and gateways that poll the routers and find each other by gossip. Each listens on its
 * own port; every server started is closed by the teardown.
 *
 * @module
 */

import type { Address, LocalAccount } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createGatewayKey, generateKeyPair } from "../crypto/mod.ts";
import { askPeer, GatewaySet } from "../daemon/mod.ts";
import type { Teardown } from "./_lifecycle.ts";
import { listen, type Listening } from "./_listen.ts";
import { devKey } from "./_onchain.ts";
import { RouterDirectory } from "./directory.ts";
import type { InferenceEngine } from "./engine.ts";
import { createGatewayHandler } from "./gateway.ts";
import type { ReceiptSigningKey } from "../crypto/mod.ts";
import { type Attester, DevnetProvider, type DevnetProviderOptions } from "./provider.ts";
import { createRouterHandler, pollProviders } from "./router.ts";

/** The fixed ports of `deno task devnet` / `deno task demo`. */
export const DEVNET_PORTS: {
  readonly anvil: number;
  readonly routers: number;
  readonly gateways: number;
  readonly providers: number;
} = Object.freeze({ anvil: 8545, routers: 8601, gateways: 8701, providers: 8801 });

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
  /** Its account: sends its own transactions (voucher redemptions). */
  account: LocalAccount;
}

/** Where the servers listen, and what stops them. */
export interface ServeOptions {
  /** The fixed ports of {@linkcode DEVNET_PORTS}, or free ones. */
  fixed: boolean;
  /** Listen address. */
  hostname: string;
  /** The host in every advertised URL. */
  publicHost: string;
  /** Closes every server started. */
  teardown: Teardown;
  /** Progress lines. */
  log: (line: string) => void;
}

/** Serves a handler that is only known once the server's URL is (it goes into an ad or a set). */
function serveLate(
  name: string,
  port: number,
  serve: ServeOptions,
): { server: Listening; handle: (handler: (req: Request) => Promise<Response>) => void } {
  let handler: (req: Request) => Promise<Response> = () =>
    Promise.resolve(new Response("starting", { status: 503 }));
  const server = listen(name, (req) => handler(req), {
    port: serve.fixed ? port : 0,
    hostname: serve.hostname,
    publicHost: serve.publicHost,
  });
  serve.teardown.add(() => server.close());
  return { server, handle: (h) => (handler = h) };
}

/** The providers to start. */
export interface ProvidersOptions {
  /** Live providers in the verified tier. */
  verified: number;
  /** Live providers in the TEE tier. */
  tee: number;
  /** The engine of the provider labelled `label` (the `index`-th live one). */
  engine: (label: string, index: number) => InferenceEngine;
  /** Produces attestations for TEE provider `index`. */
  attester?: (index: number) => Attester;
  /** The payment options of the provider at `address` (vouchers); none: requests are free. */
  payments?: (address: Address) => DevnetProviderOptions["payments"];
  /** The key that signs TEE provider `index`'s receipts (`null`: none). @default {its serving key} */
  receiptKey?: (index: number) => ReceiptSigningKey | null | undefined;
}

/** Starts the live providers, verified ones first, each with deterministic keys. */
export async function startProviders(
  options: ProvidersOptions,
  serve: ServeOptions,
): Promise<DevnetProviderInfo[]> {
  const tiers: ("verified" | "tee")[] = [
    ...Array(options.verified).fill("verified"),
    ...Array(options.tee).fill("tee"),
  ];
  const providers: DevnetProviderInfo[] = [];
  let teeIndex = 0;
  for (const [i, tier] of tiers.entries()) {
    const account = privateKeyToAccount(devKey(`provider/${i}`));
    const servingKey = privateKeyToAccount(devKey(`provider/${i}/serving`));
    const key = createGatewayKey(await generateKeyPair(), { keyId: 1 });
    const { server, handle } = serveLate(`provider ${i}`, DEVNET_PORTS.providers + i, serve);
    const address = account.address.toLowerCase() as Address;
    const provider = await DevnetProvider.create({
      provider: address,
      servingKey,
      tier,
      endpoint: server.url,
      engine: options.engine(`provider ${address.slice(0, 10)}… (${tier})`, i),
      key,
      attester: tier === "tee" ? options.attester?.(teeIndex) : undefined,
      receiptKey: tier === "tee" ? options.receiptKey?.(teeIndex++) : undefined,
      log: (m) => serve.log(m),
      payments: options.payments?.(address),
    });
    handle(provider.handler);
    providers.push({ address, tier, url: server.url, provider, account });
    serve.log(`provider ${address} (${tier}) at ${server.url}`);
  }
  return providers;
}

/** Starts `count` routers; each carries a window of the providers, so they overlap. */
export function startRouters(
  count: number,
  providers: readonly DevnetProviderInfo[],
  serve: ServeOptions,
): Listening[] {
  const routers: Listening[] = [];
  for (let r = 0; r < count; r++) {
    const carried = providers.filter((_, i) =>
      count === 1 || i % count === r || (i + 1) % count === r
    );
    const { server, handle } = serveLate(`router ${r}`, DEVNET_PORTS.routers + r, serve);
    handle(createRouterHandler({ source: pollProviders(carried.map((p) => p.url)) }));
    routers.push(server);
    serve.log(`router ${r} at ${server.url}, carrying ${carried.length} providers`);
  }
  return routers;
}

/** The devnet's gateways, their peer sets and their directories, in the same order. */
export interface DevnetGateways {
  /** The servers. */
  servers: Listening[];
  /** Each one's known peers. */
  peers: GatewaySet[];
  /** Each one's provider directory. */
  directories: RouterDirectory[];
}

/**
 * Starts `count` gateways polling the routers; each starts knowing only the next one (gossip
 * does the rest), and has polled the routers once when this returns.
 */
export async function startGateways(
  count: number,
  routerUrls: readonly string[],
  serve: ServeOptions,
): Promise<DevnetGateways> {
  const gateways: DevnetGateways = { servers: [], peers: [], directories: [] };
  for (let g = 0; g < count; g++) {
    const directory = new RouterDirectory(routerUrls, { log: (m) => serve.log(m) });
    const { server, handle } = serveLate(`gateway ${g}`, DEVNET_PORTS.gateways + g, serve);
    const peers = new GatewaySet({ self: server.url });
    handle(createGatewayHandler({ directory, peers, self: server.url }));
    gateways.servers.push(server);
    gateways.peers.push(peers);
    gateways.directories.push(directory);
  }
  for (let g = 0; g < count; g++) {
    if (count > 1) gateways.peers[g].add(gateways.servers[(g + 1) % count].url);
  }
  await Promise.all(gateways.directories.map((d) => d.refresh()));
  for (const [g, gateway] of gateways.servers.entries()) {
    serve.log(
      `gateway ${g} at ${gateway.url}, ${gateways.directories[g].entries().length} providers known`,
    );
  }
  return gateways;
}

/** One round of the gateways' background work: poll the routers, ask every known peer. */
export async function refreshGateways(gateways: DevnetGateways): Promise<void> {
  await Promise.all(gateways.directories.map((d) => d.refresh()));
  await Promise.all(gateways.peers.map(async (set) => {
    for (const { url } of set.entries()) {
      await askPeer(set, url, { timeoutMs: 1000 }).catch(() => {});
    }
  }));
}
