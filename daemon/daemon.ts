/**
 * Wires a {@linkcode DaemonConfig} into a running daemon's parts: the gateway resolver, the
 * trust sources (chain or measurements file), the network backend, the verdict log, and the
 * request handler. `main.ts` serves the handler; tests build a daemon the same way, passing
 * test trust roots through {@linkcode CreateDaemonOptions.roots} (never a flag).
 *
 * @module
 */

import { join } from "node:path";
import { type ChainClient, createChainClient } from "../chain/mod.ts";
import { NonceBook, type TrustRoots } from "../crypto/tee/mod.ts";
import { VERSION } from "../version.ts";
import type { DaemonConfig } from "./config.ts";
import { BOOTSTRAP_GATEWAYS, GatewayResolver } from "./gateway_resolver.ts";
import { createDaemonHandler } from "./handler.ts";
import { NetworkBackend } from "./network_backend.ts";
import type { ProviderTrustOptions } from "./provider_trust.ts";
import { chainMeasurements, fileMeasurements, registryRecords } from "./trust_sources.ts";
import { VerdictLog } from "./verdict_log.ts";

/** Options of {@linkcode createDaemon}. */
export interface CreateDaemonOptions {
  /** The port the daemon is bound to (for the Host allowlist). */
  port: number;
  /** Trust anchors for TEE quotes: tests only. @default {the pinned vendor roots} */
  roots?: TrustRoots;
  /** Collateral policy. @default {DEFAULT_COLLATERAL_POLICY} */
  policy?: ProviderTrustOptions["policy"];
  /** Compiled-in gateways. @default {BOOTSTRAP_GATEWAYS} */
  bootstrap?: readonly string[];
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
  /** The request handler to serve. */
  handler: (req: Request) => Promise<Response>;
  /** The gateway resolver (its known set is served on `/v1/gateways`). */
  resolver: GatewayResolver;
  /** The verification verdicts (served on `/v1/verdicts`). */
  verdicts: VerdictLog;
  /** The network backend. */
  backend: NetworkBackend;
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

/** Builds a daemon from its configuration. Nothing is contacted until a request arrives. */
export function createDaemon(config: DaemonConfig, options: CreateDaemonOptions): Daemon {
  const log = options.log ??
    ((message: string, error?: unknown) =>
      error === undefined ? console.warn(message) : console.warn(message, error));
  const clock = options.clock ?? (() => new Date());
  const resolver = new GatewayResolver({
    pinned: config.gateway ?? undefined,
    // Gossip must never make the daemon a gateway of its own known set.
    self: ownUrl(config.bind.hostname, options.port),
    bootstrap: options.bootstrap ?? BOOTSTRAP_GATEWAYS,
    cachePath: join(config.dataDir, "gateways.json"),
    fetch: options.fetch,
    clock,
    log,
  });
  const trust: Omit<ProviderTrustOptions, "clock"> = {
    nonces: new NonceBook(),
    roots: options.roots,
    policy: options.policy,
  };
  if (config.evm) {
    const { rpcUrl, registry, staking } = config.evm;
    let client: Promise<ChainClient> | undefined;
    const getClient = () =>
      client ??= createChainClient(rpcUrl, { fetch: options.fetch, timeoutMs: 5000, retryCount: 1 })
        .catch((error) => {
          client = undefined; // try again on the next request
          throw error;
        });
    trust.registry = registryRecords(getClient, { registry, staking }, { clock });
    trust.measurements = chainMeasurements(getClient, registry, { clock });
  }
  if (config.measurementsFile) {
    // An explicit file wins over the chain's set for the TEE tier.
    trust.measurements = fileMeasurements(config.measurementsFile);
  }
  const verdicts = new VerdictLog();
  const backend = new NetworkBackend({
    resolver,
    trust,
    verdicts,
    fetch: options.fetch,
    clock,
    attemptTimeoutMs: options.attemptTimeoutMs,
    maxQueue: config.maxQueue,
    queueTimeoutMs: config.queueTimeoutSecs * 1000,
    log: (line) => log(line),
  });
  const handler = createDaemonHandler({
    backend,
    gateways: () => resolver.known.toJSON().gateways,
    verdicts,
    version: VERSION,
    port: options.port,
    hostnames: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
    maxBodyBytes: config.maxBodyBytes,
    clock,
    log,
  });
  return { handler, resolver, verdicts, backend };
}
