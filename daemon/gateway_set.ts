/**
 * The set of known gateways, and the gossip that grows it (`docs/protocol.md` §3). One
 * module, used by the daemon (bootstrap list + `gateways.json` cache + gossip) and by the
 * devnet's gateways (peer gossip), so both apply the same validation and bounds.
 *
 * Bounds against a peer that floods junk: a peer's list is read with a size limit, at most
 * {@linkcode GATEWAY_LIMITS}`.maxPerResponse` valid entries are taken from it, URLs must be
 * plain `http:`/`https:`, claimed `last_seen` times in the future are clamped to now, and the
 * set never exceeds `maxEntries`: entries only heard of through gossip are evicted (oldest
 * first) before entries this node reached itself, so a flood can only displace other hearsay.
 *
 * @example Merge a peer's answer and persist the union
 * ```ts
 * import { GatewaySet, saveGatewayCache, loadGatewayCache } from "./gateway_set.ts";
 *
 * const set = new GatewaySet();
 * set.markReached("http://127.0.0.1:9201");
 * set.mergeList({ gateways: [{ url: "http://127.0.0.1:9202/", last_seen: "2026-11-22T10:00:00Z" }] });
 * const file = `${await Deno.makeTempDir()}/gateways.json`;
 * await saveGatewayCache(file, set);
 * const { entries } = await loadGatewayCache(file);
 * console.assert(entries.length === 2);
 * ```
 *
 * @module
 */

import { NetError } from "../errors.ts";
import { writeFileAtomic } from "../io/atomic_write.ts";
import { fetchJson, FetchJsonError } from "../io/fetch_json.ts";

/** Limits applied to gateway lists (`docs/protocol.md` §3). */
export const GATEWAY_LIMITS: {
  readonly maxEntries: number;
  readonly maxPerResponse: number;
  readonly maxResponseBytes: number;
  readonly maxUrlLength: number;
} = Object.freeze({
  maxEntries: 256,
  maxPerResponse: 64,
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
}

/** The JSON form of an entry, as served by `GET /v1/gateways`. */
export interface GatewayEntryJson {
  /** Base URL. */
  url: string;
  /** RFC 3339 time. */
  last_seen: string;
}

/** Why a gateway URL or list was refused. */
export type GatewaySetFailure = "invalid_url" | "malformed_list" | "unreachable";

/** Thrown for invalid gateway URLs and lists, and when a peer cannot be asked. */
export class GatewaySetError extends NetError {
  override readonly name = "GatewaySetError" as const;
  /** Machine-readable reason. */
  readonly reason: GatewaySetFailure;

  /** Creates the error. */
  constructor(reason: GatewaySetFailure, shortMessage: string, options: { cause?: unknown } = {}) {
    super(shortMessage, options);
    this.reason = reason;
  }
}

/**
 * Validates a gateway URL and returns its normalized form: `http:` or `https:`, no
 * credentials, query or fragment, at most 2048 characters, no trailing slash.
 *
 * @throws {GatewaySetError} with reason `invalid_url`, quoting the value.
 */
export function normalizeGatewayUrl(value: unknown): string {
  const bad = (why: string): never => {
    const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 80)) : typeof value;
    throw new GatewaySetError("invalid_url", `Cannot use gateway URL ${shown}: ${why}`);
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
  return url.href.replace(/\/+$/, "");
}

/** Options of {@linkcode GatewaySet}. */
export interface GatewaySetOptions {
  /** Largest number of entries kept. @default {256} */
  maxEntries?: number;
  /** This node's own URL, never added to its own set. */
  self?: string;
  /** The clock. @default {() => new Date()} */
  clock?: () => Date;
}

interface MutableEntry {
  url: string;
  lastSeen: number;
  reached: boolean;
}

/** A bounded set of gateways, newest first. */
export class GatewaySet {
  readonly #entries = new Map<string, MutableEntry>();
  readonly #maxEntries: number;
  readonly #self: string | undefined;
  readonly #clock: () => Date;

  /** Creates an empty set. */
  constructor(options: GatewaySetOptions = {}) {
    const max = options.maxEntries ?? GATEWAY_LIMITS.maxEntries;
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`Cannot create gateway set: maxEntries must be ≥ 1, found ${max}`);
    }
    this.#maxEntries = max;
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
   * Adds a gateway heard of (bootstrap list, cache file, gossip), or refreshes its
   * `lastSeen` when the new time is later. Times in the future are clamped to now.
   *
   * @returns whether the entry is new.
   * @throws {GatewaySetError} when the URL is invalid.
   */
  add(url: string, lastSeen: Date = new Date(0)): boolean {
    return this.#upsert(normalizeGatewayUrl(url), lastSeen, false);
  }

  /** Records that this node just reached `url` itself. @returns whether the entry is new. */
  markReached(url: string, at: Date = this.#clock()): boolean {
    return this.#upsert(normalizeGatewayUrl(url), at, true);
  }

  /** Removes a gateway. @returns whether it was present. */
  delete(url: string): boolean {
    return this.#entries.delete(normalizeGatewayUrl(url));
  }

  /**
   * Merges a peer's `GET /v1/gateways` answer, taking at most
   * {@linkcode GATEWAY_LIMITS}`.maxPerResponse` valid entries.
   *
   * @returns how many entries were new and how many were refused.
   * @throws {GatewaySetError} with reason `malformed_list` when the answer is not
   * `{"gateways": [...]}`.
   */
  mergeList(answer: unknown): { added: number; refused: number } {
    const { entries, refused } = parseGatewayList(answer, { now: this.#clock() });
    let added = 0;
    for (const entry of entries) if (this.add(entry.url, entry.lastSeen)) added++;
    return { added, refused };
  }

  /** The entries, most recently seen first (reached ones before hearsay at equal times). */
  entries(): GatewayEntry[] {
    return [...this.#entries.values()]
      .sort((a, b) => b.lastSeen - a.lastSeen || Number(b.reached) - Number(a.reached))
      .map((e) => ({ url: e.url, lastSeen: new Date(e.lastSeen), reached: e.reached }));
  }

  /** The body of `GET /v1/gateways`. */
  toJSON(): { gateways: GatewayEntryJson[] } {
    return {
      gateways: this.entries().map((e) => ({ url: e.url, last_seen: e.lastSeen.toISOString() })),
    };
  }

  #upsert(url: string, lastSeen: Date, reached: boolean): boolean {
    if (url === this.#self) return false;
    const seen = Math.min(
      Number.isFinite(lastSeen.getTime()) ? lastSeen.getTime() : 0,
      this.#clock().getTime(),
    );
    const existing = this.#entries.get(url);
    if (existing) {
      existing.lastSeen = Math.max(existing.lastSeen, seen);
      existing.reached ||= reached;
      return false;
    }
    this.#entries.set(url, { url, lastSeen: seen, reached });
    this.#evict();
    return this.#entries.has(url);
  }

  #evict(): void {
    while (this.#entries.size > this.#maxEntries) {
      let victim: MutableEntry | undefined;
      for (const entry of this.#entries.values()) {
        if (
          !victim ||
          (victim.reached && !entry.reached) ||
          (victim.reached === entry.reached && entry.lastSeen < victim.lastSeen)
        ) victim = entry;
      }
      this.#entries.delete(victim!.url);
    }
  }
}

/** Options of {@linkcode parseGatewayList}. */
export interface ParseGatewayListOptions {
  /** The current time; later `last_seen` claims are clamped to it. */
  now: Date;
  /** Largest number of valid entries taken. @default {64} */
  maxEntries?: number;
}

/**
 * Validates a `{"gateways":[{"url","last_seen"}]}` document and returns its valid entries
 * (at most `maxEntries`) and the number of refused ones.
 *
 * @throws {GatewaySetError} with reason `malformed_list` when the document's shape is wrong.
 */
export function parseGatewayList(
  value: unknown,
  options: ParseGatewayListOptions,
): { entries: GatewayEntry[]; refused: number } {
  const list = (value as { gateways?: unknown } | null)?.gateways;
  if (typeof value !== "object" || value === null || !Array.isArray(list)) {
    throw new GatewaySetError(
      "malformed_list",
      `Cannot read gateway list: expected {"gateways": [...]}, found ${describeShape(value)}`,
    );
  }
  const max = options.maxEntries ?? GATEWAY_LIMITS.maxPerResponse;
  const now = options.now.getTime();
  const entries: GatewayEntry[] = [];
  let refused = 0;
  for (const item of list) {
    if (entries.length >= max) break;
    try {
      const record = item as { url?: unknown; last_seen?: unknown };
      const url = normalizeGatewayUrl(record?.url);
      const time = typeof record.last_seen === "string" ? Date.parse(record.last_seen) : NaN;
      if (!Number.isFinite(time)) {
        refused++;
        continue;
      }
      entries.push({ url, lastSeen: new Date(Math.min(time, now)), reached: false });
    } catch {
      refused++;
    }
  }
  return { entries, refused };
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
 * Asks one gateway for its peers (`GET /v1/gateways`, body at most 256 KiB), marks it reached
 * and merges its answer into `set`.
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
  const result = set.mergeList(answer);
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
    const { entries, refused } = parseGatewayList(value, {
      now: options.now ?? new Date(),
      maxEntries: GATEWAY_LIMITS.maxEntries,
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

/** Writes the set to a `gateways.json` cache file atomically. */
export async function saveGatewayCache(path: string, set: GatewaySet): Promise<void> {
  const body = { version: 1, ...set.toJSON() };
  await writeFileAtomic(path, JSON.stringify(body, null, 2) + "\n");
}
