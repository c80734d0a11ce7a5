/**
 * The daemon under load (issue 12), measured in one run on one machine, each part in its own
 * process: a network of 10 providers × 4 slots (`_load_network.ts`), the daemon
 * (`daemon/main.ts`), and the baseline — a plaintext relay through the same hops
 * (`_plain_relay.ts`: the daemon's HTTP server, scheduler and queue, the same gateway code, a
 * provider with the same engine and slots, no sealing).
 *
 * For token delays of 0 and 15 ms, non-streaming and streaming, at concurrency 1, 8, 40, 120
 * and 240 (closed loop; past 40 the daemon queues), the baseline and the daemon are run one
 * after the other (the order alternates from cell to cell) and each reports successes,
 * failures, p50/p99 latency of a whole chat, tokens/s, and the CPU time its relay process
 * spent per token; ratios are sealed ÷ plaintext.
 *
 * Then the soak: 200 concurrent streams against 10 providers × 20 slots at 15 ms per token, for
 * `NET_BENCH_SOAK_SECONDS` (default 60; the issue's goal is 600), printing the daemon's
 * resident memory as it goes.
 *
 * Environment: `NET_BENCH_LOAD_CONCURRENCY` (e.g. `1,8`), `NET_BENCH_LOAD_DELAYS` (e.g. `0`),
 * `NET_BENCH_SOAK_SECONDS` (0 skips the soak).
 *
 * Run: `deno task bench` (or `deno bench -A bench/daemon_load_bench.ts`).
 *
 * @module
 */

import { cell, type CellResult, type Child, prompt, rssMiB, spawn } from "./_load_harness.ts";

const list = (name: string, fallback: number[]) =>
  Deno.env.get(name)?.split(",").map(Number) ?? fallback;
const CONCURRENCY = list("NET_BENCH_LOAD_CONCURRENCY", [1, 8, 40, 120, 240]);
const DELAYS = list("NET_BENCH_LOAD_DELAYS", [0, 15]);
const SOAK_SECONDS = Number(Deno.env.get("NET_BENCH_SOAK_SECONDS") ?? 60);
const PROVIDERS = 10;
const SLOTS = 4;
/** The prompt: about 60 tokens come back. */
const WORDS = 48;

interface System {
  readonly name: "plaintext relay" | "sealed daemon";
  readonly url: string;
  readonly pid: number;
}

async function startSystems(slots: number, delay: number) {
  const children: Child[] = [];
  const network = await spawn(
    ["bench/_load_network.ts", String(PROVIDERS), String(slots), String(delay)],
    /^\{"sealed"/,
  );
  children.push(network);
  const gateways = JSON.parse(network.line) as { sealed: string; plain: string };
  const dataDir = await Deno.makeTempDir({ prefix: "net-load-bench-" });
  const daemon = await spawn(
    [
      "daemon/main.ts",
      "--bind=127.0.0.1:0",
      `--gateway=${gateways.sealed}`,
      `--data-dir=${dataDir}`,
    ],
    /listening on http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(daemon);
  const relay = await spawn(["bench/_plain_relay.ts", gateways.plain], /^\{"url"/);
  children.push(relay);
  const systems: System[] = [
    { name: "plaintext relay", url: JSON.parse(relay.line).url, pid: relay.pid },
    {
      name: "sealed daemon",
      url: /http:\/\/127\.0\.0\.1:\d+/.exec(daemon.line)![0],
      pid: daemon.pid,
    },
  ];
  return {
    systems,
    daemonPid: daemon.pid,
    stop: async () => {
      for (const child of children.reverse()) await child.stop();
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(1)} ms` : "—");
const ratio = (
  a: number,
  b: number,
) => (b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : "—");
const perToken = (
  r: CellResult,
) => (r.tokens > 0 ? `${Math.round(r.cpuMs * 1000 / r.tokens)} µs` : "—");

const rows: Record<string, Record<string, string | number>> = {};
const summary: string[] = [];
let flip = false;
for (const delay of DELAYS) {
  const { systems, stop } = await startSystems(SLOTS, delay);
  try {
    for (const system of systems) {
      await cell(system.url, system.pid, { c: 4, requests: 20, stream: true, content: prompt(8) });
    }
    for (const stream of [false, true]) {
      for (const c of CONCURRENCY) {
        const requests = Math.max(2 * c, delay > 0 ? 24 : 120);
        const results = new Map<string, CellResult>();
        flip = !flip;
        for (const system of flip ? systems : [...systems].reverse()) {
          results.set(
            system.name,
            await cell(system.url, system.pid, {
              c,
              requests,
              stream,
              content: prompt(WORDS),
            }),
          );
        }
        const plain = results.get("plaintext relay")!;
        const sealed = results.get("sealed daemon")!;
        const label = `${delay} ms/token, ${stream ? "stream" : "whole"}, c=${c}`;
        for (const [name, r] of [["plaintext", plain], ["sealed", sealed]] as const) {
          rows[`${label}, ${name}`] = {
            "ok/failed": `${r.ok}/${r.failed}`,
            p50: ms(r.p50),
            p99: ms(r.p99),
            "tokens/s": Math.round(r.tokens / r.seconds),
            "relay CPU/token": perToken(r),
            "p50 ratio": name === "sealed" ? ratio(sealed.p50, plain.p50) : "1.00×",
            "tokens/s ratio": name === "sealed"
              ? ratio(sealed.tokens / sealed.seconds, plain.tokens / plain.seconds)
              : "1.00×",
          };
          if (r.sample) summary.push(`${label}, ${name}: a failure: ${r.sample}`);
        }
        if (c === 1) {
          summary.push(
            `${label}: added by sealing: p50 ${ms(sealed.p50 - plain.p50)}, p99 ${
              ms(sealed.p99 - plain.p99)
            }`,
          );
        }
      }
    }
  } finally {
    await stop();
  }
}
console.log(
  `\nLoad: ${PROVIDERS} providers × ${SLOTS} slots, ~${WORDS + 12}-token replies, closed loop; ` +
    "each cell runs the plaintext relay and the sealed daemon one after the other:",
);
console.table(rows);
for (const line of summary) console.log(line);

if (SOAK_SECONDS > 0) {
  const streams = 200;
  const { systems, daemonPid, stop } = await startSystems(20, 15);
  const daemon = systems[1];
  try {
    console.log(
      `\nSoak: ${streams} concurrent streams for ${SOAK_SECONDS} s against ${PROVIDERS} × 20 ` +
        "slots, 15 ms per token; the daemon's resident memory:",
    );
    const until = performance.now() + SOAK_SECONDS * 1000;
    let ok = 0;
    let failed = 0;
    let sample: string | undefined;
    const series: Record<string, string | number>[] = [];
    const every = Math.max(5, Math.min(30, SOAK_SECONDS / 10)) * 1000;
    const sampler = setInterval(() => {
      series.push({
        "t (s)": Math.round((SOAK_SECONDS * 1000 - (until - performance.now())) / 1000),
        "RSS (MiB)": rssMiB(daemonPid).toFixed(1),
        ok,
        failed,
      });
      console.log(JSON.stringify(series.at(-1)));
    }, every);
    await Promise.all(Array.from({ length: streams }, async () => {
      while (performance.now() < until) {
        const r = await cell(daemon.url, daemon.pid, {
          c: 1,
          requests: 1,
          stream: true,
          content: prompt(WORDS),
        });
        ok += r.ok;
        failed += r.failed;
        sample ??= r.sample;
      }
    }));
    clearInterval(sampler);
    console.table(series);
    console.log(`Soak: ${ok} streams completed, ${failed} failed${sample ? ` (${sample})` : ""}.`);
  } finally {
    await stop();
  }
}
