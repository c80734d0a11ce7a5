/**
 * Gateway lists, the gossip of `docs/protocol.md` §3: reading a peer's
 * `{"gateways":[{"url","last_seen"}]}` answer entry by entry within bounds (at most
 * {@linkcode GATEWAY_LIMITS}`.maxPerResponse` valid entries, claimed times in the future clamped
 * to now, each address checked against the peer that introduced it) into
 * {@linkcode GatewayEntry}s. Asking a peer for its list is `gateway_peer.ts`.
 *
 * @example
 * ```ts
 * import { parseGatewayList } from "./gateway_list.ts";
 *
 * const { entries, refused } = parseGatewayList(
 *   { gateways: [{ url: "https://gw.example/", last_seen: "2026-11-22T10:00:00Z" }, { url: 1 }] },
 *   { now: new Date("2026-11-22T12:00:00Z") },
 * );
 * console.assert(entries[0].url === "https://gw.example" && refused === 1);
 * ```
 *
 * @module
 */

import {
  checkIntroducedBy,
  GATEWAY_LIMITS,
  GatewaySetError,
  normalizeGatewayUrl,
} from "./gateway_url.ts";

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

/** A gateway heard of from `source`. */
export function hearsay(url: string, lastSeen: Date, source: string | undefined): GatewayEntry {
  return { url, lastSeen, reached: false, reachedAt: undefined, permanent: false, source };
}

/**
 * Reads a gateway list entry by entry: a record without a valid `url` and `last_seen`, or one
 * `read` refuses (by throwing), is counted as refused.
 */
export function readList(
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

/** A time claimed in a list, as milliseconds, or `undefined` when it is not one. */
export function parseTime(value: unknown): number | undefined {
  const time = typeof value === "string" ? Date.parse(value) : NaN;
  return Number.isFinite(time) ? time : undefined;
}

function describeShape(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value !== "object") return typeof value;
  return `an object with keys ${JSON.stringify(Object.keys(value).slice(0, 5))}`;
}
