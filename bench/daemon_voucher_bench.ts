/**
 * What paying by voucher adds to a request, measured in one run on one machine: the same short
 * chat at c=1 with no token delay through the daemon's HTTP API (OpenAI dialect), (a) sealed
 * without a voucher, to a provider that takes none, and (b) sealed with a voucher, to a provider
 * that checks it — the whole cost: the worst case priced, the caps checked, the voucher signed,
 * the attempt written to the ledger, at the provider the signature verified (the consumer's
 * cached key) and the account checked (its deposit read from a real anvil's Escrow, cached), and
 * the cost recorded when the reply ends. Same engine, same HTTP layers, one gateway each with
 * one provider; the two systems alternate in blocks of 50 chats (after 100 each to warm up),
 * whole replies and streamed, and the ratios are (b) ÷ (a). The CPU time this process spent per
 * chat (daemon, gateway and provider together) is shown too: on a busy machine it is the figure
 * least moved by the other processes. Then each part of the voucher's work is timed alone
 * (`_voucher_parts.ts`), to set their sum against what the voucher adds to a chat. This is the
 * worst case (everything on one thread); `daemon_voucher_processes_bench.ts` measures the same
 * as users run it, the daemon in a process of its own.
 *
 * Run: `deno task bench` (or `deno bench -A bench/daemon_voucher_bench.ts`).
 *
 * @module
 */

import process from "node:process";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { escrowAbi } from "../chain/abi.ts";
import { createChainClient } from "../chain/client.ts";
import { VoucherSigner } from "../chain/voucher.ts";
import { DaemonPayments, Ledger } from "../daemon/account/mod.ts";
import type { DaemonConfig } from "../daemon/service/config.ts";
import { createDaemon } from "../daemon/service/daemon.ts";
import { startAnvil } from "../devnet/anvil.ts";
import { DEFAULT_DEPLOYMENT, deployContracts } from "../devnet/deploy.ts";
import { createSigner, devAccounts, sendAndConfirm } from "../devnet/signer.ts";
import { serve } from "../tests/_http.ts";
import { timeVoucherParts } from "./_voucher_parts.ts";
import { readAccount, startVoucherNetwork } from "./_voucher_network.ts";

const BLOCKS = 8;
const BLOCK = 50;
const WARMUP = 100;

const anvil = await startAnvil();
const chainId = anvil.chainId;
const owner = createSigner(anvil.rpcUrl, devAccounts().owner, { chainId });
const { contracts } = await deployContracts(owner, DEFAULT_DEPLOYMENT);
const domain = { chainId, escrow: contracts.escrow };
const consumerKey = generatePrivateKey();
await sendAndConfirm(owner, {
  address: contracts.escrow,
  abi: escrowAbi,
  functionName: "depositFor",
  args: [privateKeyToAccount(consumerKey).address],
  value: 10n ** 18n,
});
const client = await createChainClient(anvil.rpcUrl, { chainId });
const network = await startVoucherNetwork(client, domain);
const cleanup: (() => Promise<unknown> | unknown)[] = [() => anvil.stop(), () => network.close()];

/** A daemon pinned to `gateway`, paying with vouchers when `paid`; returns its URL. */
async function daemon(gateway: string, paid: boolean): Promise<string> {
  let handler: (req: Request) => Promise<Response> = () => Promise.resolve(new Response());
  const server = serve((req) => handler(req));
  const dataDir = await Deno.makeTempDir({ prefix: "net-voucher-bench-" });
  const config: DaemonConfig = {
    bind: { hostname: "127.0.0.1", port: server.port },
    gateway,
    dataDir,
    network: null,
    bootstrap: [],
    evm: null, // keys as the gateway lists them, as the daemon benchmarks measure
    insecureGatewayKeys: true,
    chainGraceSecs: 600,
    auth: { required: false, apiKey: null, apiKeyFile: null },
    measurementsFile: null,
    allowedOrigins: [],
    allowedHosts: [],
    maxBodyBytes: 4 << 20,
    maxQueue: 512,
    queueTimeoutSecs: 120,
    logFormat: "human",
    consumerKeyFile: null,
    maxSpend: null,
  };
  let payments: DaemonPayments | undefined;
  if (paid) {
    const ledger = await Ledger.open(`${dataDir}/ledger`, { log: () => {} });
    // Nonces prepared off the path, as the daemon's account signs (`daemon_account.ts`).
    const signer = new VoucherSigner(consumerKey, domain, { preparedNonces: 8 });
    signer.nonces!.refillLater();
    const paying = new DaemonPayments({ signer, ledger });
    payments = paying;
    cleanup.push(() => paying.close(), () => ledger.close());
  }
  const created = createDaemon(config, { port: server.port, log: () => {}, payments });
  handler = created.handler;
  cleanup.push(async () => {
    await server.close();
    await created.close();
    await Deno.remove(dataDir, { recursive: true });
  });
  return server.url;
}

const free = await daemon(network.free.gateway, false);
const paid = await daemon(network.paid.gateway, true);

async function chat(url: string, stream: boolean): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "net/verified/devnet/echo",
      stream,
      max_tokens: 64,
      messages: [{ role: "user", content: "one two three four five six seven eight nine ten" }],
    }),
  });
  if (!res.ok) throw new Error(`daemon answered ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

function percentile(times: number[], p: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

const rows: Record<string, Record<string, string>> = {};
for (const stream of [false, true]) {
  for (let i = 0; i < WARMUP; i++) {
    await chat(free, stream);
    await chat(paid, stream);
  }
  const times = { free: [] as number[], paid: [] as number[] };
  const cpu = { free: 0, paid: 0 };
  for (let b = 0; b < BLOCKS; b++) {
    // The order alternates from block to block: a noisy second hits both.
    for (const which of b % 2 === 0 ? ["free", "paid"] as const : ["paid", "free"] as const) {
      const before = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) {
        const t0 = performance.now();
        await chat(which === "free" ? free : paid, stream);
        times[which].push(performance.now() - t0);
      }
      const used = process.cpuUsage(before);
      cpu[which] += (used.user + used.system) / 1000;
    }
  }
  const [f50, p50] = [percentile(times.free, 0.5), percentile(times.paid, 0.5)];
  const [f99, p99] = [percentile(times.free, 0.99), percentile(times.paid, 0.99)];
  rows[stream ? "streamed" : "whole (stream: false)"] = {
    "without voucher p50 (p99)": `${f50.toFixed(2)} ms (${f99.toFixed(2)})`,
    "with voucher p50 (p99)": `${p50.toFixed(2)} ms (${p99.toFixed(2)})`,
    "added p50": `${(p50 - f50).toFixed(2)} ms`,
    "ratio p50": `${(p50 / f50).toFixed(3)}×`,
    "ratio p99": `${(p99 / f99).toFixed(3)}×`,
    // This process runs the daemon, the gateway and the provider: CPU per chat, both ends.
    "CPU per chat without / with": `${(cpu.free / times.free.length).toFixed(2)} / ${
      (cpu.paid / times.paid.length).toFixed(2)
    } ms`,
  };
}
const load = Deno.loadavg().map((x) => x.toFixed(2)).join(", ");
console.log(
  `\nA short chat at c=1, no token delay, through the daemon's API (${BLOCKS * BLOCK} each, ` +
    `alternating blocks of ${BLOCK}; load average ${load}): sealed with a voucher ÷ sealed without`,
);
console.table(rows);
// Where the added time goes: each part of the voucher's work, timed alone on this thread.
const parts = await timeVoucherParts(
  consumerKey,
  domain,
  (consumer) =>
    readAccount(client, contracts.escrow, consumer, "0x00000000000000000000000000000000000000aa"),
);
console.log(
  "\nThe voucher's parts, each timed alone on this thread (CPU µs per call, median of 7 rounds):",
);
console.table(parts);
for (const step of cleanup.reverse()) await step();
