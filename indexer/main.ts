/**
 * The indexer's entry point: `deno run -A indexer/main.ts` (or `deno task indexer`). It reads
 * the flags and environment ({@linkcode parseIndexerConfig}), starts the refresh loop and
 * serves the handler; SIGINT and SIGTERM shut it down gracefully (in-flight requests finish,
 * the running refresh is cancelled). `--help` prints every option.
 *
 * Exit codes: 0 after a graceful shutdown or `--help`, 2 for a configuration error (the
 * message names the flag or variable) or a settlement-history store it cannot use (corrupt,
 * from a newer version, of another chain, held by another process: the message says which,
 * and `--rebuild-history` rebuilds it), 1 when the listen address cannot be bound.
 *
 * @example
 * ```sh
 * NET_EVM_ESCROW=0x… NET_EVM_STAKING=0x… NET_EVM_EMISSION=0x… NET_EVM_REGISTRY=0x… \
 *   deno run -A indexer/main.ts --bind 127.0.0.1:8088 --refresh-secs 30
 * ```
 *
 * @module
 */

import { NetError } from "../errors.ts";
import { parseIndexerConfig } from "./config.ts";
import { createIndexerHandler } from "./handler.ts";
import { Refresher } from "./refresher.ts";
import { defaultDataDir, type StoreError, type StoreLocation } from "./store/mod.ts";

/** How long a graceful shutdown waits for a running refresh to end, in milliseconds. */
const SHUTDOWN_REFRESH_WAIT_MS = 3_000;

/** Runs the indexer until SIGINT/SIGTERM; returns the process exit code. */
export async function main(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  let parsed;
  try {
    parsed = parseIndexerConfig(args, env);
  } catch (error) {
    if (!(error instanceof NetError)) throw error;
    console.error(`indexer: ${error.message}`);
    return 2;
  }
  if (parsed.help) {
    console.log(parsed.text);
    return 0;
  }
  const { config } = parsed;
  const { promise: stopped, resolve: stop } = Promise.withResolvers<Deno.Signal | StoreError>();
  const history: StoreLocation = config.databaseUrl
    ? { databaseUrl: config.databaseUrl }
    : { dataDir: config.dataDir ?? defaultDataDir() };
  const refresher = new Refresher({
    rpcUrl: config.rpcUrl,
    contracts: config.contracts,
    refreshSecs: config.refreshSecs,
    staleAfterSecs: config.staleAfterSecs,
    routerTimeoutMs: config.routerTimeoutMs,
    scanFromBlock: config.scanFromBlock,
    confirmations: config.confirmations,
    client: config.multicall ? { multicallAddress: config.multicall } : {},
    history,
    rebuildHistory: config.rebuildHistory ? "always" : "never",
    onHistoryFatal: stop,
  });
  const handler = createIndexerHandler({
    state: () => refresher.state,
    readProviderHistory: (address) => refresher.readProviderHistory(address),
  });
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: config.bind.hostname,
      port: config.bind.port,
      onListen: ({ hostname, port }) => {
        const host = hostname.includes(":") ? `[${hostname}]` : hostname;
        console.log(`indexer: listening on http://${host}:${port}`);
      },
    }, handler);
  } catch (error) {
    console.error(
      `indexer: Cannot listen on ${config.bind.hostname}:${config.bind.port}: ${
        error instanceof Error ? error.message : error
      }`,
    );
    return 1;
  }
  refresher.start();

  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  const listeners = signals.map((signal) => {
    const listener = () => stop(signal);
    Deno.addSignalListener(signal, listener);
    return [signal, listener] as const;
  });
  const signal = await stopped;
  if (typeof signal === "string") console.log(`indexer: ${signal} received, shutting down`);
  else console.error(`indexer: Cannot use the settlement history: ${signal.message}`);
  for (const [name, listener] of listeners) Deno.removeSignalListener(name, listener);
  // In-flight requests finish; a refresh blocked on a slow RPC call is not waited for long
  // (its result would be discarded anyway).
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.all([
    server.shutdown(),
    Promise.race([
      refresher.stop(),
      new Promise((resolve) => timer = setTimeout(resolve, SHUTDOWN_REFRESH_WAIT_MS)),
    ]),
  ]);
  clearTimeout(timer);
  return typeof signal === "string" ? 0 : 2;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args, Deno.env.toObject()));
}
