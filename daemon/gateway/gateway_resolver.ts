/**
 * Gateway resolution, exactly as the seed's §4 says:
 *
 * 1. If a gateway is pinned (`--gateway` / `NET_GATEWAY`), use it.
 * 2. Otherwise use the first reachable gateway of the known set: the bootstrap list (the network
 *    profile's gateways), the `gateways.json` cache in the data directory, and gateways learned by
 *    gossip — in the {@linkcode GatewaySet} order: gateways this daemon reached itself (most
 *    recently reached first), then the bootstrap list, then hearsay. A gossiping peer can
 *    neither evict the bootstrap list nor rank its own entries above gateways this daemon has
 *    reached, across restarts too (the cache keeps each entry's own reach time and source).
 * 3. On connect, ask the gateway reached for its peers (`GET /v1/gateways`), merge them into
 *    the known set and persist the union in the cache file (atomically).
 * 4. Then ask again every {@linkcode DEFAULT_GOSSIP_INTERVAL_MS} (5 minutes;
 *    {@linkcode GatewayResolver.startGossip}): the current gateway is asked for its peers, and
 *    the answer is merged under the same rules (bounded hearsay per peer, this node's own
 *    reach history first). A gateway that does not answer stops being the current one; the
 *    next round connects to the first reachable of the known set.
 *
 * The cache is written atomically; temporary files that a killed daemon left next to it are
 * removed when the cache is first read.
 *
 * "Reachable" means the gateway answered its gossip endpoint sensibly; that request is the
 * connect. A gateway that fails later (before the first byte of a reply) is reported with
 * {@linkcode GatewayResolver.reportFailure} and skipped for a cool-down period.
 *
 * @module
 */

import { DEVNET_PROFILE } from "../../chain/network_profile.ts";
import { removeStaleTemporaryFiles } from "../../io/atomic_write.ts";
import { loadGatewayCache, saveGatewayCache } from "./gateway_cache.ts";
import { askPeer } from "./gateway_peer.ts";
import { GatewaySet } from "./gateway_set.ts";
import { GatewaySetError, normalizeGatewayUrl } from "./gateway_url.ts";
import { DaemonError } from "../core/mod.ts";

/**
 * The default bootstrap list: the built-in devnet profile's gateways (`deno task devnet`). The
 * daemon passes its network profile's gateways instead (`DaemonConfig.bootstrap`).
 */
export const BOOTSTRAP_GATEWAYS: readonly string[] = DEVNET_PROFILE.gateways;

/** How often a running daemon asks its gateway for peers again: 5 minutes. */
export const DEFAULT_GOSSIP_INTERVAL_MS = 5 * 60_000;

/** Options of {@linkcode GatewayResolver}. */
export interface GatewayResolverOptions {
  /** A pinned gateway: always used, never replaced. */
  pinned?: string;
  /** The compiled-in bootstrap list. @default {BOOTSTRAP_GATEWAYS} */
  bootstrap?: readonly string[];
  /**
   * The daemon's own listen URL (e.g. `http://127.0.0.1:11435`): never added to the known set,
   * whatever a peer says. @default {undefined}
   */
  self?: string;
  /** Path of `gateways.json`; without one nothing is persisted. */
  cachePath?: string;
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
  /** Time allowed for one gateway to answer, in ms. @default {3000} */
  timeoutMs?: number;
  /** How long a failed gateway is skipped, in ms. @default {30000} */
  coolDownMs?: number;
  /** Where problems are reported (corrupt cache, unreachable gateways). @default {console.warn} */
  log?: (message: string) => void;
}

/** Options of {@linkcode GatewayResolver.startGossip}. */
export interface GossipOptions {
  /** Time between two rounds, ms. @default {DEFAULT_GOSSIP_INTERVAL_MS} */
  intervalMs?: number;
}

/** Finds and remembers the gateway the daemon talks to. */
export class GatewayResolver {
  readonly #options: GatewayResolverOptions;
  readonly #set: GatewaySet;
  readonly #clock: () => Date;
  readonly #log: (message: string) => void;
  readonly #pinned: string | undefined;
  readonly #failedAt = new Map<string, number>();
  #current: string | undefined;
  #loaded: Promise<void> | undefined;
  #connecting: Promise<string> | undefined;
  #gossipTimer: ReturnType<typeof setInterval> | undefined;
  #gossiping: Promise<void> | undefined;

  /**
   * Creates the resolver. Nothing is read or fetched until {@linkcode resolve}.
   *
   * @throws {GatewaySetError} when the pinned gateway URL or `self` is invalid.
   */
  constructor(options: GatewayResolverOptions = {}) {
    this.#options = options;
    this.#clock = options.clock ?? (() => new Date());
    this.#log = options.log ?? ((message) => console.warn(message));
    this.#set = new GatewaySet({ clock: this.#clock, self: options.self });
    this.#pinned = options.pinned === undefined ? undefined : normalizeGatewayUrl(options.pinned);
  }

  /** The known set (served by the daemon's own `GET /v1/gateways`). */
  get known(): GatewaySet {
    return this.#set;
  }

  /** The pinned gateway, if any. */
  get pinned(): string | undefined {
    return this.#pinned;
  }

  /**
   * Returns the gateway to use: the current one if there is one, else the result of a new
   * connect (pinned, or the first reachable of the known set). Concurrent callers share one
   * connect.
   *
   * @throws {DaemonError} with code `no_gateway` when none is reachable, listing what was tried.
   */
  resolve(signal?: AbortSignal): Promise<string> {
    if (this.#current) return Promise.resolve(this.#current);
    // The connect is shared, so it runs under no caller's signal (each probe has its own
    // timeout): one client going away must neither fail the others nor sideline a gateway.
    this.#connecting ??= this.#connect().finally(() => (this.#connecting = undefined));
    if (!signal) return this.#connecting;
    signal.throwIfAborted();
    return new Promise<string>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#connecting!.then(resolve, reject).finally(() =>
        signal.removeEventListener("abort", onAbort)
      );
    });
  }

  /**
   * Reports that `url` failed before answering a request: it stops being the current gateway
   * and is skipped for the cool-down period (a pinned gateway is never replaced).
   */
  reportFailure(url: string): void {
    if (url === this.#pinned) return;
    this.#failedAt.set(url, this.#clock().getTime());
    if (this.#current === url) this.#current = undefined;
  }

  /**
   * One gossip round: asks the current gateway for its peers again, merges the answer into the
   * known set and persists it. Without a current gateway (none reached yet, or the last one
   * failed), connects instead, which asks the gateway it reaches. A gateway that does not
   * answer is reported ({@linkcode reportFailure}). Never rejects: problems are logged.
   * Concurrent calls share one round.
   */
  gossip(): Promise<void> {
    return this.#gossiping ??= this.#gossipRound().finally(() => (this.#gossiping = undefined));
  }

  /**
   * Starts asking for peers periodically ({@linkcode gossip} every `intervalMs`). Idempotent;
   * {@linkcode stopGossip} (or `using`) stops it. The timer does not keep the process alive.
   */
  startGossip(options: GossipOptions = {}): Disposable {
    const interval = options.intervalMs ?? DEFAULT_GOSSIP_INTERVAL_MS;
    if (!Number.isSafeInteger(interval) || interval < 1) {
      throw new RangeError(
        `Cannot start gossip: intervalMs must be a positive integer, found ${interval}`,
      );
    }
    if (this.#gossipTimer === undefined) {
      this.#gossipTimer = setInterval(() => void this.gossip(), interval);
      Deno.unrefTimer(this.#gossipTimer);
    }
    return { [Symbol.dispose]: () => this.stopGossip() };
  }

  /** Stops the periodic gossip; a round under way finishes. */
  stopGossip(): void {
    clearInterval(this.#gossipTimer);
    this.#gossipTimer = undefined;
  }

  /** Resolves once the gossip round under way, if any, has ended (at once when none is). */
  async settled(): Promise<void> {
    await this.#gossiping;
  }

  async #gossipRound(): Promise<void> {
    const url = this.#current;
    if (url === undefined) {
      await this.resolve().catch((error) =>
        this.#log(
          `daemon: gossip: ${error instanceof Error ? error.message.split("\n")[0] : error}`,
        )
      );
      return;
    }
    try {
      const { added } = await askPeer(this.#set, url, {
        fetch: this.#options.fetch,
        timeoutMs: this.#options.timeoutMs ?? 3000,
      });
      if (added > 0) this.#log(`daemon: gossip: ${url} named ${added} new gateway(s)`);
    } catch (error) {
      this.#log(
        `daemon: gossip: ${
          error instanceof GatewaySetError ? error.shortMessage : String(error)
        }; it is no longer the current gateway`,
      );
      this.reportFailure(url);
      return;
    }
    await this.#persist();
  }

  async #load(): Promise<void> {
    const now = this.#clock();
    // Permanent entries first: the bootstrap list and the pinned gateway are never evicted.
    if (this.#pinned) this.#set.add(this.#pinned, new Date(0), { permanent: true });
    for (const url of this.#options.bootstrap ?? BOOTSTRAP_GATEWAYS) {
      try {
        this.#set.add(url, new Date(0), { permanent: true });
      } catch (error) {
        this.#log(`daemon: bootstrap gateway skipped: ${(error as Error).message}`);
      }
    }
    if (this.#options.cachePath) {
      await this.#removeDebris(this.#options.cachePath);
      const { entries, problem } = await loadGatewayCache(this.#options.cachePath, { now });
      if (problem) this.#log(`daemon: ${problem}; it will be rewritten`);
      for (const entry of entries) {
        try {
          if (entry.reachedAt) {
            // Reached by this daemon itself: its own reach time, whoever first named it.
            this.#set.markReached(entry.url, entry.reachedAt);
            this.#set.add(entry.url, entry.lastSeen);
          } else {
            this.#set.add(entry.url, entry.lastSeen, { source: entry.source });
          }
        } catch (error) {
          this.#log(`daemon: cached gateway skipped: ${(error as Error).message}`);
        }
      }
    }
  }

  async #connect(): Promise<string> {
    await (this.#loaded ??= this.#load());
    const candidates = this.#pinned ? [this.#pinned] : this.#candidates();
    const tried: string[] = [];
    for (const url of candidates) {
      try {
        await askPeer(this.#set, url, {
          fetch: this.#options.fetch,
          timeoutMs: this.#options.timeoutMs ?? 3000,
        });
      } catch (error) {
        tried.push(`${url} (${error instanceof GatewaySetError ? error.shortMessage : error})`);
        if (!this.#pinned) this.#failedAt.set(url, this.#clock().getTime());
        continue;
      }
      this.#failedAt.delete(url);
      this.#current = url;
      await this.#persist();
      return url;
    }
    throw new DaemonError(
      "no_gateway",
      this.#pinned
        ? `Cannot reach the pinned gateway ${this.#pinned}`
        : `Cannot reach any gateway: tried ${tried.length} of ${this.#set.size} known`,
      {
        details: tried.join("; ") || "the known set is empty",
        hints: this.#pinned
          ? ["Check --gateway / NET_GATEWAY, or unset it to use the known set."]
          : ["Start the reference network (`deno task devnet`) or pin one with --gateway."],
      },
    );
  }

  /** Known gateways in the set's order (reached, permanent, hearsay); cool-down ones last. */
  #candidates(): string[] {
    const now = this.#clock().getTime();
    const coolDown = this.#options.coolDownMs ?? 30_000;
    const fresh: string[] = [];
    const cooling: string[] = [];
    for (const { url } of this.#set.entries()) {
      const failed = this.#failedAt.get(url);
      (failed !== undefined && now - failed < coolDown ? cooling : fresh).push(url);
    }
    return [...fresh, ...cooling];
  }

  /** Removes the temporary files of cache writes that a killed daemon left behind. */
  async #removeDebris(cachePath: string): Promise<void> {
    try {
      const removed = await removeStaleTemporaryFiles(cachePath);
      if (removed.length > 0) {
        this.#log(
          `daemon: removed ${removed.length} temporary file(s) of an interrupted cache write`,
        );
      }
    } catch (error) {
      this.#log(`daemon: ${(error as Error).message}`);
    }
  }

  async #persist(): Promise<void> {
    if (!this.#options.cachePath) return;
    try {
      await saveGatewayCache(this.#options.cachePath, this.#set);
    } catch (error) {
      this.#log(`daemon: cannot save the gateway cache: ${(error as Error).message}`);
    }
  }
}
