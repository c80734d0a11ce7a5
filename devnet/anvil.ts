/**
 * Starts and stops a local `anvil` chain: the pinned binary from `tools/setup.ts` on a random
 * free loopback port. (To run the chain in a container, run the project's image: its `devnet`
 * program starts this same binary inside it; `docs/decisions.md`, issue 20.)
 *
 * The instance is `AsyncDisposable`: `await using anvil = await startAnvil()` stops it when
 * the scope ends, also when a test fails. Instances still running when the process unloads
 * are killed.
 *
 * @example
 * ```ts ignore
 * import { startAnvil } from "./anvil.ts";
 *
 * await using anvil = await startAnvil({ chainId: 31337 });
 * console.log(anvil.rpcUrl); // http://127.0.0.1:<random port>
 * ```
 *
 * @module
 */

import { anvilBinary } from "../tools/setup.ts";

/** The mnemonic of anvil's default dev accounts (public; never use it for anything real). */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

/** Options of {@linkcode startAnvil}. */
export interface AnvilOptions {
  /**
   * The chain id.
   *
   * @default {31337}
   */
  chainId?: number;
  /**
   * Port to listen on. `0` lets anvil bind a free port itself (race-free); a fixed port is for
   * restarting a chain at the same URL (e.g. with `anvil_loadState` after `anvil_dumpState`).
   *
   * @default {0}
   */
  port?: number;
  /**
   * Timestamp (Unix seconds) of the genesis block. Later blocks follow the wall clock plus any
   * time travel (`evm_increaseTime`, `evm_setNextBlockTimestamp`).
   *
   * @default {the current time}
   */
  timestamp?: number;
  /**
   * Balance of each dev account, in ether.
   *
   * @default {1_000_000_000}
   */
  balanceEther?: number;
  /**
   * Number of dev accounts, derived from {@linkcode ANVIL_MNEMONIC}.
   *
   * @default {10}
   */
  accounts?: number;
  /**
   * Block gas limit.
   *
   * @default {30_000_000n}
   */
  gasLimit?: bigint;
  /**
   * Path of the anvil binary.
   *
   * @default {anvilBinary() from tools/setup.ts}
   */
  binary?: string;
  /**
   * Address to listen on. Use `0.0.0.0` to serve other hosts (containers).
   *
   * @default {"127.0.0.1"}
   */
  host?: string;
  /**
   * Run anvil in its own process group, so a terminal's Ctrl-C (SIGINT to the whole foreground
   * group) does not reach it and the program that started it stops it last, after what reads
   * the chain. Such a program must stop it on SIGINT, SIGTERM and SIGHUP; an instance still
   * running when the process unloads is killed either way.
   *
   * @default {false}
   */
  detached?: boolean;
  /**
   * How long to wait for anvil to accept RPC requests, in milliseconds.
   *
   * @default {30_000}
   */
  readyTimeoutMs?: number;
}

/** A running anvil chain. */
export interface AnvilInstance extends AsyncDisposable {
  /** The JSON-RPC URL, e.g. `http://127.0.0.1:40123`. */
  readonly rpcUrl: string;
  /** The port the RPC server listens on (on the host). */
  readonly port: number;
  /** The chain id. */
  readonly chainId: number;
  /** The last lines anvil printed, for error messages. */
  output(): string;
  /** Stops the chain and releases its port; idempotent. */
  stop(): Promise<void>;
}

const DEFAULTS = {
  chainId: 31337,
  balanceEther: 1_000_000_000,
  accounts: 10,
  gasLimit: 30_000_000n,
  readyTimeoutMs: 30_000,
} as const;

/** Kill functions of instances still running, for the unload handler. */
const running = new Set<() => void>();
let unloadHooked = false;

function hookUnload(): void {
  if (unloadHooked) return;
  unloadHooked = true;
  globalThis.addEventListener("unload", () => {
    for (const kill of running) kill();
  });
}

/** The command line `startAnvil` gives anvil (exported for the test that runs it with its own home). */
export function anvilArgs(options: AnvilOptions, port: number, host: string): string[] {
  const args = [
    "--host",
    host,
    "--port",
    String(port),
    "--chain-id",
    String(options.chainId ?? DEFAULTS.chainId),
    "--accounts",
    String(options.accounts ?? DEFAULTS.accounts),
    "--balance",
    String(options.balanceEther ?? DEFAULTS.balanceEther),
    "--gas-limit",
    String(options.gasLimit ?? DEFAULTS.gasLimit),
    "--mnemonic",
    ANVIL_MNEMONIC,
    "--color",
    "never",
    // Keep past states in memory only (anvil keeps the last few hundred): by default anvil
    // writes every older block's whole state as JSON under ~/.foundry/anvil/tmp and removes it
    // only on a clean exit — tens of GiB over a long test run, and never removed after a kill.
    // Nothing here reads state that far back (snapshots pin a block near the head).
    "--max-persisted-states",
    "0",
  ];
  if (options.timestamp !== undefined) args.push("--timestamp", String(options.timestamp));
  return args;
}

/**
 * Starts anvil and waits until it answers `eth_chainId` with the expected id.
 *
 * @throws {Error} when anvil exits early, prints no listening address, or does not answer
 * within `readyTimeoutMs`; the message carries anvil's last output.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilInstance> {
  const chainId = options.chainId ?? DEFAULTS.chainId;
  const timeoutMs = options.readyTimeoutMs ?? DEFAULTS.readyTimeoutMs;
  const binary = options.binary ?? anvilBinary();
  // Port 0 (the default): anvil binds a free port itself and prints it, so no other process
  // can race us for a port we picked.
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`Cannot start anvil: port must be 0–65535, found ${port}`);
  }
  const host = options.host ?? "127.0.0.1";
  const child = new Deno.Command(binary, {
    args: anvilArgs(options, port, host),
    detached: options.detached ?? false,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const remember = (line: string) => {
    lines.push(line);
    if (lines.length > 60) lines.shift();
  };
  const output = () => lines.join("\n");

  let resolveAddress: (port: number) => void;
  const address = new Promise<number>((resolve) => resolveAddress = resolve);
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoderStream();
    let pending = "";
    for await (const chunk of stream.pipeThrough(decoder)) {
      pending += chunk;
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const line of parts) {
        remember(line);
        const match = line.match(/Listening on [^\s:]+:(\d+)/);
        if (match) resolveAddress(Number(match[1]));
      }
    }
    if (pending) remember(pending);
  };
  // Keep reading both pipes until anvil exits: a pipe nobody reads would block or kill it.
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);

  let stopped = false;
  const killNow = () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  };
  running.add(killNow);
  hookUnload();
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      child.kill("SIGTERM");
    } catch {
      // already exited
    }
    const timer = setTimeout(killNow, 3000);
    try {
      await child.status;
      await drained;
    } finally {
      clearTimeout(timer);
      running.delete(killNow);
    }
  };

  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const bound = await raceStartup(address, child.status, deadline, output);
    const rpcUrl = `http://127.0.0.1:${bound}`;
    await waitForChainId(rpcUrl, chainId, deadline, output);
    return {
      rpcUrl,
      port: bound,
      chainId,
      output,
      stop,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function raceStartup(
  address: Promise<number>,
  status: Promise<Deno.CommandStatus>,
  deadline: AbortSignal,
  output: () => string,
): Promise<number> {
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () =>
      reject(new Error(`Cannot start anvil: no listening address within the timeout\n${output()}`));
    deadline.addEventListener("abort", onAbort, { once: true });
  });
  const exited = status.then((s): never => {
    throw new Error(
      `Cannot start anvil: it exited with code ${s.code} before listening\n${output()}`,
    );
  });
  try {
    return await Promise.race([address, exited, aborted]);
  } finally {
    deadline.removeEventListener("abort", onAbort);
    exited.catch(() => {});
    aborted.catch(() => {});
  }
}

async function waitForChainId(
  rpcUrl: string,
  chainId: number,
  deadline: AbortSignal,
  output: () => string,
): Promise<void> {
  let last: unknown;
  while (!deadline.aborted) {
    try {
      const response = await fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        signal: deadline,
      });
      const body = await response.json() as { result?: string };
      if (body.result !== undefined) {
        const found = Number(BigInt(body.result));
        if (found !== chainId) {
          throw new Error(`Cannot start anvil: chain id is ${found}, expected ${chainId}`);
        }
        return;
      }
      last = JSON.stringify(body);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith("Cannot start anvil")) throw error;
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `Cannot start anvil: ${rpcUrl} did not answer eth_chainId within the timeout (last: ${last})\n${output()}`,
  );
}
