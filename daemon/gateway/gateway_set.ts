/**
 * The set of known gateways, and the gossip that grows it (`docs/protocol.md` §3). One
 * module, used by the daemon (bootstrap list + `gateways.json` cache + gossip) and by the
 * devnet's gateways (peer gossip), so both apply the same validation and bounds.
 *
 * A gossip peer is untrusted: one malicious gateway must not be able to take over the choice of
 * gateway. So the set ranks and evicts by what **this node** knows, never by what a peer claims:
 *
 * - **Ranking** ({@linkcode GatewaySet.entries}): gateways this node reached itself come first
 *   (most recently reached first, by this node's own clock), then the permanent ones (the
 *   compiled-in bootstrap list and a pinned gateway), then hearsay, by the `last_seen` its
 *   peers claimed. A claim only orders hearsay among itself.
 * - **Eviction**: permanent entries are never evicted. Hearsay goes first, and always from the
 *   peer that contributed the most of it (oldest claim first), so a flooding peer displaces its
 *   own entries; entries this node reached go only when no hearsay is left. One peer
 *   contributes at most {@linkcode GATEWAY_LIMITS}`.maxPerSource` hearsay entries; each
 *   entry remembers the peer it came from.
 * - **Persistence**: `gateways.json` keeps each entry's own reach time (`reached_at`) and
 *   source, so none of this is forgotten across restarts.
 * - **Addresses**: a gateway URL is plain `http:`/`https:` without credentials, query or
 *   fragment, and never a link-local, unspecified or reserved IP literal
 *   (`io/host_scope.ts`). A peer may only introduce IP literals at most as private as itself
 *   (the Private Network Access rule: a public peer cannot point us at loopback or the LAN; a
 *   loopback peer, as in the devnet, may). This node's own URL is never added.
 * - **Bounds**: a peer's list is read with a size limit, at most
 *   {@linkcode GATEWAY_LIMITS}`.maxPerResponse` valid entries are taken from it, claimed
 *   `last_seen` times in the future are clamped to now, and the set never exceeds `maxEntries`
 *   (plus the permanent entries).
 *
 * @example Merge a peer's answer and persist the union
 * ```ts
 * import { GatewaySet } from "./gateway_set.ts";
 * import { loadGatewayCache, saveGatewayCache } from "./gateway_cache.ts";
 *
 * const set = new GatewaySet();
 * set.add("http://127.0.0.1:8701", new Date(0), { permanent: true }); // bootstrap
 * set.markReached("http://127.0.0.1:9201");
 * set.mergeList(
 *   { gateways: [{ url: "http://127.0.0.1:9202/", last_seen: "2026-11-22T10:00:00Z" }] },
 *   { source: "http://127.0.0.1:9201" }, // a loopback peer may name loopback gateways
 * );
 * const file = `${await Deno.makeTempDir()}/gateways.json`;
 * await saveGatewayCache(file, set);
 * const { entries } = await loadGatewayCache(file);
 * console.assert(entries.length === 3 && entries[0].reached && entries[2].source !== undefined);
 * ```
 *
 * @module
 */

import { hostScope } from "../../io/host_scope.ts";
import { type GatewayEntry, parseGatewayList } from "./gateway_list.ts";
import { checkIntroducedBy, GATEWAY_LIMITS, normalizeGatewayUrl } from "./gateway_url.ts";

export type { GatewayEntry };

/** The JSON form of an entry, as served by `GET /v1/gateways`. */
export interface GatewayEntryJson {
  /** Base URL. */
  url: string;
  /** RFC 3339 time. */
  last_seen: string;
}

/** The form of an entry in `gateways.json`: the gossip form plus what only this node knows. */
export interface GatewayCacheEntryJson extends GatewayEntryJson {
  /** RFC 3339 time this node last reached the gateway itself; absent for hearsay. */
  reached_at?: string;
  /** The peer the gateway was heard of from; absent when unknown or reached. */
  source?: string;
}

/** Options of {@linkcode GatewaySet}. */
export interface GatewaySetOptions {
  /** Largest number of entries kept (permanent entries may exceed it). @default {256} */
  maxEntries?: number;
  /** Largest number of hearsay entries kept from one source peer. @default {32} */
  maxPerSource?: number;
  /**
   * This node's own URL, never added to its own set. A loopback URL also covers the other
   * loopback spellings of the same scheme, port and path (`localhost`, `[::1]`, …).
   * @default {undefined} (nothing is excluded)
   */
  self?: string;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
}

/** Options of {@linkcode GatewaySet.add}. */
export interface AddGatewayOptions {
  /**
   * Whether the entry is permanent (the compiled-in bootstrap list, a pinned gateway): it ranks
   * above hearsay and is never evicted. An existing entry becomes permanent too.
   * @default {false}
   */
  permanent?: boolean;
  /**
   * The peer the gateway was heard of from (normalized). When given, the Private Network Access
   * rule applies ({@linkcode checkIntroducedBy}) and the entry counts against that peer's
   * `maxPerSource`. Without one, the entry is local knowledge (cache, configuration).
   * @default {undefined}
   */
  source?: string;
}

/** Options of {@linkcode GatewaySet.mergeList}. */
export interface MergeListOptions {
  /**
   * The peer that sent the list. Without one the list is treated as coming from an anonymous
   * public peer: no loopback or private IP literals, and one shared `maxPerSource` budget.
   * @default {undefined}
   */
  source?: string;
}

interface MutableEntry {
  url: string;
  lastSeen: number;
  reachedAt: number | undefined;
  permanent: boolean;
  source: string | undefined;
}

/** The source key of hearsay merged without a named peer. */
const ANONYMOUS_SOURCE = "(anonymous peer)";

/**
 * A bounded set of gateways, ranked by this node's own reach history (see the module
 * documentation).
 */
export class GatewaySet {
  readonly #entries = new Map<string, MutableEntry>();
  readonly #maxEntries: number;
  readonly #maxPerSource: number;
  readonly #self: string | undefined;
  readonly #clock: () => Date;

  /**
   * Creates an empty set.
   *
   * @throws {RangeError} when `maxEntries` or `maxPerSource` is not a positive integer.
   * @throws {GatewaySetError} when `self` is not a valid gateway URL.
   */
  constructor(options: GatewaySetOptions = {}) {
    const max = options.maxEntries ?? GATEWAY_LIMITS.maxEntries;
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`Cannot create gateway set: maxEntries must be ≥ 1, found ${max}`);
    }
    const perSource = options.maxPerSource ?? GATEWAY_LIMITS.maxPerSource;
    if (!Number.isInteger(perSource) || perSource < 1) {
      throw new RangeError(
        `Cannot create gateway set: maxPerSource must be ≥ 1, found ${perSource}`,
      );
    }
    this.#maxEntries = max;
    this.#maxPerSource = perSource;
    this.#self = options.self === undefined ? undefined : normalizeGatewayUrl(options.self);
    this.#clock = options.clock ?? (() => new Date());
  }

  /** Number of entries. */
  get size(): number {
    return this.#entries.size;
  }

  /** Whether the set holds `url` (normalized first). */
  has(url: string): boolean {
    return this.#entries.has(normalizeGatewayUrl(url));
  }

  /**
   * Adds a gateway heard of (bootstrap list, pinned gateway, cache file, gossip), or refreshes
   * its `lastSeen` when the new time is later. Times in the future are clamped to now.
   *
   * @returns whether the entry is new (and kept).
   * @throws {GatewaySetError} when the URL is invalid, or when `source` may not introduce it.
   */
  add(url: string, lastSeen: Date = new Date(0), options: AddGatewayOptions = {}): boolean {
    const normalized = normalizeGatewayUrl(url);
    const source = options.source === undefined ? undefined : normalizeGatewayUrl(options.source);
    if (source !== undefined) checkIntroducedBy(normalized, source);
    return this.#upsert(normalized, lastSeen, {
      permanent: options.permanent ?? false,
      source,
    });
  }

  /**
   * Records that this node just reached `url` itself (by its own clock; a time in the future
   * is clamped to now). @returns whether the entry is new.
   */
  markReached(url: string, at: Date = this.#clock()): boolean {
    return this.#upsert(normalizeGatewayUrl(url), at, { reached: true, permanent: false });
  }

  /** Removes a gateway. @returns whether it was present. */
  delete(url: string): boolean {
    return this.#entries.delete(normalizeGatewayUrl(url));
  }

  /**
   * Merges a peer's `GET /v1/gateways` answer, taking at most
   * {@linkcode GATEWAY_LIMITS}`.maxPerResponse` valid entries, each remembered as heard of from
   * `source`.
   *
   * @returns how many entries were new and are kept, and how many were refused.
   * @throws {GatewaySetError} with reason `malformed_list` when the answer is not
   * `{"gateways": [...]}`.
   */
  mergeList(answer: unknown, options: MergeListOptions = {}): { added: number; refused: number } {
    const source = options.source === undefined ? undefined : normalizeGatewayUrl(options.source);
    const { entries, refused } = parseGatewayList(answer, { now: this.#clock(), source });
    const fresh: string[] = [];
    for (const entry of entries) {
      if (
        this.#upsert(entry.url, entry.lastSeen, {
          permanent: false,
          source: source ?? ANONYMOUS_SOURCE,
        })
      ) fresh.push(entry.url);
    }
    // A later entry of the same answer may have displaced an earlier one (per-source cap).
    return { added: fresh.filter((url) => this.#entries.has(url)).length, refused };
  }

  /**
   * The entries in the order to try them: reached by this node (most recently reached
   * first), then permanent ones, then hearsay (most recent claim first).
   */
  entries(): GatewayEntry[] {
    return [...this.#entries.values()]
      .sort((a, b) =>
        rankGroup(a) - rankGroup(b) ||
        (b.reachedAt ?? 0) - (a.reachedAt ?? 0) ||
        b.lastSeen - a.lastSeen
      )
      .map((e) => ({
        url: e.url,
        lastSeen: new Date(e.lastSeen),
        reached: e.reachedAt !== undefined,
        reachedAt: e.reachedAt === undefined ? undefined : new Date(e.reachedAt),
        permanent: e.permanent,
        source: e.source === ANONYMOUS_SOURCE ? undefined : e.source,
      }));
  }

  /** The body of `GET /v1/gateways` (only `url` and `last_seen`: the rest is this node's own). */
  toJSON(): { gateways: GatewayEntryJson[] } {
    return {
      gateways: this.entries().map((e) => ({ url: e.url, last_seen: e.lastSeen.toISOString() })),
    };
  }

  /** The entries as `gateways.json` stores them, with reach times and sources. */
  toCacheJSON(): { version: 1; gateways: GatewayCacheEntryJson[] } {
    return {
      version: 1,
      gateways: this.entries().map((e) => ({
        url: e.url,
        last_seen: e.lastSeen.toISOString(),
        ...(e.reachedAt === undefined ? {} : { reached_at: e.reachedAt.toISOString() }),
        ...(e.reachedAt !== undefined || e.source === undefined ? {} : { source: e.source }),
      })),
    };
  }

  #isSelf(url: string): boolean {
    if (this.#self === undefined) return false;
    if (url === this.#self) return true;
    const self = new URL(this.#self);
    const other = new URL(url);
    return hostScope(self.hostname) === "loopback" && hostScope(other.hostname) === "loopback" &&
      self.protocol === other.protocol && self.port === other.port &&
      self.pathname === other.pathname;
  }

  #upsert(
    url: string,
    lastSeen: Date,
    how: { reached?: boolean; permanent: boolean; source?: string },
  ): boolean {
    if (this.#isSelf(url)) return false;
    const now = this.#clock().getTime();
    const time = lastSeen.getTime();
    const seen = Math.min(Number.isFinite(time) ? time : 0, now);
    const existing = this.#entries.get(url);
    if (existing) {
      existing.lastSeen = Math.max(existing.lastSeen, seen);
      if (how.reached) existing.reachedAt = Math.max(existing.reachedAt ?? 0, seen);
      existing.permanent ||= how.permanent;
      return false;
    }
    this.#entries.set(url, {
      url,
      lastSeen: seen,
      reachedAt: how.reached ? seen : undefined,
      permanent: how.permanent,
      source: how.reached || how.permanent ? undefined : how.source,
    });
    if (how.source !== undefined && !how.reached && !how.permanent) {
      this.#capSource(how.source);
    }
    this.#evict();
    return this.#entries.has(url);
  }

  /** Keeps at most `maxPerSource` hearsay entries from `source`, dropping its oldest claims. */
  #capSource(source: string): void {
    const own = [...this.#entries.values()].filter((e) => isHearsay(e) && e.source === source);
    if (own.length <= this.#maxPerSource) return;
    own.sort((a, b) => a.lastSeen - b.lastSeen);
    for (const victim of own.slice(0, own.length - this.#maxPerSource)) {
      this.#entries.delete(victim.url);
    }
  }

  /**
   * Shrinks the set to `maxEntries`: hearsay first, from the source with the most hearsay
   * (oldest claim first); then entries this node reached (reached longest ago first); never a
   * permanent entry.
   */
  #evict(): void {
    while (this.#entries.size > this.#maxEntries) {
      const bySource = new Map<string, MutableEntry[]>();
      const reached: MutableEntry[] = [];
      for (const entry of this.#entries.values()) {
        if (isHearsay(entry)) {
          const key = entry.source ?? "";
          const group = bySource.get(key);
          if (group) group.push(entry);
          else bySource.set(key, [entry]);
        } else if (!entry.permanent) reached.push(entry);
      }
      let victim: MutableEntry | undefined;
      let largest: MutableEntry[] = [];
      for (const group of bySource.values()) if (group.length > largest.length) largest = group;
      for (const entry of largest) {
        if (!victim || entry.lastSeen < victim.lastSeen) victim = entry;
      }
      for (const entry of victim ? [] : reached) {
        if (!victim || entry.reachedAt! < victim.reachedAt!) victim = entry;
      }
      if (!victim) return; // only permanent entries are left
      this.#entries.delete(victim.url);
    }
  }
}

function isHearsay(entry: MutableEntry): boolean {
  return entry.reachedAt === undefined && !entry.permanent;
}

/** 0: reached by this node; 1: permanent; 2: hearsay. */
function rankGroup(entry: MutableEntry): number {
  return entry.reachedAt !== undefined ? 0 : entry.permanent ? 1 : 2;
}
