/**
 * The Ponder baseline of `indexer_ponder_bench.ts` (private to `bench/`): the app in
 * `bench/ponder/` (Ponder 0.16, PGlite), installed with npm into `bench/ponder/node_modules/`
 * the first time (git-ignored; never a dependency of the project), started with Node on a free
 * port, asked for its totals (`GET /totals`, the app's own route over its tables); and what both
 * benchmarked processes cost: resident memory from `/proc`, disk from `du`.
 *
 * @module
 */

import { formatBreakdown, smapsOf } from "./_smaps.ts";
import { fileURLToPath } from "node:url";

const APP = fileURLToPath(new URL("./ponder/", import.meta.url));
const BIN = `${APP}node_modules/ponder/dist/esm/bin/ponder.js`;

/** Installs the app's dependencies with npm (once). */
export async function installPonder(): Promise<string> {
  try {
    await Deno.stat(BIN);
  } catch {
    const npm = await new Deno.Command("npm", {
      args: ["install", "--no-audit", "--no-fund", "--loglevel=error"],
      cwd: APP,
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!npm.success) throw new Error("npm install of bench/ponder failed");
  }
  const version = JSON.parse(
    await Deno.readTextFile(`${APP}node_modules/ponder/package.json`),
  ).version as string;
  return version;
}

/** A free loopback port (closed again: the process binds it next). */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A running Ponder app. */
export interface PonderProcess {
  /** Its base URL. */
  url: string;
  /** Its pid (the Node process). */
  pid: number;
  /** Its totals, or `null` while it does not answer them. */
  totals(): Promise<{ settlements: number; amount: string } | null>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
  /** What it printed. */
  output(): string;
}

/** Starts the app over `rpcUrl` with its PGlite data in `dataDir`. */
export function startPonder(options: {
  rpcUrl: string;
  chainId: number;
  escrow: string;
  startBlock: bigint;
  dataDir: string;
  getLogsRange: number;
}): PonderProcess {
  const port = freePort();
  const child = new Deno.Command("node", {
    args: [
      BIN,
      "start",
      "--schema",
      "bench",
      "--port",
      String(port),
      "--hostname",
      "127.0.0.1",
      "--log-level",
      "warn",
    ],
    cwd: APP,
    env: {
      PATH: Deno.env.get("PATH") ?? "",
      HOME: Deno.env.get("HOME") ?? "",
      NO_COLOR: "1",
      CI: "1",
      PONDER_TELEMETRY_DISABLED: "true",
      PONDER_RPC_URL: options.rpcUrl,
      PONDER_CHAIN_ID: String(options.chainId),
      PONDER_ESCROW: options.escrow,
      PONDER_START_BLOCK: String(options.startBlock),
      PONDER_PGLITE_DIR: options.dataDir,
      PONDER_GETLOGS_RANGE: String(options.getLogsRange),
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const drain = (stream: ReadableStream<Uint8Array>) =>
    (async () => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
    })();
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    pid: child.pid,
    async totals() {
      if (exited) {
        throw new Error(`Ponder exited (code ${(await status).code}):\n${text.slice(-3000)}`);
      }
      try {
        const response = await fetch(`${url}/totals`);
        if (response.status !== 200) {
          await response.body?.cancel();
          return null;
        }
        return await response.json();
      } catch {
        return null;
      }
    },
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      await status;
      await drained;
    },
    output: () => text,
  };
}

/** Resident memory of a process tree at one moment, MiB. */
export interface TreeMemory {
  /** The sum of every process's RSS (pages shared between them counted once per process). */
  rss: number;
  /** The sum of every process's PSS (each shared page divided among those that map it). */
  pss: number;
  /** The processes summed. */
  processes: number;
}

/** `pid` and its descendants (every thread's `children` list in `/proc`). */
function treeOf(pid: number): number[] {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    try {
      for (const task of Deno.readDirSync(`/proc/${all[i]}/task`)) {
        const listed = Deno.readTextFileSync(`/proc/${all[i]}/task/${task.name}/children`).trim();
        if (listed) all.push(...listed.split(" ").map(Number));
      }
    } catch {
      // exited while listed
    }
  }
  return all;
}

/** The resident memory of `pid` and its descendants now (`/proc/<pid>/smaps_rollup`). */
export function treeMemory(pid: number): TreeMemory {
  let rss = 0;
  let pss = 0;
  let processes = 0;
  for (const member of treeOf(pid)) {
    let rollup: string;
    try {
      rollup = Deno.readTextFileSync(`/proc/${member}/smaps_rollup`);
    } catch {
      continue; // exited while read
    }
    const kib = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? 0);
    rss += kib("Rss");
    pss += kib("Pss");
    processes++;
  }
  return { rss: rss / 1024, pss: pss / 1024, processes };
}

/**
 * Samples the memory of the tree under `pid` until stopped (every `everyMs`), keeping the
 * highest sums: a tree has no high-water mark of its own, and a child that has exited (the
 * indexer's store-creating process) takes its `VmHWM` along. A sample can miss a peak shorter
 * than its period; the top process's own `VmHWM` is kept too (a lower bound of the tree's).
 */
export function sampleTree(pid: number, everyMs = 100, breakdown = false): {
  stop(): { rss: number; pss: number; topHwm: number; most: number; atPeak: string[] };
} {
  let rss = 0;
  let pss = 0;
  let most = 0;
  let topHwm = 0;
  let atPeak: string[] = [];
  const sample = () => {
    const now = treeMemory(pid);
    rss = Math.max(rss, now.rss);
    if (now.pss > pss && breakdown) atPeak = treeBreakdown(pid);
    pss = Math.max(pss, now.pss);
    most = Math.max(most, now.processes);
    try {
      const status = Deno.readTextFileSync(`/proc/${pid}/status`);
      topHwm = Math.max(topHwm, Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 1024);
    } catch {
      // exited
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { rss, pss, topHwm, most, atPeak };
    },
  };
}

/** The smaps breakdown (`_smaps.ts`) of every process of the tree under `pid`, one line each. */
export function treeBreakdown(pid: number): string[] {
  return treeOf(pid).map((member) => `pid ${member}: ${formatBreakdown(smapsOf(member))}`);
}

/** Bytes under `dir` (`du -sb`). */
export async function diskOf(dir: string): Promise<number> {
  const du = await new Deno.Command("du", { args: ["-sb", dir], stdout: "piped" }).output();
  return Number(new TextDecoder().decode(du.stdout).split("\t")[0]);
}
