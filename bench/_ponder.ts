/**
 * The Ponder baseline of `indexer_ponder_bench.ts` (private to `bench/`): the app in
 * `bench/ponder/` (Ponder 0.16, PGlite), installed with npm into `bench/ponder/node_modules/`
 * the first time (git-ignored; never a dependency of the project), started with Node on a free
 * port, asked for its totals (`GET /totals`, the app's own route over its tables); and what both
 * benchmarked processes cost: resident memory from `/proc`, disk from `du`.
 *
 * @module
 */

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

/** Peak and current resident memory of a process, MiB (`/proc/<pid>/status`). */
export async function memoryOf(pid: number): Promise<{ peak: number; now: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
  return { peak: kib("VmHWM") / 1024, now: kib("VmRSS") / 1024 };
}

/** Bytes under `dir` (`du -sb`). */
export async function diskOf(dir: string): Promise<number> {
  const du = await new Deno.Command("du", { args: ["-sb", dir], stdout: "piped" }).output();
  return Number(new TextDecoder().decode(du.stdout).split("\t")[0]);
}
