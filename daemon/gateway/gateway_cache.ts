/**
 * The daemon's `gateways.json` cache: the known gateway set with what only this node knows
 * (each entry's own reach time `reached_at`, and the peer a hearsay entry came from), written
 * atomically and read back without ever failing the daemon (a corrupt file is reported and
 * overwritten on the next save).
 *
 * @example
 * ```ts
 * import { GatewaySet } from "./gateway_set.ts";
 * import { loadGatewayCache, saveGatewayCache } from "./gateway_cache.ts";
 *
 * const set = new GatewaySet();
 * set.markReached("http://127.0.0.1:9201");
 * const file = `${await Deno.makeTempDir()}/gateways.json`;
 * await saveGatewayCache(file, set);
 * const { entries } = await loadGatewayCache(file);
 * console.assert(entries.length === 1 && entries[0].reached);
 * ```
 *
 * @module
 */

import { NetError } from "../../errors.ts";
import { writeFileAtomic } from "../../io/atomic_write.ts";
import { hearsay, parseTime, readList } from "./gateway_list.ts";
import type { GatewayEntry, GatewaySet } from "./gateway_set.ts";
import { checkIntroducedBy, GATEWAY_LIMITS, normalizeGatewayUrl } from "./gateway_url.ts";

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
