/**
 * What paying by voucher adds to a request as users run it: the daemon in a process of its own
 * (`daemon/main.ts`), the gateways and providers in another (`_voucher_network.ts`), a real anvil
 * with the Escrow, the Registry and a consumer deposit in a third, and this process the client.
 * The same short chat at c=1 with no token delay through the daemon's HTTP API (OpenAI
 * dialect), (a) sealed without a voucher — a daemon run with `--insecure-gateway-keys` (no
 * chain, so no account: it pays nothing) to a provider that takes none — and (b) sealed with a
 * voucher — a daemon run on the chain (`NET_EVM_*`, `--consumer-key-file`) to a provider that
 * checks each voucher and reads the consumer's account from the Escrow. Both providers are
 * registered and bonded on the Registry (the paying daemon checks their keys and ads there, its
 * reads cached); same engine, same HTTP layers, same hops. After 100 chats each to warm up, the
 * two alternate in blocks of 50 chats (400 each), whole replies and streamed, for a short reply
 * (~22 tokens) and a longer one (~212); the ratios are (b) ÷ (a). The CPU time per chat of the daemon's process and of the network's (from
 * `/proc`, in 10 ms ticks summed over the blocks) is shown too.
 *
 * `daemon_voucher_bench.ts` measures the same with everything in one thread (the worst case).
 *
 * `NET_BENCH_CPU_PROF=<dir>`: the two daemons and the network each write a V8 CPU profile there
 * when they stop (`deno run --cpu-prof`), named `daemon-without`, `daemon-with` and `network`.
 *
 * Run: `deno task bench` (or `deno run -A bench/daemon_voucher_processes_bench.ts`).
 *
 * @module
 */

import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { escrowAbi, registryAbi, stakingAbi } from "../chain/abi.ts";
import { startAnvil } from "../devnet/anvil.ts";
import { DEFAULT_DEPLOYMENT, deployContracts } from "../devnet/deploy.ts";
import { createSigner, devAccounts, sendAndConfirm } from "../devnet/signer.ts";
import { cell, type CellResult, type Child, cpuMs, merge, prompt, spawn } from "./_load_harness.ts";
import type { VoucherSide } from "./_voucher_network.ts";

const BLOCKS = 8;
const BLOCK = 50;
const WARMUP = 100;
/**
 * Prompt sizes: 10 words (about 22 tokens come back, as in `daemon_voucher_bench.ts`), and 200
 * (about 212, as in `daemon_load_bench.ts`): the voucher's work is the same for both, the chat's
 * is not.
 */
const SIZES = [10, 200];
const ETHER = 10n ** 18n;
const CPU_PROF_DIR = Deno.env.get("NET_BENCH_CPU_PROF");
const profile = (name: string): string[] =>
  CPU_PROF_DIR
    ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF_DIR}`, `--cpu-prof-name=${name}.cpuprofile`]
    : [];

const anvil = await startAnvil();
const children: Child[] = [];
const dirs: string[] = [];

/** Deploys the contracts, the consumer's deposit; starts the network and registers it. */
async function chainAndNetwork(consumer: `0x${string}`) {
  const chainId = anvil.chainId;
  const owner = createSigner(anvil.rpcUrl, devAccounts().owner, { chainId });
  const { contracts } = await deployContracts(owner, DEFAULT_DEPLOYMENT);
  await sendAndConfirm(owner, {
    address: contracts.escrow,
    abi: escrowAbi,
    functionName: "depositFor",
    args: [consumer],
    value: 1_000n * ETHER,
  });
  const network = await spawn(
    [
      ...profile("network"),
      "bench/_voucher_network.ts",
      anvil.rpcUrl,
      String(chainId),
      contracts.escrow,
    ],
    /^\{"free"/,
  );
  children.push(network);
  const sides = JSON.parse(network.line) as { free: VoucherSide; paid: VoucherSide };
  const both = [sides.free, sides.paid];
  await sendAndConfirm(owner, {
    address: contracts.registry,
    abi: registryAbi,
    functionName: "registerProviders",
    args: [both.map((p) => ({
      provider: p.provider,
      adCommitment: p.commitment,
      trustRoot: p.servingKey,
      tier: 0,
      active: true,
    }))],
  });
  await sendAndConfirm(owner, {
    address: contracts.staking,
    abi: stakingAbi,
    functionName: "stakeForMany",
    args: [both.map((p) => p.provider), both.map(() => 2_000n * ETHER)],
    value: 4_000n * ETHER,
  });
  return { contracts, sides, network };
}

/** `daemon/main.ts` pinned to `gateway`, with `flags` and `env`; its URL and process id. */
async function daemon(
  name: string,
  gateway: string,
  flags: string[],
  env?: Record<string, string>,
) {
  const dataDir = await Deno.makeTempDir({ prefix: "net-voucher-processes-" });
  dirs.push(dataDir);
  const child = await spawn(
    [
      ...profile(name),
      "daemon/main.ts",
      "--bind=127.0.0.1:0",
      `--gateway=${gateway}`,
      `--data-dir=${dataDir}`,
      ...flags.map((f) => f.replace("<data-dir>", dataDir)),
    ],
    /listening on http:\/\/127\.0\.0\.1:\d+/,
    env,
  );
  children.push(child);
  return { url: /http:\/\/127\.0\.0\.1:\d+/.exec(child.line)![0], pid: child.pid };
}

const consumerKey = generatePrivateKey();
try {
  const { contracts, sides, network } = await chainAndNetwork(
    privateKeyToAccount(consumerKey).address,
  );
  const keyDir = await Deno.makeTempDir({ prefix: "net-voucher-key-" });
  dirs.push(keyDir);
  const keyFile = join(keyDir, "consumer-key");
  await Deno.writeTextFile(keyFile, `${consumerKey}\n`, { mode: 0o600 });
  const free = await daemon("daemon-without", sides.free.gateway, ["--insecure-gateway-keys"]);
  const paid = await daemon("daemon-with", sides.paid.gateway, [`--consumer-key-file=${keyFile}`], {
    NET_EVM_RPC_URL: anvil.rpcUrl,
    NET_EVM_REGISTRY: contracts.registry,
    NET_EVM_STAKING: contracts.staking,
    NET_EVM_EMISSION: contracts.emission,
    NET_EVM_ESCROW: contracts.escrow,
  });
  const systems = { free, paid };

  const rows: Record<string, Record<string, string>> = {};
  const summary: string[] = [];
  for (const [words, stream] of SIZES.flatMap((w) => [[w, false], [w, true]] as const)) {
    const options = { c: 1, requests: BLOCK, stream, content: prompt(words) };
    for (const system of [free, paid]) {
      const warm = await cell(system.url, system.pid, { ...options, requests: WARMUP });
      if (warm.failed > 0) throw new Error(`the warm-up failed: ${warm.sample}`);
    }
    const runs = { free: [] as CellResult[], paid: [] as CellResult[] };
    const networkCpu = { free: 0, paid: 0 };
    for (let b = 0; b < BLOCKS; b++) {
      // The order alternates from block to block: a noisy second hits both.
      for (const which of b % 2 === 0 ? ["free", "paid"] as const : ["paid", "free"] as const) {
        const before = cpuMs(network.pid);
        runs[which].push(await cell(systems[which].url, systems[which].pid, options));
        networkCpu[which] += cpuMs(network.pid) - before;
      }
    }
    const [f, p] = [merge(runs.free), merge(runs.paid)];
    if (f.failed + p.failed > 0) summary.push(`failures: ${f.sample ?? p.sample}`);
    const perChat = (ms: number, r: CellResult) => (ms / r.ok).toFixed(2);
    rows[`~${words + 12} tokens, ${stream ? "streamed" : "whole"}`] = {
      "without voucher p50 (p99)": `${f.p50.toFixed(2)} ms (${f.p99.toFixed(2)})`,
      "with voucher p50 (p99)": `${p.p50.toFixed(2)} ms (${p.p99.toFixed(2)})`,
      "added p50": `${(p.p50 - f.p50).toFixed(2)} ms`,
      "ratio p50": `${(p.p50 / f.p50).toFixed(3)}×`,
      "ratio p99": `${(p.p99 / f.p99).toFixed(3)}×`,
      "daemon CPU per chat without / with": `${perChat(f.cpuMs, f)} / ${perChat(p.cpuMs, p)} ms`,
      "network CPU per chat without / with": `${perChat(networkCpu.free, f)} / ${
        perChat(networkCpu.paid, p)
      } ms`,
    };
  }
  const load = Deno.loadavg().map((x) => x.toFixed(2)).join(", ");
  console.log(
    `\nA chat at c=1, no token delay, through the daemon's API, each part in its own ` +
      `process (${BLOCKS * BLOCK} each, alternating blocks of ${BLOCK}; load average ${load}): ` +
      "sealed with a voucher (a daemon on the chain) ÷ sealed without (--insecure-gateway-keys)",
  );
  console.table(rows);
  for (const line of summary) console.log(line);
} finally {
  for (const child of children.reverse()) await child.stop();
  for (const dir of dirs) await Deno.remove(dir, { recursive: true });
  await anvil.stop();
}
