/**
 * A gateway's provider directory fed by routers: it polls each router's `GET /v1/ads`
 * (bounded in time and size), validates every ad strictly (`chain/ad.ts`), and keeps the
 * last good view of each router. An invalid entry is dropped and reported, never guessed at; a
 * capacity or metrics report that does not have the protocol's shape (`docs/protocol.md` §2)
 * is kept as `null` (unknown).
 *
 * @module
 */

import { validateAd } from "../chain/mod.ts";
import { fetchJson } from "../io/fetch_json.ts";
import { Capacity, Metrics } from "./_wire.ts";
import type { DirectoryEntry, ProviderDirectory } from "./gateway.ts";

/** Options of {@linkcode RouterDirectory}. */
export interface RouterDirectoryOptions {
  /** The fetch implementation. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /** Time allowed per router, in ms. @default {3000} */
  timeoutMs?: number;
  /** Largest router answer, in bytes. @default {8 MiB} */
  maxBytes?: number;
  /** Where problems are reported. @default {console.warn} */
  log?: (message: string) => void;
}

/** Polls routers and serves their combined, validated ads. */
export class RouterDirectory implements ProviderDirectory {
  readonly #routers: readonly string[];
  readonly #options: RouterDirectoryOptions;
  readonly #byRouter = new Map<string, DirectoryEntry[]>();

  /** Creates the directory for the given router base URLs; call {@linkcode refresh} to fill it. */
  constructor(routers: readonly string[], options: RouterDirectoryOptions = {}) {
    this.#routers = routers.map((r) => r.replace(/\/+$/, ""));
    this.#options = options;
  }

  /** The combined entries, one per provider (the first router listing a provider wins). */
  entries(): readonly DirectoryEntry[] {
    const seen = new Map<string, DirectoryEntry>();
    for (const router of this.#routers) {
      for (const entry of this.#byRouter.get(router) ?? []) {
        if (!seen.has(entry.provider)) seen.set(entry.provider, entry);
      }
    }
    return [...seen.values()];
  }

  /**
   * Polls every router once, in parallel. A router that fails keeps its previous view (a
   * gateway routes on the best knowledge it has; the daemon verifies everything anyway).
   *
   * @returns how many routers answered.
   */
  async refresh(): Promise<number> {
    const log = this.#options.log ?? ((m: string) => console.warn(m));
    const results = await Promise.all(this.#routers.map(async (router) => {
      try {
        const body = await fetchJson(`${router}/v1/ads`, {
          fetch: this.#options.fetch,
          timeoutMs: this.#options.timeoutMs ?? 3000,
          maxBytes: this.#options.maxBytes ?? 8 << 20,
        });
        const ads = (body as { ads?: unknown })?.ads;
        if (!Array.isArray(ads)) throw new Error(`expected {"ads": [...]} from ${router}`);
        const entries: DirectoryEntry[] = [];
        for (const item of ads) {
          try {
            const { ad, capacity, metrics } = item as Record<string, unknown>;
            const valid = validateAd(ad);
            entries.push({
              provider: valid.provider.toLowerCase(),
              tier: valid.tier,
              ad: valid,
              capacity: Capacity.safeParse(capacity).success ? capacity : null,
              metrics: Metrics.safeParse(metrics).success ? metrics : null,
            });
          } catch (error) {
            log(`directory: ${router} lists an invalid ad: ${(error as Error).message}`);
          }
        }
        this.#byRouter.set(router, entries);
        return true;
      } catch (error) {
        log(`directory: cannot poll ${router}: ${(error as Error).message}`);
        return false;
      }
    }));
    return results.filter(Boolean).length;
  }
}
