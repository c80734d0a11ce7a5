/**
 * The network of the voucher benchmarks (private): two devnet providers with the echo engine at
 * no token delay, each behind a devnet gateway of its own — one that takes no voucher ("free"),
 * and one that checks each voucher against a consumer's account read from a real anvil's Escrow
 * ("paid"): the same engine, slots, HTTP layers and hops. `daemon_voucher_bench.ts` starts it in
 * its own process (its thread); `daemon_voucher_processes_bench.ts` runs this file as a process
 * of its own:
 *
 * `deno run -A bench/_voucher_network.ts <rpc URL> <chain id> <escrow>` prints one JSON line,
 * `{"free": Side, "paid": Side}` (each side its gateway's URL and what the Registry records of
 * its provider), then serves until stdin closes or a `SIGTERM`.
 *
 * @module
 */

import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readEscrowAccount } from "../chain/escrow_account.ts";
import { type ChainClient, createChainClient } from "../chain/client.ts";
import type { VoucherDomain } from "../chain/mod.ts";
import { createGatewayKey, generateKeyPair } from "../crypto/mod.ts";
import { GatewaySet } from "../daemon/gateway/gateway_set.ts";
import { EchoEngine } from "../devnet/engine.ts";
import { createGatewayHandler, oneProviderDirectory } from "../devnet/gateway.ts";
import { DevnetProvider } from "../devnet/provider.ts";
import type { ConsumerAccountReading } from "../devnet/provider_payments.ts";

/** One provider behind its gateway. */
export interface VoucherSide {
  /** The gateway's URL. */
  readonly gateway: string;
  /** The provider's address (lower case). */
  readonly provider: Address;
  /** Its ad's commitment (the Registry's `adCommitment`). */
  readonly commitment: Hex;
  /** Its serving key's address (the Registry's `trustRoot`). */
  readonly servingKey: Address;
}

/** The two sides, and how to stop them. */
export interface VoucherNetwork {
  /** A provider that takes no voucher. */
  readonly free: VoucherSide;
  /** A provider that checks each voucher and the consumer's account. */
  readonly paid: VoucherSide;
  /** Stops the servers. */
  close(): Promise<void>;
}

/** A consumer's account at `provider`, read from the Escrow. */
export async function readAccount(
  client: ChainClient,
  escrow: Address,
  consumer: Address,
  provider: Address,
): Promise<ConsumerAccountReading> {
  const account = await readEscrowAccount(client, escrow, consumer, { providers: [provider] });
  return { available: account.available, settled: account.settled.get(provider)! };
}

/** Starts the two providers and their gateways on loopback. */
export async function startVoucherNetwork(
  client: ChainClient,
  domain: VoucherDomain,
): Promise<VoucherNetwork> {
  const engine = new EchoEngine({ tokenDelayMs: 0, servedBy: "the voucher bench" });
  const servers: Deno.HttpServer[] = [];
  const listen = (handler: (req: Request) => Promise<Response>): string => {
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
    servers.push(server);
    return `http://127.0.0.1:${server.addr.port}`;
  };
  const side = async (index: number, paid: boolean): Promise<VoucherSide> => {
    let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
    const endpoint = listen((req) => handler(req));
    const address = privateKeyToAccount(`0x${String(index + 1).padStart(64, "0")}`).address
      .toLowerCase() as Address;
    const servingKey = privateKeyToAccount(`0x${String(index + 7).padStart(64, "0")}`);
    const provider = await DevnetProvider.create({
      provider: address,
      servingKey,
      tier: "verified",
      endpoint,
      engine,
      key: createGatewayKey(await generateKeyPair(), { keyId: 1 }),
      maxConcurrency: 64,
      log: () => {},
      ...(paid
        ? {
          payments: {
            domain,
            readAccount: (consumer: Address) =>
              readAccount(client, domain.escrow, consumer, address),
          },
        }
        : {}),
    });
    handler = provider.handler;
    let gatewayHandler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
    const gateway = listen((req) => gatewayHandler(req));
    gatewayHandler = createGatewayHandler({
      directory: oneProviderDirectory(provider.ad, 64),
      peers: new GatewaySet(),
      self: gateway,
      log: () => {},
    });
    return {
      gateway,
      provider: address,
      commitment: provider.commitment,
      servingKey: servingKey.address,
    };
  };
  return {
    free: await side(0, false),
    paid: await side(1, true),
    close: async () => {
      await Promise.all(servers.map((s) => s.shutdown()));
    },
  };
}

if (import.meta.main) {
  const [rpcUrl, chainId, escrow] = Deno.args;
  const client = await createChainClient(rpcUrl, { chainId: Number(chainId) });
  const network = await startVoucherNetwork(client, {
    chainId: Number(chainId),
    escrow: escrow as Address,
  });
  console.log(JSON.stringify({ free: network.free, paid: network.paid }));
  // Exit on SIGTERM too (a clean exit: `--cpu-prof` writes its profile).
  Deno.addSignalListener("SIGTERM", () => {
    network.close().finally(() => Deno.exit(0));
  });
  // Serve until the bench closes our stdin.
  for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
  await network.close();
}
