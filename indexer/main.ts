/**
 * The indexer's entry point: `deno run -A indexer/main.ts` (or `deno task indexer`). It reads
 * the flags and environment ({@linkcode parseIndexerConfig}), starts the refresh loop and
 * serves the handler; SIGINT and SIGTERM shut it down gracefully (in-flight requests finish,
 * the running refresh is cancelled). `--help` prints every option.
 *
 * Before it serves, it checks its contracts (`checkNetworkContracts`): each address has code,
 * answers the interface of the contract it is given for, and the Registry and the Escrow name
 * the others. Wrong contracts stop it with exit code 2 and a message naming the variable, the
 * address and what it answered. When the chain cannot be reached at start, the indexer serves
 * its 503 and checks before its first snapshot (and stops then, if they are wrong).
 *
 * Exit codes: 0 after a graceful shutdown or `--help`, 2 for a configuration error (the
 * message names the flag or variable), contracts that are not the network's, or a
 * settlement-history store it cannot use (corrupt, from a newer version, of another chain, held
 * by another process: the message says which, and `--rebuild-history` rebuilds it), 1 when the
 * listen address cannot be bound.
 *
 * Every line goes through the structured logger (`io/log.ts`) in the format of `--log-format`
 * (`human`, today's lines, or `json`, one object a line): the announcements (`network`,
 * `listening on`, `shutting down`) on stdout, everything else on stderr.
 *
 * @example
 * ```sh
 * NET_EVM_ESCROW=0x… NET_EVM_STAKING=0x… NET_EVM_EMISSION=0x… NET_EVM_REGISTRY=0x… \
 *   deno run -A indexer/main.ts --bind 127.0.0.1:8088 --refresh-secs 30
 * ```
 *
 * @module
 */

import { type ChainClientOptions, createChainClient } from "../chain/client.ts";
import { checkNetworkContracts } from "../chain/contract_check.ts";
import { ChainConfigError, ChainReadError, ContractCheckError } from "../chain/errors.ts";
import { NetError } from "../errors.ts";
import { type HttpServer, listenUrls, serveHttp } from "../http/mod.ts";
import { logFormatHint, type Logger, programLogs } from "../io/log.ts";
import { type IndexerConfig, parseIndexerConfig } from "./config.ts";
import { createIndexerHandler } from "./handler.ts";
import { IndexerMetrics } from "./metrics.ts";
import { Refresher } from "./refresher.ts";
import { IndexerEvents } from "./events.ts";
import { defaultDataDir, type StoreError, type StoreLocation } from "./store/mod.ts";

/** How long a graceful shutdown waits for a running refresh to end, in milliseconds. */
const SHUTDOWN_REFRESH_WAIT_MS = 3_000;

const LABELS = {
  registry: "NET_EVM_REGISTRY",
  staking: "NET_EVM_STAKING",
  emission: "NET_EVM_EMISSION",
  escrow: "NET_EVM_ESCROW",
} as const;

/** The contract check, as the refresher runs it on every new chain client. */
function contractCheck(config: IndexerConfig) {
  return (client: Parameters<typeof checkNetworkContracts>[0]) =>
    checkNetworkContracts(client, config.contracts, {
      labels: LABELS,
      multicallAddress: config.multicall ?? undefined,
    });
}

/**
 * Checks the contracts before listening. Returns `false` (after printing why) when they are
 * not the network's; `true` when they are, or when the chain cannot be reached yet (the
 * refresher then checks them before its first snapshot).
 */
async function checkAtStart(
  config: IndexerConfig,
  client: ChainClientOptions,
  log: Logger,
): Promise<boolean> {
  try {
    const chain = await createChainClient(config.rpcUrls, {
      ...client,
      timeoutMs: 5_000,
      retryCount: 0,
    });
    await contractCheck(config)(chain);
    return true;
  } catch (error) {
    if (error instanceof ContractCheckError) {
      log.error(`indexer: Cannot start: ${error.message}`);
      return false;
    }
    if (error instanceof ChainConfigError && error.reason === "wrong_chain") {
      log.error(`indexer: Cannot start: ${error.shortMessage}`);
      return false;
    }
    if (error instanceof ChainConfigError || error instanceof ChainReadError) {
      log.warn(
        `indexer: cannot check the contracts yet (${error.shortMessage}); they are checked ` +
          "before the first snapshot",
      );
      return true;
    }
    throw error;
  }
}

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
    programLogs(logFormatHint(args, env, "NET_STATS_LOG_FORMAT"), "indexer").err.error(
      `indexer: ${error.message}`,
    );
    return 2;
  }
  if (parsed.help) {
    console.log(parsed.text);
    return 0;
  }
  const { config } = parsed;
  const log = programLogs(config.logFormat, "indexer");
  const metrics = new IndexerMetrics();
  const client: ChainClientOptions = {
    ...(config.multicall ? { multicallAddress: config.multicall } : {}),
    ...(config.chainId === null ? {} : { chainId: config.chainId }),
  };
  if (config.network) {
    log.out.info(`indexer: network ${config.network.name} (${config.network.source})`);
  }
  if (!await checkAtStart(config, { ...client, fetch: metrics.rpcFetch("check") }, log.err)) {
    return 2;
  }
  const { promise: stopped, resolve: stop } = Promise.withResolvers<
    Deno.Signal | "refused" | StoreError
  >();
  const history: StoreLocation = config.databaseUrl
    ? { databaseUrl: config.databaseUrl }
    : { dataDir: config.dataDir ?? defaultDataDir() };
  const events = new IndexerEvents();
  const refresher = new Refresher({
    rpcUrl: config.rpcUrls,
    ...(config.rpcMaxRps === null ? {} : { rpcMaxRps: config.rpcMaxRps }),
    contracts: config.contracts,
    refreshSecs: config.refreshSecs,
    staleAfterSecs: config.staleAfterSecs,
    routerTimeoutMs: config.routerTimeoutMs,
    scanFromBlock: config.scanFromBlock,
    confirmations: config.confirmations,
    client,
    checkContracts: contractCheck(config),
    onContractsRefused: (error) => {
      log.err.error(`indexer: Cannot continue: ${error.message}`);
      stop("refused");
    },
    history,
    rebuildHistory: config.rebuildHistory ? "always" : "never",
    onHistoryFatal: stop,
    log: log.err.sink(),
    metrics,
    events,
  });
  const handler = createIndexerHandler({
    state: () => refresher.state,
    rpc: () => refresher.rpcStatus(),
    events,
    teeEvidence: (address) => refresher.teeEvidence(address),
    readProviderHistory: (address) => refresher.readProviderHistory(address),
    log: log.err.errorLogger(),
    metrics,
  });
  let server: HttpServer;
  try {
    // Not Deno.serve: it has no header or idle timeout (http/serve.ts).
    server = await serveHttp(handler, {
      hostname: config.bind.hostname,
      port: config.bind.port,
      onError: (error) => log.err.error("indexer: cannot answer", undefined, error),
    });
  } catch (error) {
    log.err.error(
      `indexer: Cannot listen on ${config.bind.hostname}:${config.bind.port}: ${
        error instanceof Error ? error.message : error
      }`,
    );
    return 1;
  }
  for (const url of listenUrls(server)) log.out.info(`indexer: listening on ${url}`);
  refresher.start();

  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  const listeners = signals.map((signal) => {
    const listener = () => stop(signal);
    Deno.addSignalListener(signal, listener);
    return [signal, listener] as const;
  });
  const signal = await stopped;
  if (typeof signal !== "string") {
    log.err.error(`indexer: Cannot use the settlement history: ${signal.message}`);
  } else if (signal !== "refused") log.out.info(`indexer: ${signal} received, shutting down`);
  for (const [name, listener] of listeners) Deno.removeSignalListener(name, listener);
  // In-flight requests finish; a refresh blocked on a slow RPC call is not waited for long
  // (its result would be discarded anyway).
  let timer: ReturnType<typeof setTimeout> | undefined;
  events.close(); // open change streams end, so the server's shutdown does not wait for them
  await Promise.all([
    server.shutdown(),
    Promise.race([
      refresher.stop(),
      new Promise((resolve) => timer = setTimeout(resolve, SHUTDOWN_REFRESH_WAIT_MS)),
    ]),
  ]);
  clearTimeout(timer);
  return signal === "refused" || typeof signal !== "string" ? 2 : 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args, Deno.env.toObject()));
}
