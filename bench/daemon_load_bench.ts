/**
 * The daemon under load (issue 12), measured in one run on one machine, each part in its own
 * process: a network of 10 providers × 4 slots (`_load_network.ts`), the daemon
 * (`daemon/main.ts`), and the baseline — a plaintext relay through the same hops
 * (`_plain_relay.ts`: the daemon's HTTP server, scheduler and queue, the same gateway code, a
 * provider with the same engine, slots and batching, no sealing).
 *
 * Both systems are first warmed up (200 chats each, whole and streamed: the table measures the
 * steady state, not the JIT compiling the sealed path). Then, for token delays of 0 and 15 ms,
 * non-streaming and streaming, at concurrency 1, 8, 40, 120 and 240 (closed loop; past 40 the
 * daemon queues), the baseline and the daemon are run one after the other (the order alternates
 * from cell to cell; at c=1 with no delay, in blocks of 50 chats alternating, 400 chats each, so
 * that a p99 is a p99 and a noisy second hits both) and each reports successes,
 * failures, p50/p99 latency of a whole chat (~210-token replies), tokens/s, and — with no token
 * delay, when the processes are busy — the CPU time its relay process spent per token (with a
 * delay, an idle runtime's wake-ups dominate that figure, so it is not shown); ratios are
 * sealed ÷ plaintext.
 *
 * Then the saturated case: 15 ms per token, streamed, at concurrency 120 and 240, while two busy
 * loops (a process of their own) compete for the CPU — the daemon must not hold a provider slot
 * longer than the work needs, or the queue's deadline answers the requests that wait 503. Each
 * system gets both concurrencies with the loops running, the order alternating, and each cell
 * has connections of its own (`_load_harness.ts`: none left idle by an earlier cell, which the
 * server closed meanwhile, is reused). The sealed daemon reads its replies the way the plaintext
 * relay reads TCP: what one read of the sealed stream brings is opened and decoded as one piece
 * (`openedBodyReader`); with 15 ms per token that is still one event per sealed chunk. The table
 * also counts the relaying process's write system calls per token (`/proc/<pid>/io`).
 *
 * Then the soak: 200 concurrent streams against 10 providers × 20 slots at 15 ms per token, for
 * `NET_BENCH_SOAK_SECONDS` (default 60; the issue's goal is 600), printing the daemon's
 * resident memory as it goes.
 *
 * Environment: `NET_BENCH_LOAD_CONCURRENCY` (e.g. `1,8`), `NET_BENCH_LOAD_DELAYS` (e.g. `0`;
 * `none` skips the table), `NET_BENCH_LOAD_REQUESTS` (chats per cell with no token delay,
 * default 100), `NET_BENCH_SATURATED_CONCURRENCY` (default `120,240`; `none` skips the saturated
 * case), `NET_BENCH_SOAK_SECONDS` (0 skips the soak), `NET_BENCH_CPU_PROF` (a folder: the daemon
 * and the plaintext relay write their V8 CPU profiles there when they stop),
 * `NET_BENCH_V8_FLAGS` (V8 flags for both the daemon and the plaintext relay).
 *
 * Run: `deno task bench` (or `deno run -A bench/daemon_load_bench.ts`).
 *
 * @module
 */

import {
  cell,
  type CellResult,
  type Child,
  merge,
  prompt,
  rssMiB,
  spawn,
} from "./_load_harness.ts";

/** A list of numbers from the environment; `none` is the empty list. */
const list = (name: string, fallback: number[]) => {
  const value = Deno.env.get(name);
  if (value === undefined) return fallback;
  return value === "none" ? [] : value.split(",").map(Number);
};
const CONCURRENCY = list("NET_BENCH_LOAD_CONCURRENCY", [1, 8, 40, 120, 240]);
const DELAYS = list("NET_BENCH_LOAD_DELAYS", [0, 15]);
const SATURATED = list("NET_BENCH_SATURATED_CONCURRENCY", [120, 240]);
const SOAK_SECONDS = Number(Deno.env.get("NET_BENCH_SOAK_SECONDS") ?? 60);
/** Chats per cell with no token delay (at least twice the concurrency). */
/**
 * `NET_BENCH_CPU_PROF=<dir>`: the daemon and the plaintext relay each write a V8 CPU profile
 * there when they stop (`deno run --cpu-prof`), named after the process.
 */
const CPU_PROF_DIR = Deno.env.get("NET_BENCH_CPU_PROF");
/**
 * `NET_BENCH_V8_FLAGS=<flags>` (e.g. `--max-semi-space-size=64`): V8 flags given to both the
 * daemon and the plaintext relay (`deno run --v8-flags=…`), so both run under the same runtime.
 */
const V8_FLAGS = Deno.env.get("NET_BENCH_V8_FLAGS");
const profile = (name: string): string[] => [
  ...(V8_FLAGS ? [`--v8-flags=${V8_FLAGS}`] : []),
  ...(CPU_PROF_DIR
    ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF_DIR}`, `--cpu-prof-name=${name}.cpuprofile`]
    : []),
];
const REQUESTS = Number(Deno.env.get("NET_BENCH_LOAD_REQUESTS") ?? 100);
const PROVIDERS = 10;
const SLOTS = 4;
/** The prompt: about 210 tokens come back (a chat answer of a few paragraphs). */
const WORDS = 200;

interface System {
  readonly name: "plaintext relay" | "sealed daemon";
  readonly url: string;
  readonly pid: number;
}

/** The network, the daemon and the plaintext relay, each in its own process. */
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
      ...profile("daemon"),
      "daemon/main.ts",
      "--bind=127.0.0.1:0",
      `--gateway=${gateways.sealed}`,
      `--data-dir=${dataDir}`,
      // The load network runs no chain (its providers are in-memory devnet providers, not
      // registered on one): the daemon trusts the keys its gateway lists, said so in the output.
      "--insecure-gateway-keys",
    ],
    /listening on http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(daemon);
  const relay = await spawn(
    [...profile("relay"), "bench/_plain_relay.ts", gateways.plain],
    /^\{"url"/,
  );
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
    stop: async () => {
      for (const child of children.reverse()) await child.stop();
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(1)} ms` : "—");
const ratio = (a: number, b: number) =>
  b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : "—";
const perToken = (r: CellResult) =>
  r.tokens > 0 ? `${Math.round(r.cpuMs * 1000 / r.tokens)} µs` : "—";

/** Every cell of the load table; returns its rows and the summary lines. */
async function runLoad() {
  const rows: Record<string, Record<string, string | number>> = {};
  const summary: string[] = [];
  let flip = false;
  for (const delay of DELAYS) {
    const { systems, stop } = await startSystems(SLOTS, delay);
    try {
      for (const system of systems) {
        for (const stream of [false, true]) {
          const requests = delay > 0 ? 8 : 200;
          await cell(system.url, system.pid, { c: 4, requests, stream, content: prompt(WORDS) });
        }
      }
      for (const stream of [false, true]) {
        for (const c of CONCURRENCY) {
          const blocked = c === 1 && delay === 0;
          const requests = blocked ? 50 : Math.max(2 * c, delay > 0 ? 12 : REQUESTS);
          const runs = new Map<string, CellResult[]>(systems.map((s) => [s.name, []]));
          for (let block = 0; block < (blocked ? 8 : 1); block++) {
            flip = !flip;
            for (const system of flip ? systems : [...systems].reverse()) {
              const options = { c, requests, stream, content: prompt(WORDS) };
              runs.get(system.name)!.push(await cell(system.url, system.pid, options));
            }
          }
          const results = new Map([...runs].map(([name, r]) => [name, merge(r)]));
          const plain = results.get("plaintext relay")!;
          const sealed = results.get("sealed daemon")!;
          const label = `${delay} ms/token, ${stream ? "stream" : "whole"}, c=${c}`;
          for (const [name, r] of [["plaintext", plain], ["sealed", sealed]] as const) {
            rows[`${label}, ${name}`] = {
              "ok/failed": `${r.ok}/${r.failed}`,
              p50: ms(r.p50),
              p99: ms(r.p99),
              "tokens/s": Math.round(r.tokens / r.seconds),
              "relay CPU/token": delay === 0 ? perToken(r) : "—",
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
  return { rows, summary };
}

/** Two busy loops in a process of their own (`_busy_loops.ts`), competing for the CPU. */
function busyLoops(): Promise<Child> {
  return spawn(["bench/_busy_loops.ts"], /^busy$/);
}

/** 15 ms per token, streamed, at each of `concurrency`, with the CPU saturated. */
async function runSaturated(concurrency: readonly number[]) {
  const rows: Record<string, Record<string, string | number>> = {};
  const summary: string[] = [];
  const { systems, stop } = await startSystems(SLOTS, 15);
  try {
    for (const system of systems) {
      await cell(system.url, system.pid, {
        c: 4,
        requests: 8,
        stream: true,
        content: prompt(WORDS),
      });
    }
    const loops = await busyLoops();
    try {
      let flip = false;
      for (const c of concurrency) {
        const results = new Map<string, CellResult>();
        flip = !flip;
        for (const system of flip ? systems : [...systems].reverse()) {
          const options = { c, requests: 2 * c, stream: true, content: prompt(WORDS) };
          results.set(system.name, await cell(system.url, system.pid, options));
        }
        const plain = results.get("plaintext relay")!;
        const sealed = results.get("sealed daemon")!;
        const label = `15 ms/token, stream, c=${c}, CPU saturated`;
        for (const [name, r] of [["plaintext", plain], ["sealed", sealed]] as const) {
          rows[`${label}, ${name}`] = {
            "ok/failed": `${r.ok}/${r.failed}`,
            p50: ms(r.p50),
            p99: ms(r.p99),
            "tokens/s": Math.round(r.tokens / r.seconds),
            "relay CPU/token": perToken(r),
            "writes/token": (r.writes / r.tokens).toFixed(2),
            "p50 ratio": name === "sealed" ? ratio(sealed.p50, plain.p50) : "1.00×",
            "CPU/token ratio": name === "sealed"
              ? ratio(sealed.cpuMs / sealed.tokens, plain.cpuMs / plain.tokens)
              : "1.00×",
          };
          if (r.sample) summary.push(`${label}, ${name}: a failure: ${r.sample}`);
        }
      }
    } finally {
      await loops.stop();
    }
  } finally {
    await stop();
  }
  return { rows, summary };
}

/** 200 concurrent streams for `seconds`, with the daemon's resident memory as it goes. */
async function runSoak(seconds: number) {
  const streams = 200;
  const { systems, stop } = await startSystems(20, 15);
  const daemon = systems[1];
  try {
    console.log(
      `\nSoak: ${streams} concurrent streams for ${seconds} s against ${PROVIDERS} × 20 slots, ` +
        "15 ms per token; the daemon's resident memory:",
    );
    const started = performance.now();
    const until = started + seconds * 1000;
    let ok = 0;
    let failed = 0;
    let sample: string | undefined;
    const series: Record<string, string | number>[] = [];
    const sampleNow = () => {
      series.push({
        "t (s)": Math.round((performance.now() - started) / 1000),
        "RSS (MiB)": rssMiB(daemon.pid).toFixed(1),
        "streams ok": ok,
        failed,
      });
      console.log(JSON.stringify(series.at(-1)));
    };
    sampleNow();
    const sampler = setInterval(sampleNow, Math.max(5, Math.min(30, seconds / 10)) * 1000);
    await Promise.all(Array.from({ length: streams }, async () => {
      while (performance.now() < until) {
        const content = prompt(WORDS);
        const r = await cell(daemon.url, daemon.pid, { c: 1, requests: 1, stream: true, content });
        ok += r.ok;
        failed += r.failed;
        sample ??= r.sample;
      }
    }));
    clearInterval(sampler);
    sampleNow();
    console.table(series);
    console.log(`Soak: ${ok} streams completed, ${failed} failed${sample ? ` (${sample})` : ""}.`);
  } finally {
    await stop();
  }
}

if (DELAYS.length > 0) {
  const { rows, summary } = await runLoad();
  console.log(
    `\nLoad: ${PROVIDERS} providers × ${SLOTS} slots, ~${WORDS + 12}-token replies, closed ` +
      "loop; each cell runs the plaintext relay and the sealed daemon one after the other. " +
      "The daemon runs with --insecure-gateway-keys (the load network has no chain: it trusts " +
      "the keys its gateway lists; every request is still sealed end to end):",
  );
  console.table(rows);
  for (const line of summary) console.log(line);
}
if (SATURATED.length > 0) {
  const { rows, summary } = await runSaturated(SATURATED);
  console.log(
    `\nSaturated: the same network and systems, 15 ms per token, streamed, with two busy loops ` +
      "competing for the CPU; a failure is the queue's deadline (503 overloaded) or a broken " +
      "connection (one sample of each system's failures follows the table):",
  );
  console.table(rows);
  for (const line of summary) console.log(line);
}
if (SOAK_SECONDS > 0) await runSoak(SOAK_SECONDS);
