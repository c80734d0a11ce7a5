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
 * import { GatewaySet, saveGatewayCache, loadGatewayCache } from "./gateway_set.ts";
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

import { abbreviate, NetError } from "../errors.ts";
import { writeFileAtomic } from "../io/atomic_write.ts";
import { fetchJson, FetchJsonError } from "../io/fetch_json.ts";
import { FORBIDDEN_SCOPES, hostScope, scopeRank } from "../io/host_scope.ts";

/** Limits applied to gateway lists (`docs/protocol.md` §3). */
export const GATEWAY_LIMITS: {
  readonly maxEntries: number;
  readonly maxPerResponse: number;
  readonly maxPerSource: number;
  readonly maxResponseBytes: number;
  readonly maxUrlLength: number;
} = Object.freeze({
  maxEntries: 256,
  maxPerResponse: 64,
  maxPerSource: 32,
  maxResponseBytes: 256 * 1024,
  maxUrlLength: 2048,
});

/** A known gateway. */
export interface GatewayEntry {
  /** Normalized base URL (no trailing slash). */
  readonly url: string;
  /** When the gateway was last reached (by this node, or as claimed by a peer). */
  readonly lastSeen: Date;
  /** Whether this node reached the gateway itself (as opposed to hearing of it). */
  readonly reached: boolean;
  /** When this node last reached the gateway itself, by its own clock; unset for hearsay. */
  readonly reachedAt: Date | undefined;
  /** Whether the entry is permanent (bootstrap list, pinned gateway): never evicted. */
  readonly permanent: boolean;
  /** The peer this node heard of the gateway from, when it was gossip. */
  readonly source: string | undefined;
}

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

/** Why a gateway URL or list was refused. */
export type GatewaySetFailure = "invalid_url" | "malformed_list" | "unreachable";

/** Thrown for invalid gateway URLs and lists, and when a peer cannot be asked. */
export class GatewaySetError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "GatewaySetError" as const;
  /** Machine-readable reason. */
  readonly reason: GatewaySetFailure;
  /** For `invalid_url`: what is wrong with the URL, without the URL (e.g. "a query is not allowed"). */
  readonly problem: string | undefined;

  /** Creates the error. */
  constructor(
    reason: GatewaySetFailure,
    shortMessage: string,
    options: { cause?: unknown; problem?: string } = {},
  ) {
    super(shortMessage, options);
    this.reason = reason;
    this.problem = options.problem;
  }
}

/**
 * Validates a gateway URL and returns its normalized form: `http:` or `https:`, no
 * credentials, query or fragment, at most 2048 characters, no trailing slash, and a host that
 * is not a link-local, unspecified or reserved IP literal (169.254.0.0/16, `fe80::/10`,
 * 0.0.0.0/8, `::`, multicast, …, in any spelling: `io/host_scope.ts`).
 *
 * @throws {GatewaySetError} with reason `invalid_url`, quoting the value.
 */
export function normalizeGatewayUrl(value: unknown): string {
  const bad = (why: string): never => {
    const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 80)) : typeof value;
    throw new GatewaySetError("invalid_url", `Cannot use gateway URL ${shown}: ${why}`, {
      problem: why,
    });
  };
  if (typeof value !== "string") return bad("expected a string");
  if (value.length > GATEWAY_LIMITS.maxUrlLength) {
    return bad(`longer than ${GATEWAY_LIMITS.maxUrlLength} characters`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return bad("not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return bad(`scheme ${url.protocol} is not http: or https:`);
  }
  if (url.username || url.password) bad("credentials are not allowed");
  if (url.search || value.includes("?")) bad("a query is not allowed");
  if (url.hash || value.includes("#")) bad("a fragment is not allowed");
  const scope = hostScope(url.hostname);
  if (FORBIDDEN_SCOPES.has(scope)) {
    bad(`${url.hostname} is a ${scope.replace("_", "-")} address, never a gateway`);
  }
  return url.href.replace(/\/+$/, "");
}

/**
 * Checks that a peer at `source` may introduce `url` (both normalized): an IP literal may be
 * at most as private as the peer itself (public < private < loopback, `io/host_scope.ts`), so
 * a public peer cannot make this node contact its own loopback or LAN addresses. DNS names
 * are not resolved and count as public.
 *
 * @throws {GatewaySetError} with reason `invalid_url`.
 */
export function checkIntroducedBy(url: string, source: string): void {
  const target = hostScope(new URL(url).hostname);
  const from = hostScope(new URL(source).hostname);
  if ((scopeRank(target) ?? Infinity) > (scopeRank(from) ?? -1)) {
    throw new GatewaySetError(
      "invalid_url",
      `Cannot use gateway URL ${JSON.stringify(abbreviate(url, 80))} from peer ${
        abbreviate(source, 80)
      }: a ${from === "name" ? "public" : from.replace("_", "-")} peer cannot introduce a ${
        target.replace("_", "-")
      } address`,
    );
  }
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

/** Options of {@linkcode parseGatewayList}. */
export interface ParseGatewayListOptions {
  /** The current time; later `last_seen` claims are clamped to it. */
  now: Date;
  /** Largest number of valid entries taken. @default {64} */
  maxEntries?: number;
  /**
   * The peer that sent the list (a gateway URL). Its entries may only be IP literals at most
   * as private as it is ({@linkcode checkIntroducedBy}); without one, the peer counts as
   * public. Entries naming the source itself are kept (the peer lists itself).
   * @default {undefined}
   */
  source?: string;
}

/**
 * Validates a `{"gateways":[{"url","last_seen"}]}` document and returns its valid entries
 * (at most `maxEntries`) and the number of refused ones. Only `url` and `last_seen` are read:
 * whatever else a peer sends (e.g. a claimed `reached_at`) is ignored.
 *
 * @throws {GatewaySetError} with reason `malformed_list` when the document's shape is wrong.
 */
export function parseGatewayList(
  value: unknown,
  options: ParseGatewayListOptions,
): { entries: GatewayEntry[]; refused: number } {
  // An anonymous peer is checked as if it were a public one.
  const source = options.source === undefined
    ? "http://anonymous-peer.invalid"
    : normalizeGatewayUrl(options.source);
  return readList(value, {
    now: options.now,
    max: options.maxEntries ?? GATEWAY_LIMITS.maxPerResponse,
    read: (_record, url, lastSeen) => {
      checkIntroducedBy(url, source);
      return hearsay(url, lastSeen, options.source === undefined ? undefined : source);
    },
  });
}

function hearsay(url: string, lastSeen: Date, source: string | undefined): GatewayEntry {
  return { url, lastSeen, reached: false, reachedAt: undefined, permanent: false, source };
}

/**
 * Reads a gateway list entry by entry: a record without a valid `url` and `last_seen`, or one
 * `read` refuses (by throwing), is counted as refused.
 */
function readList(
  value: unknown,
  options: {
    now: Date;
    max: number;
    read: (record: Record<string, unknown>, url: string, lastSeen: Date) => GatewayEntry;
  },
): { entries: GatewayEntry[]; refused: number } {
  const list = (value as { gateways?: unknown } | null)?.gateways;
  if (typeof value !== "object" || value === null || !Array.isArray(list)) {
    throw new GatewaySetError(
      "malformed_list",
      `Cannot read gateway list: expected {"gateways": [...]}, found ${describeShape(value)}`,
    );
  }
  const now = options.now.getTime();
  const entries: GatewayEntry[] = [];
  let refused = 0;
  for (const item of list) {
    if (entries.length >= options.max) break;
    try {
      const record = item as Record<string, unknown>;
      const url = normalizeGatewayUrl(record?.url);
      const time = parseTime(record.last_seen);
      if (time === undefined) {
        refused++;
        continue;
      }
      entries.push(options.read(record, url, new Date(Math.min(time, now))));
    } catch {
      refused++;
    }
  }
  return { entries, refused };
}

function parseTime(value: unknown): number | undefined {
  const time = typeof value === "string" ? Date.parse(value) : NaN;
  return Number.isFinite(time) ? time : undefined;
}

function describeShape(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value !== "object") return typeof value;
  return `an object with keys ${JSON.stringify(Object.keys(value).slice(0, 5))}`;
}

/** Options of {@linkcode askPeer}. */
export interface AskPeerOptions {
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Time allowed for the answer. @default {3000} */
  timeoutMs?: number;
  /** Cancels the request. */
  signal?: AbortSignal;
}

/**
 * Asks one gateway for its peers (`GET /v1/gateways`, body at most 256 KiB, redirects not
 * followed), marks it reached and merges its answer into `set` as hearsay from that gateway.
 *
 * @throws {GatewaySetError} with reason `unreachable` (the peer could not be asked) or
 * `malformed_list` (it answered nonsense).
 */
export async function askPeer(
  set: GatewaySet,
  url: string,
  options: AskPeerOptions = {},
): Promise<{ added: number; refused: number }> {
  const base = normalizeGatewayUrl(url);
  let answer: unknown;
  try {
    answer = await fetchJson(`${base}/v1/gateways`, {
      fetch: options.fetch,
      timeoutMs: options.timeoutMs ?? 3000,
      maxBytes: GATEWAY_LIMITS.maxResponseBytes,
      signal: options.signal,
    });
  } catch (cause) {
    const why = cause instanceof FetchJsonError ? cause.shortMessage : String(cause);
    throw new GatewaySetError("unreachable", `Cannot ask gateway ${base} for peers: ${why}`, {
      cause,
    });
  }
  // mergeList validates the whole answer first: a malformed one changes nothing, and the peer
  // only counts as reached once it has answered sensibly.
  const result = set.mergeList(answer, { source: base });
  set.markReached(base);
  return result;
}

/** What {@linkcode loadGatewayCache} found. */
export interface LoadedGatewayCache {
  /** Valid entries of the file (empty when it is missing or corrupt). */
  entries: GatewayEntry[];
  /**
   * Set when the file exists but could not be used, saying why; the caller reports it and
   * overwrites the file on its next save. A missing file is not a problem.
   */
  problem?: string;
}

/** Options of {@linkcode loadGatewayCache}. */
export interface LoadGatewayCacheOptions {
  /** The current time (future `last_seen` values are clamped to it). @default {new Date()} */
  now?: Date;
}

/**
 * Reads a `gateways.json` cache file. Never throws for a missing or corrupt file: it returns
 * no entries and, for a corrupt one, a `problem` to report.
 */
export async function loadGatewayCache(
  path: string,
  options: LoadGatewayCacheOptions = {},
): Promise<LoadedGatewayCache> {
  let text: string;
  try {
    const info = await Deno.stat(path);
    if (info.size > GATEWAY_LIMITS.maxResponseBytes * 4) {
      return {
        entries: [],
        problem:
          `gateway cache ${path} is ${info.size} bytes, larger than any valid cache; ignored`,
      };
    }
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { entries: [] };
    return { entries: [], problem: `cannot read gateway cache ${path}: ${String(error)}` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { entries: [], problem: `gateway cache ${path} is not valid JSON; ignored` };
  }
  if ((value as { version?: unknown } | null)?.version !== 1) {
    return {
      entries: [],
      problem: `gateway cache ${path} has no "version": 1; ignored`,
    };
  }
  try {
    const now = options.now ?? new Date();
    const { entries, refused } = readList(value, {
      now,
      max: GATEWAY_LIMITS.maxEntries,
      read: (record, url, lastSeen) => {
        if (record.reached_at !== undefined) {
          const reachedAt = parseTime(record.reached_at);
          if (reachedAt === undefined) throw new Error("invalid reached_at");
          return {
            url,
            lastSeen,
            reached: true,
            reachedAt: new Date(Math.min(reachedAt, now.getTime())),
            permanent: false,
            source: undefined,
          };
        }
        if (record.source === undefined) return hearsay(url, lastSeen, undefined);
        const source = normalizeGatewayUrl(record.source);
        checkIntroducedBy(url, source);
        return hearsay(url, lastSeen, source);
      },
    });
    return refused > 0
      ? { entries, problem: `gateway cache ${path}: ${refused} invalid entries dropped` }
      : { entries };
  } catch (error) {
    return {
      entries: [],
      problem: `gateway cache ${path} is malformed (${
        error instanceof NetError ? error.shortMessage : String(error)
      }); ignored`,
    };
  }
}

/**
 * Writes the set to a `gateways.json` cache file atomically, with each entry's own reach time
 * (`reached_at`) and source ({@linkcode GatewaySet.toCacheJSON}).
 */
export async function saveGatewayCache(path: string, set: GatewaySet): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(set.toCacheJSON(), null, 2) + "\n");
}
