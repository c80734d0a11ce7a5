/**
 * Wires a {@linkcode DaemonConfig} into a running daemon's parts: the gateway resolver, the
 * trust sources (the network profile's chain, or a measurements file), the network backend,
 * the verdict log, the API key, and the request handler. `main.ts` serves the handler; tests
 * build a daemon the same way, passing test trust roots through
 * {@linkcode CreateDaemonOptions.roots} (never a flag).
 *
 * Trust is anchored on chain unless the configuration says `insecureGatewayKeys`: a config
 * with neither a chain nor that flag is refused. The chain client is created on first need and
 * checked before use: the endpoint must serve the profile's chain id, and the Registry must be
 * a Registry that names the configured Staking contract (`checkNetworkContracts`).
 *
 * @module
 */

import { join } from "node:path";
import { type ChainClient, checkNetworkContracts, createChainClient } from "../../chain/mod.ts";
import { NonceBook, type TrustRoots } from "../../crypto/tee/mod.ts";
import { VERSION } from "../../version.ts";
import { type ApiKey, resolveApiKey } from "./auth.ts";
import { type DaemonConfig, type EvmConfig, isLoopbackBind } from "./config.ts";
import { DEFAULT_GOSSIP_INTERVAL_MS, GatewayResolver } from "../gateway/mod.ts";
import { createDaemonHandler } from "./handler.ts";
import { DaemonMetrics } from "./metrics.ts";
import { NetworkBackend } from "../network/mod.ts";
import {
  chainMeasurements,
  fileMeasurements,
  type ProviderTrustOptions,
  ReceiptLog,
  registryRecords,
  VerdictLog,
} from "../trust/mod.ts";

/** Options of {@linkcode createDaemon}. */
export interface CreateDaemonOptions {
  /** The port the daemon is bound to (for the Host allowlist). */
  port: number;
  /** Trust anchors for TEE quotes: tests only. @default {the pinned vendor roots} */
  roots?: TrustRoots;
  /** Collateral policy. @default {DEFAULT_COLLATERAL_POLICY} */
  policy?: ProviderTrustOptions["policy"];
  /** Bootstrap gateways. @default {config.bootstrap} (the network profile's) */
  bootstrap?: readonly string[];
  /** How often {@linkcode Daemon.start} asks the gateway for peers again, ms. @default {300000} */
  gossipIntervalMs?: number;
  /**
   * The API key, instead of the configuration's sources (tests).
   *
   * @default {resolveApiKey(config.auth, config.dataDir)}
   */
  apiKey?: string;
  /** How long a chain read (Registry record, approved set) is reused, ms. @default {15000} */
  chainReuseMs?: number;
  /** How long one provider attempt may wait for its first chunk, ms. @default {60000} */
  attemptTimeoutMs?: number;
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Where warnings and refusals go (refusals with their full cause). @default {console.warn} */
  log?: (message: string, error?: unknown) => void;
}

/** A daemon's parts. */
export interface Daemon {
  /**
   * The request handler to serve. Pass `Deno.serve`'s `info` along: failed API keys are
   * counted per client address.
   */
  handler: (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response>;
  /**
   * The API key clients must present, once resolved (generated on first start when none is
   * configured), or `null` when none is required. A failure (an unreadable key file) rejects:
   * `main.ts` stops on it; until then, protected requests are refused.
   */
  apiKey: Promise<ApiKey | null>;
  /** Connects to a gateway in the background and starts the periodic gossip. */
  start(): void;
  /**
   * Stops the background work (`start`); resolves once the gossip round under way, if any, has
   * ended (its fetch and its write of the known set).
   */
  close(): Promise<void>;
  /** The gateway resolver (its known set is served on `/v1/gateways`). */
  resolver: GatewayResolver;
  /** The verification verdicts (served on `/v1/verdicts`). */
  verdicts: VerdictLog;
  /** The verified receipts of TEE replies (served on `/v1/verdicts/{id}`). */
  receipts: ReceiptLog;
  /** The network backend. */
  backend: NetworkBackend;
  /** The metrics served on `/metrics` (the handler's requests, the backend's work). */
  metrics: DaemonMetrics;
}

/**
 * The URL the daemon reaches itself at: its bind address, or loopback when it is bound to
 * every interface (`0.0.0.0`, `::`), which is not an address one can connect to.
 */
function ownUrl(hostname: string, port: number): string {
  if (hostname === "0.0.0.0") return `http://127.0.0.1:${port}`;
  if (hostname === "::") return `http://[::1]:${port}`;
  return `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
}

/** A chain client on the first endpoint that serves the right chain, with its contracts checked. */
function chainClientGetter(
  evm: EvmConfig,
  fetchImpl: typeof fetch | undefined,
): () => Promise<ChainClient> {
  let client: Promise<ChainClient> | undefined;
  const connect = async (): Promise<ChainClient> => {
    let last: unknown;
    for (const rpcUrl of evm.rpcUrls) {
      let candidate: ChainClient;
      try {
        candidate = await createChainClient(rpcUrl, {
          fetch: fetchImpl,
          timeoutMs: 5000,
          retryCount: 1,
          chainId: evm.chainId ?? undefined,
        });
      } catch (error) {
        last = error;
        continue;
      }
      // The Registry must be one and name this Staking: a typo does not become "no provider".
      await checkNetworkContracts(candidate, { registry: evm.registry, staking: evm.staking }, {
        labels: {
          registry: "the Registry (NET_EVM_REGISTRY)",
          staking: "the Staking contract (NET_EVM_STAKING)",
        },
      });
      return candidate;
    }
    throw last;
  };
  return () =>
    client ??= connect().catch((error) => {
      client = undefined; // try again on the next request
      throw error;
    });
}

/** The trust sources of the configuration: the chain's, and a measurements file. */
function trustOptions(
  config: DaemonConfig,
  options: CreateDaemonOptions,
  clock: () => Date,
  log: (message: string) => void,
): Omit<ProviderTrustOptions, "clock"> {
  const trust: Omit<ProviderTrustOptions, "clock"> = {
    nonces: new NonceBook(),
    roots: options.roots,
    policy: options.policy,
  };
  if (config.evm) {
    const getClient = chainClientGetter(config.evm, options.fetch);
    const sources = {
      clock,
      graceMs: config.chainGraceSecs * 1000,
      ttlMs: options.chainReuseMs,
      log,
    };
    const { registry, staking } = config.evm;
    trust.registry = registryRecords(getClient, { registry, staking }, sources);
    trust.measurements = chainMeasurements(getClient, registry, sources);
  } else if (!config.insecureGatewayKeys) {
    throw new RangeError(
      "Cannot create the daemon: it has no chain to check providers' keys against; give it a " +
        "network (evm) or set insecureGatewayKeys to trust the keys gateways list",
    );
  }
  if (config.measurementsFile) {
    // An explicit file wins over the chain's set for the TEE tier.
    trust.measurements = fileMeasurements(config.measurementsFile);
  }
  return trust;
}

/**
 * Builds a daemon from its configuration. Nothing is contacted until a request arrives (or
 * {@linkcode Daemon.start}); the API key is resolved in the background ({@linkcode Daemon.apiKey}).
 *
 * @throws {RangeError} for a configuration with neither a chain nor `insecureGatewayKeys`.
 */
export function createDaemon(config: DaemonConfig, options: CreateDaemonOptions): Daemon {
  const log = options.log ??
    ((message: string, error?: unknown) =>
      error === undefined ? console.warn(message) : console.warn(message, error));
  const clock = options.clock ?? (() => new Date());
  const trust = trustOptions(config, options, clock, log);
  const resolver = new GatewayResolver({
    pinned: config.gateway ?? undefined,
    // Gossip must never make the daemon a gateway of its own known set.
    self: ownUrl(config.bind.hostname, options.port),
    bootstrap: options.bootstrap ?? config.bootstrap,
    cachePath: join(config.dataDir, "gateways.json"),
    fetch: options.fetch,
    clock,
    log,
  });
  const verdicts = new VerdictLog();
  const receipts = new ReceiptLog();
  const metrics = new DaemonMetrics();
  const backend = new NetworkBackend({
    resolver,
    trust,
    verdicts,
    receipts,
    fetch: options.fetch,
    clock,
    attemptTimeoutMs: options.attemptTimeoutMs,
    maxQueue: config.maxQueue,
    queueTimeoutMs: config.queueTimeoutSecs * 1000,
    log: (line) => log(line),
    metrics,
  });
  metrics.watch(() => backend.load);
  const apiKey: Promise<ApiKey | null> = options.apiKey !== undefined
    ? Promise.resolve({ key: options.apiKey, source: "the caller", generated: false })
    : resolveApiKey(config.auth, config.dataDir, { log });
  apiKey.catch(() => {}); // main.ts reports it; requests fail closed meanwhile
  const handler = createDaemonHandler({
    backend,
    gateways: () => resolver.known.toJSON().gateways,
    verdicts,
    receipts,
    version: VERSION,
    port: options.port,
    hostnames: config.allowedHosts,
    anyHostWithKey: !isLoopbackBind(config.bind),
    allowedOrigins: config.allowedOrigins,
    maxBodyBytes: config.maxBodyBytes,
    apiKey: config.auth.required || options.apiKey !== undefined
      ? apiKey.then((found) => {
        if (!found) throw new Error("Cannot check API keys: none was resolved");
        return found.key;
      })
      : undefined,
    clock,
    log,
    metrics,
  });
  let gossip: Disposable | undefined;
  return {
    handler,
    apiKey,
    resolver,
    verdicts,
    receipts,
    backend,
    metrics,
    start: () => {
      gossip ??= resolver.startGossip({
        intervalMs: options.gossipIntervalMs ?? DEFAULT_GOSSIP_INTERVAL_MS,
      });
      void resolver.gossip();
    },
    close: async () => {
      gossip?.[Symbol.dispose]();
      gossip = undefined;
      await resolver.settled();
    },
  };
}
